/* AVX-512 (F/BW/VL/DQ + VNNI) kernels. Quantized types work in groups of 8 blocks:
 * integer dots with vpdpbusd (exact; Q4_0 as unsigned nibbles with a -8*sum(x) correction)
 * into two int32 lanes per block, converted to float and scaled by d_w*d_x per lane, one
 * accumulator per (row, token). Float types: 32 elements per step as t = w0*x0; t = fma(w1, x1, t);
 * acc += t, a 16-wide step, a scalar tail. Weight rows are prefetched ahead (decode
 * streams them from DRAM). Tiles and the 2- and 4-row decode kernels repeat vec_dot's
 * arithmetic per pair, so they agree with it bit for bit. Activation preps are AVX2's. */
#include "kernels_impl.h"
#include "attn_v.h"
#include "kquant_legacy_simd.h"

#if defined(HR_X86) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#include <immintrin.h>
#include <string.h>

#define TGT __attribute__((target("avx512vnni")))
#define INLINE static inline __attribute__((always_inline)) TGT
#include "lanes_avx512.h"

/* ---- float types ---- */
INLINE __m512 ld_f32(const void *p, int64_t i) { return _mm512_loadu_ps((const float *)p + i); }
INLINE __m512 ld_f16(const void *p, int64_t i) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i)));
}
INLINE __m512 ld_bf16(const void *p, int64_t i) {
    __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}
INLINE float sc_f32(const void *p, int64_t i) { /* memcpy: rows need not be 4-byte aligned */
    float f;
    memcpy(&f, (const char *)p + 4 * i, 4);
    return f;
}
INLINE uint16_t ld_u16(const void *p, int64_t i) {
    uint16_t h;
    memcpy(&h, (const char *)p + 2 * i, 2);
    return h;
}
INLINE float sc_f16(const void *p, int64_t i) { return _cvtsh_ss(ld_u16(p, i)); }
INLINE float sc_bf16(const void *p, int64_t i) { return hr_bf16_to_f32(ld_u16(p, i)); }

/* Weight rows stream from DRAM. Kernels of 4 rows (decode over contiguous rows) read their
 * rows side by side and prefetch into L2 the same offset PF4_ROWS rows on (two calls ahead):
 * 4 streams one row long each, which the hardware prefetcher follows badly; the quantized
 * kernels' prefetch into L1 one call ahead (what they had) read 24-36% slower from DRAM, and
 * one row at a time (vec_dot per row) 17-40% slower (Q4_0 level) (bench_kernels kq,
 * docs/performance.md).
 * Others prefetch PF_AHEAD bytes ahead in the same row (floats into L2, quantized into L1).
 * The float types' rows4 is the exception: their rows are long (8 KB of F16 at 4096), and on
 * Zen 5 four one-row passes, each prefetching FPF_ONE bytes on in its row, read 5-15% faster
 * from DRAM than the rows side by side (docs/performance.md, "F16 decode rows"). */
#define PF_AHEAD 1536
#define PF4_ROWS 8
#define FPF_ONE 8192
#define PF_ADDR(row, R) ((const char *)((uintptr_t)(row) + ((R) == 4 ? PF4_ROWS * ws : PF_AHEAD)))

/* ROW(r): row r's first byte; PFX(r, off, R): the prefetch for bytes off.. of row r. Strided rows
 * (dot, tiles, rows2/4) as above; gather4 takes row pointers and prefetches the rows its
 * caller passes next, at the offset it reads (see gather4 in kernels_impl.h). */
#define FROW_STRIDED(r) (W + (r) * ws)
#define FPF_STRIDED(r, off, R_) _mm_prefetch((R_) == 1 ? FROW_STRIDED(r) + (off) + FPF_ONE : PF_ADDR(FROW_STRIDED(r) + (off), R_), _MM_HINT_T1)
#define FROW_GATHER(r) ((const char *)wr[r])
#define FPF_GATHER(r, off, R_) _mm_prefetch((const char *)nx[r] + (off), _MM_HINT_T1)
#define FDOT_BODY(LD, SC, ES, R, C) FDOT_BODY_AT(LD, SC, ES, R, C, FROW_STRIDED, FPF_STRIDED, LD, SC)
/* LDX, SCX: how the activations load (tile_x: F32 rows re-laid from F16/BF16 ones). Per
 * (row, token) lane and 32 elements a product, an FMA and an add: two chained FMAs would free
 * port slots (4 x 4 F16 tile 58 against 49 GMAC/s), but they change every F16/F32 result's
 * last bits, and the hybrid checks on the emulator (test_hybrid_moe_neurons) then part from
 * the CPU by 0.09 in the logits where they agreed bit for bit (docs/performance.md). */
#define FDOT_BODY_AT(LD, SC, ES, R, C, ROW, PFX, LDX, SCX)                                      \
    __m512 acc[R][C];                                                                        \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                      \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) acc[r][c] = _mm512_setzero_ps(); \
    int64_t i = 0;                                                                           \
    for (; i + 32 <= n; i += 32) {                                                           \
        __m512 w0[R], w1[R];                                                                 \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                \
            _Pragma("GCC unroll 4") for (int o = 0; o < 32 * ES; o += 64)                     \
                PFX(r, i * ES + o, R);                                                       \
            w0[r] = LD(ROW(r), i);                                                           \
            w1[r] = LD(ROW(r), i + 16);                                                      \
        }                                                                                    \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                                \
            __m512 x0 = LDX(X + c * xs, i), x1 = LDX(X + c * xs, i + 16);                    \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                            \
                __m512 t = _mm512_mul_ps(w0[r], x0);                                         \
                t = _mm512_fmadd_ps(w1[r], x1, t);                                           \
                acc[r][c] = _mm512_add_ps(acc[r][c], t);                                     \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
    if (i + 16 <= n) {                                                                       \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                \
            __m512 w0 = LD(ROW(r), i);                                                       \
            _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)                              \
                acc[r][c] = _mm512_fmadd_ps(w0, LDX(X + c * xs, i), acc[r][c]);              \
        }                                                                                    \
        i += 16;                                                                             \
    }                                                                                        \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                      \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                                \
        float tail = 0.0f;                                                                   \
        for (int64_t j = i; j < n; j++) tail += SC(ROW(r), j) * SCX(X + c * xs, j);          \
        y[c * ys + r] = _mm512_reduce_add_ps(acc[r][c]) + tail;                              \
    }

