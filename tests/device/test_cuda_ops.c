/* The CUDA device's operations against plain-C references on random data of awkward
 * shapes (rows not a multiple of 256, batches of 1, 3, 17 and 40 tokens, more tokens
 * than one launch carries). Without a usable GPU it prints "skip: <why>" and exits 77.
 *
 * Tolerances, relative to the sum of |terms| of each output (so cancellation does not
 * inflate them), and why:
 *   matmul / gather_matmul, all types: 1e-5. The reference is the CPU's scalar kernel
 *     (same activation preparation); the GPU sums in F32 in another order. The newer block
 *     types (Q4_1 ... IQ4_XS, MXFP4) run on CUDA with F32 activations against the exactly
 *     dequantized weights, so their reference is that product in double (hr_dequant_row
 *     weights); on the stand-in (CPU kernels, quantized activations) it stays the CPU's
 *     scalar kernel. Their weights are random bytes with finite scales (tests/randw.h).
 *   sparse_axpy: 1e-5 (F32 sums, split partials added in another order).
 *   rmsnorm: 1e-6 of |y| (double sums in another order).
 *   rope: 1e-5 absolute (CUDA's cosf/sinf are within 2 ulp, not glibc's).
 *   attention: 2^-10 of sum p |v| (scores summed in F32 and CUDA's expf can move a
 *     probability across an F16 rounding boundary: one F16 ulp, at most 2^-10 of it,
 *     per probability) + 1e-5; the caches bit for bit.
 *   ffn_act: 1e-5 relative (expf, tanhf ulps); GELU 2e-3 (one F16 ulp after rounding).
 *   rope with frequency factors / YaRN / attention factor: the same 1e-5 absolute.
 *   apply_mask, add, add_bias, transfers: exact.
 *   thr_mask: exact, except (CUDA) an element within ffn_act's tolerance of the threshold.
 *   gather_matmul_masked: as gather_matmul; entries whose mask is unset exactly 0. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "backends/device.h"
#include "formats/types.h"
#include "randw.h"
#include "testutil.h"

#define ARENA_BYTES (64ull << 20)

typedef struct {
    hr_dev *d;
    uint64_t top; /* bump allocator over the arena, reset per case */
    hr_rng rng;
    bool cuda;    /* false: the CPU stand-in under test (HEARTH_TEST_STANDIN=1) */
} bench;

static uint64_t dalloc(bench *b, uint64_t bytes) {
    const uint64_t off = b->top;
    b->top += hr_dev_round(bytes ? bytes : 1);
    if (b->top > ARENA_BYTES) {
        fprintf(stderr, "test arena exhausted\n");
        exit(1);
    }
    return off;
}

static uint64_t dput(bench *b, const void *src, uint64_t bytes) {
    hr_err e = {{0}};
    const uint64_t off = dalloc(b, bytes);
    int rc = b->d->ops->to_dev(b->d, off, src, bytes, &e);
    CHECKF(rc == 0, "to_dev: %s", e.msg);
    return off;
}

static void dget(bench *b, void *dst, uint64_t off, uint64_t bytes) {
    hr_err e = {{0}};
    int rc = b->d->ops->to_host(b->d, dst, off, bytes, &e);
    CHECKF(rc == 0, "to_host: %s", e.msg);
    rc = b->d->ops->sync(b->d, &e);
    CHECKF(rc == 0, "sync: %s", e.msg);
}

static float *randv(bench *b, int64_t n, float sd) {
    float *v = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) v[i] = sd * hr_rng_normal(&b->rng);
    return v;
}

/* Counts elements off by more than tol * mag[i] + floor; prints the first. */
static void expect_close(const char *what, const float *got, const float *ref, const float *mag, int64_t n, double tol,
                         double floor) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        const double lim = tol * (mag ? mag[i] : fabs(ref[i])) + floor;
        if (!(fabs((double)got[i] - ref[i]) <= lim)) {
            if (!bad) fprintf(stderr, "%s: [%lld] got %.9g want %.9g (limit %.3g)\n", what, (long long)i, got[i], ref[i], lim);
            bad++;
        }
    }
    CHECKF(bad == 0, "%s: %lld of %lld elements off", what, (long long)bad, (long long)n);
}

/* ---- matmul and gather_matmul ---- */

typedef struct {
    uint32_t type;
    int64_t n_in, n_out;
    size_t row_bytes;
    uint8_t *q;    /* host rows */
    float *deq;    /* dequantized, for magnitudes */
} hmat;

/* The block types beyond Q8_0 and Q4_0. */
static bool newer_quant(uint32_t t) { return hr_type_is_quant(t) && t != HR_Q8_0 && t != HR_Q4_0; }

static hmat make_mat(bench *b, uint32_t type, int64_t n_in, int64_t n_out) {
    hmat m = {type, n_in, n_out, (size_t)hr_row_bytes(type, (uint64_t)n_in), NULL, NULL};
    float *w = randv(b, n_in * n_out, 0.5f);
    m.q = malloc(m.row_bytes * (size_t)n_out);
    m.deq = malloc((size_t)(n_in * n_out) * sizeof(float));
    for (int64_t r = 0; r < n_out; r++) {
        uint8_t *row = m.q + (size_t)r * m.row_bytes;
        if (newer_quant(type)) randw_row(type, row, n_in, 0.5f, &b->rng);
        else hr_quant_row(type, w + r * n_in, row, n_in);
        hr_dequant_row(type, row, m.deq + r * n_in, n_in);
    }
    free(w);
    return m;
}

static void free_mat(hmat *m) {
    free(m->q);
    free(m->deq);
}

/* The CPU engine's numbers: scalar activation preparation and dot product; with f32_act
 * (CUDA's newer block types) the dequantized rows against F32 X, in double. */
