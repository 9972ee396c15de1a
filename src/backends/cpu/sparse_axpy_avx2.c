/* AVX2 + FMA + F16C axpy kernels. A pass over the output takes 32 elements at a time:
 * the accumulator's four registers are loaded once, each row's 32-element block is
 * dequantized into registers (q * d, exact) and fused-multiply-added in row order,
 * then stored, so HR_AXPY_ROWS rows cost one load and store of the accumulator.
 * Several tokens: each row block is dequantized once and applied to every token.
 * The 256-element types go a super-block at a time: each row's scales decoded once into
 * floats, then the eight 32-element sub-blocks as bytes widened to registers
 * (sparse_axpy_dq_avx2.h); against one sub-block at a time with the scales unpacked per
 * sub-block, this ran Q4_K, Q6_K 1.7-2.3x faster from cache (one thread, Zen 4). */
#include "sparse_axpy_impl.h"

#if defined(HR_X86) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#include <math.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))
#define BLK 32

#include "sparse_axpy_dq_avx2.h" /* the newer block types */

/* ---- 32 weights of block b as four registers, and one weight as a float ---- */
INLINE void dq_f32(const void *w, int64_t b, __m256 v[4]) {
    const float *p = (const float *)w + b * BLK;
    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) v[j] = _mm256_loadu_ps(p + 8 * j);
}
INLINE void dq_f16(const void *w, int64_t b, __m256 v[4]) {
    const uint16_t *p = (const uint16_t *)w + b * BLK;
    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) v[j] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 8 * j)));
}
INLINE void dq_bf16(const void *w, int64_t b, __m256 v[4]) {
    const uint16_t *p = (const uint16_t *)w + b * BLK;
    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
        __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(p + 8 * j)));
        v[j] = _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
    }
}
INLINE void dq_q8_0(const void *w, int64_t b, __m256 v[4]) {
    const hr_block_q8_0 *B = (const hr_block_q8_0 *)w + b;
    const __m256 d = _mm256_cvtph_ps(_mm_set1_epi16((short)B->d));
    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
        __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(B->qs + 8 * j)));
        v[j] = _mm256_mul_ps(_mm256_cvtepi32_ps(q), d);
    }
}
/* Q4_0: nibbles widened to dwords, then (q - 8) * d as fma(q, d, -8d): the exact
 * product inside the fma makes the one rounding exact, as (q - 8) * d is a float
 * (hr_dequant_row's value) for every finite d. */
INLINE void dq_q4_0(const void *w, int64_t b, __m256 v[4]) {
    const hr_block_q4_0 *B = (const hr_block_q4_0 *)w + b;
    const __m256 d = _mm256_cvtph_ps(_mm_set1_epi16((short)B->d));
    const __m256 m8d = _mm256_mul_ps(d, _mm256_set1_ps(-8.0f));
    const __m256i m = _mm256_set1_epi32(0x0f);
    __m256i x0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)B->qs));
    __m256i x1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(B->qs + 8)));
    v[0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(x0, m)), d, m8d);
    v[1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(x1, m)), d, m8d);
    v[2] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(x0, 4)), d, m8d);
    v[3] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(x1, 4)), d, m8d);
}

INLINE uint16_t u16(const void *w, int64_t k) {
    uint16_t h;
    memcpy(&h, (const char *)w + 2 * k, 2);
    return h;
}
INLINE float sc_f32(const void *w, int64_t k) {
    float f;
    memcpy(&f, (const char *)w + 4 * k, 4);
    return f;
}
INLINE float sc_f16(const void *w, int64_t k) { return _cvtsh_ss(u16(w, k)); }
INLINE float sc_bf16(const void *w, int64_t k) { return hr_bf16_to_f32(u16(w, k)); }
INLINE float sc_none(const void *w, int64_t k) { (void)w, (void)k; return 0.0f; } /* block types: no tail */

/* Software prefetch AX_PF_AHEAD bytes ahead along each row, one per cache line and
 * never past the row's end (the next row in memory is usually not an active one);
 * the driver prefetches the start of the next rows. */