#define FDOT_FUNCS(NAME, LD, SC, ES)                                                             \
    TGT static void dot_##NAME(int64_t n, float *s, const void *w, const void *x) {             \
        const char *W = w, *X = x;                                                              \
        const size_t ws = 0, xs = 0, ys = 0;                                                    \
        float *y = s;                                                                           \
        FDOT_BODY(LD, SC, ES, 1, 1)                                                                 \
    }                                                                                           \
    TGT static void tile_##NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs,  \
                                float *y, size_t ys) {                                          \
        const char *W = w, *X = x;                                                              \
        FDOT_BODY(LD, SC, ES, HR_TILE_R, HR_TILE_C)                                                 \
    }                                                                                           \
    TGT static void rows2_##NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs, \
                                 float *y, size_t ys) {                                         \
        const char *W = w, *X = x;                                                              \
        FDOT_BODY(LD, SC, ES, 2, 1)                                                                 \
    }                                                                                           \
    TGT static void rows4_##NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs, \
                                 float *y, size_t ys) { /* one row after the other (FPF_ONE) */ \
        (void)xs, (void)ys;                                                                     \
        for (int r = 0; r < 4; r++) dot_##NAME(n, y + r, (const char *)w + r * ws, x);          \
    }                                                                                           \
    TGT static void gather4_##NAME(int64_t n, const void *const *wr, const void *const *nx,     \
                                   const void *x, float *y) {                                   \
        const char *X = x;                                                                      \
        const size_t xs = 0, ys = 0;                                                            \
        FDOT_BODY_AT(LD, SC, ES, 4, 1, FROW_GATHER, FPF_GATHER, LD, SC)                         \
    }

FDOT_FUNCS(f32, ld_f32, sc_f32, 4)
FDOT_FUNCS(f16, ld_f16, sc_f16, 2)
FDOT_FUNCS(bf16, ld_bf16, sc_bf16, 2)

/* ---- BF16 with vdpbf16ps (AVX512_BF16: Zen 4 and later, Intel since Cooper Lake) ----
 * The activations are rounded to BF16 (act_prep), so each product of two BF16 values is exact,
 * and one vdpbf16ps adds a lane's two products (elements 2i, 2i + 1, straight from memory) into
 * its F32 accumulator: 32 elements per (row, token) and instruction, where the F32 path converts
 * both sides and spends a multiply, an FMA and an add. Its rounding is not the F32 path's (it
 * takes denormal inputs and results as zero, as llama.cpp's BF16 dot on such CPUs does), so the
 * table that has it (K_BF16_DP) runs every BF16 kernel through BF_BODY_AT, whose per-(row, token)
 * steps are the same whatever R and C: dot, rows, gathers and tiles agree bit for bit. A ragged
 * tail loads masked (zero elements add +0 exactly). */
#define TGTB __attribute__((target("avx512vnni,avx512bf16")))
#define BF_BODY_AT(R, C, ROW, PFX)                                                                 \
    __m512 acc[R][C];                                                                              \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                            \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) acc[r][c] = _mm512_setzero_ps();       \
    for (int64_t i = 0; i < n; i += 32) {                                                          \
        const __mmask32 m = n - i >= 32 ? (__mmask32)~0u : (__mmask32)((1u << (n - i)) - 1);       \
        __m512i w[R];                                                                              \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                      \
            PFX(r, 2 * i, R);                                                                      \
            w[r] = _mm512_maskz_loadu_epi16(m, (const uint16_t *)ROW(r) + i);                      \
        }                                                                                          \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                                      \
            const __m512i xv = _mm512_maskz_loadu_epi16(m, (const uint16_t *)(X + c * xs) + i);    \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                    \
                acc[r][c] = _mm512_dpbf16_ps(acc[r][c], (__m512bh)w[r], (__m512bh)xv);            \
        }                                                                                          \
    }                                                                                              \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                            \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) y[c * ys + r] = _mm512_reduce_add_ps(acc[r][c]);

TGTB static void dot_bfdp(int64_t n, float *s, const void *w, const void *x) {
    const char *W = w, *X = x;
    const size_t ws = 0, xs = 0, ys = 0;
    float *y = s;
    BF_BODY_AT(1, 1, FROW_STRIDED, FPF_STRIDED)
}
TGTB static void rows2_bfdp(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys) {
    const char *W = w, *X = x;
    BF_BODY_AT(2, 1, FROW_STRIDED, FPF_STRIDED)
}
TGTB static void rows4_bfdp(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys) {
    (void)xs, (void)ys; /* one row after the other, as the other float types (FPF_ONE) */
    for (int r = 0; r < 4; r++) dot_bfdp(n, y + r, (const char *)w + r * ws, x);
}
TGTB static void gather4_bfdp(int64_t n, const void *const *wr, const void *const *nx, const void *x, float *y) {
    const char *X = x;
    const size_t xs = 0, ys = 0;
    BF_BODY_AT(4, 1, FROW_GATHER, FPF_GATHER)
}
TGTB static void tile_bfdp(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys) {
    const char *W = w, *X = x;
    BF_BODY_AT(HR_TILE_R, HR_TILE_C, FROW_STRIDED, FPF_STRIDED)
}
/* The prompt tiles' re-laid row is the BF16 row itself: tile_x is the plain tile, there for
 * the path (matmul's) that also runs the 4 x 4 tile_xw. */
static void tile_xprep_bfdp(const void *xq, void *xt, int64_t n) { memcpy(xt, xq, (size_t)n * 2); }
TGTB static void tile_bfdp_xw(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys) {
    const char *W = w, *X = x;
    BF_BODY_AT(4, HR_TILE_C, FROW_STRIDED, FPF_STRIDED)
}

static void prep_f32(const float *x, void *xq, int64_t n) { memcpy(xq, x, (size_t)n * 4); }

/* ---- F16 and BF16 prompt tiles over activations re-laid as F32 (tile_x) ----
 * act_prep rounds the activations to the weights' type; the re-laid row holds those values
 * converted to F32, which is exact, so the tile loads them as they are instead of converting
 * them again for every pair of weight rows, and computes what dot_f16 / dot_bf16 compute. */
