/* The stand-in device: every operation against a plain double-precision reference
 * written here (weights dequantized with hr_dequant_row), its memory accounting
 * (capacity, overhead, one reserve), and bad offsets or indices: errors, never crashes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "backends/cpu/kernels.h"
#include "backends/device.h"
#include "backends/device/standin.h"
#include "formats/types.h"
#include "randw.h"
#include "testutil.h"

#define CAP (4u << 20)
#define ARENA (CAP - HR_STANDIN_OVERHEAD)

static hr_rng rng = {42};

static void randf(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = hr_rng_normal(&rng);
}

/* A simple arena allocator for the test. */
static uint64_t next_off;
static uint64_t alloc(uint64_t n) {
    uint64_t o = next_off;
    next_off += hr_dev_round(n);
    return o;
}

static double maxrel(const float *a, const double *ref, int64_t n) {
    double m = 0, scale = 1e-6;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(ref[i]));
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs(a[i] - ref[i]));
    return m / scale;
}

static void test_memory(void) {
    hr_err e = {{0}};
    hr_dev *d = hr_dev_standin_open(CAP, 1, &e);
    CHECKF(d != NULL, "%s", e.msg);
    if (!d) return;
    uint64_t fr, tot;
    CHECK(!d->ops->mem_info(d, &fr, &tot, &e) && fr == CAP - HR_STANDIN_OVERHEAD && tot == CAP); /* overhead taken at open */
    CHECK(d->ops->overhead(d) == HR_STANDIN_OVERHEAD);
    CHECK(d->ops->reserve(d, CAP, &e) == -1 && strstr(e.msg, "out of memory"));
    CHECK(d->ops->reserve(d, ARENA + 1, &e) == -1 && strstr(e.msg, "out of memory"));
    CHECKF(!d->ops->reserve(d, ARENA, &e), "%s", e.msg);
    CHECK(d->ops->reserve(d, 256, &e) == -1 && strstr(e.msg, "already"));
    CHECK(!d->ops->mem_info(d, &fr, &tot, &e) && fr == 0 && tot == CAP);
    /* round trip and bounds */
    uint8_t buf[300], back[300];
    for (int i = 0; i < 300; i++) buf[i] = (uint8_t)(i * 7);
    CHECK(!d->ops->to_dev(d, ARENA - 300, buf, 300, &e) && !d->ops->to_host(d, back, ARENA - 300, 300, &e));
    CHECK(!memcmp(buf, back, 300));
    CHECK(d->ops->to_dev(d, ARENA - 299, buf, 300, &e) == -1 && strstr(e.msg, "outside"));
    CHECK(d->ops->to_host(d, back, UINT64_MAX - 10, 300, &e) == -1 && strstr(e.msg, "outside"));
    CHECK(d->ops->rmsnorm(d, 2, 0, 4, 1, 1e-5f, 0, &e) == -1 && strstr(e.msg, "aligned"));
    hr_dev_close(d);
}

/* The copy stream: at once without a lag; with lag 2 a copy lands on the third question
 * about it (earlier ones with it, in order), not before: the arena keeps the old bytes; copy_sync
 * lands the rest; tickets never issued are errors; bounds as for to_dev. */
static void test_copies(void) {
    hr_err e = {{0}};
    hr_dev *d = hr_dev_standin_open(CAP, 1, &e);
    if (!d || d->ops->reserve(d, ARENA, &e)) {
        CHECKF(0, "%s", e.msg);
        hr_dev_close(d);
        return;
    }
    uint8_t a[64], b[64], back[64];
    memset(a, 0x11, sizeof a), memset(b, 0x22, sizeof b);
    uint64_t t1 = 0, t2 = 0, t3 = 0;
    bool done = false;
    CHECK(!d->ops->copy_async(d, 0, a, 64, &t1, &e) && t1 == 1 && !d->ops->copy_done(d, t1, &done, &e) && done);
    CHECK(!d->ops->to_host(d, back, 0, 64, &e) && !memcmp(back, a, 64));
    hr_dev_standin_set_copy_lag(d, 2);
    CHECK(!d->ops->copy_async(d, 0, b, 64, &t2, &e) && !d->ops->copy_async(d, 256, b, 64, &t3, &e) && t3 == 3);
    for (int q = 0; q < 2; q++) CHECKF(!d->ops->copy_done(d, t2, &done, &e) && !done, "question %d: landed early", q);
    CHECK(!d->ops->to_host(d, back, 0, 64, &e) && !memcmp(back, a, 64)); /* still the old bytes */
    CHECK(!d->ops->copy_done(d, t2, &done, &e) && done && !d->ops->to_host(d, back, 0, 64, &e) && !memcmp(back, b, 64));
    CHECK(!d->ops->copy_done(d, t3, &done, &e) && !done);
    CHECK(!d->ops->copy_sync(d, &e) && !d->ops->copy_done(d, t3, &done, &e) && done);
    CHECK(!d->ops->to_host(d, back, 256, 64, &e) && !memcmp(back, b, 64));
    CHECK(d->ops->copy_done(d, 4, &done, &e) == -1 && strstr(e.msg, "ticket 4"));
    CHECK(d->ops->copy_async(d, ARENA - 63, b, 64, &t1, &e) == -1 && strstr(e.msg, "outside"));
    hr_dev_close(d);
}

