/* The CPU stand-in device (hr_dev_standin_open in backends/device.h): its constants and
 * the element-wise operations it shares with the engine's numerics (local copies: this
 * library sits below the engine). */
#ifndef HR_STANDIN_H
#define HR_STANDIN_H
#include <stdbool.h>
#include <stdint.h>

/* Bytes the stand-in reports as its own overhead beyond the arena (a CUDA context and
 * library workspaces are of this order, scaled down so tests can use small budgets). */
#define HR_STANDIN_OVERHEAD (64u * 1024u)

/* True when this build has the CUDA backend compiled in. */
bool hr_dev_cuda_built(void);

/* Same numerics as the engine's hr_rmsnorm, hr_rope, hr_softmax and hr_ffn_act
 * (act is the engine's hr_act value). */
void hr_sd_rmsnorm(float *y, const float *x, const float *w, int64_t n, float eps);
void hr_sd_rope(float *x, int32_t n_heads, int32_t head_dim, int32_t n_rot, int32_t pos, float base, float freq_scale,
                bool neox);
void hr_sd_softmax(float *x, int64_t n, float s);
/* Returns -1 for an unknown act or a gated act without G (g == NULL). */
int hr_sd_ffn_act(float *h, const float *g, const float *u, int64_t n, int act);
#endif