static void ref_rows(const hmat *m, const float *X, int64_t n_tok, const int32_t *idx, int64_t n_rows, float *Y,
                     float *mag, bool f32_act) {
    const hr_kernels *k = hr_kernels_scalar();
    void *xq = malloc(hr_act_bytes(m->type, m->n_in));
    for (int64_t t = 0; t < n_tok; t++) {
        if (!f32_act) k->act_prep[m->type](X + t * m->n_in, xq, m->n_in);
        for (int64_t i = 0; i < n_rows; i++) {
            const int64_t r = idx ? idx[i] : i;
            if (!f32_act) k->vec_dot[m->type](m->n_in, &Y[t * n_rows + i], m->q + (size_t)r * m->row_bytes, xq);
            double s = 0, d = 0;
            for (int64_t j = 0; j < m->n_in; j++) {
                const double p = (double)m->deq[r * m->n_in + j] * X[t * m->n_in + j];
                s += fabs(p), d += p;
            }
            mag[t * n_rows + i] = (float)s;
            if (f32_act) Y[t * n_rows + i] = (float)d;
        }
    }
    free(xq);
}

/* x_shift: bytes added to X's offset (4 turns the vector-load path off). */
static void case_matmul(bench *b, uint32_t type, int64_t n_in, int64_t n_tok, bool gather, uint64_t x_shift) {
    b->top = 0;
    const int64_t n_out = 67;
    hmat m = make_mat(b, type, n_in, n_out);
    float *X = randv(b, n_tok * n_in, 1.0f);
    int32_t idx[50];
    const int64_t n_rows = gather ? 50 : n_out;
    for (int i = 0; i < 50; i++) idx[i] = (int32_t)(hr_rng_next(&b->rng) % (uint64_t)n_out);
    hr_dmat W = {type, n_in, n_out, m.row_bytes, dput(b, m.q, m.row_bytes * (size_t)n_out)};
    const uint64_t xo = dalloc(b, (uint64_t)(n_tok * n_in) * 4 + x_shift) + x_shift;
    hr_err e = {{0}};
    CHECKF(b->d->ops->to_dev(b->d, xo, X, (uint64_t)(n_tok * n_in) * 4, &e) == 0, "to_dev: %s", e.msg);
    const uint64_t io = dput(b, idx, sizeof idx), yo = dalloc(b, (uint64_t)(n_tok * n_rows) * 4);
    int rc = gather ? b->d->ops->gather_matmul(b->d, &W, xo, n_tok, io, n_rows, yo, &e)
                    : b->d->ops->matmul(b->d, &W, xo, n_tok, yo, &e);
    CHECKF(rc == 0, "%s: %s", gather ? "gather_matmul" : "matmul", e.msg);
    float *got = malloc((size_t)(n_tok * n_rows) * 4), *ref = malloc((size_t)(n_tok * n_rows) * 4),
          *mag = malloc((size_t)(n_tok * n_rows) * 4);
    dget(b, got, yo, (uint64_t)(n_tok * n_rows) * 4);
    ref_rows(&m, X, n_tok, gather ? idx : NULL, n_rows, ref, mag, b->cuda && newer_quant(type));
    char what[96];
    snprintf(what, sizeof what, "%s %s n_in=%lld n_tok=%lld shift=%llu", gather ? "gather_matmul" : "matmul",
             hr_type_name(type), (long long)n_in, (long long)n_tok, (unsigned long long)x_shift);
    expect_close(what, got, ref, mag, n_tok * n_rows, 1e-5, 1e-6);
    free(got), free(ref), free(mag), free(X);
    free_mat(&m);
}

/* ---- sparse_axpy ---- */

static void case_axpy(bench *b, uint32_t type, int64_t n_cols, int64_t n_idx, int64_t n_tok) {
    b->top = 0;
    const int64_t n_rows = 70;
    hmat m = make_mat(b, type, n_cols, n_rows);
    float *A = randv(b, n_tok * n_idx, 1.0f);
    for (int64_t i = 0; i < n_tok * n_idx; i++)
        if (hr_rng_uniform(&b->rng) < 0.4f) A[i] = 0.0f;
    int32_t *idx = malloc((size_t)n_idx * 4);
    for (int64_t i = 0; i < n_idx; i++) idx[i] = (int32_t)(hr_rng_next(&b->rng) % (uint64_t)n_rows);
    hr_dmat W = {type, n_cols, n_rows, m.row_bytes, dput(b, m.q, m.row_bytes * (size_t)n_rows)};
    const uint64_t ao = dput(b, A, (uint64_t)(n_tok * n_idx) * 4), io = dput(b, idx, (uint64_t)n_idx * 4);
    float *junk = malloc((size_t)(n_tok * n_cols) * 4);
    memset(junk, 0xff, (size_t)(n_tok * n_cols) * 4); /* NaNs: Y must be overwritten */
    const uint64_t yo = dput(b, junk, (uint64_t)(n_tok * n_cols) * 4);
    hr_err e = {{0}};
    CHECKF(b->d->ops->sparse_axpy(b->d, &W, ao, n_tok, io, n_idx, yo, &e) == 0, "sparse_axpy: %s", e.msg);
    float *got = malloc((size_t)(n_tok * n_cols) * 4), *ref = calloc((size_t)(n_tok * n_cols), 4),
          *mag = calloc((size_t)(n_tok * n_cols), 4);
    dget(b, got, yo, (uint64_t)(n_tok * n_cols) * 4);
    for (int64_t t = 0; t < n_tok; t++)
        for (int64_t i = 0; i < n_idx; i++) {
            const float a = A[t * n_idx + i];
            if (a == 0.0f) continue;
            const float *w = m.deq + (int64_t)idx[i] * n_cols;
            for (int64_t k = 0; k < n_cols; k++) {
                ref[t * n_cols + k] = ref[t * n_cols + k] + a * w[k];
                mag[t * n_cols + k] += fabsf(a * w[k]);
            }
        }
    char what[96];
    snprintf(what, sizeof what, "sparse_axpy %s n_cols=%lld n_idx=%lld n_tok=%lld", hr_type_name(type),
             (long long)n_cols, (long long)n_idx, (long long)n_tok);
    expect_close(what, got, ref, mag, n_tok * n_cols, 1e-5, 1e-6);
    free(got), free(ref), free(mag), free(A), free(idx), free(junk);
    free_mat(&m);
}

/* One row with coefficient 1: the device's weights are hr_dequant_row's values exactly
 * (0 + 1 * w == w; compared as values). */
