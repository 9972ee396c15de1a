/* Hearth's expert placement index: what a mixture of experts puts on the device for one
 * budget (whole experts per layer, then hot neurons of host experts), written by hearth
 * place and by a context that placed its experts from statistics, read back by contexts
 * with the same budget (docs/hybrid.md). The MoE sibling of PowerInfer's GPU index
 * (gpuidx.h), at the same path and told apart by general.architecture: a GGUF with
 *   hearth.moe_gpu_index.{block_count, expert_count, expert_feed_forward_length} (u32),
 *   hearth.moe_gpu_index.expert_bytes (u64: the model's bytes of one expert per layer, summed),
 *   split.vram_capacity (u64: the bytes the plan had left for experts and their neurons),
 * and per layer N in numeric order blk.N.gpu_experts {n_expert} and
 * blk.N.gpu_expert_neurons {n_ff_exp, n_expert}, both I8 0/1 flags. */
#ifndef HR_MOEIDX_H
#define HR_MOEIDX_H
#include <stdint.h>
#include "formats/gguf.h"
#include "util/err.h"

#define HR_MOEIDX_ARCH "hearth.moe_gpu_index"

typedef struct hr_moeidx {
    int32_t n_layer, n_expert, n_ff; /* n_ff: neurons per expert */
    uint64_t capacity;               /* split.vram_capacity */
    uint64_t expert_bytes;           /* the model it was made for (hr_gpu_plan_expert_fingerprint) */
    uint8_t *whole;                  /* [n_layer][n_expert] 1: the expert on the device */
    uint8_t *neurons;                /* [n_layer][n_expert][n_ff] 1: a hot neuron of a host expert */
} hr_moeidx;

/* Zeroed flags (nothing on the device). */
int hr_moeidx_init(hr_moeidx *x, int32_t n_layer, int32_t n_expert, int32_t n_ff, hr_err *e);
void hr_moeidx_free(hr_moeidx *x);
int hr_moeidx_write(const char *path, const hr_moeidx *x, hr_err *e);
/* Requires the keys, the tensors in order with their names, types and shapes, 0/1 flags and
 * no neuron flagged in a whole expert. On error *out is zeroed and the message names the problem. */
int hr_moeidx_read(const char *path, hr_moeidx *out, hr_err *e);
int hr_moeidx_from_gguf(const gguf_file *f, hr_moeidx *out, hr_err *e);
#endif
