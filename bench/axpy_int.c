/* A prototype of the Q4_0 sparse axpy in integer sums (docs/performance.md, "Next for the
 * quantized axpy"), measured against the engine's axpy (not a test, not engine code). Both run
 * one thread over the same random sorted active rows of a Q4_0 ffn_down_t-shaped matrix
 * (N_OUT rows of N_IN), each call on its own copy of ~256 MB of copies so its rows come from
 * DRAM; the table gives medians over rounds of GB/s over the active rows' bytes, and each one's
 * largest error against a float64 sum of the exactly dequantized terms.
 * The prototype works in chunks of 1024 matrix rows (fixed ranges, as the engine's chunks): a
 * pre-pass reads each active row's block scales (every cache line of the row: the DRAM read)
 * into coefficient x scale and the maximum per block of 32 outputs; each row's terms round to
 * 8000 steps of that maximum, split into two int8 limbs (k = 64 hi + lo); groups of 4 or 8 rows,
 * now in L2, have their bytes interleaved per output (vpermt2b) and summed by vpdpbusd into
 * int32 per output; one float multiply-add per output and chunk (s * (sum - 8 sum k)). The last
 * line splits the 8-row path's time into the pre-pass, the limbs and the groups.
 * PF_MODE (compile time): how the pre-pass fetches the row PF_ROWS on: 0 at the offsets it
 * reads (as the engine's axpy), 1 only its first three lines, 2 not at all, 3 as 0 with NTA.
 * AVX-512 VBMI + VNNI only. Usage: bench_axpy_int [ROUNDS] [N_IN] [N_OUT] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/sparse.h"
#include "bench_util.h"
#include "formats/types.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi,avx512vnni,f16c,fma")))
#define KMAX 8000.0f

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
    int64_t nb;      /* blocks of 32 outputs */
    float *c;        /* [n_act][nb] coefficient times block scale */
    float *mx, *s, *inv;
    int32_t *sumk;   /* [nb] the sum of every row's k per block */
    uint32_t *khi, *klo; /* [nb] a group's 4 limbs per block, one byte per row */
    int32_t *acc;    /* [nb * 32] */
    double t_pre, t_limbs, t_group;
} iws;

