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