static void case_dequant_exact(bench *b, uint32_t type, int64_t n_cols) {
    b->top = 0;
    const int64_t n_rows = 6;
    hmat m = make_mat(b, type, n_cols, n_rows);
    hr_dmat W = {type, n_cols, n_rows, m.row_bytes, dput(b, m.q, m.row_bytes * (size_t)n_rows)};
    const float one = 1.0f;
    const uint64_t ao = dput(b, &one, 4), yo = dalloc(b, (uint64_t)n_cols * 4);
    float *got = malloc((size_t)n_cols * 4);
    hr_err e = {{0}};
    for (int32_t r = 0; r < n_rows; r++) {
        const uint64_t io = dput(b, &r, 4);
        CHECKF(b->d->ops->sparse_axpy(b->d, &W, ao, 1, io, 1, yo, &e) == 0, "sparse_axpy: %s", e.msg);
        dget(b, got, yo, (uint64_t)n_cols * 4);
        int64_t bad = 0;
        for (int64_t k = 0; k < n_cols; k++) bad += !(got[k] == m.deq[r * n_cols + k]);
        CHECKF(bad == 0, "%s row %d: %lld weights differ from hr_dequant_row", hr_type_name(type), (int)r, (long long)bad);
    }
    free(got);
    free_mat(&m);
}

/* ---- rmsnorm, rope ---- */

static void case_rmsnorm(bench *b, int64_t n, int64_t n_tok, bool in_place) {
    b->top = 0;
    float *X = randv(b, n * n_tok, 2.0f), *w = randv(b, n, 1.0f);
    const uint64_t xo = dput(b, X, (uint64_t)(n * n_tok) * 4), wo = dput(b, w, (uint64_t)n * 4);
    const uint64_t yo = in_place ? xo : dalloc(b, (uint64_t)(n * n_tok) * 4);
    hr_err e = {{0}};
    CHECKF(b->d->ops->rmsnorm(b->d, xo, wo, n, n_tok, 1e-5f, yo, &e) == 0, "rmsnorm: %s", e.msg);
    float *got = malloc((size_t)(n * n_tok) * 4), *ref = malloc((size_t)(n * n_tok) * 4);
    dget(b, got, yo, (uint64_t)(n * n_tok) * 4);
    for (int64_t t = 0; t < n_tok; t++) {
        const float *x = X + t * n;
        double sum = 0;
        for (int64_t i = 0; i < n; i++) sum += (double)(x[i] * x[i]);
        const float scale = 1.0f / sqrtf((float)(sum / (double)n) + 1e-5f);
        for (int64_t i = 0; i < n; i++) ref[t * n + i] = (x[i] * scale) * w[i];
    }
    expect_close(in_place ? "rmsnorm in place" : "rmsnorm", got, ref, NULL, n * n_tok, 1e-6, 1e-7);
    free(got), free(ref), free(X), free(w);
}

/* RoPE's extensions as ggml defines them (rope_yarn): NULL ff / y: none. */
typedef struct {
    float ext, attn, c0, c1;
} yarn_ref;

static void ref_rope(float *x, int32_t n_head, int32_t hd, int32_t n_rot, int32_t pos, float base, float fs, bool neox,
                     const float *ff, const yarn_ref *y) {
    float cs[1024];
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    float theta = (float)pos;
    for (int32_t i = 0; i < n_rot; i += 2) {
        const float te = ff ? theta / ff[i / 2] : theta, ti = fs * te;
        float t = ti, m = y ? y->attn : 1.0f;
        if (y && y->ext != 0.0f) {
            const float w = fmaxf(0.001f, y->c1 - y->c0), r = ((float)(i / 2) - y->c0) / w;
            const float mix = (1.0f - fminf(1.0f, fmaxf(0.0f, r))) * y->ext;
            t = ti * (1.0f - mix) + te * mix;
            m *= 1.0f + 0.1f * logf(1.0f / fs);
        }
        cs[i] = cosf(t) * m;
        cs[i + 1] = sinf(t) * m;
        theta *= theta_scale;
    }
    for (int32_t h = 0; h < n_head; h++) {
        float *v = x + (int64_t)h * hd;
        for (int32_t i = 0; i < n_rot; i += 2) {
            const int32_t a = neox ? i / 2 : i, c = neox ? i / 2 + n_rot / 2 : i + 1;
            const float x0 = v[a], x1 = v[c];
            v[a] = x0 * cs[i] - x1 * cs[i + 1];
            v[c] = x0 * cs[i + 1] + x1 * cs[i];
        }
    }
}

/* factors: random divisors in [1, 40) (Llama-3.1's span); y NULL: no YaRN / attention factor. */
static void case_rope(bench *b, int64_t n_tok, int32_t n_rot, float fs, bool neox, bool factors, const yarn_ref *y) {
    b->top = 0;
    const int32_t n_head = 3, hd = 64;
    const int64_t n = n_tok * n_head * hd;
    float *X = randv(b, n, 1.0f), *got = malloc((size_t)n * 4), *ref = malloc((size_t)n * 4);
    int32_t *pos = malloc((size_t)n_tok * 4), *keep = malloc((size_t)n_tok * 4);
    for (int64_t t = 0; t < n_tok; t++) keep[t] = pos[t] = (int32_t)(hr_rng_next(&b->rng) % 5000);
    const uint64_t xo = dput(b, X, (uint64_t)n * 4);
    float ff[512];
    for (int32_t i = 0; i < n_rot / 2; i++) ff[i] = 1.0f + 39.0f * (float)(hr_rng_next(&b->rng) % 1000) / 1000.0f;
    const hr_dev_rope ext = {factors ? dput(b, ff, (uint64_t)n_rot / 2 * 4) : UINT64_MAX, y ? y->ext : 0.0f,
                             y ? y->attn : 1.0f, {y ? y->c0 : 0.0f, y ? y->c1 : 0.0f}};
    hr_err e = {{0}};
    CHECKF(b->d->ops->rope(b->d, xo, n_tok, n_head, hd, n_rot, pos, 10000.0f, fs, neox, factors || y ? &ext : NULL, &e) == 0,
           "rope: %s", e.msg);
    memset(pos, 0xff, (size_t)n_tok * 4); /* host positions may be reused once the call returns */
    dget(b, got, xo, (uint64_t)n * 4);
    memcpy(ref, X, (size_t)n * 4);
    for (int64_t t = 0; t < n_tok; t++)
        ref_rope(ref + t * n_head * hd, n_head, hd, n_rot, keep[t], 10000.0f, fs, neox, factors ? ff : NULL, y);
    char what[120];
    snprintf(what, sizeof what, "rope n_tok=%lld n_rot=%d fs=%g neox=%d factors=%d yarn=%g attn=%g", (long long)n_tok, n_rot, fs,
             neox, factors, y ? y->ext : 0.0f, y ? y->attn : 1.0f);
    expect_close(what, got, ref, NULL, n, 0.0, 1e-5);
    free(got), free(ref), free(X), free(pos), free(keep);
}

