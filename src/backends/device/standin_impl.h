/* Shared between the stand-in's files: arena access and attention scratch. */
#ifndef HR_STANDIN_IMPL_H
#define HR_STANDIN_IMPL_H
#include "backends/cpu/matmul.h"
#include "backends/device.h"

/* Pointer to arena bytes [off, off + n), or NULL with a message naming `what`. */
void *hr_standin_span(hr_dev *d, uint64_t off, uint64_t n, const char *what, hr_err *e);
/* Per-thread scores ([n_threads][n_ctx]) and prepared-q rows, and the stand-in's CPU. */
int hr_standin_attn_scratch(hr_dev *d, int32_t n_ctx, int32_t head_dim, float **scores, uint8_t **qprep, size_t *stride,
                            hr_cpu **cpu, hr_err *e);
int hr_standin_attention(hr_dev *d, const hr_dev_attn *a, uint64_t Q, uint64_t K, uint64_t V, uint64_t OUT, hr_err *e);
#endif