/* The 8 F16 scales of the 8 blocks at w (144 bytes), as the engine's axpy reads them. */
TGT static __m256 scales8(const char *w) {
    const __m512i i = _mm512_setr_epi32(0x00090000, 0x001b0012, 0x002d0024, 0x003f0036, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i s = _mm512_permutex2var_epi16(_mm512_loadu_si512(w), i, _mm512_loadu_si512(w + 64));
    return _mm256_cvtph_ps(_mm512_castsi512_si128(s));
}

/* Coefficient times scale per block of each active row, and the maximum per block; the row
 * PF_ROWS on is fetched into L2 meanwhile. */
#ifndef PF_ROWS
#define PF_ROWS 4
#endif
#ifndef PF_MODE
#define PF_MODE 0 /* 0: the row PF_ROWS on at the offsets read; 1: its first lines; 2: none; 3: as 0, NTA */
#endif
TGT static void prepass(iws *ws, const char *const *rows, const float *a, int64_t n) {
    const int64_t nb = ws->nb;
    for (int64_t b = 0; b < nb; b += 8) _mm256_storeu_ps(ws->mx + b, _mm256_setzero_ps());
    const __m256 abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (int64_t r = 0; r < n; r++) {
        const __m256 av = _mm256_set1_ps(a[r]);
        const char *nx = rows[r + PF_ROWS < n ? r + PF_ROWS : n - 1]; /* scattered rows: no hardware stream finds them */
#if PF_MODE == 1 /* the next row's first lines only: the hardware stream takes the rest */
        for (int q = 0; q < 192; q += 64) _mm_prefetch(nx + q, _MM_HINT_T1);
#endif
        for (int64_t b = 0; b < nb; b += 8) {
#if PF_MODE == 0
            for (int q = 0; q < 144; q += 64) _mm_prefetch(nx + b * 18 + q, _MM_HINT_T1);
#elif PF_MODE == 3
            for (int q = 0; q < 144; q += 64) _mm_prefetch(nx + b * 18 + q, _MM_HINT_NTA);
#endif
            const __m256 c = _mm256_mul_ps(scales8(rows[r] + b * 18), av);
            _mm256_storeu_ps(ws->c + r * nb + b, c);
            _mm256_storeu_ps(ws->mx + b, _mm256_max_ps(_mm256_loadu_ps(ws->mx + b), _mm256_and_ps(c, abs)));
        }
    }
    for (int64_t b = 0; b < nb; b++) {
        ws->s[b] = ws->mx[b] / KMAX;
        ws->inv[b] = ws->mx[b] > 0 ? KMAX / ws->mx[b] : 0.0f;
        ws->sumk[b] = 0;
    }
    memset(ws->acc, 0, sizeof(int32_t) * (size_t)nb * 32);
}

/* The limbs of rows g..g+3 (c rows; NULL: a row of zeros) into khi/klo, and their sum of k. */
TGT static void limbs4(iws *ws, const float *const *c, int st, int slot) {
    const int64_t nb = ws->nb;
    for (int64_t b = 0; b < nb; b += 16) {
        __m128i h[4], l[4];
        __m512i ks = _mm512_loadu_si512(ws->sumk + b);
        for (int r = 0; r < 4; r++) {
            const __m512 cf = c[r] ? _mm512_loadu_ps(c[r] + b) : _mm512_setzero_ps();
            const __m512i k = _mm512_cvtps_epi32(_mm512_mul_ps(cf, _mm512_loadu_ps(ws->inv + b)));
            const __m512i hi = _mm512_srai_epi32(_mm512_add_epi32(k, _mm512_set1_epi32(32)), 6);
            const __m512i lo = _mm512_sub_epi32(k, _mm512_slli_epi32(hi, 6));
            h[r] = _mm512_cvtepi32_epi8(hi), l[r] = _mm512_cvtepi32_epi8(lo);
            ks = _mm512_add_epi32(ks, k);
        }
        _mm512_storeu_si512(ws->sumk + b, ks);
        for (int p = 0; p < 2; p++) {
            const __m128i *v = p ? l : h;
            uint32_t *o = (p ? ws->klo : ws->khi) + b * st + slot;
            const __m128i ab0 = _mm_unpacklo_epi8(v[0], v[1]), ab1 = _mm_unpackhi_epi8(v[0], v[1]);
            const __m128i cd0 = _mm_unpacklo_epi8(v[2], v[3]), cd1 = _mm_unpackhi_epi8(v[2], v[3]);
            _Alignas(16) uint32_t t[16];
            _mm_store_si128((__m128i *)(t + 0), _mm_unpacklo_epi16(ab0, cd0));
            _mm_store_si128((__m128i *)(t + 4), _mm_unpackhi_epi16(ab0, cd0));
            _mm_store_si128((__m128i *)(t + 8), _mm_unpacklo_epi16(ab1, cd1));
            _mm_store_si128((__m128i *)(t + 12), _mm_unpackhi_epi16(ab1, cd1));
            if (st == 1) memcpy(o, t, sizeof t);
            else
                for (int q = 0; q < 16; q++) o[q * st] = t[q];
        }
    }
}

/* vpermt2b indices: word w of 128-bit lane L is (row 0, row 1) byte j = 4L + w % 4 of block
 * b (w < 4) or b + 1, from 64-byte windows at block b of the two rows. */
TGT static __m512i pair_idx(void) {
    _Alignas(64) uint8_t ix[64];
    for (int L = 0; L < 4; L++)
        for (int w = 0; w < 8; w++)
            for (int t = 0; t < 2; t++) ix[16 * L + 2 * w + t] = (uint8_t)(64 * t + (w < 4 ? 2 : 20) + 4 * L + w % 4);
    return _mm512_load_si512(ix);
}

TGT static void add_block(iws *ws, int64_t blk, __m512i z) {
    const __m512i m = _mm512_set1_epi8(0x0f);
    const __m512i lo = _mm512_and_si512(z, m), hi = _mm512_and_si512(_mm512_srli_epi16(z, 4), m);
    const __m512i kh = _mm512_set1_epi32((int)ws->khi[blk]), kl = _mm512_set1_epi32((int)ws->klo[blk]), zr = _mm512_setzero_si512();
    const __m512i o0 = _mm512_add_epi32(_mm512_slli_epi32(_mm512_dpbusd_epi32(zr, lo, kh), 6), _mm512_dpbusd_epi32(zr, lo, kl));
    const __m512i o1 = _mm512_add_epi32(_mm512_slli_epi32(_mm512_dpbusd_epi32(zr, hi, kh), 6), _mm512_dpbusd_epi32(zr, hi, kl));
    int32_t *acc = ws->acc + blk * 32;
    _mm512_storeu_si512(acc, _mm512_add_epi32(_mm512_loadu_si512(acc), o0));
    _mm512_storeu_si512(acc + 16, _mm512_add_epi32(_mm512_loadu_si512(acc + 16), o1));
}

/* One group of 4 rows (each readable 64 bytes past its last block's start). */
TGT static void group4(iws *ws, const char *const *w, __m512i idx) {
    for (int64_t b = 0; b < ws->nb; b += 2) {
        const int64_t o = b * 18;
        const __m512i p01 = _mm512_permutex2var_epi8(_mm512_loadu_si512(w[0] + o), idx, _mm512_loadu_si512(w[1] + o));
        const __m512i p23 = _mm512_permutex2var_epi8(_mm512_loadu_si512(w[2] + o), idx, _mm512_loadu_si512(w[3] + o));
        add_block(ws, b, _mm512_unpacklo_epi16(p01, p23));
        add_block(ws, b + 1, _mm512_unpackhi_epi16(p01, p23));
    }
}

/* Rows g.. of a chunk's n for a group of R: their pointers, and their coefficient rows (NULL
 * past the chunk's end, where the first row stands in with coefficients of zero). */
static void group_rows(const iws *ws, const char *const *rows, int64_t n, int64_t g, int R, const char **w, const float **c) {
    for (int r = 0; r < R; r++) {
        w[r] = rows[g + r < n ? g + r : g];
        c[r] = g + r < n ? ws->c + (g + r) * ws->nb : NULL;
    }
}

/* One chunk of rows: the pre-pass, the groups, then y += s * (sum - 8 * sum k) per output. */
TGT static void chunk_int(iws *ws, const char *const *rows, const float *a, int64_t n, float *y, __m512i idx) {
    prepass(ws, rows, a, n);
    for (int64_t g = 0; g < n; g += 4) {
        const char *w[4];
        const float *c[4];
        group_rows(ws, rows, n, g, 4, w, c);
        limbs4(ws, c, 1, 0);
        group4(ws, w, idx);
    }
    for (int64_t b = 0; b < ws->nb; b++) {
        const __m512 s = _mm512_set1_ps(ws->s[b]);
        const __m512i corr = _mm512_set1_epi32(8 * ws->sumk[b]);
        for (int h = 0; h < 2; h++) {
            const __m512i v = _mm512_sub_epi32(_mm512_loadu_si512(ws->acc + b * 32 + 16 * h), corr);
            float *yo = y + b * 32 + 16 * h;
            _mm512_storeu_ps(yo, _mm512_fmadd_ps(s, _mm512_cvtepi32_ps(v), _mm512_loadu_ps(yo)));
        }
    }
}


/* 8 rows a pass, 4 int32 accumulators per block (low / high nibbles x high / low limb) kept
 * apart until the chunk ends: per block 2 x 4 vpdpbusd into 4 loaded accumulators. */
TGT static void add_block8(iws *ws, int64_t blk, __m512i za, __m512i zb) {
    const __m512i m = _mm512_set1_epi8(0x0f);
    const __m512i la = _mm512_and_si512(za, m), ha = _mm512_and_si512(_mm512_srli_epi16(za, 4), m);
    const __m512i lb = _mm512_and_si512(zb, m), hb = _mm512_and_si512(_mm512_srli_epi16(zb, 4), m);
    const __m512i kha = _mm512_set1_epi32((int)ws->khi[2 * blk]), kla = _mm512_set1_epi32((int)ws->klo[2 * blk]);
    const __m512i khb = _mm512_set1_epi32((int)ws->khi[2 * blk + 1]), klb = _mm512_set1_epi32((int)ws->klo[2 * blk + 1]);
    int32_t *acc = ws->acc + blk * 64;
    _mm512_storeu_si512(acc, _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_loadu_si512(acc), la, kha), lb, khb));
    _mm512_storeu_si512(acc + 16, _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_loadu_si512(acc + 16), la, kla), lb, klb));
    _mm512_storeu_si512(acc + 32, _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_loadu_si512(acc + 32), ha, kha), hb, khb));
    _mm512_storeu_si512(acc + 48, _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_loadu_si512(acc + 48), ha, kla), hb, klb));
}