#ifndef AX_PF_AHEAD
#define AX_PF_AHEAD 768
#endif
INLINE void pf_ahead(const void *row, int64_t b, int64_t nb, size_t bs) {
    const size_t o = (size_t)b * bs + AX_PF_AHEAD;
    if (o >= (size_t)nb * bs) return;
    if (bs >= 64) {
        for (size_t q = 0; q < bs; q += 64) _mm_prefetch((const char *)row + o + q, _MM_HINT_T0);
    } else if ((o & 63) < bs) {
        _mm_prefetch((const char *)row + o, _MM_HINT_T0);
    }
}

/* The next call's rows (ax_decode passes them), fetched at the offset this call reads:
 * a call's worth of lead, spread over the call like a hardware stream's requests. Into L2
 * (T1): more misses can be in flight there than in L1's fill buffers; F16 at 10% of 11008
 * rows of 4096 on one Zen 4 core went from 52-57% of the dense kernel's GB/s to 77-84%
 * (bench/sparse.c, docs/performance.md). */
#ifndef AX_PF_NEXT
#define AX_PF_NEXT 1
#endif
#ifndef AX_NEXT_HINT
#define AX_NEXT_HINT _MM_HINT_T1
#endif
INLINE void pf_next(const void *const *nx, int r, size_t o, size_t bs) {
    if (!AX_PF_NEXT || !nx) return;
    if (bs >= 64) {
        for (size_t q = 0; q < bs; q += 64) _mm_prefetch((const char *)nx[r] + o + q, AX_NEXT_HINT);
    } else if ((o & 63) < bs) {
        _mm_prefetch((const char *)nx[r] + o, AX_NEXT_HINT);
    }
}

/* One token, R rows, every coefficient non-zero. */
#define AXPY_T1(DQ, SC, BS, R)                                                                      \
    do {                                                                                            \
        __m256 av[R];                                                                               \
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) av[r] = _mm256_set1_ps(a[r]);           \
        const int64_t nb = n / BLK;                                                                 \
        for (int64_t b = 0; b < nb; b++) {                                                          \
            float *yb = y + b * BLK;                                                                \
            __m256 acc[4];                                                                          \
            _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) acc[j] = _mm256_loadu_ps(yb + 8 * j); \
            _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                                   \
                __m256 v[4];                                                                        \
                pf_ahead(w[r], b, nb, BS);                                                          \
                pf_next(nx, r, (size_t)b * BS, BS);                                                 \
                DQ(w[r], b, v);                                                                     \
                _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)                                 \
                    acc[j] = _mm256_fmadd_ps(v[j], av[r], acc[j]);                                  \
            }                                                                                       \
            _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) _mm256_storeu_ps(yb + 8 * j, acc[j]); \
        }                                                                                           \
        for (int64_t k = nb * BLK; k < n; k++)                                                      \
            _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) y[k] = fmaf(SC(w[r], k), a[r], y[k]); \
    } while (0)

/* Any number of tokens, R rows; coefficients a[t*HR_AXPY_ROWS + r], zeros skipped. */
#define AXPY_TN(DQ, SC, BS, R)                                                                      \
    do {                                                                                            \
        const int64_t nb = n / BLK;                                                                 \
        for (int64_t b = 0; b < nb; b++) {                                                          \
            __m256 v[R][4];                                                                         \
            _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                                   \
                pf_ahead(w[r], b, nb, BS);                                                          \
                pf_next(nx, r, (size_t)b * BS, BS);                                                 \
                DQ(w[r], b, v[r]);                                                                  \
            }                                                                                       \
            for (int64_t t = 0; t < n_tok; t++) {                                                   \
                float *yb = y + t * ys + b * BLK;                                                   \
                const float *at = a + t * HR_AXPY_ROWS;                                             \
                __m256 acc[4];                                                                      \
                _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) acc[j] = _mm256_loadu_ps(yb + 8 * j); \
                _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                               \
                    if (at[r] == 0.0f) continue;                                                    \
                    const __m256 s = _mm256_set1_ps(at[r]);                                         \
                    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)                             \
                        acc[j] = _mm256_fmadd_ps(v[r][j], s, acc[j]);                               \
                }                                                                                   \
                _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) _mm256_storeu_ps(yb + 8 * j, acc[j]); \
            }                                                                                       \
        }                                                                                           \
        for (int64_t k = nb * BLK; k < n; k++)                                                      \
            for (int64_t t = 0; t < n_tok; t++)                                                     \
                _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)                                 \
                    if (a[t * HR_AXPY_ROWS + r] != 0.0f)                                            \
                        y[t * ys + k] = fmaf(SC(w[r], k), a[t * HR_AXPY_ROWS + r], y[t * ys + k]);  \
    } while (0)