static size_t tile_xbytes_f16(int64_t n) { return (size_t)n * 4; }

TGT static void tile_xprep_f16(const void *xq, void *xt, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps((float *)xt + i, ld_f16(xq, i));
    for (; i < n; i++) ((float *)xt)[i] = sc_f16(xq, i);
}
TGT static void tile_xprep_bf16(const void *xq, void *xt, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps((float *)xt + i, ld_bf16(xq, i));
    for (; i < n; i++) ((float *)xt)[i] = sc_bf16(xq, i);
}
TGT static void tile_x_f16(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys) {
    const char *W = w, *X = x;
    FDOT_BODY_AT(ld_f16, sc_f16, 2, HR_TILE_R, HR_TILE_C, FROW_STRIDED, FPF_STRIDED, ld_f32, sc_f32)
}
TGT static void tile_x_bf16(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys) {
    const char *W = w, *X = x;
    FDOT_BODY_AT(ld_bf16, sc_bf16, 2, HR_TILE_R, HR_TILE_C, FROW_STRIDED, FPF_STRIDED, ld_f32, sc_f32)
}
TGT static void tile_xw_f16(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys) {
    const char *W = w, *X = x;
    FDOT_BODY_AT(ld_f16, sc_f16, 2, 4, HR_TILE_C, FROW_STRIDED, FPF_STRIDED, ld_f32, sc_f32)
}
TGT static void tile_xw_bf16(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys) {
    const char *W = w, *X = x;
    FDOT_BODY_AT(ld_bf16, sc_bf16, 2, 4, HR_TILE_C, FROW_STRIDED, FPF_STRIDED, ld_f32, sc_f32)
}

/* ---- quantized types ----
 * Groups of 8 blocks (2 steps of 4 blocks, quads). Per group and activation row the x-side
 * work (loads in the quads' lane order, Q4_0's -8*sum(x) term, the 8 x scales) is done once
 * and shared by every weight row of the kernel; per weight row the 8 block scales
 * come from one F16 conversion, and each step's lanes take theirs with one permute.
 * Per (row, token) the arithmetic is the same whatever R and C are, so dot, rows4,
 * rows2, gather4 and tiles agree bit for bit. A ragged tail (n/32 not a multiple of 8) runs
 * the same group code on zero-padded copies (zero blocks add exactly +0). */
#define QGRP 8

INLINE __m512i widx(int base, int stride, int run) { /* word i -> base + stride*(i/run) + i%run */
    int16_t t[32];
    for (int i = 0; i < 32; i++) t[i] = (int16_t)(base + stride * (i / run) + i % run);
    return _mm512_loadu_si512(t);
}

/* the 8 scales of 8 consecutive 34-byte (Q8_0) blocks: words 0, 17, 34, 51 of the first
 * 128 bytes and of the 128 from byte 136 */
INLINE __m256 scales8_q8(const void *p) {
    const char *w = p;
    __m512i a = _mm512_permutex2var_epi16(_mm512_loadu_si512(w), widx(0, 17, 1), _mm512_loadu_si512(w + 64));
    __m512i b = _mm512_permutex2var_epi16(_mm512_loadu_si512(w + 136), widx(-68, 17, 1), _mm512_loadu_si512(w + 200));
    return _mm256_cvtph_ps(_mm512_castsi512_si128(_mm512_mask_blend_epi16(0xf0, a, b)));
}
/* x side of one group, in the lane order of the weight side: quads, q[2j] = elements 0-15
 * of blocks 4j..4j+3 (Q4_0: the low nibbles' partners) and q[2j+1] = elements 16-31, so
 * that 128-bit lane k of both holds block 4j+k and each int32 lane sums 8 products of one
 * block over the two dpbusd of a step; Q4_0 adds n8[j] = -8 * sum(x) per lane. */
typedef struct { __m512i q[4], n8[2]; __m256 d; } xgrp;
/* the 16-byte pieces at a, b, c, d as one register (masked broadcast loads, no shuffles) */
INLINE __m512i quad128(const void *a, const void *b, const void *c, const void *d) {
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)a));
    v = _mm512_mask_broadcast_i32x4(v, 0x00f0, _mm_loadu_si128((const __m128i *)b));
    v = _mm512_mask_broadcast_i32x4(v, 0x0f00, _mm_loadu_si128((const __m128i *)c));
    return _mm512_mask_broadcast_i32x4(v, 0xf000, _mm_loadu_si128((const __m128i *)d));
}
/* elements 0-15 (half 0) or 16-31 (half 1) of the 4 blocks at B, one block per 128-bit lane */
INLINE __m512i quad_half(const hr_block_q8_0 *B, int half) {
    return quad128(B[0].qs + 16 * half, B[1].qs + 16 * half, B[2].qs + 16 * half, B[3].qs + 16 * half);
}
/* Q4_0's and Q8_0's float lanes (lanes_avx512.h): two int32 lanes per block, 16 products each,
 * 8 blocks per register: in 128-bit lane k, lanes 4k and 4k + 1 are block k's quads 0 + 2 and 1 + 3 (elements 0-3,
 * 8-11, 16-19, 24-27 and the other four quads), lanes 4k + 2 and 4k + 3 the same of block
 * 4 + k. Per (row, token) and 8 blocks one convert, scale product and FMA where the quads'
 * lanes took two of each (prompt tiles 1.3x faster in cache, docs/performance.md). The
 * integer sums may be formed in any order: tile_x re-lays the x side once per batch so that
 * four dpbusd give these lanes directly (q[0]: qwords 2k, 2k + 1 = elements 0-7 of blocks k
 * and 4 + k; q[1] the same of 16-23, q[2] of 8-15, q[3] of 24-31; x_lane_neg their -k * sum(x));
 * the decode kernels keep the quads (no re-layout per 4 rows) and fold their lanes
 * (fold_lanes), all within 128-bit lanes. */