/* ---- attention ---- */

typedef struct {
    int32_t n_seq, n_layer, n_ctx, n_head, n_head_kv, hd;
    uint16_t *kc, *vc; /* host mirror of the F16 caches */
    uint64_t kco, vco;
} attn_fix;

static float f16r(float x) { return hr_f16_to_f32(hr_f32_to_f16(x)); }

/* The CPU's attend_one with an F16 cache: q rounded, double K.q sums, softmax with a
 * double sum, probabilities rounded to F16. */
static void ref_attend(const attn_fix *f, int32_t layer, int32_t seq, int32_t pos, const float *q, int32_t h, float *out,
                       float *mag, float *s) {
    const int32_t hd = f->hd, kvd = f->n_head_kv * hd, kvh = h / (f->n_head / f->n_head_kv);
    const size_t base = (((size_t)seq * f->n_layer + (size_t)layer) * (size_t)f->n_ctx) * (size_t)kvd + (size_t)kvh * hd;
    float qh[256];
    for (int32_t d = 0; d < hd; d++) qh[d] = f16r(q[d]);
    const int32_t n = pos + 1;
    for (int32_t p = 0; p < n; p++) {
        double sum = 0;
        for (int32_t d = 0; d < hd; d++) sum += (double)(hr_f16_to_f32(f->kc[base + (size_t)p * kvd + d]) * qh[d]);
        s[p] = (float)sum;
    }
    float max = -INFINITY;
    for (int32_t p = 0; p < n; p++) {
        s[p] *= 1.0f / sqrtf((float)hd);
        if (s[p] > max) max = s[p];
    }
    double sum = 0;
    for (int32_t p = 0; p < n; p++) {
        s[p] = expf(s[p] - max);
        sum += (double)s[p];
    }
    const float inv = (float)(1.0 / sum);
    for (int32_t d = 0; d < hd; d++) out[d] = mag[d] = 0.0f;
    for (int32_t p = 0; p < n; p++) {
        const float w = f16r(s[p] * inv);
        for (int32_t d = 0; d < hd; d++) {
            const float v = hr_f16_to_f32(f->vc[base + (size_t)p * kvd + d]);
            out[d] += w * v;
            mag[d] += w * fabsf(v);
        }
    }
}

static void attn_batch(bench *b, attn_fix *f, int32_t layer, int32_t n_tok, const int32_t *pos, const int32_t *seq) {
    const int32_t kvd = f->n_head_kv * f->hd, qd = f->n_head * f->hd;
    const uint64_t saved = b->top;
    float *Q = randv(b, (int64_t)n_tok * qd, 1.0f), *K = randv(b, (int64_t)n_tok * kvd, 1.0f),
          *V = randv(b, (int64_t)n_tok * kvd, 1.0f);
    const uint64_t qo = dput(b, Q, (uint64_t)n_tok * qd * 4), ko = dput(b, K, (uint64_t)n_tok * kvd * 4),
                   vo = dput(b, V, (uint64_t)n_tok * kvd * 4), oo = dalloc(b, (uint64_t)n_tok * qd * 4);
    hr_dev_attn a = {layer, n_tok, f->n_head, f->n_head_kv, f->hd, f->n_ctx, f->n_layer, f->kco, f->vco,
                     pos, seq, 1.0f / sqrtf((float)f->hd)};
    hr_err e = {{0}};
    CHECKF(b->d->ops->attention(b->d, &a, qo, ko, vo, oo, &e) == 0, "attention: %s", e.msg);
    float *got = malloc((size_t)n_tok * qd * 4), *ref = malloc((size_t)n_tok * qd * 4),
          *mag = malloc((size_t)n_tok * qd * 4), *s = malloc((size_t)f->n_ctx * 4);
    dget(b, got, oo, (uint64_t)n_tok * qd * 4);
    for (int32_t t = 0; t < n_tok; t++) {
        const size_t cell = (((size_t)seq[t] * f->n_layer + (size_t)layer) * (size_t)f->n_ctx + (size_t)pos[t]) * kvd;
        for (int32_t j = 0; j < kvd; j++) {
            f->kc[cell + j] = hr_f32_to_f16(K[(size_t)t * kvd + j]);
            f->vc[cell + j] = hr_f32_to_f16(V[(size_t)t * kvd + j]);
        }
    }
    for (int32_t t = 0; t < n_tok; t++)
        for (int32_t h = 0; h < f->n_head; h++)
            ref_attend(f, layer, seq[t], pos[t], Q + (size_t)t * qd + (size_t)h * f->hd, h,
                       ref + (size_t)t * qd + (size_t)h * f->hd, mag + (size_t)t * qd + (size_t)h * f->hd, s);
    char what[64];
    snprintf(what, sizeof what, "attention layer=%d n_tok=%d", layer, n_tok);
    expect_close(what, got, ref, mag, (int64_t)n_tok * qd, 1.0 / 1024, 1e-5);
    free(got), free(ref), free(mag), free(s), free(Q), free(K), free(V);
    b->top = saved;
}