/* Reference of W row r . x in double, W dequantized. */
static void ref_rows(const hr_mat *W, const float *x, int64_t n_tok, const int32_t *idx, int64_t n_idx, double *y) {
    float *row = malloc(sizeof(float) * (size_t)W->n_in);
    for (int64_t i = 0; i < n_idx; i++) {
        hr_dequant_row(W->type, (const uint8_t *)W->data + (size_t)idx[i] * W->row_bytes, row, W->n_in);
        for (int64_t t = 0; t < n_tok; t++) {
            double s = 0;
            for (int64_t k = 0; k < W->n_in; k++) s += (double)row[k] * x[t * W->n_in + k];
            y[t * n_idx + i] = s;
        }
    }
    free(row);
}

/* A stand-in with its arena reserved and the bump allocator reset; NULL after a failed check. */
static hr_dev *open_reserved(int n_threads) {
    hr_err e = {{0}};
    hr_dev *d = hr_dev_standin_open(CAP, n_threads, &e);
    if (!d || d->ops->reserve(d, ARENA, &e)) {
        CHECKF(0, "%s", e.msg);
        hr_dev_close(d);
        return NULL;
    }
    next_off = 0;
    return d;
}

static void test_products(uint32_t type) {
    enum { NO = 40, NT = 3, NX = 17 };
    const int NI = hr_type_block_elems(type) == HR_QK_K ? 512 : 96; /* 2 super-blocks, or 3 blocks */
    /* the stand-in computes products with the CPU's best kernels; axpy has every type */
    const bool dots = hr_kernels_best()->vec_dot[type] != NULL;
    if (!dots) printf("note: %s has no %s vec_dot yet: products not compared\n", hr_kernels_best()->name, hr_type_name(type));
    hr_err e = {{0}};
    hr_dev *d = open_reserved(2);
    if (!d) return;
    const size_t rb = hr_row_bytes(type, NI);
    float *wf = malloc(sizeof(float) * NI * NO), *x = malloc(sizeof(float) * NT * NI), *y = malloc(sizeof(float) * NT * NO);
    double *ref = malloc(sizeof(double) * NT * NO);
    uint8_t *wq = malloc(rb * NO);
    randf(wf, NI * NO), randf(x, NT * NI);
    /* the newer block types: random bytes with finite scales (tests/randw.h) */
    const bool newer = hr_type_is_quant(type) && type != HR_Q8_0 && type != HR_Q4_0;
    for (int r = 0; r < NO; r++)
        if (newer) randw_row(type, wq + r * rb, NI, 1.0f, &rng);
        else hr_quant_row(type, wf + r * NI, wq + r * rb, NI);
    hr_mat W = {.type = type, .n_in = NI, .n_out = NO, .row_bytes = rb, .data = wq};
    hr_dmat D = {type, NI, NO, rb, alloc(rb * NO)};
    uint64_t X = alloc(NT * NI * 4), Y = alloc(NT * NO * 4), IDX = alloc(NX * 4);
    CHECK(!d->ops->to_dev(d, D.off, wq, rb * NO, &e) && !d->ops->to_dev(d, X, x, NT * NI * 4, &e));
    /* the quantized types round the activations to 8 bits first: 1% of the row scale */
    const double tol = type == HR_F32 ? 1e-5 : type == HR_F16 ? 2e-3 : 2e-2;
    int32_t all[NO], idx[NX];
    for (int i = 0; i < NO; i++) all[i] = i;
    for (int i = 0; i < NX; i++) idx[i] = (i * 7 + 3) % NO;
    if (dots) {
        CHECKF(!d->ops->matmul(d, &D, X, NT, Y, &e) && !d->ops->to_host(d, y, Y, NT * NO * 4, &e), "%s", e.msg);
        ref_rows(&W, x, NT, all, NO, ref);
        CHECKF(maxrel(y, ref, NT * NO) < tol, "%s matmul: %g", hr_type_name(type), maxrel(y, ref, NT * NO));
    }
    CHECK(!d->ops->to_dev(d, IDX, idx, sizeof idx, &e));
    if (dots) {
        CHECKF(!d->ops->gather_matmul(d, &D, X, NT, IDX, NX, Y, &e) && !d->ops->to_host(d, y, Y, NT * NX * 4, &e),
               "%s", e.msg);
        ref_rows(&W, x, NT, idx, NX, ref);
        CHECKF(maxrel(y, ref, NT * NX) < tol, "%s gather: %g", hr_type_name(type), maxrel(y, ref, NT * NX));
    }
    /* sparse axpy: Y[t][k] = sum_i A[t][i] W[idx[i]][k]; W rows are NI long */
    float a[NT * NX];
    randf(a, NT * NX);
    a[4] = 0;
    uint64_t A = alloc(sizeof a), YA = alloc(NT * NI * 4);
    float *ya = malloc(sizeof(float) * NT * NI), *row = malloc(sizeof(float) * NI);
    double *ra = calloc(NT * NI, sizeof(double));
    for (int i = 0; i < NX; i++) {
        hr_dequant_row(type, wq + (size_t)idx[i] * rb, row, NI);
        for (int t = 0; t < NT; t++)
            for (int k = 0; k < NI; k++) ra[t * NI + k] += (double)a[t * NX + i] * row[k];
    }
    CHECK(!d->ops->to_dev(d, A, a, sizeof a, &e));
    CHECKF(!d->ops->sparse_axpy(d, &D, A, NT, IDX, NX, YA, &e) && !d->ops->to_host(d, ya, YA, NT * NI * 4, &e), "%s", e.msg);
    CHECKF(maxrel(ya, ra, NT * NI) < 1e-5, "%s axpy: %g", hr_type_name(type), maxrel(ya, ra, NT * NI));
    /* bad index, matrix past the arena, wrong row size */
    idx[3] = NO;
    CHECK(!d->ops->to_dev(d, IDX, idx, sizeof idx, &e));
    CHECK(d->ops->gather_matmul(d, &D, X, NT, IDX, NX, Y, &e) == -1 && strstr(e.msg, "outside [0, 40)"));
    CHECK(d->ops->sparse_axpy(d, &D, A, NT, IDX, NX, YA, &e) == -1 && strstr(e.msg, "outside [0, 40)"));
    hr_dmat bad = D;
    bad.off = ARENA - rb * NO + 256;
    CHECK(d->ops->matmul(d, &bad, X, NT, Y, &e) == -1 && strstr(e.msg, "outside"));
    bad = D, bad.row_bytes += 1;
    CHECK(d->ops->matmul(d, &bad, X, NT, Y, &e) == -1 && strstr(e.msg, "bad matrix"));
    CHECK(d->ops->matmul(d, &D, X, NT, ARENA - 8, &e) == -1 && strstr(e.msg, "outside"));
    free(wf), free(x), free(y), free(ref), free(wq), free(ya), free(row), free(ra);
    hr_dev_close(d);
}

