/* PowerInfer's GPU index `<model>.generated.gpuidx` (reference/powerinfer-format.md §1.4):
 * a PWRI GGUF with, per layer in numeric order, blk.N.gpu_idx {n_ff} (0/1 flags) and
 * blk.N.gpu_bucket {k} (the flagged neuron ids, ascending), both of the old I32 type id 18,
 * plus split.vram_capacity (u64). Files written here load in PowerInfer and vice versa. */
#ifndef HR_GPUIDX_H
#define HR_GPUIDX_H
#include <stdint.h>
#include "formats/gguf.h"
#include "util/err.h"

#define HR_GPUIDX_SUFFIX ".generated.gpuidx"
#define HR_GPUIDX_ARCH "generic.gpu_index"

typedef struct hr_gpuidx {
    int32_t n_layer, n_ff;
    uint64_t vram_capacity; /* bytes the index was generated for */
    uint8_t *hot;           /* [n_layer][n_ff]: 1 = neuron resident on the GPU */
} hr_gpuidx;

/* Zeroed flags (nothing on the GPU). */
int hr_gpuidx_init(hr_gpuidx *g, int32_t n_layer, int32_t n_ff, hr_err *e);
void hr_gpuidx_free(hr_gpuidx *g);
/* Neurons of layer il on the GPU; with ids non-NULL (n_ff entries) also their ids, ascending. */
int32_t hr_gpuidx_bucket(const hr_gpuidx *g, int32_t il, int32_t *ids);

int hr_gpuidx_write(const char *path, const hr_gpuidx *g, hr_err *e);
/* Reads tensors by position (2*il, 2*il+1) as PowerInfer does, and also requires the
 * names to match, the flags to be 0/1 and each bucket to be exactly the ascending list
 * of flagged neurons. On error *out is zeroed and the message names the problem. */
int hr_gpuidx_read(const char *path, hr_gpuidx *out, hr_err *e);
int hr_gpuidx_from_gguf(const gguf_file *f, hr_gpuidx *out, hr_err *e);

/* "<model_path>.generated.gpuidx", malloc'ed; NULL when out of memory. */
char *hr_gpuidx_default_path(const char *model_path);

#endif