#include "sparse_axpy_entry.h"


/* ---- 256-element types: one super-block of every row per step ----
 * Each row's super-block header is decoded once (dqs_prep_*), then the eight 32-element
 * sub-blocks follow with constant offsets and shifts (the loop unrolls). */
/* The scale group of sub-block sb's half h (16 elements). */
#define DQ_G(TYPE, sb, h) (DQ_G32_##TYPE ? (sb) : 2 * (sb) + (h))
#define DQS(TYPE, MIN)                                                                              \
    INLINE void dqs_##TYPE(const dq_sb *st, int sb, __m256 v[4]) {                                  \
        const __m256i q = dqs_q_##TYPE(st, sb);                                                     \
        const __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);          \
        const __m128i part[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};             \
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {                                       \
            const __m256 x = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(part[j]));                     \
            const __m256 p = _mm256_mul_ps(_mm256_set1_ps(st->d[DQ_G(TYPE, sb, j / 2)]), x);                 \
            v[j] = MIN ? _mm256_sub_ps(p, _mm256_set1_ps(st->m[DQ_G(TYPE, sb, j / 2)])) : p;                 \
        }                                                                                           \
    }
DQS(q2_K, 1)
DQS(q3_K, 0)
DQS(q4_K, 1)
DQS(q5_K, 1)
DQS(q6_K, 0)
DQS(iq4_xs, 0)

/* Prefetch super-block s + AX_PF_AHEAD / bb's lines of a row (not past its end). */
INLINE void pf_sb(const void *row, int64_t s, int64_t ns, size_t bb) {
    const size_t o = (size_t)s * bb + AX_PF_AHEAD, end = (size_t)ns * bb;
    _Pragma("GCC unroll 4") for (size_t q = 0; q < bb; q += 64)
        if (o + q < end) _mm_prefetch((const char *)row + o + q, _MM_HINT_T0);
}

#define AXPY_K_T1(TYPE, R)                                                                          \
    do {                                                                                            \
        __m256 av[R];                                                                               \
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) av[r] = _mm256_set1_ps(a[r]);           \
        const int64_t ns = n / HR_QK_K;                                                             \
        const size_t bb = sizeof(hr_block_##TYPE);                                                  \
        dq_sb st[R];                                                                                \
        for (int64_t s = 0; s < ns; s++) {                                                          \
            _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                                   \
                pf_sb(w[r], s, ns, bb);                                                             \
                pf_next(nx, r, (size_t)s * bb, bb);                                                 \
                dqs_prep_##TYPE((const char *)w[r] + s * bb, &st[r]);                               \
            }                                                                                       \
            _Pragma("GCC unroll 8") for (int sb = 0; sb < 8; sb++) {                                \
                float *yb = y + s * HR_QK_K + 32 * sb;                                              \
                __m256 acc[4];                                                                      \
                _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) acc[j] = _mm256_loadu_ps(yb + 8 * j); \
                _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                               \
                    __m256 v[4];                                                                    \
                    dqs_##TYPE(&st[r], sb, v);                                                      \
                    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)                             \
                        acc[j] = _mm256_fmadd_ps(v[j], av[r], acc[j]);                              \
                }                                                                                   \
                _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) _mm256_storeu_ps(yb + 8 * j, acc[j]); \
            }                                                                                       \
        }                                                                                           \
    } while (0)

#define AXPY_K_TN(TYPE, R)                                                                          \
    do {                                                                                            \
        const int64_t ns = n / HR_QK_K;                                                             \
        const size_t bb = sizeof(hr_block_##TYPE);                                                  \
        dq_sb st[R];                                                                                \
        for (int64_t s = 0; s < ns; s++) {                                                          \
            _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                                   \
                pf_sb(w[r], s, ns, bb);                                                             \
                pf_next(nx, r, (size_t)s * bb, bb);                                                 \
                dqs_prep_##TYPE((const char *)w[r] + s * bb, &st[r]);                               \
            }                                                                                       \
            _Pragma("GCC unroll 8") for (int sb = 0; sb < 8; sb++) {                                \
                __m256 v[R][4];                                                                     \
                _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) dqs_##TYPE(&st[r], sb, v[r]);   \
                for (int64_t t = 0; t < n_tok; t++) {                                               \
                    float *yb = y + t * ys + s * HR_QK_K + 32 * sb;                                 \
                    const float *at = a + t * HR_AXPY_ROWS;                                         \
                    __m256 acc[4];                                                                  \
                    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) acc[j] = _mm256_loadu_ps(yb + 8 * j); \
                    _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                           \
                        if (at[r] == 0.0f) continue;                                                \
                        const __m256 c = _mm256_set1_ps(at[r]);                                     \
                        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)                         \
                            acc[j] = _mm256_fmadd_ps(v[r][j], c, acc[j]);                           \
                    }                                                                               \
                    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) _mm256_storeu_ps(yb + 8 * j, acc[j]); \
                }                                                                                   \
            }                                                                                       \
        }                                                                                           \
    } while (0)