static void test_elementwise(void) {
    enum { N = 64, T = 2 };
    hr_err e = {{0}};
    hr_dev *d = open_reserved(1);
    if (!d) return;
    float x[T * N], w[N], y[T * N], u[T * N];
    double ref[T * N];
    randf(x, T * N), randf(w, N), randf(u, T * N);
    uint64_t X = alloc(sizeof x), W = alloc(sizeof w), Y = alloc(sizeof y), U = alloc(sizeof u), M = alloc(T * N);
    CHECK(!d->ops->to_dev(d, X, x, sizeof x, &e) && !d->ops->to_dev(d, W, w, sizeof w, &e) && !d->ops->to_dev(d, U, u, sizeof u, &e));
    for (int t = 0; t < T; t++) {
        double s = 0;
        for (int i = 0; i < N; i++) s += (double)x[t * N + i] * x[t * N + i];
        for (int i = 0; i < N; i++) ref[t * N + i] = x[t * N + i] / sqrt(s / N + 1e-5) * w[i];
    }
    CHECK(!d->ops->rmsnorm(d, X, W, N, T, 1e-5f, Y, &e) && !d->ops->to_host(d, y, Y, sizeof y, &e));
    CHECKF(maxrel(y, ref, T * N) < 1e-5, "rmsnorm %g", maxrel(y, ref, T * N));
    /* RoPE: pairs (2i, 2i+1) rotated by pos * base^(-2i/n_rot), two heads of 32, 16 rotated */
    int32_t pos[T] = {5, 300};
    CHECK(!d->ops->rope(d, X, T, 2, 32, 16, pos, 10000.0f, 1.0f, false, NULL, &e) && !d->ops->to_host(d, y, X, sizeof y, &e));
    for (int t = 0; t < T; t++)
        for (int h = 0; h < 2; h++)
            for (int i = 0; i < 32; i++) {
                const float *v = x + t * N + h * 32;
                double r = v[i];
                if (i < 16) {
                    double th = pos[t] * pow(10000.0, -(double)(i & ~1) / 16.0);
                    r = i % 2 ? v[i - 1] * sin(th) + v[i] * cos(th) : v[i] * cos(th) - v[i + 1] * sin(th);
                }
                ref[t * N + h * 32 + i] = r;
            }
    CHECKF(maxrel(y, ref, T * N) < 1e-4, "rope %g", maxrel(y, ref, T * N));
    CHECK(d->ops->rope(d, X, T, 2, 32, 33, pos, 10000.0f, 1.0f, false, NULL, &e) == -1);
    /* RoPE with frequency factors (Llama-3.1's rope_freqs) and an attention factor: pair
     * i's angle divided by ff[i], every rotated value scaled by 0.8 */
    float ff[8];
    for (int i = 0; i < 8; i++) ff[i] = 1.0f + 1.5f * (float)i;
    const uint64_t F = alloc(sizeof ff);
    CHECK(!d->ops->to_dev(d, X, x, sizeof x, &e) && !d->ops->to_dev(d, F, ff, sizeof ff, &e));
    hr_dev_rope ext = {F, 0.0f, 0.8f, {0.0f, 0.0f}};
    CHECK(!d->ops->rope(d, X, T, 2, 32, 16, pos, 10000.0f, 1.0f, false, &ext, &e) && !d->ops->to_host(d, y, X, sizeof y, &e));
    for (int t = 0; t < T; t++)
        for (int h = 0; h < 2; h++)
            for (int i = 0; i < 32; i++) {
                const float *v = x + t * N + h * 32;
                double r = v[i];
                if (i < 16) {
                    double th = pos[t] * pow(10000.0, -(double)(i & ~1) / 16.0) / ff[i / 2];
                    r = 0.8 * (i % 2 ? v[i - 1] * sin(th) + v[i] * cos(th) : v[i] * cos(th) - v[i + 1] * sin(th));
                }
                ref[t * N + h * 32 + i] = r;
            }
    CHECKF(maxrel(y, ref, T * N) < 1e-4, "rope with factors %g", maxrel(y, ref, T * N));
    ext.freq_factors = ARENA - 16; /* 8 factors do not fit there */
    CHECK(d->ops->rope(d, X, T, 2, 32, 16, pos, 10000.0f, 1.0f, false, &ext, &e) == -1 && strstr(e.msg, "rope factors"));
    /* add_bias: every row plus the bias, one float addition per element */
    CHECK(!d->ops->to_dev(d, Y, u, sizeof u, &e) && !d->ops->add_bias(d, W, N, T, Y, &e) && !d->ops->to_host(d, y, Y, sizeof y, &e));
    int bias_bad = 0;
    for (int i = 0; i < T * N; i++) bias_bad += y[i] != u[i] + w[i % N];
    CHECKF(bias_bad == 0, "add_bias: %d elements differ", bias_bad);
    CHECK(d->ops->add_bias(d, W, N, T, ARENA - 4, &e) == -1);
    /* activations: 0 SwiGLU, 1 ReGLU, 2 dReLU, 3 ReLU (no gate), 4 GELU (no gate) */
    CHECK(!d->ops->to_dev(d, X, x, sizeof x, &e));
    for (int act = 0; act < 5; act++) {
        bool gated = act < 3;
        CHECK(!d->ops->ffn_act(d, gated ? X : UINT64_MAX, U, T * N, act, Y, &e) && !d->ops->to_host(d, y, Y, sizeof y, &e));
        for (int i = 0; i < T * N; i++) {
            double g = x[i], v = u[i];
            ref[i] = act == 0 ? g / (1 + exp(-g)) * v : act == 1 ? fmax(g, 0) * v : act == 2 ? fmax(g, 0) * fmax(v, 0)
                   : act == 3 ? fmax(v, 0) : 0.5 * v * (1 + tanh(0.7978845608 * (v + 0.044715 * v * v * v)));
        }
        CHECKF(maxrel(y, ref, T * N) < (act == 4 ? 2e-3 : 1e-5), "act %d: %g", act, maxrel(y, ref, T * N));
    }
    CHECK(d->ops->ffn_act(d, UINT64_MAX, U, T * N, 0, Y, &e) == -1 && strstr(e.msg, "gate"));
    uint8_t mk[T * N];
    for (int i = 0; i < T * N; i++) mk[i] = (uint8_t)(i % 3 == 0);
    CHECK(!d->ops->to_dev(d, M, mk, sizeof mk, &e) && !d->ops->apply_mask(d, U, M, T, N, &e) && !d->ops->to_host(d, y, U, sizeof y, &e));
    int bad = 0;
    for (int i = 0; i < T * N; i++) bad += y[i] != (mk[i] ? u[i] : 0.0f);
    CHECK(bad == 0);
    hr_dev_close(d);
}