static void case_attention(bench *b) {
    b->top = 0;
    attn_fix f = {2, 2, 320, 4, 2, 64, NULL, NULL, 0, 0};
    const size_t cells = (size_t)f.n_seq * f.n_layer * f.n_ctx * f.n_head_kv * f.hd;
    f.kc = calloc(cells, 2), f.vc = calloc(cells, 2);
    f.kco = dput(b, f.kc, cells * 2), f.vco = dput(b, f.vc, cells * 2);
    int32_t pos[300], seq[300];
    for (int i = 0; i < 17; i++) pos[i] = i, seq[i] = 0;
    attn_batch(b, &f, 1, 17, pos, seq);
    const int32_t p2[4] = {17, 0, 1, 2}, s2[4] = {0, 1, 1, 1};
    attn_batch(b, &f, 1, 4, p2, s2);
    const int32_t p3 = 18, s3 = 0; /* decode: one token */
    attn_batch(b, &f, 1, 1, &p3, &s3);
    for (int i = 0; i < 300; i++) pos[i] = i, seq[i] = 1; /* more tokens than one launch carries */
    attn_batch(b, &f, 0, 300, pos, seq);
    uint16_t *kc = malloc(cells * 2), *vc = malloc(cells * 2);
    dget(b, kc, f.kco, cells * 2);
    dget(b, vc, f.vco, cells * 2);
    CHECKF(memcmp(kc, f.kc, cells * 2) == 0, "attention: K cache differs from the stored rows");
    CHECKF(memcmp(vc, f.vc, cells * 2) == 0, "attention: V cache differs from the stored rows");
    free(kc), free(vc), free(f.kc), free(f.vc);
}

/* A long context: more scores than shared memory holds, so they are recomputed. The
 * earlier cells are filled directly with random F16 values. */
static void case_attention_long(bench *b) {
    b->top = 0;
    attn_fix f = {1, 1, 12288, 2, 1, 64, NULL, NULL, 0, 0};
    const size_t cells = (size_t)f.n_ctx * f.n_head_kv * f.hd;
    f.kc = malloc(cells * 2), f.vc = malloc(cells * 2);
    for (size_t i = 0; i < cells; i++) {
        f.kc[i] = hr_f32_to_f16(hr_rng_normal(&b->rng));
        f.vc[i] = hr_f32_to_f16(hr_rng_normal(&b->rng));
    }
    f.kco = dput(b, f.kc, cells * 2), f.vco = dput(b, f.vc, cells * 2);
    /* 11690 and 11700: scores that just fit shared memory with the kernel's static part */
    const int32_t pos[4] = {11690, 11700, 12000, 12001}, seq[4] = {0, 0, 0, 0};
    attn_batch(b, &f, 0, 4, pos, seq);
    free(f.kc), free(f.vc);
}

/* ---- ffn_act, apply_mask ---- */

static float silu(float v) { return v / (1.0f + expf(-v)); }
static float relu(float v) { return v > 0 ? v : 0; }
static float gelu(float v) {
    if (v <= -10.0f) return 0.0f;
    if (v >= 10.0f) return v;
    const float x = f16r(v);
    return f16r(0.5f * x * (1.0f + tanhf(0.79788456080286535587989211986876f * x * (1.0f + 0.044715f * x * x))));
}

/* enum hr_act order: SWIGLU, REGLU, DRELU, RELU, GELU; ReLU and GELU also ungated. */
static float ref_act(int act, const float *g, float u) {
    switch (act) {
    case 0: return silu(*g) * u;
    case 1: return relu(*g) * u;
    case 2: return relu(*g) * relu(u);
    case 3: return g ? relu(*g) * u : relu(u);
    default: return g ? gelu(*g) * u : gelu(u);
    }
}

static void case_act(bench *b, int act, bool gated) {
    b->top = 0;
    const int64_t n = 1000;
    float *G = randv(b, n, 3.0f), *U = randv(b, n, 3.0f), *got = malloc(n * 4), *ref = malloc(n * 4);
    U[0] = -12.0f, U[1] = 12.0f, U[2] = 0.0f, G[3] = 0.0f;
    const uint64_t go = dput(b, G, n * 4), uo = dput(b, U, n * 4), ho = dalloc(b, n * 4);
    hr_err e = {{0}};
    CHECKF(b->d->ops->ffn_act(b->d, gated ? go : UINT64_MAX, uo, n, act, ho, &e) == 0, "ffn_act: %s", e.msg);
    dget(b, got, ho, n * 4);
    for (int64_t i = 0; i < n; i++) ref[i] = ref_act(act, gated ? &G[i] : NULL, U[i]);
    char what[48];
    snprintf(what, sizeof what, "ffn_act %d%s", act, gated ? " gated" : "");
    expect_close(what, got, ref, NULL, n, act == 4 ? 2e-3 : 1e-5, 1e-6);
    free(G), free(U), free(got), free(ref);
}

/* gpt-oss's clamped SwiGLU against a reference written from its formula (min(g, limit),
 * u clamped to [-limit, limit], x sigmoid(alpha x) (u + 1)), at and past both clamps. */
static void case_swiglu_oai(bench *b) {
    b->top = 0;
    const int64_t n = 1000;
    const float alpha = 1.702f, limit = 7.0f;
    float *G = randv(b, n, 9.0f), *U = randv(b, n, 9.0f), *got = malloc(n * 4), *ref = malloc(n * 4);
    G[0] = limit, G[1] = 20.0f, G[2] = -20.0f, U[3] = -limit, U[4] = 30.0f, U[5] = -30.0f, G[6] = 0.0f;
    const uint64_t go = dput(b, G, n * 4), uo = dput(b, U, n * 4), ho = dalloc(b, n * 4);
    hr_err e = {{0}};
    CHECKF(b->d->ops->swiglu_oai(b->d, go, uo, n, alpha, limit, ho, &e) == 0, "swiglu_oai: %s", e.msg);
    dget(b, got, ho, n * 4);
    for (int64_t i = 0; i < n; i++) {
        const double x = fmin((double)G[i], limit), y = fmax(fmin((double)U[i], limit), -limit);
        ref[i] = (float)(x / (1.0 + exp(-alpha * x)) * (y + 1.0));
    }
    expect_close("swiglu_oai", got, ref, NULL, n, 1e-5, 1e-6);
    free(G), free(U), free(got), free(ref);
}

static void case_mask(bench *b) {
    b->top = 0;
    const int64_t n_tok = 3, n = 1000;
    float *A = randv(b, n_tok * n, 1.0f), *got = malloc(n_tok * n * 4);
    uint8_t *mask = malloc(n_tok * n);
    for (int64_t i = 0; i < n_tok * n; i++) mask[i] = (uint8_t)(hr_rng_next(&b->rng) % 3); /* 0, 1, 2 */
    const uint64_t ao = dput(b, A, n_tok * n * 4), mo = dput(b, mask, n_tok * n);
    hr_err e = {{0}};
    CHECKF(b->d->ops->apply_mask(b->d, ao, mo, n_tok, n, &e) == 0, "apply_mask: %s", e.msg);
    dget(b, got, ao, n_tok * n * 4);
    int64_t bad = 0;
    for (int64_t i = 0; i < n_tok * n; i++) bad += got[i] != (mask[i] ? A[i] : 0.0f);
    CHECKF(bad == 0, "apply_mask: %lld elements wrong", (long long)bad);
    free(A), free(got), free(mask);
}