/* ---- a batch's panel of rows (hr_axpy_panel_fn), as the AVX-512 file's ----
 * Sixteen registers hold a block of 32 outputs for 2 tokens (8), the decoded block (4) and a
 * coefficient; zero coefficients are skipped as AXPY_TN skips them. The 256-element types
 * keep AXPY_K_TN: their sub-block decode (a conversion and a multiply per 8 weights) shared by
 * 2 tokens instead of 16 cost more than the outputs' traffic it saves (a 4-layer 7B-shaped
 * Q4_K file's prompt axpy 14.0-16.0 -> 21.6-23.3 ms per token, 1 thread). */
#define PANEL_PF 256
/* The T tokens' accumulators of one block of 32 outputs (y: the first token's). */
INLINE void panel_ld(__m256 acc[][4], const float *y, size_t ys, const int T) {
    _Pragma("GCC unroll 2") for (int t = 0; t < T; t++)
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) acc[t][j] = _mm256_loadu_ps(y + t * ys + 8 * j);
}
INLINE void panel_st(__m256 acc[][4], float *y, size_t ys, const int T) {
    _Pragma("GCC unroll 2") for (int t = 0; t < T; t++)
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) _mm256_storeu_ps(y + t * ys + 8 * j, acc[t][j]);
}
/* One row's decoded block v times each token's coefficient a[t * as], skipped where zero. */
INLINE void panel_add(__m256 acc[][4], const __m256 v[4], const float *a, size_t as, const int T) {
    _Pragma("GCC unroll 2") for (int t = 0; t < T; t++) {
        const float c = a[t * as];
        if (c == 0.0f) continue;
        const __m256 cv = _mm256_set1_ps(c);
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) acc[t][j] = _mm256_fmadd_ps(v[j], cv, acc[t][j]);
    }
}
/* The rows' first lines at once: the first sweep over the panel would meet them cold. */
INLINE void panel_prefetch(const void *const *w, int n_rows, size_t rbytes) {
    for (int r = 0; r < n_rows; r++)
        for (size_t o = 0; o < rbytes && o < PANEL_PF; o += 64) _mm_prefetch((const char *)w[r] + o, _MM_HINT_T1);
}
#define AXPY_PANEL_BODY(DQ, BS, A, Y, T)                                                            \
    do {                                                                                            \
        const int64_t nb = n / BLK;                                                                 \
        const size_t rbytes = (size_t)nb * BS;                                                      \
        for (int64_t b = 0; b < nb; b++) {                                                          \
            __m256 acc[T][4];                                                                       \
            panel_ld(acc, (Y) + b * BLK, ys, T);                                                    \
            const size_t pf = (size_t)b * BS + PANEL_PF;                                            \
            for (int r = 0; r < n_rows; r++) {                                                      \
                __m256 v[4];                                                                        \
                if (pf < rbytes) _mm_prefetch((const char *)w[r] + pf, _MM_HINT_T1);                \
                DQ(w[r], b, v);                                                                     \
                panel_add(acc, v, (A) + r, as, T);                                                  \
            }                                                                                       \
            panel_st(acc, (Y) + b * BLK, ys, T);                                                    \
        }                                                                                           \
    } while (0)