/* -k * sum(x) over each lane of the four registers (Q4_0: k = 8; Q8_0's w + 128: k = 128) */
INLINE __m512i x_lane_neg(const __m512i q[4], char k) {
    __m512i s = _mm512_setzero_si512();
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) s = _mm512_dpbusd_epi32(s, _mm512_set1_epi8(k), q[i]);
    return _mm512_sub_epi32(_mm512_setzero_si512(), s);
}
INLINE void x_grp(xgrp *g, const hr_block_q8_0 *x, int q4) {
    for (int j = 0; j < 2; j++) {
        g->q[2 * j] = quad_half(x + 4 * j, 0), g->q[2 * j + 1] = quad_half(x + 4 * j, 1);
        if (q4) {
            __m512i s8 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(8), g->q[2 * j]);
            s8 = _mm512_dpbusd_epi32(s8, _mm512_set1_epi8(8), g->q[2 * j + 1]);
            g->n8[j] = _mm512_sub_epi32(_mm512_setzero_si512(), s8);
        }
    }
    g->d = scales8_q8(x);
}

/* Weight side of one row's group: the 8 block scales as floats, plus (Q4_0) the nibble
 * bytes of blocks 0-3 and 4-7. Q4_0 blocks are 18 bytes, so every scale and every run
 * of nibbles starts on a 16-bit boundary: word permutes gather them from two whole-register
 * loads and the 16 bytes left. No load reaches past the group's end: on Zen 5 the 64-byte
 * masked load that did (into the next group's line) made rows4 from DRAM 1.2x slower, a
 * one-row stream 1.5x (docs/performance.md, "Loads that stop at the group's end"). */
typedef struct { __m256 d; __m512i nib[2]; } wgrp;
INLINE void w_grp_q4_0(wgrp *g, const char *w) {
    const __m512i l0 = _mm512_loadu_si512(w), l1 = _mm512_loadu_si512(w + 64);
    const __m512i l2 = _mm512_zextsi128_si512(_mm_loadu_si128((const void *)(w + 128)));
    g->d = _mm256_cvtph_ps(_mm512_castsi512_si128(_mm512_permutex2var_epi16(l0, widx(0, 9, 1), l1)));
    g->nib[0] = _mm512_permutex2var_epi16(l0, widx(1, 9, 8), l1);
    g->nib[1] = _mm512_permutex2var_epi16(l1, widx(5, 9, 8), l2);
}
/* The same in x_lanes' order: nib[0] = bytes 0-7 of the nibbles of blocks k and 4 + k in
 * 128-bit lane k, nib[1] = their bytes 8-15 (qword unpacks of the two registers above). */
INLINE void w_grp_q4x(wgrp *g, const char *w) {
    w_grp_q4_0(g, w);
    const __m512i n0 = g->nib[0], n1 = g->nib[1];
    g->nib[0] = _mm512_unpacklo_epi64(n0, n1), g->nib[1] = _mm512_unpackhi_epi64(n0, n1);
}
/* The unsigned nibbles of a row's group in x_lanes' order, for its one step. */
INLINE void q4_w_lanes(const wgrp *wg, __m512i u[4]) {
    const __m512i m = _mm512_set1_epi8(0x0f);
    u[0] = _mm512_and_si512(wg->nib[0], m), u[1] = _mm512_and_si512(_mm512_srli_epi16(wg->nib[0], 4), m);
    u[2] = _mm512_and_si512(wg->nib[1], m), u[3] = _mm512_and_si512(_mm512_srli_epi16(wg->nib[1], 4), m);
}
INLINE void w_grp_q8_0(wgrp *g, const char *w) { g->d = scales8_q8(w); }

/* Q4_0's lanes of one weight row's group (its one step): the quads' lanes of blocks 0-3
 * (t0) and 4-7 (t1), folded. */
INLINE __m512i w_idot_q4_0(const void *w, const wgrp *wg, int p, const xgrp *g) {
    (void)w, (void)p;
    const __m512i m = _mm512_set1_epi8(0x0f);
    __m512i t[2];
    _Pragma("GCC unroll 2") for (int j = 0; j < 2; j++) {
        const __m512i v = wg->nib[j];
        t[j] = _mm512_dpbusd_epi32(g->n8[j], _mm512_and_si512(v, m), g->q[2 * j]);
        t[j] = _mm512_dpbusd_epi32(t[j], _mm512_and_si512(_mm512_srli_epi16(v, 4), m), g->q[2 * j + 1]);
    }
    return fold_lanes(t[0], t[1]);
}
/* |w| . (x with w's sign): the same int32 lanes as sum(w x) */
INLINE __m512i dot_signed(__m512i acc, __m512i w, __m512i x) {
    const __m512i sx = _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(w), _mm512_setzero_si512(), x);
    return _mm512_dpbusd_epi32(acc, _mm512_abs_epi8(w), sx);
}
/* Q8_0's quad lanes of blocks 4p..4p+3 (x: their two quad registers), and its one step */
INLINE __m512i q8_quads(const hr_block_q8_0 *B, __m512i x0, __m512i x1) {
    return dot_signed(dot_signed(_mm512_setzero_si512(), quad_half(B, 0), x0), quad_half(B, 1), x1);
}
INLINE __m512i w_idot_q8_0(const void *w, const wgrp *wg, int p, const xgrp *g) {
    (void)wg, (void)p;
    const hr_block_q8_0 *B = w;
    return fold_lanes(q8_quads(B, g->q[0], g->q[1]), q8_quads(B + 4, g->q[2], g->q[3]));
}


/* Weight side of all R rows first, then one activation row at a time, so only one
 * x group is live (tiles would spill holding C of them). One step per group (the two quad
 * steps' lanes folded) into one accumulator per (row, token), the same for every kernel of
 * a type, so their bits agree. Q4_0 once
 * summed its steps in two: its 4 x 4 prompt tile then held 32 accumulators, every register,
 * and spilled; with one, prompt tiles ran 10-28% and rows4 from DRAM 13-30% faster (Zen 5,
 * bench_prompt and rows4 over 11008 x 4096, 1 thread, interleaved). */
