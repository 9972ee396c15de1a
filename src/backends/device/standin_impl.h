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
/* FFN mode threshold's split (standin_thr.c): the ops, and the CPU's gather of W rows
 * sel[0..k) (host list, checked) into host memory Y [n_tok][k]. */
int hr_standin_thr_mask(hr_dev *d, uint64_t G, int64_t n, float thr, int act, uint64_t MASK, hr_err *e);
int hr_standin_gather_masked(hr_dev *d, const hr_dmat *W, uint64_t X, int64_t n_tok, uint64_t idx, int64_t n_idx,
                             uint64_t MASK, uint64_t Y, hr_err *e);
int hr_standin_gather_rows(hr_dev *d, const hr_dmat *W, uint64_t X, int64_t n_tok, const int32_t *sel, int64_t k, float *Y,
                           hr_err *e);
#endif
