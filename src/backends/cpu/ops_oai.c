/* gpt-oss's operations (ops_oai.h), with ggml's CPU numerics: float expf, the softmax sum in
 * double, one float scale by the reciprocal. */
#include "ops_oai.h"
#include <math.h>

void hr_swiglu_oai(float *h, const float *g, const float *u, int64_t n, float alpha, float limit) {
    for (int64_t i = 0; i < n; i++) {
        const float x = limit < g[i] ? limit : g[i]; /* std::min's order: a NaN gate passes through */
        const float y = u[i] < -limit ? -limit : u[i] > limit ? limit : u[i];
        h[i] = x / (1.0f + expf(alpha * -x)) * (y + 1.0f);
    }
}

void hr_softmax_sink(float *x, int64_t n, float s, float sink) {
    float max = sink;
    for (int64_t i = 0; i < n; i++) {
        x[i] *= s;
        if (x[i] > max) max = x[i];
    }
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += (double)x[i];
    }
    sum += (double)expf(sink - max);
    const float inv = (float)(1.0 / sum);
    for (int64_t i = 0; i < n; i++) x[i] *= inv;
}