#define QGRP_STEP(WB, PB, PFX, XB, WGRP, IDOT, Q4, PF, R, C)                                     \
    {                                                                                            \
        wgrp wg[R];                                                                              \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                    \
            _Pragma("GCC unroll 8") for (int o = 0; PF && o < QGRP * (int)WBS; o += 64)          \
                PFX(PB[r] + o, R);                                                               \
            WGRP(&wg[r], WB[r]);                                                                 \
        }                                                                                        \
        if (!Q4 && C > 1) { /* Q8_0 tiles: w's quads once per row and step, for C tokens */     \
            __m256 s8[R][C];                                                                     \
            _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                                \
                const __m256 xd = scales8_q8(XB[c]);                                             \
                _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) s8[r][c] = _mm256_mul_ps(wg[r].d, xd); \
            }                                                                                    \
            __m512i wq[R][4];                                                                    \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                \
                const hr_block_q8_0 *B = (const hr_block_q8_0 *)WB[r];                           \
                _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) wq[r][i] = quad_half(B + 4 * (i / 2), i % 2); \
            }                                                                                    \
            _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                                \
                __m512i x[4];                                                                    \
                _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) x[i] = quad_half(XB[c] + 4 * (i / 2), i % 2); \
                _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                            \
                    const __m512i t0 = dot_signed(dot_signed(_mm512_setzero_si512(), wq[r][0], x[0]), wq[r][1], x[1]); \
                    const __m512i t1 = dot_signed(dot_signed(_mm512_setzero_si512(), wq[r][2], x[2]), wq[r][3], x[3]); \
                    __m512 sp = _mm512_permutexvar_ps(sidx2(), _mm512_castps256_ps512(s8[r][c]));   \
                    acc0[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(fold_lanes(t0, t1)), sp, acc0[r][c]); \
                }                                                                                \
            }                                                                                    \
        } else                                                                                   \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                                    \
            xgrp g;                                                                              \
            x_grp(&g, XB[c], Q4);                                                                \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                \
                const __m512 s = _mm512_castps256_ps512(_mm256_mul_ps(wg[r].d, g.d));            \
                __m512 v = _mm512_cvtepi32_ps(IDOT(WB[r], &wg[r], 0, &g));                       \
                acc0[r][c] = _mm512_fmadd_ps(v, _mm512_permutexvar_ps(sidx2(), s), acc0[r][c]);  \
            }                                                                                    \
        }                                                                                        \
    }

/* ROW(r): row r's first byte; PROW(r): the row whose bytes PFX prefetches at the offsets
 * read in row r (strided: the row itself, QPF_STRIDED adds the distance; gather4: its nx
 * row, into L2). PFX(p, R) prefetches for the bytes at p. */
#define QROW_STRIDED(r) (W + (r) * ws)
#define QPF_STRIDED(p, R_)                                                          \
    do {                                                                            \
        if ((R_) == 4) _mm_prefetch(PF_ADDR(p, R_), _MM_HINT_T1);                   \
        else _mm_prefetch(PF_ADDR(p, R_), _MM_HINT_T0);                             \
    } while (0)
#define QROW_GATHER(r) ((const char *)wr[r])
#define QPROW_GATHER(r) ((const char *)nx[r])
#define QPF_GATHER(p, R_) _mm_prefetch((p), _MM_HINT_T1)
#define QDOT_BODY(WBLK, WGRP, IDOT, Q4, R, C) \
    QDOT_BODY_AT(WBLK, WGRP, IDOT, Q4, R, C, QROW_STRIDED, QROW_STRIDED, QPF_STRIDED)
#define QDOT_BODY_AT(WBLK, WGRP, IDOT, Q4, R, C, ROW, PROW, PFX)                                \
    __m512 acc0[R][C];                                                                           \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                          \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) acc0[r][c] = _mm512_setzero_ps();    \
    const int64_t nb = n / HR_QK;                                                                \
    int64_t b = 0;                                                                               \
    for (; b + QGRP <= nb; b += QGRP) {                                                          \
        const char *wb_[R], *pb_[R];                                                             \
        const hr_block_q8_0 *xb_[C];                                                             \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                    \
            wb_[r] = ROW(r) + b * WBS;                                                           \
            pb_[r] = PROW(r) + b * WBS;                                                          \
        }                                                                                        \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) xb_[c] = (const hr_block_q8_0 *)(X + c * xs) + b; \
        QGRP_STEP(wb_, pb_, PFX, xb_, WGRP, IDOT, Q4, 1, R, C)                                   \
    }                                                                                            \
    if (b < nb) {                                                                                \
        const int64_t m = nb - b;                                                                \
        WBLK wt_[R][QGRP];                                                                       \
        hr_block_q8_0 xt_[C][QGRP];                                                              \
        const char *wb_[R];                                                                      \
        const hr_block_q8_0 *xb_[C];                                                             \
        memset(wt_, 0, sizeof wt_);                                                              \
        memset(xt_, 0, sizeof xt_);                                                              \
        for (int r = 0; r < R; r++) {                                                            \
            memcpy(wt_[r], ROW(r) + b * WBS, (size_t)m * WBS);                                   \
            wb_[r] = (const char *)wt_[r];                                                       \
        }                                                                                        \
        for (int c = 0; c < C; c++) {                                                            \
            memcpy(xt_[c], (const hr_block_q8_0 *)(X + c * xs) + b, (size_t)m * sizeof(hr_block_q8_0)); \
            xb_[c] = xt_[c];                                                                     \
        }                                                                                        \
        QGRP_STEP(wb_, wb_, PFX, xb_, WGRP, IDOT, Q4, 0, R, C)                                   \
    }                                                                                            \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                          \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)                                      \
            y[c * ys + r] = _mm512_reduce_add_ps(acc0[r][c]);

#define QDOT_FUNCS(NAME, WBLK, WGRP, IDOT, Q4)                                                          \
    enum { WBS_##NAME = sizeof(WBLK) };                                                           \
    TGT static void dot_##NAME(int64_t n, float *s, const void *w, const void *x) {                \
        const char *W = w, *X = x;                                                                 \
        const size_t ws = 0, xs = 0, ys = 0, WBS = WBS_##NAME;                                     \
        float *y = s;                                                                              \
        QDOT_BODY(WBLK, WGRP, IDOT, Q4, 1, 1)                                                            \
    }                                                                                              \
    TGT static void tile_##NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs,     \
                                float *y, size_t ys) {                                             \
        const char *W = w, *X = x;                                                                 \
        const size_t WBS = WBS_##NAME;                                                             \
        QDOT_BODY(WBLK, WGRP, IDOT, Q4, HR_TILE_R, HR_TILE_C)                                            \
    }                                                                                              \
    TGT static void rows2_##NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs,    \
                                 float *y, size_t ys) {                                            \
        const char *W = w, *X = x;                                                                 \
        const size_t WBS = WBS_##NAME;                                                             \
        (void)xs;                                                                                  \
        QDOT_BODY(WBLK, WGRP, IDOT, Q4, 2, 1)                                                            \
    }                                                                                              \
    TGT static void rows4_##NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs,    \
                                 float *y, size_t ys) {                                            \
        const char *W = w, *X = x;                                                                 \
        const size_t WBS = WBS_##NAME;                                                             \
        (void)xs;                                                                                  \
        QDOT_BODY(WBLK, WGRP, IDOT, Q4, 4, 1)                                                            \
    }                                                                                              \
    TGT static void gather4_##NAME(int64_t n, const void *const *wr, const void *const *nx,       \
                                   const void *x, float *y) {                                      \
        const char *X = x;                                                                         \
        const size_t xs = 0, ys = 0, WBS = WBS_##NAME;                                             \
        QDOT_BODY_AT(WBLK, WGRP, IDOT, Q4, 4, 1, QROW_GATHER, QPROW_GATHER, QPF_GATHER)            \
    }