/* ---- FFN mode threshold's split: thr_mask, gather_matmul_masked ---- */

/* The mask is the host's test |act(g)| > thr; on CUDA an element within rounding of the
 * threshold (expf/tanhf ulps; GELU one F16 ulp) may go either way, nothing else. */
static void case_thr_mask(bench *b, int act) {
    b->top = 0;
    const int64_t n = 1003;
    const float thr = 0.2f;
    float *G = randv(b, n, 3.0f);
    G[0] = 0.0f, G[1] = -12.0f, G[2] = 12.0f;
    uint8_t *got = malloc(n);
    const uint64_t go = dput(b, G, n * 4), mo = dalloc(b, n);
    hr_err e = {{0}};
    CHECKF(b->d->ops->thr_mask(b->d, go, n, thr, act, mo, &e) == 0, "thr_mask: %s", e.msg);
    dget(b, got, mo, n);
    int64_t bad = 0, on = 0;
    for (int64_t i = 0; i < n; i++) {
        const float one = 1.0f, mag = fabsf(ref_act(act, &G[i], one));
        const bool want = mag > thr, near = fabsf(mag - thr) <= (act == 4 ? 2e-3f : 1e-5f) * thr;
        bad += got[i] != want && !(b->cuda && near), on += want;
    }
    CHECKF(bad == 0 && on > 0 && on < n, "thr_mask act %d: %lld of %lld wrong (%lld above)", act, (long long)bad, (long long)n, (long long)on);
    free(G), free(got);
}

/* Y = mask ? the gathered product : 0, exactly 0 where the mask is unset: rows no token
 * sets, rows some tokens set, and every row set. */
static void case_gather_masked(bench *b, uint32_t type, int64_t n_in, int64_t n_tok) {
    b->top = 0;
    const int64_t n_out = 67, n_rows = 50;
    hmat m = make_mat(b, type, n_in, n_out);
    float *X = randv(b, n_tok * n_in, 1.0f);
    int32_t idx[50];
    uint8_t *mk = malloc((size_t)(n_tok * n_rows));
    for (int i = 0; i < 50; i++) idx[i] = (int32_t)(hr_rng_next(&b->rng) % (uint64_t)n_out);
    for (int64_t t = 0; t < n_tok; t++)
        for (int64_t i = 0; i < n_rows; i++) /* rows 0..9 unset, 10..19 set, the rest at random */
            mk[t * n_rows + i] = i < 10 ? 0 : i < 20 ? 1 : (uint8_t)(hr_rng_next(&b->rng) % 3 == 0);
    hr_dmat W = {type, n_in, n_out, m.row_bytes, dput(b, m.q, m.row_bytes * (size_t)n_out)};
    const uint64_t xo = dput(b, X, (uint64_t)(n_tok * n_in) * 4), io = dput(b, idx, sizeof idx);
    const uint64_t mo = dput(b, mk, (uint64_t)(n_tok * n_rows)), yo = dalloc(b, (uint64_t)(n_tok * n_rows) * 4);
    float *got = malloc((size_t)(n_tok * n_rows) * 4), *ref = malloc((size_t)(n_tok * n_rows) * 4),
          *mag = malloc((size_t)(n_tok * n_rows) * 4);
    for (int64_t i = 0; i < n_tok * n_rows; i++) got[i] = NAN;
    hr_err e = {{0}};
    CHECK(b->d->ops->to_dev(b->d, yo, got, (uint64_t)(n_tok * n_rows) * 4, &e) == 0); /* stale values must go */
    CHECKF(b->d->ops->gather_matmul_masked(b->d, &W, xo, n_tok, io, n_rows, mo, yo, &e) == 0, "gather_matmul_masked: %s", e.msg);
    dget(b, got, yo, (uint64_t)(n_tok * n_rows) * 4);
    ref_rows(&m, X, n_tok, idx, n_rows, ref, mag, b->cuda && newer_quant(type));
    int64_t bad = 0;
    for (int64_t i = 0; i < n_tok * n_rows; i++)
        if (!mk[i]) bad += got[i] != 0.0f, got[i] = ref[i] = 0.0f;
    char what[96];
    snprintf(what, sizeof what, "gather_matmul_masked %s n_in=%lld n_tok=%lld", hr_type_name(type), (long long)n_in, (long long)n_tok);
    CHECKF(bad == 0, "%s: %lld masked entries not 0", what, (long long)bad);
    expect_close(what, got, ref, mag, n_tok * n_rows, 1e-5, 1e-6);
    free(got), free(ref), free(mag), free(X), free(mk);
    free_mat(&m);
}

/* The CPU's add_into, bit for bit: one float addition per element, nothing fused. An odd
 * length (no vector width divides it), magnitudes far apart so rounding shows, subnormals
 * (no flush to zero) and signed zeros; then in place, X == Y. */
/* add_bias: every row plus the bias, one F32 addition per element (bit for bit). */
static void case_add_bias(bench *b, int64_t n, int64_t n_tok) {
    b->top = 0;
    float *B = randv(b, n, 1.0f), *Y = randv(b, n * n_tok, 1.0f), *got = malloc((size_t)(n * n_tok) * 4);
    const uint64_t bo = dput(b, B, (uint64_t)n * 4), yo = dput(b, Y, (uint64_t)(n * n_tok) * 4);
    hr_err e = {{0}};
    CHECKF(b->d->ops->add_bias(b->d, bo, n, n_tok, yo, &e) == 0, "add_bias: %s", e.msg);
    CHECKF(b->d->ops->add_bias(b->d, bo, n, 0, yo, &e) == 0, "add_bias of no rows: %s", e.msg);
    dget(b, got, yo, (uint64_t)(n * n_tok) * 4);
    int64_t bad = 0;
    for (int64_t t = 0; t < n_tok; t++)
        for (int64_t i = 0; i < n; i++) {
            const float r = Y[t * n + i] + B[i];
            bad += memcmp(&got[t * n + i], &r, 4) != 0;
        }
    CHECKF(bad == 0, "add_bias %lld x %lld: %lld elements differ", (long long)n_tok, (long long)n, (long long)bad);
    CHECKF(b->d->ops->add_bias(b->d, bo, n, n_tok, ARENA_BYTES, &e) == -1, "add_bias outside the arena must fail");
    free(B), free(Y), free(got);
}

