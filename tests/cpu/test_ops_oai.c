/* gpt-oss's operations (backends/cpu/ops_oai.h) against float64 formulas written from the
 * definitions: the clamped SwiGLU on both sides of its limits (and a NaN gate, which ggml's
 * std::min passes through), the sink softmax on awkward lengths, with a sink that dominates,
 * one that vanishes (then it equals the plain softmax bit for bit) and an empty row. */
#include <math.h>
#include <string.h>
#include "backends/cpu/ops.h"
#include "backends/cpu/ops_oai.h"
#include "testutil.h"

static double swiglu_oai_ref(double g, double u, double alpha, double limit) {
    const double x = g > limit ? limit : g, y = u < -limit ? -limit : u > limit ? limit : u;
    return x / (1 + exp(-alpha * x)) * (y + 1);
}

static void check_swiglu(void) {
    enum { N = 1037 };
    static float g[N], u[N], h[N];
    hr_rng r = {42};
    int clamped = 0;
    for (int i = 0; i < N; i++) {
        g[i] = (hr_rng_uniform(&r) - 0.5f) * 24, u[i] = (hr_rng_uniform(&r) - 0.5f) * 24;
        clamped += fabsf(g[i]) > 7 || fabsf(u[i]) > 7;
    }
    g[0] = 7, u[0] = -7, g[1] = 7.0001f, u[1] = 7.0001f, g[2] = -30, u[2] = 0; /* at, just past, far below */
    hr_swiglu_oai(h, g, u, N, 1.702f, 7.0f);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        const double want = swiglu_oai_ref(g[i], u[i], 1.702, 7.0);
        worst = fmax(worst, fabs(h[i] - want) / fmax(1.0, fabs(want)));
    }
    CHECKF(worst < 1e-6 && clamped > N / 2, "swiglu_oai: max relative error %g (%d clamped inputs)", worst, clamped);
    /* in place over the gate, as the expert code may call it */
    float g2[N];
    memcpy(g2, g, sizeof g2);
    hr_swiglu_oai(g2, g2, u, N, 1.702f, 7.0f);
    CHECK(!memcmp(g2, h, sizeof g2));
    float ng = NAN, nu = 1, nh = 0;
    hr_swiglu_oai(&nh, &ng, &nu, 1, 1.702f, 7.0f);
    CHECKF(isnan(nh), "swiglu_oai: a NaN gate gives %g, ggml gives NaN", nh);
}

static void check_sink(void) {
    static const int64_t lens[] = {1, 2, 7, 33, 250};
    static const float sinks[] = {-3.0f, 0.0f, 0.5f, 12.0f};
    hr_rng r = {7};
    float x[250], x0[250];
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
        for (size_t si = 0; si < sizeof sinks / sizeof *sinks; si++) {
            const int64_t n = lens[li];
            const float s = 0.35f, sink = sinks[si];
            for (int64_t i = 0; i < n; i++) x0[i] = x[i] = (hr_rng_uniform(&r) - 0.5f) * 10;
            hr_softmax_sink(x, n, s, sink);
            double z = exp((double)sink), worst = 0, sum = 0;
            for (int64_t i = 0; i < n; i++) z += exp((double)x0[i] * s);
            for (int64_t i = 0; i < n; i++) {
                const double want = exp((double)x0[i] * s) / z;
                worst = fmax(worst, fabs(x[i] - want)), sum += x[i];
            }
            CHECKF(worst < 1e-6, "softmax_sink n %lld sink %g: max error %g", (long long)n, sink, worst);
            /* the weights leave the sink its share */
            CHECKF(fabs(sum - (1 - exp((double)sink) / z)) < 1e-5, "softmax_sink n %lld sink %g: weights sum %g", (long long)n,
                   sink, sum);
        }
    /* a vanishing sink is the plain softmax, bit for bit */
    float a[33], b[33];
    for (int i = 0; i < 33; i++) a[i] = b[i] = (hr_rng_uniform(&r) - 0.5f) * 10;
    hr_softmax_sink(a, 33, 0.5f, -INFINITY);
    hr_softmax(b, 33, 0.5f);
    CHECK(!memcmp(a, b, sizeof a));
    hr_softmax_sink(a, 0, 0.5f, 1.0f); /* no positions: nothing to write, no division by zero */
}

int main(void) {
    check_swiglu();
    check_sink();
    return TEST_END();
}