QDOT_FUNCS(q8_0, hr_block_q8_0, w_grp_q8_0, w_idot_q8_0, 0)
QDOT_FUNCS(q4_0, hr_block_q4_0, w_grp_q4_0, w_idot_q4_0, 1)
/* ---- prompt tiles over activations re-laid once per batch (tile_x): hr_lanes_x ---- */
size_t hr_tile_xbytes_lanes_avx512(int64_t n) { return (size_t)((n / HR_QK + QGRP - 1) / QGRP) * sizeof(hr_lanes_x); }

TGT void hr_tile_xprep_lanes_avx512(const void *xq, void *xt, int64_t n, int c) {
    const hr_block_q8_0 *x = xq;
    hr_lanes_x *o = xt; /* 64-byte aligned: matmul's scratch rows */
    const int64_t nb = n / HR_QK;
    for (int64_t b = 0, gi = 0; b < nb; b += QGRP, gi++) {
        hr_block_q8_0 pad[QGRP];
        const hr_block_q8_0 *src = hr_q8_grp_src(x, b, nb, QGRP, pad);
        xgrp g;
        x_grp(&g, src, 0);
        x_lanes(g.q);
        for (int i = 0; i < 4; i++) _mm512_store_si512(&o[gi].q[i], g.q[i]);
        _mm512_store_si512(&o[gi].nc, x_lane_neg(g.q, (char)c));
        _mm512_store_ps(&o[gi].ds, _mm512_permutexvar_ps(sidx2(), _mm512_castps256_ps512(g.d)));
    }
}
TGT static void tile_xprep_q4_0(const void *xq, void *xt, int64_t n) { hr_tile_xprep_lanes_avx512(xq, xt, n, 8); }

/* Q4_0's tile: per (row, token) w_idot_q4_0's and QGRP_STEP's arithmetic on the same values.
 * The tile's R weight rows' group against its C tokens, a row at a time: one row's four
 * unpacked registers and lane scales stay live for its C tokens, whose activations come
 * straight from L1 as the dpbusd's memory operands (all R rows' 20 registers beside the R x C
 * accumulators would spill: in cache 1.1x slower). */
INLINE void tx_q4_0_grp(const char *const *wb, const char *X, size_t xs, int64_t gi, __m512 (*acc0)[HR_TILE_C],
                        const int R, const int C) {
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {
        wgrp wg;
        __m512i u[4];
        w_grp_q4x(&wg, wb[r]);
        q4_w_lanes(&wg, u);
        const __m512 wd = _mm512_permutexvar_ps(sidx2(), _mm512_castps256_ps512(wg.d));
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)
            acc0[r][c] = lanes_step(u, wd, (const hr_lanes_x *)(X + c * xs) + gi, acc0[r][c]);
    }
}

/* The tile_x driver of a type whose row groups GRP (tx_*_grp) computes, R rows x C tokens: the
 * full groups with their prefetch (ONE: a decode row's one stream, FPF_ONE on into L2; else
 * PF_AHEAD into L1), then a ragged group over zero-padded weight blocks, as in QDOT_BODY. */
#define TILE_X_DRIVER(NAME, BLK, GRP, R, C, ONE)                                                         \
    TGT static void NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y,          \
                         size_t ys) {                                                                    \
        const char *W = w, *X = x;                                                                       \
        __m512 acc0[R][HR_TILE_C];                                                                       \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                              \
            _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) acc0[r][c] = _mm512_setzero_ps();        \
        const int64_t nb = n / HR_QK, nfull = nb / QGRP;                                                 \
        for (int64_t gi = 0; gi < nfull; gi++) {                                                         \
            const char *wb[R];                                                                           \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                        \
                wb[r] = W + r * ws + gi * QGRP * sizeof(BLK);                                            \
                for (int o = 0; o < QGRP * (int)sizeof(BLK); o += 64) {                                  \
                    if (ONE) _mm_prefetch(wb[r] + FPF_ONE + o, _MM_HINT_T1);                             \
                    else _mm_prefetch(wb[r] + PF_AHEAD + o, _MM_HINT_T0);                                \
                }                                                                                        \
            }                                                                                            \
            GRP(wb, X, xs, gi, acc0, R, C);                                                              \
        }                                                                                                \
        if (nfull * QGRP < nb) {                                                                         \
            const int64_t b = nfull * QGRP;                                                              \
            BLK pad[R][QGRP];                                                                            \
            const char *wb[R];                                                                           \
            memset(pad, 0, sizeof pad);                                                                  \
            for (int r = 0; r < R; r++) {                                                                \
                memcpy(pad[r], W + r * ws + b * sizeof(BLK), (size_t)(nb - b) * sizeof pad[0][0]);       \
                wb[r] = (const char *)pad[r];                                                            \
            }                                                                                            \
            GRP(wb, X, xs, nfull, acc0, R, C);                                                           \
        }                                                                                                \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                              \
            _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)                                          \
                y[c * ys + r] = _mm512_reduce_add_ps(acc0[r][c]);                                        \
    }

TILE_X_DRIVER(tile_x_q4_0, hr_block_q4_0, tx_q4_0_grp, HR_TILE_R, HR_TILE_C, 0)
TILE_X_DRIVER(tile_xw_q4_0, hr_block_q4_0, tx_q4_0_grp, 4, HR_TILE_C, 0)

