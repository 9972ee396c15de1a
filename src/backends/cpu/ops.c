#include "ops.h"
#include "vmath.h"
#include <math.h>
#include "formats/types.h"

void hr_rmsnorm(float *y, const float *x, const float *w, int64_t n, float eps) {
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += (double)(x[i] * x[i]);
    const float scale = 1.0f / sqrtf((float)(sum / (double)n) + eps);
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] * scale) * w[i];
}

/* ggml_norm's numerics: double sums, float mean and scale; then weight and bias. */
void hr_layernorm(float *y, const float *x, const float *w, const float *b, int64_t n, float eps) {
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += (double)x[i];
    const float mean = (float)(sum / (double)n);
    double sum2 = 0;
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i] - mean;
        y[i] = v;
        sum2 += (double)(v * v);
    }
    const float scale = 1.0f / sqrtf((float)(sum2 / (double)n) + eps);
    for (int64_t i = 0; i < n; i++) y[i] = (y[i] * scale) * w[i] + (b ? b[i] : 0.0f);
}

/* ggml's rope_yarn_ramp: 1 below corr_dims[0], 0 above corr_dims[1], linear between, at pair
 * index i0 / 2 (integer division, as ggml). */
static float yarn_ramp(const float *corr, int32_t i0) {
    const float d = corr[1] - corr[0] > 0.001f ? corr[1] - corr[0] : 0.001f;
    const float y = (float)(i0 / 2) - corr[0];
    const float r = y / d;
    return 1.0f - (r < 0 ? 0 : r > 1 ? 1 : r);
}

/* cos/sin of one pair with ggml's float steps: theta / ff, then freq_scale, then YaRN's
 * mix, then the magnitude scale. */
static void rope_angle(float theta_extrap, float freq_scale, const hr_rope_yarn *y, int32_t i0, float *c, float *s) {
    const float theta_interp = freq_scale * theta_extrap;
    float theta = theta_interp, mscale = y ? y->attn_factor : 1.0f;
    if (y && y->ext_factor != 0.0f) {
        const float mix = yarn_ramp(y->corr_dims, i0) * y->ext_factor;
        theta = theta_interp * (1 - mix) + theta_extrap * mix;
        mscale *= 1.0f + 0.1f * logf(1.0f / freq_scale);
    }
    *c = cosf(theta) * mscale;
    *s = sinf(theta) * mscale;
}

void hr_rope_cs(float *cs, int32_t n_rot, int32_t pos, float base, float freq_scale, const float *freq_factors,
                const hr_rope_yarn *yarn) {
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    float theta = (float)pos;
    for (int32_t i = 0; i < n_rot; i += 2) {
        const float ff = freq_factors ? freq_factors[i / 2] : 1.0f;
        rope_angle(theta / ff, freq_scale, yarn, i, &cs[i], &cs[i + 1]);
        theta *= theta_scale;
    }
}

void hr_rope_apply(float *x, int32_t n_heads, int32_t head_dim, int32_t n_rot, bool neox, const float *cs) {
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

void hr_rope_ext(float *x, int32_t n_heads, int32_t head_dim, int32_t n_rot, int32_t pos, float base, float freq_scale,
                 bool neox, const float *freq_factors, const hr_rope_yarn *yarn) {
    float cs[2048]; /* cos/sin pairs for n_rot <= head_dim <= 1024, checked at load */
    hr_rope_cs(cs, n_rot, pos, base, freq_scale, freq_factors, yarn);
    hr_rope_apply(x, n_heads, head_dim, n_rot, neox, cs);
}

/* A sink of -inf adds exp(-inf) = 0 to the sum, so the plain softmax is this one bit for bit. */
void hr_softmax_sink(float *x, int64_t n, float s, float sink) {
    float max = sink;
    for (int64_t i = 0; i < n; i++) {
        x[i] *= s;
        if (x[i] > max) max = x[i];
    }
    double sum = hr_vexp_sum(x, n, max);
    sum += (double)expf(sink - max);
    const float inv = (float)(1.0 / sum);
    for (int64_t i = 0; i < n; i++) x[i] *= inv;
}

void hr_softmax(float *x, int64_t n, float s) { hr_softmax_sink(x, n, s, -INFINITY); }

static inline float relu(float v) { return v > 0 ? v : 0; }

/* ggml's CPU GELU: the tanh approximation, evaluated at the input rounded to F16 and
 * rounded to F16 again (ggml reads it from a 64K-entry F16 table built that way);
 * outside [-10, 10] it is 0 or the identity. Computed directly: same values, no table. */
static inline float gelu(float v) {
    if (v <= -10.0f) return 0.0f;
    if (v >= 10.0f) return v;
    const float x = hr_f16_to_f32(hr_f32_to_f16(v));
    const float g = 0.5f * x * (1.0f + tanhf(0.79788456080286535587989211986876f * x * (1.0f + 0.044715f * x * x)));
    return hr_f16_to_f32(hr_f32_to_f16(g));
}

/* The same GELU read from the F16 table (hr_gelu_table_init, vmath.c): one conversion
 * each way instead of two and a tanhf, 8 lanes at a time where the CPU has AVX2. */
void hr_ffn_act_tab(float *h, const float *g, const float *u, int64_t n, hr_act act, const uint16_t *gelu_table) {
    if (gelu_table && (act == HR_ACT_GELU || act == HR_ACT_GEGLU)) {
        hr_vgelu_tab(h, g, u, n, gelu_table);
        return;
    }
    hr_ffn_act(h, g, u, n, act);
}

void hr_ffn_act(float *h, const float *g, const float *u, int64_t n, hr_act act) {
    switch (act) {
    case HR_ACT_SWIGLU:
        hr_vswiglu(h, g, u, n);
        break;
    case HR_ACT_REGLU:
        hr_vrelu_glu(h, g, u, n, false);
        break;
    case HR_ACT_DRELU:
        hr_vrelu_glu(h, g, u, n, true);
        break;
    case HR_ACT_RELU:
        if (g) hr_vrelu_glu(h, g, u, n, false);
        else
            for (int64_t i = 0; i < n; i++) h[i] = relu(u[i]);
        break;
    case HR_ACT_GELU:
    case HR_ACT_GEGLU:
        for (int64_t i = 0; i < n; i++) h[i] = g ? gelu(g[i]) * u[i] : gelu(u[i]);
        break;
    }
}

void hr_gate_mag(float *out, const float *g, int64_t n, hr_act act) {
    switch (act) {
    case HR_ACT_SWIGLU: /* the FFN's own silu (hr_vswiglu's), not libm's: one call per token and layer */
        hr_vsilu_abs(out, g, n);
        break;
    case HR_ACT_GELU:
    case HR_ACT_GEGLU:
        for (int64_t i = 0; i < n; i++) out[i] = fabsf(gelu(g[i]));
        break;
    default: /* ReLU family */
        for (int64_t i = 0; i < n; i++) out[i] = relu(g[i]);
    }
}

void hr_softcap(float *x, int64_t n, float cap) { hr_vtanh_scaled(x, x, n, 1.0f / cap, cap); }