static void case_add(bench *b) {
    b->top = 0;
    const int64_t n = 4099;
    float *X = randv(b, n, 1.0f), *Y = randv(b, n, 1.0f), *got = malloc(n * 4), *ref = malloc(n * 4);
    for (int64_t i = 0; i < n; i += 7) X[i] *= 1e-3f, Y[i] *= 3e4f;
    X[1] = 1e-40f, Y[1] = 2e-40f, X[2] = -0.0f, Y[2] = -0.0f, X[3] = -Y[3];
    const uint64_t xo = dput(b, X, n * 4), yo = dput(b, Y, n * 4);
    hr_err e = {{0}};
    CHECKF(b->d->ops->add(b->d, xo, n, yo, &e) == 0, "add: %s", e.msg);
    CHECKF(b->d->ops->add(b->d, xo, 0, yo, &e) == 0, "add of nothing: %s", e.msg);
    dget(b, got, yo, n * 4);
    for (int64_t i = 0; i < n; i++) ref[i] = Y[i] + X[i];
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad += memcmp(&got[i], &ref[i], 4) != 0;
    CHECKF(bad == 0, "add: %lld of %lld elements differ", (long long)bad, (long long)n);
    CHECKF(b->d->ops->add(b->d, yo, n, yo, &e) == 0, "add in place: %s", e.msg);
    dget(b, got, yo, n * 4);
    bad = 0;
    for (int64_t i = 0; i < n; i++) {
        const float r = ref[i] + ref[i];
        bad += memcmp(&got[i], &r, 4) != 0;
    }
    CHECKF(bad == 0, "add in place: %lld of %lld elements differ", (long long)bad, (long long)n);
    CHECK(b->d->ops->add(b->d, xo + 2, n, yo, &e) == -1 && strstr(e.msg, "aligned"));
    CHECK(b->d->ops->add(b->d, xo, -1, yo, &e) == -1);
    free(X), free(Y), free(got), free(ref);
}

/* ---- device-level behaviour ---- */

static void case_basics(bench *b) {
    hr_err e = {{0}};
    uint64_t fr = 0, tot = 0;
    CHECKF(b->d->ops->mem_info(b->d, &fr, &tot, &e) == 0, "mem_info: %s", e.msg);
    CHECK(tot > 0 && fr <= tot);
    if (b->cuda) {
        CHECK(b->d->ops->overhead(b->d) >= (64ull << 20));
        CHECK(strcmp(b->d->ops->name, "cuda") == 0);
        CHECK(b->d->ops->reserve(b->d, 1024, &e) == -1 && strstr(e.msg, "already"));
        CHECK(hr_dev_cuda_open(9999, &e) == NULL && strstr(e.msg, "does not exist"));
    }

    b->top = 0;
    uint8_t *h = b->d->ops->host_alloc(b->d, 4096), *back = malloc(4096);
    CHECK(h != NULL);
    for (int i = 0; i < 4096; i++) h[i] = (uint8_t)(i * 7);
    const uint64_t o = dput(b, h, 4096);
    dget(b, back, o, 4096);
    CHECK(memcmp(h, back, 4096) == 0);
    b->d->ops->host_free(b->d, h);
    b->d->ops->host_free(b->d, NULL);
    free(back);

    /* Bad arguments fail with a message and leave the device usable. */
    hr_dmat W = {HR_F32, 64, 4, 256, ARENA_BYTES - 512};
    CHECK(b->d->ops->matmul(b->d, &W, 0, 1, 0, &e) == -1 && strstr(e.msg, "outside"));
    const uint8_t small[8] = {0};
    CHECK(b->d->ops->to_dev(b->d, ARENA_BYTES - 4, small, 8, &e) == -1 && strstr(e.msg, "outside"));
    CHECK(b->d->ops->ffn_act(b->d, UINT64_MAX, 0, 16, 99, 0, &e) == -1 && strstr(e.msg, "activation"));
    CHECK(b->d->ops->ffn_act(b->d, UINT64_MAX, 0, 16, 0, 0, &e) == -1 && strstr(e.msg, "gate"));
    CHECK(b->d->ops->add(b->d, 0, 16, ARENA_BYTES - 32, &e) == -1 && strstr(e.msg, "outside"));
    int32_t bad_pos = 400;
    hr_dev_attn a = {0, 1, 4, 2, 64, 320, 2, 0, 0, &bad_pos, NULL, 0.125f};
    CHECK(b->d->ops->attention(b->d, &a, 0, 0, 0, 0, &e) == -1);
    if (b->cuda) CHECK(strstr(e.msg, "position") != NULL);
    CHECKF(b->d->ops->sync(b->d, &e) == 0, "sync after bad calls: %s", e.msg);
}

/* The copy stream (the expert cache's refills): 70 copies from pinned memory, so CUDA's ring of
 * 64 events wraps, land in place; copy_done never waits, copy_sync does and then every ticket
 * is done; a ticket never issued and a destination outside the arena are errors. */