/* ---- Q8_0 prompt tiles over re-laid activations (tile_x) ----
 * vec_dot's int32 lanes (x_lanes' two per block) sum w * x, taken there as |w| * (x with w's
 * sign). Here the weights become unsigned once per row (w ^ 0x80 = w + 128) and the lane
 * starts at -128 * sum(x), stored in the re-laid row: sum((w + 128) x) - 128 sum(x) is the
 * same integer, with no per-(row, token) negation. The x scales are stored in the lanes'
 * order, so the lane scale perm(d_w) * perm(d_x) is vec_dot's permuted product lane for lane:
 * results are bit for bit dot_q8_0's. Per (row, token) and 8 blocks: four dpbusd, a convert,
 * a multiply and an FMA (with a lane per 8 products, two of each but the dpbusd). */
TGT static void tile_xprep_q8_0(const void *xq, void *xt, int64_t n) { hr_tile_xprep_lanes_avx512(xq, xt, n, 128); }

/* The tile's R weight rows' group against its C tokens, a row at a time as Q4_0's: one row's
 * four unsigned lane registers and lane scales live for the C tokens. */
/* a Q8_0 row's group as unsigned lanes (w + 128) and its lane scales (the return) */
INLINE __m512 q8_w_ulanes(const char *wb, __m512i u[4]) {
    const hr_block_q8_0 *B = (const hr_block_q8_0 *)wb;
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) u[i] = quad_half(B + 4 * (i / 2), i % 2);
    x_lanes(u);
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) u[i] = _mm512_xor_si512(u[i], _mm512_set1_epi8((char)0x80));
    return _mm512_permutexvar_ps(sidx2(), _mm512_castps256_ps512(scales8_q8(wb)));
}
INLINE void tx_q8_0_grp(const char *const *wb, const char *X, size_t xs, int64_t gi, __m512 (*acc0)[HR_TILE_C],
                        const int R, const int C) {
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {
        __m512i u[4];
        const __m512 wd = q8_w_ulanes(wb[r], u);
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)
            acc0[r][c] = lanes_step(u, wd, (const hr_lanes_x *)(X + c * xs) + gi, acc0[r][c]);
    }
}

TILE_X_DRIVER(tile_x_q8_0, hr_block_q8_0, tx_q8_0_grp, HR_TILE_R, HR_TILE_C, 0)
TILE_X_DRIVER(tile_xw_q8_0, hr_block_q8_0, tx_q8_0_grp, 4, HR_TILE_C, 0)

/* Q8_0 decode over the re-laid activation row (rows4_x): the 4 rows one after the other, each
 * prefetching FPF_ONE bytes on in itself into L2, as the float types' rows4 (side by side, 8 rows
 * on, rows4_q8_0 read 7-16% slower from DRAM on Zen 5: docs/performance.md, "F16 decode rows").
 * Per (row, token) the tiles' step, so vec_dot's bits. Q4_0 keeps rows4: the same one-row
 * stream read it slower from DRAM, also after its loads stopped at the group's end (5.2-9.6
 * against 4.7-6.9 ns per 256 weights; docs/performance.md). */
TILE_X_DRIVER(row_x_q8_0, hr_block_q8_0, tx_q8_0_grp, 1, 1, 1)
TGT static void rows4_x_q8_0(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys) {
    (void)xs, (void)ys;
    for (int r = 0; r < 4; r++) row_x_q8_0(n, (const char *)w + r * ws, 0, x, 0, y + r, 1);
}

/* The table, less Q8_0, Q4_0 and BF16's kernels, which each instance adds (designators in
 * __VA_ARGS__): BF16 as F32 (K_BF16_F32) or with vdpbf16ps (K_BF16_DP). */
#define K_AVX512_TABLE(NAME, ...) { \
    .k = { \
        .name = NAME, \
        .attn_wsum = hr_attn_wsum_avx512, \
        .attn_wsum_grp = hr_attn_wsum_grp_avx512, \
        .vec_dot = {[HR_F32] = dot_f32, [HR_F16] = dot_f16, \
                    HR_KQ_ENTRIES(dot, avx512), \
                    HR_KQL_ENTRIES(dot, avx512)}, \
        .act_prep = {[HR_F32] = prep_f32, [HR_F16] = hr_prep_f16_avx2, [HR_BF16] = hr_prep_bf16_avx2, \
                     HR_KQ_PREP(hr_prep_q8_K_avx2), HR_KQL_PREPS}, \
    }, \
    .tile = {[HR_F32] = tile_f32, [HR_F16] = tile_f16, \
             HR_KQ_ENTRIES(tile, avx512), \
             HR_KQL_ENTRIES(tile, avx512)}, \
    .rows2 = {[HR_F32] = rows2_f32, [HR_F16] = rows2_f16, \
              HR_KQL_ENTRIES(rows2, avx512)}, \
    .gather4 = {[HR_F32] = gather4_f32, [HR_F16] = gather4_f16, \
                HR_KQ_ENTRIES(gather4, avx512)}, \
    .rows4 = {[HR_F32] = rows4_f32, [HR_F16] = rows4_f16, \
              HR_KQ_ENTRIES(rows4, avx512), \
              HR_KQL_ENTRIES(rows4, avx512)}, \
    .rows4_x = {[HR_Q4_K] = hr_rows4_x_q4_K_avx512, [HR_Q5_K] = hr_rows4_x_q5_K_avx512, [HR_IQ4_XS] = hr_rows4_x_iq4_xs_avx512, \
                [HR_Q5_0] = hr_rows4_x_q5_0_avx512}, \
    .tile_x = {[HR_F16] = tile_x_f16, HR_KQX_ENTRIES(tile_x, avx512), [HR_Q6_K] = hr_tile_x_q6_K_avx512, \
               HR_KQLX_ENTRIES(tile_x)}, \
    .tile_xw = {[HR_F16] = tile_xw_f16, HR_KQX_ENTRIES(tile_xw, avx512), [HR_Q6_K] = hr_tile_xw_q6_K_avx512, \
                HR_KQLX_ENTRIES(tile_xw)}, \
    .xw_rows = {[HR_F16] = 4, [HR_BF16] = 4, HR_KQX_SHAPE(2), [HR_Q6_K] = 2, [HR_Q5_0] = 4, [HR_IQ4_NL] = 4, [HR_MXFP4] = 4}, \
    .xw_cols = {[HR_F16] = 4, [HR_BF16] = 4, HR_KQX_SHAPE(8), [HR_Q6_K] = 8, [HR_Q5_0] = 4, [HR_IQ4_NL] = 4, [HR_MXFP4] = 4}, \
    .tile_xprep = {[HR_F16] = tile_xprep_f16, HR_KQX_ENTRIES(tile_xprep, avx512), [HR_Q6_K] = hr_tile_xprep_q6_K_avx512, \
                   HR_KQLX_ENTRIES(tile_xprep)}, \
    .tile_xbytes = {[HR_F16] = tile_xbytes_f16, [HR_BF16] = tile_xbytes_f16, HR_KQX_BYTES(avx512), [HR_Q6_K] = hr_tile_xbytes_q8Kt_avx512, \
                    HR_KQLX_ENTRIES(tile_xbytes)}, \
    __VA_ARGS__}