/* add is the CPU's residual add_into: bit for bit y + x in float, also in place. An
 * odd length, so no vector width divides it; subnormals and signed zeros included. */
static void test_add(void) {
    enum { N = 4099 };
    hr_err e = {{0}};
    hr_dev *d = open_reserved(1);
    if (!d) return;
    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N), *ref = malloc(sizeof(float) * N),
          *got = malloc(sizeof(float) * N);
    randf(x, N), randf(y, N);
    for (int i = 0; i < N; i += 7) x[i] *= 1e-3f, y[i] *= 3e4f; /* magnitudes apart: rounding matters */
    x[1] = 1e-40f, y[1] = 2e-40f, x[2] = -0.0f, y[2] = -0.0f, x[3] = -y[3];
    uint64_t X = alloc(sizeof(float) * N), Y = alloc(sizeof(float) * N);
    CHECK(!d->ops->to_dev(d, X, x, sizeof(float) * N, &e) && !d->ops->to_dev(d, Y, y, sizeof(float) * N, &e));
    for (int i = 0; i < N; i++) ref[i] = y[i] + x[i];
    CHECKF(!d->ops->add(d, X, N, Y, &e) && !d->ops->to_host(d, got, Y, sizeof(float) * N, &e), "%s", e.msg);
    CHECK(!memcmp(got, ref, sizeof(float) * N));
    CHECKF(!d->ops->add(d, Y, N, Y, &e) && !d->ops->to_host(d, got, Y, sizeof(float) * N, &e), "%s", e.msg);
    for (int i = 0; i < N; i++) ref[i] = ref[i] + ref[i];
    CHECK(!memcmp(got, ref, sizeof(float) * N));
    CHECK(!d->ops->add(d, X, 0, Y, &e));
    CHECK(d->ops->add(d, X, N, ARENA - 4 * N + 4, &e) == -1 && strstr(e.msg, "outside"));
    CHECK(d->ops->add(d, UINT64_MAX - 3, 1, Y, &e) == -1 && strstr(e.msg, "outside"));
    CHECK(d->ops->add(d, X + 2, N, Y, &e) == -1 && strstr(e.msg, "aligned"));
    CHECK(d->ops->add(d, X, N, Y + 1, &e) == -1 && strstr(e.msg, "aligned"));
    CHECK(d->ops->add(d, X, -1, Y, &e) == -1 && strstr(e.msg, "-1 elements"));
    free(x), free(y), free(ref), free(got);
    hr_dev_close(d);
}