static void case_copies(bench *b) {
    hr_err e = {{0}};
    enum { N = 70, SZ = 512 };
    b->top = 0;
    uint8_t *h = b->d->ops->host_alloc(b->d, N * SZ), *back = malloc(N * SZ);
    if (!h || !back) {
        CHECK(0);
        b->d->ops->host_free(b->d, h), free(back);
        return;
    }
    for (int i = 0; i < N * SZ; i++) h[i] = (uint8_t)(i * 13 + 1);
    const uint64_t o = dalloc(b, N * SZ);
    uint64_t t = 0, first = 0;
    bool done = false;
    for (int k = 0; k < N; k++) {
        CHECKF(b->d->ops->copy_async(b->d, o + (uint64_t)k * SZ, h + k * SZ, SZ, &t, &e) == 0, "copy_async %d: %s", k, e.msg);
        if (!k) first = t;
    }
    CHECKF(t == first + N - 1 && b->d->ops->copy_done(b->d, t, &done, &e) == 0, "copy_done: %s", e.msg);
    CHECKF(b->d->ops->copy_sync(b->d, &e) == 0, "copy_sync: %s", e.msg);
    CHECK(b->d->ops->copy_done(b->d, t, &done, &e) == 0 && done && b->d->ops->copy_done(b->d, first, &done, &e) == 0 && done);
    dget(b, back, o, N * SZ);
    CHECK(memcmp(h, back, N * SZ) == 0);
    CHECK(b->d->ops->copy_done(b->d, t + 1, &done, &e) == -1 && strstr(e.msg, "ticket"));
    CHECK(b->d->ops->copy_async(b->d, ARENA_BYTES - 8, h, 64, &t, &e) == -1 && strstr(e.msg, "outside"));
    b->d->ops->host_free(b->d, h);
    free(back);
}

/* HEARTH_TEST_STANDIN=1 runs the same comparisons on the CPU stand-in: a check of the
 * references themselves on machines without a GPU. */
int main(void) {
    hr_err e = {{0}};
    const char *sd = getenv("HEARTH_TEST_STANDIN");
    const bool cuda = !(sd && strcmp(sd, "1") == 0);
    hr_dev *d = cuda ? hr_dev_cuda_open(0, &e) : hr_dev_standin_open(ARENA_BYTES + (1u << 20), 2, &e);
    if (!d) {
        printf("skip: %s\n", e.msg);
        return 77;
    }
    bench b = {d, 0, {42}, cuda};
    CHECKF(d->ops->reserve(d, ARENA_BYTES, &e) == 0, "reserve: %s", e.msg);
    case_basics(&b);
    case_copies(&b);

    const uint32_t types[] = {HR_F32,   HR_F16,  HR_BF16, HR_Q8_0, HR_Q4_0, HR_Q4_1, HR_Q5_0, HR_Q5_1,
                              HR_IQ4_NL, HR_MXFP4, HR_Q2_K, HR_Q3_K, HR_Q4_K, HR_Q5_K, HR_Q6_K, HR_IQ4_XS};
    const int64_t toks[] = {1, 3, 17, 40};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const uint32_t t = types[ti];
        if (!cuda && !hr_kernels_best()->vec_dot[t]) { /* the stand-in runs the CPU's best kernels */
            printf("note: the CPU's %s kernels have no %s vec_dot yet: not compared\n", hr_kernels_best()->name,
                   hr_type_name(t));
            continue;
        }
        const bool quant = hr_type_is_quant(t), k256 = hr_type_block_elems(t) == 256;
        /* 800: 25 blocks, not a multiple of 256; 96: 3 blocks; 45: odd, no vector loads;
         * 256-element types: 768 (3 super-blocks) and one. MXFP4 at 800 has odd rows (25 x 17). */
        const int64_t sizes[2] = {k256 ? 768 : 800, k256 ? 256 : quant ? 96 : 45};
        for (int si = 0; si < 2; si++)
            for (int k = 0; k < 4; k++) {
                case_matmul(&b, t, sizes[si], toks[k], false, 0);
                case_matmul(&b, t, sizes[si], toks[k], true, 0);
            }
        case_matmul(&b, t, sizes[0], 3, false, 4); /* X not 16-byte aligned */
        for (int k = 0; k < 3; k++) {
            case_axpy(&b, t, sizes[1], 37, toks[k]);
            case_axpy(&b, t, sizes[0], 600, toks[k]); /* several splits */
        }
        case_axpy(&b, t, sizes[0], 0, 3); /* no rows: Y zeroed */
        case_dequant_exact(&b, t, sizes[0]);
    }
    for (int k = 0; k < 2; k++) {
        case_rmsnorm(&b, 1000, 3, k);
        case_rmsnorm(&b, 4096, 1, k);
    }
    case_rmsnorm(&b, 64, 3 * 40, 1); /* per-head q/k norms: head-sized rows, in place */
    case_rmsnorm(&b, 128, 17, 0);
    case_rope(&b, 17, 64, 1.0f, false, false, NULL);
    case_rope(&b, 17, 64, 0.25f, true, false, NULL);
    case_rope(&b, 300, 32, 1.0f, true, false, NULL);
    case_rope(&b, 300, 32, 1.0f, false, false, NULL);
    /* Llama-3.1 rope_freqs, YaRN (mixing, attention factor), both layouts, partial rotation */
    const yarn_ref yarn = {1.0f, 1.0f, 5.3f, 24.7f}, yarn_att = {1.0f, 0.85f, 3.0f, 3.0f}, att = {0.0f, 1.2f, 0.0f, 0.0f};
    for (int neox = 0; neox < 2; neox++) {
        case_rope(&b, 17, 64, 1.0f, neox, true, NULL);
        case_rope(&b, 17, 64, 0.25f, neox, false, &yarn);
        case_rope(&b, 300, 64, 0.125f, neox, true, &yarn);
        case_rope(&b, 3, 32, 0.5f, neox, true, &yarn_att);
        case_rope(&b, 40, 64, 0.25f, neox, false, &att);
    }
    case_attention(&b);
    case_attention_long(&b);
    for (int act = 0; act < 5; act++) {
        case_act(&b, act, true);
        if (act >= 3) case_act(&b, act, false);
    }
    case_swiglu_oai(&b);
    case_mask(&b);
    for (int act = 0; act < 5; act++) case_thr_mask(&b, act);
    const uint32_t mtypes[] = {HR_F32, HR_F16, HR_Q8_0, HR_Q4_0, HR_Q4_K};
    for (size_t ti = 0; ti < sizeof mtypes / sizeof mtypes[0]; ti++)
        for (int k = 0; k < 4; k++) /* 17 and 40 tokens: the tile path */
            if (cuda || hr_kernels_best()->vec_dot[mtypes[ti]]) case_gather_masked(&b, mtypes[ti], mtypes[ti] == HR_Q4_K ? 256 : 96, toks[k]);
    case_add(&b);
    case_add_bias(&b, 4099, 3);
    case_add_bias(&b, 64, 40);
    hr_dev_close(d);
    return TEST_END();
}
