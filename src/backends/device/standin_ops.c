/* Element-wise operations of the stand-in device, with the engine's numerics (ops.c):
 * double sums in RMSNorm and softmax, iterative float RoPE angles, ggml's F16 GELU. */
#include <math.h>
#include "formats/types.h"
#include "standin.h"

void hr_sd_rmsnorm(float *y, const float *x, const float *w, int64_t n, float eps) {
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += (double)(x[i] * x[i]);
    const float scale = 1.0f / sqrtf((float)(sum / (double)n) + eps);
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] * scale) * w[i];
}

void hr_sd_rope(float *x, int32_t n_heads, int32_t head_dim, int32_t n_rot, int32_t pos, float base, float freq_scale,
                bool neox) {
    float cs[2048]; /* n_rot <= 2048, checked by the caller */
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    float theta = (float)pos;
    for (int32_t i = 0; i < n_rot; i += 2) {
        const float t = freq_scale * theta;
        cs[i] = cosf(t);
        cs[i + 1] = sinf(t);
        theta *= theta_scale;
    }
    for (int32_t h = 0; h < n_heads; h++) {
        float *v = x + (int64_t)h * head_dim;
        for (int32_t i = 0; i < n_rot; i += 2) {
            const int32_t a = neox ? i / 2 : i, b = neox ? i / 2 + n_rot / 2 : i + 1;
            const float x0 = v[a], x1 = v[b];
            v[a] = x0 * cs[i] - x1 * cs[i + 1];
            v[b] = x0 * cs[i + 1] + x1 * cs[i];
        }
    }
}

void hr_sd_softmax(float *x, int64_t n, float s) {
    float max = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        x[i] *= s;
        if (x[i] > max) max = x[i];
    }
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += (double)x[i];
    }
    const float inv = (float)(1.0 / sum);
    for (int64_t i = 0; i < n; i++) x[i] *= inv;
}

static inline float silu(float v) { return v / (1.0f + expf(-v)); }
static inline float relu(float v) { return v > 0 ? v : 0; }
static inline float gelu(float v) {
    if (v <= -10.0f) return 0.0f;
    if (v >= 10.0f) return v;
    const float x = hr_f16_to_f32(hr_f32_to_f16(v));
    const float g = 0.5f * x * (1.0f + tanhf(0.79788456080286535587989211986876f * x * (1.0f + 0.044715f * x * x)));
    return hr_f16_to_f32(hr_f32_to_f16(g));
}

/* act values follow the engine's hr_act: 0 SwiGLU, 1 ReGLU, 2 dReLU, 3 ReLU, 4 GELU. */
int hr_sd_ffn_act(float *h, const float *g, const float *u, int64_t n, int act) {
    if (act < 3 && !g) return -1;
    switch (act) {
    case 0: for (int64_t i = 0; i < n; i++) h[i] = silu(g[i]) * u[i]; break;
    case 1: for (int64_t i = 0; i < n; i++) h[i] = relu(g[i]) * u[i]; break;
    case 2: for (int64_t i = 0; i < n; i++) h[i] = relu(g[i]) * relu(u[i]); break;
    case 3: for (int64_t i = 0; i < n; i++) h[i] = g ? relu(g[i]) * u[i] : relu(u[i]); break;
    case 4: for (int64_t i = 0; i < n; i++) h[i] = g ? gelu(g[i]) * u[i] : gelu(u[i]); break;
    default: return -1;
    }
    return 0;
}

bool hr_dev_cuda_built(void) {
#ifdef HEARTH_HAVE_CUDA
    return true;
#else
    return false;
#endif
}