/* Attention over two sequences: tokens of sequence 1 must not see sequence 0. */
static void test_attention(void) {
    enum { NH = 4, NKV = 2, HD = 16, CTX = 8, NL = 2, NT = 5 };
    const int qd = NH * HD, kvd = NKV * HD;
    hr_err e = {{0}};
    hr_dev *d = open_reserved(2);
    if (!d) return;
    const uint64_t cache = 2ull * NL * CTX * kvd * 2; /* two sequences */
    uint64_t KC = alloc(cache), VC = alloc(cache), Q = alloc(NT * qd * 4), K = alloc(NT * kvd * 4), V = alloc(NT * kvd * 4),
             O = alloc(NT * qd * 4);
    uint8_t *zero = calloc(1, cache);
    CHECK(!d->ops->to_dev(d, KC, zero, cache, &e) && !d->ops->to_dev(d, VC, zero, cache, &e));
    free(zero);
    float q[NT * 64], k[NT * 32], v[NT * 32], out[NT * 64];
    randf(q, NT * qd), randf(k, NT * kvd), randf(v, NT * kvd);
    /* seq 0 positions 0,1,2; seq 1 positions 0,1 (interleaved) */
    int32_t pos[NT] = {0, 0, 1, 1, 2}, seq[NT] = {0, 1, 0, 1, 0};
    CHECK(!d->ops->to_dev(d, Q, q, sizeof q, &e) && !d->ops->to_dev(d, K, k, sizeof k, &e) && !d->ops->to_dev(d, V, v, sizeof v, &e));
    hr_dev_attn a = {.layer = 1, .n_tok = NT, .n_head = NH, .n_head_kv = NKV, .head_dim = HD, .n_ctx = CTX, .n_layer = NL,
                     .k_cache = KC, .v_cache = VC, .pos = pos, .seq = seq, .scale = 0.25f};
    CHECKF(!d->ops->attention(d, &a, Q, K, V, O, &e) && !d->ops->to_host(d, out, O, sizeof out, &e), "%s", e.msg);
    double ref[NT * 64];
    for (int t = 0; t < NT; t++)
        for (int h = 0; h < NH; h++) {
            const int kh = h / (NH / NKV);
            double s[NT], mx = -1e30, sum = 0;
            int js[NT], n = 0;
            for (int j = 0; j < NT; j++)
                if (seq[j] == seq[t] && pos[j] <= pos[t]) js[n++] = j;
            for (int i = 0; i < n; i++) {
                double dot = 0;
                for (int c = 0; c < HD; c++) dot += (double)q[t * qd + h * HD + c] * hr_f16_to_f32(hr_f32_to_f16(k[js[i] * kvd + kh * HD + c]));
                s[i] = dot * 0.25, mx = fmax(mx, s[i]);
            }
            for (int i = 0; i < n; i++) sum += s[i] = exp(s[i] - mx);
            for (int c = 0; c < HD; c++) {
                double o = 0;
                for (int i = 0; i < n; i++) o += s[i] / sum * hr_f16_to_f32(hr_f32_to_f16(v[js[i] * kvd + kh * HD + c]));
                ref[t * qd + h * HD + c] = o;
            }
        }
    CHECKF(maxrel(out, ref, NT * qd) < 5e-3, "attention %g", maxrel(out, ref, NT * qd));
    int32_t far[NT] = {0, 0, 1, 1, CTX};
    a.pos = far;
    CHECK(d->ops->attention(d, &a, Q, K, V, O, &e) == -1 && strstr(e.msg, "outside the cache"));
    a.pos = pos, a.k_cache = ARENA - 64;
    CHECK(d->ops->attention(d, &a, Q, K, V, O, &e) == -1 && strstr(e.msg, "outside"));
    hr_dev_close(d);
}

int main(void) {
    test_memory();
    test_copies();
    const uint32_t types[] = {HR_F32,   HR_F16,  HR_BF16, HR_Q8_0, HR_Q4_0, HR_Q4_1, HR_Q5_0, HR_Q5_1,
                              HR_IQ4_NL, HR_MXFP4, HR_Q2_K, HR_Q3_K, HR_Q4_K, HR_Q5_K, HR_Q6_K, HR_IQ4_XS};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) test_products(types[i]);
    test_elementwise();
    test_add();
    test_attention();
    hr_err e;
    CHECK(hr_dev_standin_open(CAP, 0, &e) == NULL);
    return TEST_END();
}