TGT static void group8(iws *ws, const char *const *w, __m512i idx) {
    for (int64_t b = 0; b < ws->nb; b += 2) {
        const int64_t o = b * 18;
        __m512i p[4];
        for (int q = 0; q < 4; q++)
            p[q] = _mm512_permutex2var_epi8(_mm512_loadu_si512(w[2 * q] + o), idx, _mm512_loadu_si512(w[2 * q + 1] + o));
        add_block8(ws, b, _mm512_unpacklo_epi16(p[0], p[1]), _mm512_unpacklo_epi16(p[2], p[3]));
        add_block8(ws, b + 1, _mm512_unpackhi_epi16(p[0], p[1]), _mm512_unpackhi_epi16(p[2], p[3]));
    }
}

TGT static void chunk_int8(iws *ws, const char *const *rows, const float *a, int64_t n, float *y, __m512i idx) {
    double t0 = now();
    prepass(ws, rows, a, n);
    ws->t_pre += now() - t0;
    memset(ws->acc, 0, sizeof(int32_t) * (size_t)ws->nb * 64);
    for (int64_t g = 0; g < n; g += 8) {
        const char *w[8];
        const float *c[8];
        group_rows(ws, rows, n, g, 8, w, c);
        double t1 = now();
        limbs4(ws, c, 2, 0);
        limbs4(ws, c + 4, 2, 1);
        double t2 = now();
        group8(ws, w, idx);
        ws->t_limbs += t2 - t1, ws->t_group += now() - t2;
    }
    for (int64_t b = 0; b < ws->nb; b++) {
        const __m512 s = _mm512_set1_ps(ws->s[b]);
        const __m512i corr = _mm512_set1_epi32(8 * ws->sumk[b]);
        const int32_t *acc = ws->acc + b * 64;
        for (int h = 0; h < 2; h++) {
            const __m512i v = _mm512_add_epi32(_mm512_slli_epi32(_mm512_loadu_si512(acc + 32 * h), 6),
                                               _mm512_loadu_si512(acc + 32 * h + 16));
            float *yo = y + b * 32 + 16 * h;
            _mm512_storeu_ps(yo, _mm512_fmadd_ps(s, _mm512_cvtepi32_ps(_mm512_sub_epi32(v, corr)), _mm512_loadu_ps(yo)));
        }
    }
}