#define K_BF16_F32                                                                                \
    .k.vec_dot[HR_BF16] = dot_bf16, .tile[HR_BF16] = tile_bf16, .rows2[HR_BF16] = rows2_bf16,      \
    .gather4[HR_BF16] = gather4_bf16, .rows4[HR_BF16] = rows4_bf16, .tile_x[HR_BF16] = tile_x_bf16, \
    .tile_xw[HR_BF16] = tile_xw_bf16, .tile_xprep[HR_BF16] = tile_xprep_bf16
#define K_BF16_DP                                                                                 \
    .k.vec_dot[HR_BF16] = dot_bfdp, .tile[HR_BF16] = tile_bfdp, .rows2[HR_BF16] = rows2_bfdp,      \
    .gather4[HR_BF16] = gather4_bfdp, .rows4[HR_BF16] = rows4_bfdp, .tile_x[HR_BF16] = tile_bfdp, \
    .tile_xw[HR_BF16] = tile_bfdp_xw, .tile_xprep[HR_BF16] = tile_xprep_bfdp
/* Q8_0 and Q4_0 of both AVX-512 tables */
#define K_Q8_Q4 \
    .k.vec_dot[HR_Q8_0] = dot_q8_0, .k.vec_dot[HR_Q4_0] = dot_q4_0, \
    .k.act_prep[HR_Q8_0] = hr_prep_q8_0_avx2, .k.act_prep[HR_Q4_0] = hr_prep_q8_0_avx2, \
    .tile[HR_Q8_0] = tile_q8_0, .tile[HR_Q4_0] = tile_q4_0, .rows2[HR_Q8_0] = rows2_q8_0, .rows2[HR_Q4_0] = rows2_q4_0, \
    .gather4[HR_Q8_0] = gather4_q8_0, .gather4[HR_Q4_0] = gather4_q4_0, \
    .rows4[HR_Q8_0] = rows4_q8_0, .rows4[HR_Q4_0] = rows4_q4_0, .rows4_x[HR_Q8_0] = rows4_x_q8_0, \
    .tile_x[HR_Q8_0] = tile_x_q8_0, .tile_x[HR_Q4_0] = tile_x_q4_0, .tile_xw[HR_Q8_0] = tile_xw_q8_0, .tile_xw[HR_Q4_0] = tile_xw_q4_0, \
    .xw_rows[HR_Q8_0] = 4, .xw_rows[HR_Q4_0] = 4, .xw_cols[HR_Q8_0] = 4, .xw_cols[HR_Q4_0] = 4, \
    .tile_xprep[HR_Q8_0] = tile_xprep_q8_0, .tile_xprep[HR_Q4_0] = tile_xprep_q4_0, \
    .tile_xbytes[HR_Q8_0] = hr_tile_xbytes_lanes_avx512, .tile_xbytes[HR_Q4_0] = hr_tile_xbytes_lanes_avx512

static const hr_kernels_ext k_avx512 = K_AVX512_TABLE("avx512", K_Q8_Q4, K_BF16_F32);
static const hr_kernels_ext k_avx512_bf16 = K_AVX512_TABLE("avx512", K_Q8_Q4, K_BF16_DP);

const hr_kernels_ext *hr_kext_avx512(int bf16) { return bf16 ? &k_avx512_bf16 : &k_avx512; }

#if defined(HR_AMX)
/* The same with Q8_0 and Q4_0 on AMX tiles and the scalar twin's arithmetic (kernels_amx.c). */
#define AMX_Q(T, TT)                                                                                     \
    .k.vec_dot[HR_##TT] = hr_dot_##T##_amx, .k.act_prep[HR_##TT] = hr_prep_q8_0_avx2,                    \
    .tile[HR_##TT] = hr_tile_##T##_amx, .gather4[HR_##TT] = hr_gather4_##T##_amx,                        \
    .rows4[HR_##TT] = hr_rows4_##T##_amx, .tile16[HR_##TT] = hr_tile16_##T##_amx,                        \
    .tile16_prep[HR_##TT] = hr_tile16_prep_q8_amx, .tile16_bytes[HR_##TT] = hr_tile16_bytes_q8_amx
static const hr_kernels_ext k_amx = K_AVX512_TABLE("amx", AMX_Q(q8_0, Q8_0), AMX_Q(q4_0, Q4_0),
                                                   .rows16[HR_Q4_0] = hr_rows16_q4_0_amx, K_BF16_F32);
/* AMX CPUs (Sapphire Rapids on) have AVX512_BF16: the same BF16 kernels as k_avx512_bf16 */
static const hr_kernels_ext k_amx_bf16 = K_AVX512_TABLE("amx", AMX_Q(q8_0, Q8_0), AMX_Q(q4_0, Q4_0),
                                                        .rows16[HR_Q4_0] = hr_rows16_q4_0_amx, K_BF16_DP);
const hr_kernels_ext *hr_kext_amx(int bf16) { return bf16 ? &k_amx_bf16 : &k_amx; }
#else
const hr_kernels_ext *hr_kext_amx(int bf16) {
    (void)bf16;
    return NULL;
}
#endif
#else
const hr_kernels_ext *hr_kext_avx512(int bf16) {
    (void)bf16;
    return NULL;
}
const hr_kernels_ext *hr_kext_amx(int bf16) {
    (void)bf16;
    return NULL;
}
#endif