#define AXPY_PANEL(NAME, DQ, BS)                                                                    \
    static void panel_##NAME(int64_t n, int n_rows, const void *const *w, const float *a, size_t as,  \
                             int64_t n_tok, float *y, size_t ys) {                                  \
        panel_prefetch(w, n_rows, (size_t)(n / BLK) * BS);                                          \
        for (int64_t t0 = 0; t0 < n_tok; t0 += 2) {                                                \
            const float *a0 = a + t0 * as;                                                          \
            float *y0 = y + t0 * ys;                                                                \
            if (t0 + 2 <= n_tok) AXPY_PANEL_BODY(DQ, BS, a0, y0, 2);                                \
            else AXPY_PANEL_BODY(DQ, BS, a0, y0, 1);                                                \
        }                                                                                           \
    }

AXPY_FUNCS(f32, dq_f32, sc_f32, 128)
AXPY_FUNCS(f16, dq_f16, sc_f16, 64)
AXPY_FUNCS(bf16, dq_bf16, sc_bf16, 64)
AXPY_FUNCS(q8_0, dq_q8_0, sc_none, sizeof(hr_block_q8_0))
AXPY_FUNCS(q4_0, dq_q4_0, sc_none, sizeof(hr_block_q4_0))
AXPY_FUNCS(q4_1, dqk_q4_1, sc_none, sizeof(hr_block_q4_1))
AXPY_FUNCS(q5_0, dqk_q5_0, sc_none, sizeof(hr_block_q5_0))
AXPY_FUNCS(q5_1, dqk_q5_1, sc_none, sizeof(hr_block_q5_1))
AXPY_FUNCS(iq4_nl, dqk_iq4_nl, sc_none, sizeof(hr_block_iq4_nl))
AXPY_FUNCS(mxfp4, dqk_mxfp4, sc_none, sizeof(hr_block_mxfp4))
AXPY_K_FUNCS(q2_K)
AXPY_K_FUNCS(q3_K)
AXPY_K_FUNCS(q4_K)
AXPY_K_FUNCS(q5_K)
AXPY_K_FUNCS(q6_K)
AXPY_K_FUNCS(iq4_xs)
AXPY_PANEL(f32, dq_f32, 128)
AXPY_PANEL(f16, dq_f16, 64)
AXPY_PANEL(bf16, dq_bf16, 64)
AXPY_PANEL(q8_0, dq_q8_0, sizeof(hr_block_q8_0))
AXPY_PANEL(q4_0, dq_q4_0, sizeof(hr_block_q4_0))
AXPY_PANEL(q4_1, dqk_q4_1, sizeof(hr_block_q4_1))
AXPY_PANEL(q5_0, dqk_q5_0, sizeof(hr_block_q5_0))
AXPY_PANEL(q5_1, dqk_q5_1, sizeof(hr_block_q5_1))
AXPY_PANEL(iq4_nl, dqk_iq4_nl, sizeof(hr_block_iq4_nl))
AXPY_PANEL(mxfp4, dqk_mxfp4, sizeof(hr_block_mxfp4))

static const hr_axpy_kernels ax_avx2 = {
    .name = "avx2",
    .axpy = {[HR_F32] = axpy_f32, [HR_F16] = axpy_f16, [HR_BF16] = axpy_bf16, [HR_Q8_0] = axpy_q8_0,
             [HR_Q4_0] = axpy_q4_0, [HR_Q4_1] = axpy_q4_1, [HR_Q5_0] = axpy_q5_0, [HR_Q5_1] = axpy_q5_1,
             [HR_IQ4_NL] = axpy_iq4_nl, [HR_MXFP4] = axpy_mxfp4, [HR_Q2_K] = axpy_q2_K, [HR_Q3_K] = axpy_q3_K,
             [HR_Q4_K] = axpy_q4_K, [HR_Q5_K] = axpy_q5_K, [HR_Q6_K] = axpy_q6_K, [HR_IQ4_XS] = axpy_iq4_xs},
    .panel = {[HR_F32] = panel_f32, [HR_F16] = panel_f16, [HR_BF16] = panel_bf16, [HR_Q8_0] = panel_q8_0,
              [HR_Q4_0] = panel_q4_0, [HR_Q4_1] = panel_q4_1, [HR_Q5_0] = panel_q5_0, [HR_Q5_1] = panel_q5_1,
              [HR_IQ4_NL] = panel_iq4_nl, [HR_MXFP4] = panel_mxfp4},
};

const hr_axpy_kernels *hr_axpy_table_avx2(void) { return &ax_avx2; }
#else
const hr_axpy_kernels *hr_axpy_table_avx2(void) { return NULL; }
#endif