/* Chunks of CHUNK_ROWS rows of the matrix (fixed row ranges, as the engine's axpy chunks are,
 * so a chunk's scales depend only on its own rows' coefficients): its active rows, ~0.1-0.7 MB,
 * read from DRAM by the pre-pass and again from L2 by the groups. */
#define CHUNK_ROWS 1024
TGT static void axpy_int(iws *ws, const char *const *rows, const int32_t *ix, const float *a, int64_t n, float *y, int eight) {
    const __m512i idx = pair_idx();
    memset(y, 0, sizeof(float) * (size_t)ws->nb * 32);
    for (int64_t i = 0; i < n;) {
        int64_t j = i;
        while (j < n && ix[j] / CHUNK_ROWS == ix[i] / CHUNK_ROWS) j++;
        if (eight) chunk_int8(ws, rows + i, a + i, j - i, y, idx);
        else chunk_int(ws, rows + i, a + i, j - i, y, idx);
        i = j;
    }
}

/* Largest |y - ref| over the rms of ref. */
static double rel_err(const float *y, const double *ref, int64_t n) {
    double e = 0, ss = 0;
    for (int64_t i = 0; i < n; i++) e = fmax(e, fabs(y[i] - ref[i])), ss += ref[i] * ref[i];
    return e / sqrt(ss / (double)n);
}

int main(int argc, char **argv) {
    const int rounds = argc > 1 ? atoi(argv[1]) : 9;
    const int64_t n_in = argc > 2 ? atoll(argv[2]) : 4096, n_out = argc > 3 ? atoll(argv[3]) : 11008;
    if (rounds < 1 || rounds > 64 || n_in < 64 || n_in % 64 || n_out < 16) {
        fprintf(stderr, "usage: bench_axpy_int [ROUNDS <= 64] [N_IN, a multiple of 64] [N_OUT]\n");
        return 2;
    }
    if (!__builtin_cpu_supports("avx512vbmi") || !__builtin_cpu_supports("avx512vnni")) {
        printf("bench_axpy_int: needs AVX-512 VBMI and VNNI; this CPU has not both\n");
        return 0;
    }
    const size_t rb = hr_row_bytes(HR_Q4_0, (uint64_t)n_in), mat = rb * (size_t)n_out + 128; /* window slack */
    const int nc = (int)(256e6 / (double)mat) + 1;
    char *w = bench_weights(mat * (size_t)nc, 1);
    float *row = malloc(sizeof(float) * (size_t)n_in);
    uint64_t seed = 7;
    if (!w || !row) return 1;
    for (int64_t r = 0; r < n_out; r++) { /* 64 distinct rows, repeated */
        if (r < 64) {
            for (int64_t i = 0; i < n_in; i++) row[i] = (float)(bench_rng(&seed) >> 40) / (float)(1 << 23) - 1.0f;
            hr_quant_row(HR_Q4_0, row, w + (size_t)r * rb, n_in);
        } else {
            memcpy(w + (size_t)r * rb, w + (size_t)(r % 64) * rb, rb);
        }
    }
    for (int k = 1; k < nc; k++) memcpy(w + (size_t)k * mat, w, mat);
    hr_cpu cpu;
    hr_err e = {{0}};
    hr_sparse_ws sws;
    hr_sparse_ws_init(&sws);
    if (hr_cpu_init(&cpu, 1, &e) || hr_sparse_reserve(&sws, &cpu, 1, n_in, &e)) return fprintf(stderr, "%s\n", e.msg), 1;
    iws ws = {.nb = n_in / 32};
    ws.c = malloc(sizeof(float) * (size_t)(n_out * ws.nb));
    ws.mx = malloc(sizeof(float) * (size_t)ws.nb), ws.s = malloc(sizeof(float) * (size_t)ws.nb);
    ws.inv = malloc(sizeof(float) * (size_t)ws.nb), ws.sumk = malloc(sizeof(int32_t) * (size_t)ws.nb);
    ws.khi = malloc(sizeof(uint32_t) * (size_t)ws.nb * 2), ws.klo = malloc(sizeof(uint32_t) * (size_t)ws.nb * 2);
    ws.acc = malloc(sizeof(int32_t) * (size_t)ws.nb * 64);
    int32_t *idx = malloc(sizeof(int32_t) * (size_t)n_out);
    float *a = malloc(sizeof(float) * (size_t)n_out), *y0 = malloc(sizeof(float) * (size_t)n_in);
    float *y1 = malloc(sizeof(float) * (size_t)n_in), *y2 = malloc(sizeof(float) * (size_t)n_in), *deq = malloc(sizeof(float) * (size_t)n_in);
    double *ref = malloc(sizeof(double) * (size_t)n_in);
    const char **rows = malloc(sizeof(char *) * (size_t)n_out);
    bench_loadavg("before");
    printf("Q4_0 rows of %lld, %lld rows, 1 thread, %d rounds, GB/s over the active rows' bytes (medians)\n",
           (long long)n_in, (long long)n_out, rounds);
    const double fr[] = {0.10, 0.30, 0.60};
    int64_t n_all = 0; /* active rows over the fractions */
    for (size_t f = 0; f < sizeof fr / sizeof fr[0]; f++) {
        int64_t n = 0;
        for (int64_t r = 0; r < n_out; r++)
            if ((double)(bench_rng(&seed) >> 11) / 9007199254740992.0 < fr[f]) idx[n++] = (int32_t)r;
        for (int64_t i = 0; i < n; i++) { /* ReLU-like: positive, heavy-tailed */
            const double u = (double)((bench_rng(&seed) >> 11) + 1) / 9007199254740993.0;
            a[i] = (float)(-log(u) * -log(u));
        }
        double t0[64], t1[64], t2[64];
        for (int rd = 0; rd < rounds; rd++) { /* each call on its own copy: none finds the last one's rows in cache */
            const char *base[3];
            for (int k = 0; k < 3; k++) base[k] = w + (size_t)((3 * rd + k) % nc) * mat;
            hr_mat W = {.type = HR_Q4_0, .n_in = n_in, .n_out = n_out, .row_bytes = rb, .data = base[0]};
            double t = now();
            if (hr_sparse_axpy_ws(&cpu, &sws, &W, a, 1, idx, n, y0, &e)) return fprintf(stderr, "%s\n", e.msg), 1;
            t0[rd] = now() - t;
            for (int64_t i = 0; i < n; i++) rows[i] = base[1] + (size_t)idx[i] * rb;
            t = now();
            axpy_int(&ws, rows, idx, a, n, y1, 0);
            t1[rd] = now() - t;
            for (int64_t i = 0; i < n; i++) rows[i] = base[2] + (size_t)idx[i] * rb;
            t = now();
            axpy_int(&ws, rows, idx, a, n, y2, 1);
            t2[rd] = now() - t;
        }
        memset(ref, 0, sizeof(double) * (size_t)n_in);
        for (int64_t i = 0; i < n; i++) {
            hr_dequant_row(HR_Q4_0, w + (size_t)idx[i] * rb, deq, n_in);
            for (int64_t j = 0; j < n_in; j++) ref[j] += (double)a[i] * deq[j];
        }
        n_all += n;
        const double gb = (double)n * (double)rb / 1e9, m0 = bench_median(t0, rounds), m1 = bench_median(t1, rounds);
        const double m2 = bench_median(t2, rounds);
        printf("%3.0f%% rows (%lld): engine axpy %6.2f GB/s (max err %.2g of rms)  integer, 4 rows %6.2f GB/s (%.2g)  "
               "8 rows %6.2f GB/s (%.2g)  ratios %.2f %.2f\n",
               100 * fr[f], (long long)n, gb / m0, rel_err(y0, ref, n_in), gb / m1, rel_err(y1, ref, n_in), gb / m2,
               rel_err(y2, ref, n_in), m0 / m1, m0 / m2);
    }
    /* The read alone (the pre-pass) for 10% of the rows picked in runs of R adjacent rows: what
     * putting co-active neurons side by side could give the sparse operators. */
    printf("the pre-pass's read of 10%% of the rows in runs of R adjacent rows (GB/s, median):");
    for (int R = 1; R <= 32; R *= 2) {
        int64_t n = 0;
        for (int64_t r0 = 0; r0 + R <= n_out; r0 += R)
            if ((double)(bench_rng(&seed) >> 11) / 9007199254740992.0 < 0.10)
                for (int q = 0; q < R; q++) idx[n++] = (int32_t)(r0 + q);
        double tp[64];
        for (int rd = 0; rd < rounds; rd++) {
            const char *base = w + (size_t)(rd % nc) * mat;
            for (int64_t i = 0; i < n; i++) rows[i] = base + (size_t)idx[i] * rb;
            double t = now();
            for (int64_t i = 0; i < n; i += CHUNK_ROWS / 8) prepass(&ws, rows + i, a, n - i < CHUNK_ROWS / 8 ? n - i : CHUNK_ROWS / 8);
            tp[rd] = now() - t;
        }
        printf("  R=%d %.1f", R, (double)n * (double)rb / 1e9 / bench_median(tp, rounds));
    }
    printf("\n");
    const double all = 0.0 + (double)rounds * (double)rb * (double)n_all / 1e9;
    printf("8-row path, all rounds: pre-pass %.1f ms (%.1f GB/s: the rows' read), limbs %.1f ms, groups %.1f ms (%.1f GB/s from L2)\n",
           ws.t_pre * 1e3, all / ws.t_pre, ws.t_limbs * 1e3, ws.t_group * 1e3, all / ws.t_group);
    bench_loadavg("after");
    return 0;
}
#else
int main(void) {
    printf("bench_axpy_int: x86-64 with GCC or Clang only\n");
    return 0;
}
#endif
