/* Q8_0 and Q4_0 for CPUs with AMX: prompt products on AMX int8 tiles (16 weight rows x 16
 * tokens x one 32-element block per tdpbssd), decode on AVX-512 VNNI.
 *
 * Why a different arithmetic from the AVX-512 table: an AMX tile yields one exact int32 per
 * (row, token, block), where the VNNI kernels keep 4-product lanes and sum them in float at
 * the end. A token's result must not depend on the batch it was computed in, so every kernel
 * of this table (decode, gathers, tiles) uses the scalar twin's order: sum += isum_b *
 * (d_w * d_x) block after block, a multiply and an add (no FMA), from +0. Decode keeps rows
 * side by side in lanes, where that sequence costs nothing; the per-block integer sums cost
 * a few shuffles a block, which the memory-bound decode hides.
 *
 * Integer sums are exact for every int8 value (-128 included): the VNNI kernels feed
 * w ^ 0x80 (w + 128, unsigned) and start from -128 * sum(x); tdpbssd is signed x signed. */
#include "kernels_impl.h"

#if defined(HR_X86) && defined(HR_AMX) && defined(__AVX512F__) && defined(__AVX512VNNI__) && defined(__AMX_TILE__) && \
    defined(__AMX_INT8__)
#include <cpuid.h>
#include <immintrin.h>
#include <string.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#define INLINE static inline __attribute__((always_inline))

int hr_amx_usable(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) || !(d & (1u << 25))) return 0;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0; /* OSXSAVE */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & (3u << 17)) != (3u << 17)) return 0; /* XTILECFG and XTILEDATA enabled */
#if defined(__linux__)
    /* ARCH_REQ_XCOMP_PERM for XTILEDATA: without it the first tile load raises SIGILL */
    return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
#else
    return 0;
#endif
}

/* ---- decode: VNNI on 256-bit lanes, rows side by side ---- */

INLINE __m256i ldq(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
INLINE uint16_t ld16(const void *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return h;
}
/* -k * sum(x) per 4-byte lane (k unsigned): dpbusd from it over w + k sums w * x exactly.
 * Q8_0 feeds w ^ 0x80 (k = 128), Q4_0 its unsigned nibbles (k = 8). */
INLINE __m256i negsum(__m256i x, unsigned char k) {
    const __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8((char)k), x);
    return _mm256_sub_epi32(_mm256_setzero_si256(), s);
}
INLINE __m512i negsum512(__m512i x, unsigned char k) {
    const __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8((char)k), x);
    return _mm512_sub_epi32(_mm512_setzero_si512(), s);
}
INLINE __m256i negcorr(__m256i x) { return negsum(x, 0x80); }
INLINE __m256i negcorr8(__m256i x) { return negsum(x, 8); }
/* the 4 int32 of each 128-bit lane of t summed: lane i's sum in element i */
INLINE __m128i lane_sums(__m512i t) {
    t = _mm512_add_epi32(t, _mm512_shuffle_epi32(t, _MM_PERM_BADC));
    t = _mm512_add_epi32(t, _mm512_shuffle_epi32(t, _MM_PERM_CDAB));
    return _mm512_castsi512_si128(_mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), t));
}
/* int32 lanes summing to one block's sum(w * x): Q8_0 quants at q, or Q4_0 nibbles at q
 * (x in the block's element order: low nibbles 0-15, high 16-31) */
INLINE __m256i bdot_q8_0(__m256i nc, const void *q, __m256i x) {
    return _mm256_dpbusd_epi32(nc, _mm256_xor_si256(ldq(q), _mm256_set1_epi8((char)0x80)), x);
}
INLINE __m256i bdot_q4_0(__m256i nc, const void *q, __m256i x) {
    const __m128i v = _mm_loadu_si128((const __m128i *)q);
    const __m256i u = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), _mm256_set1_epi8(0x0f));
    return _mm256_dpbusd_epi32(nc, u, x);
}
/* Two rows' block b at once, row qa in the low 256 bits and qb in the high, against x2 (the
 * block's activations in both halves) */
INLINE __m512i bdot2_q8_0(__m512i nc2, const void *qa, const void *qb, __m512i x2) {
    const __m512i w = _mm512_inserti64x4(_mm512_castsi256_si512(ldq(qa)), ldq(qb), 1);
    return _mm512_dpbusd_epi32(nc2, _mm512_xor_si512(w, _mm512_set1_epi8((char)0x80)), x2);
}
/* the four row sums of z0 (rows 0, 1) and z1 (rows 2, 3), 8 lanes a row */
INLINE __m128i red4z(__m512i z0, __m512i z1) {
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    /* pairs summed: one row per 128 bits */
    return lane_sums(_mm512_add_epi32(_mm512_permutex2var_epi32(z0, ie, z1), _mm512_permutex2var_epi32(z0, io, z1)));
}
/* the four rows' exact sums over one block, the rows' quants at r[i] + o */
INLINE __m128i isum4_q8_0(const char *const r[4], size_t o, const int8_t *xq) {
    const __m512i x2 = _mm512_broadcast_i64x4(ldq(xq)), nc = negsum512(x2, 0x80);
    return red4z(bdot2_q8_0(nc, r[0] + o, r[1] + o, x2), bdot2_q8_0(nc, r[2] + o, r[3] + o, x2));
}
/* Q4_0: one 128-bit lane per row (masked broadcast loads, no shuffles), low nibbles against
 * x's elements 0-15 and high against 16-31 in every lane; then each lane's 4 int32 summed */
INLINE __m128i isum4_q4_0(const char *const r[4], size_t o, const int8_t *xq) {
    const __m512i xl = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)xq));
    const __m512i xh = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(xq + 16)));
    const __m512i m = _mm512_set1_epi8(0x0f);
    const __m512i nc = _mm512_add_epi32(negsum512(xl, 8), negsum512(xh, 8));
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(r[0] + o)));
    v = _mm512_mask_broadcast_i32x4(v, 0x00f0, _mm_loadu_si128((const __m128i *)(r[1] + o)));
    v = _mm512_mask_broadcast_i32x4(v, 0x0f00, _mm_loadu_si128((const __m128i *)(r[2] + o)));
    v = _mm512_mask_broadcast_i32x4(v, 0xf000, _mm_loadu_si128((const __m128i *)(r[3] + o)));
    __m512i t = _mm512_dpbusd_epi32(nc, _mm512_and_si512(v, m), xl);
    t = _mm512_dpbusd_epi32(t, _mm512_and_si512(_mm512_srli_epi16(v, 4), m), xh);
    return lane_sums(t);
}
/* the four lane sums of a, b, c, d */
INLINE __m128i red4(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}
/* four F16 scales as floats */
INLINE __m128 h4(const void *a, const void *b, const void *c, const void *d) {
    __m128i v = _mm_cvtsi32_si128(ld16(a));
    v = _mm_insert_epi16(v, ld16(b), 1);
    v = _mm_insert_epi16(v, ld16(c), 2);
    v = _mm_insert_epi16(v, ld16(d), 3);
    return _mm_cvtph_ps(v);
}
INLINE float h1(const void *p) { return _cvtsh_ss(ld16(p)); }
/* acc + isum * (dw * dx), the scalar twin's step */
INLINE __m128 step4(__m128 acc, __m128i isum, __m128 dw, __m128 dx) {
    return _mm_add_ps(acc, _mm_mul_ps(_mm_cvtepi32_ps(isum), _mm_mul_ps(dw, dx)));
}

/* Per type: block bytes BS, quants at offset 2, the x-side start value and the block dot. */
#define Q8_BS 34
#define Q4_BS 18
#define NC_q8_0 negcorr
#define NC_q4_0 negcorr8
#define BS_q8_0 Q8_BS
#define BS_q4_0 Q4_BS

/* 4 rows (pointers r[0..3]) x one token: y[i] = row i's dot; pf: rows whose same offsets are
 * fetched into L2 meanwhile (decode streams from DRAM; see kernels_avx512.c) */
#define ROWS4_BODY(T)                                                                           \
    const hr_block_q8_0 *x = xv;                                                                \
    __m128 acc = _mm_setzero_ps();                                                              \
    size_t pfo = 0;                                                                             \
    for (int64_t b = 0; b < n / HR_QK; b++) {                                                   \
        const size_t o = (size_t)b * BS_##T;                                                    \
        if (o + BS_##T > pfo) { /* each 64-byte line of pf once */                              \
            _mm_prefetch(pf[0] + pfo, _MM_HINT_T1), _mm_prefetch(pf[1] + pfo, _MM_HINT_T1);     \
            _mm_prefetch(pf[2] + pfo, _MM_HINT_T1), _mm_prefetch(pf[3] + pfo, _MM_HINT_T1);     \
            pfo += 64;                                                                          \
        }                                                                                       \
        const __m128i is = isum4_##T(r, o + 2, x[b].qs);                                         \
        acc = step4(acc, is, h4(r[0] + o, r[1] + o, r[2] + o, r[3] + o), _mm_set1_ps(h1(&x[b].d))); \
    }                                                                                           \
    _mm_storeu_ps(y, acc);

/* Q4_0, 16 contiguous rows x one token. Lane 4L + j holds row 4j + L: each register loads 4
 * rows' nibbles (one per 128-bit lane), and a 4 x 4 transpose of their dwords within the lanes
 * gives per register one 4-byte column of all 16 rows, against which a broadcast dword of x
 * sums straight into the rows' lanes: no reduction, no shuffle past the transpose. The rows'
 * scales come in one gather in the same lane order. */
void hr_rows16_q4_0_amx(int64_t n, const void *w, size_t ws, const void *xv, size_t xs, float *y, size_t ys) {
    const char *W = w;
    const hr_block_q8_0 *x = xv;
    if (ws > (size_t)INT32_MAX / 32) { /* the gather's offsets are 32-bit */
        for (int i = 0; i < 16; i += 4) hr_rows4_q4_0_amx(n, W + i * ws, ws, xv, xs, y + i, ys);
        return;
    }
    /* lane 4L + j <-> row 4j + L: the permutation is its own inverse */
    const __m512i lane_row = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m512i goff = _mm512_mullo_epi32(lane_row, _mm512_set1_epi32((int)ws));
    const __m512i m = _mm512_set1_epi8(0x0f);
    const char *rw[16];
    _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) rw[i] = W + i * ws + 2;
    __m512 acc = _mm512_setzero_ps();
    size_t pfo = 0;
    for (int64_t b = 0; b < n / HR_QK; b++) {
        const size_t o = (size_t)b * Q4_BS;
        if (o + Q4_BS > pfo) { /* each 64-byte line of the next 16 rows once, as this call reaches it */
            _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) _mm_prefetch(rw[i] - 2 + 16 * ws + pfo, _MM_HINT_T1);
            pfo += 64;
        }
        __m512i z[4];
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
            __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(rw[4 * j] + o)));
            v = _mm512_mask_broadcast_i32x4(v, 0x00f0, _mm_loadu_si128((const __m128i *)(rw[4 * j + 1] + o)));
            v = _mm512_mask_broadcast_i32x4(v, 0x0f00, _mm_loadu_si128((const __m128i *)(rw[4 * j + 2] + o)));
            z[j] = _mm512_mask_broadcast_i32x4(v, 0xf000, _mm_loadu_si128((const __m128i *)(rw[4 * j + 3] + o)));
        }
        const __m512i t0 = _mm512_unpacklo_epi32(z[0], z[1]), t1 = _mm512_unpackhi_epi32(z[0], z[1]);
        const __m512i t2 = _mm512_unpacklo_epi32(z[2], z[3]), t3 = _mm512_unpackhi_epi32(z[2], z[3]);
        const __m512i c[4] = {_mm512_unpacklo_epi64(t0, t2), _mm512_unpackhi_epi64(t0, t2), _mm512_unpacklo_epi64(t1, t3),
                              _mm512_unpackhi_epi64(t1, t3)};
        int32_t xd[8];
        memcpy(xd, x[b].qs, 32);
        /* -8 * sum(x) in every lane, for the unsigned nibbles */
        const __m256i s8 = negcorr8(ldq(x[b].qs));
        __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
        h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4e));
        h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xb1));
        /* two chains of dpbusd (integer sums: the order is free) */
        __m512i is = _mm512_broadcastd_epi32(h), ih = _mm512_setzero_si512();
        _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {
            is = _mm512_dpbusd_epi32(is, _mm512_and_si512(c[k], m), _mm512_set1_epi32(xd[k]));
            ih = _mm512_dpbusd_epi32(ih, _mm512_and_si512(_mm512_srli_epi16(c[k], 4), m), _mm512_set1_epi32(xd[4 + k]));
        }
        is = _mm512_add_epi32(is, ih);
        const __m512 dw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_i32gather_epi32(goff, W + o, 1)));
        const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(h1(&x[b].d)));
        acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_cvtepi32_ps(is), sc));
    }
    _mm512_storeu_ps(y, _mm512_permutexvar_ps(lane_row, acc)); /* back to row order */
}

/* One row: four blocks' sums side by side, then added into the sum one after another. */
#define DOT_BODY(T)                                                                              \
    const char *a = w;                                                                           \
    const hr_block_q8_0 *x = xv;                                                                 \
    const int64_t nb = n / HR_QK;                                                                \
    float sum = 0.0f, p[4];                                                                      \
    int64_t b = 0;                                                                               \
    for (; b + 4 <= nb; b += 4) {                                                                \
        __m256i s[4];                                                                            \
        for (int i = 0; i < 4; i++) {                                                            \
            const __m256i xq = ldq(x[b + i].qs);                                                 \
            s[i] = bdot_##T(NC_##T(xq), a + (b + i) * BS_##T + 2, xq);                           \
        }                                                                                        \
        const char *o = a + b * BS_##T;                                                          \
        _mm_storeu_ps(p, step4(_mm_setzero_ps(), red4(s[0], s[1], s[2], s[3]),                  \
                               h4(o, o + BS_##T, o + 2 * BS_##T, o + 3 * BS_##T),                \
                               h4(&x[b].d, &x[b + 1].d, &x[b + 2].d, &x[b + 3].d)));             \
        for (int i = 0; i < 4; i++) sum += p[i];                                                 \
    }                                                                                            \
    for (; b < nb; b++) {                                                                        \
        const __m256i xq = ldq(x[b].qs), z = _mm256_setzero_si256();                             \
        const __m128i is = red4(bdot_##T(NC_##T(xq), a + b * BS_##T + 2, xq), z, z, z);          \
        sum += (float)_mm_cvtsi128_si32(is) * (h1(a + b * BS_##T) * h1(&x[b].d));                \
    }                                                                                            \
    *s_out = sum;

/* 2 rows x 4 tokens (prompt edges, gathered prompt rows, attention): y[c*ys + r] */
#define TILE_BODY(T)                                                                              \
    const char *W = w, *X = xv;                                                                   \
    __m128 acc[2] = {_mm_setzero_ps(), _mm_setzero_ps()};                                         \
    for (int64_t b = 0; b < n / HR_QK; b++) {                                                     \
        const hr_block_q8_0 *xb[4];                                                               \
        __m256i xq[4], nc[4];                                                                     \
        for (int c = 0; c < 4; c++) {                                                             \
            xb[c] = (const hr_block_q8_0 *)(X + c * xs) + b;                                      \
            xq[c] = ldq(xb[c]->qs), nc[c] = NC_##T(xq[c]);                                        \
        }                                                                                         \
        const __m128 dx = h4(&xb[0]->d, &xb[1]->d, &xb[2]->d, &xb[3]->d);                         \
        for (int r = 0; r < 2; r++) {                                                             \
            const char *q = W + r * ws + b * BS_##T;                                              \
            const __m128i is = red4(bdot_##T(nc[0], q + 2, xq[0]), bdot_##T(nc[1], q + 2, xq[1]), \
                                    bdot_##T(nc[2], q + 2, xq[2]), bdot_##T(nc[3], q + 2, xq[3])); \
            acc[r] = step4(acc[r], is, _mm_set1_ps(h1(q)), dx);                                   \
        }                                                                                         \
    }                                                                                             \
    float t[4];                                                                                   \
    for (int r = 0; r < 2; r++) {                                                                 \
        _mm_storeu_ps(t, acc[r]);                                                                 \
        for (int c = 0; c < 4; c++) y[c * ys + r] = t[c];                                         \
    }

#define DECODE_FUNCS(T)                                                                                           \
    void hr_dot_##T##_amx(int64_t n, float *s_out, const void *w, const void *xv) { DOT_BODY(T) }                \
    void hr_rows4_##T##_amx(int64_t n, const void *w, size_t ws, const void *xv, size_t xs, float *y, size_t ys) { \
        (void)xs, (void)ys;                                                                                       \
        const char *W = w;                                                                                        \
        const char *r[4] = {W, W + ws, W + 2 * ws, W + 3 * ws};                                                   \
        const char *pf[4] = {W + 8 * ws, W + 9 * ws, W + 10 * ws, W + 11 * ws};                                   \
        ROWS4_BODY(T)                                                                                             \
    }                                                                                                             \
    void hr_gather4_##T##_amx(int64_t n, const void *const *wr, const void *const *nx, const void *xv, float *y) { \
        const char *r[4] = {wr[0], wr[1], wr[2], wr[3]}, *pf[4] = {nx[0], nx[1], nx[2], nx[3]};                   \
        ROWS4_BODY(T)                                                                                             \
    }                                                                                                             \
    void hr_tile_##T##_amx(int64_t n, const void *w, size_t ws, const void *xv, size_t xs, float *y, size_t ys) {  \
        TILE_BODY(T)                                                                                              \
    }

DECODE_FUNCS(q8_0)
DECODE_FUNCS(q4_0)

/* ---- prompt: AMX tiles ----
 * A panel holds 16 tokens' activations per block as tdpbssd's B operand wants them (8 rows
 * of 64 bytes: row k, token c at k*64 + 4c holds the token's elements 4k..4k+3), then the
 * 16 tokens' scales as floats: 576 bytes a block. */
#define PB 576

size_t hr_tile16_bytes_q8_amx(int64_t n) { return (size_t)(n / HR_QK) * PB; }

void hr_tile16_prep_q8_amx(const void *xq, size_t xs, int n_x, void *panel, int64_t n) {
    char *P = panel;
    for (int64_t b = 0; b < n / HR_QK; b++, P += PB) {
        float *d = (float *)(P + 512);
        for (int c = 0; c < 16; c++) {
            if (c >= n_x) {
                for (int k = 0; k < 8; k++) memset(P + k * 64 + 4 * c, 0, 4);
                d[c] = 0.0f;
                continue;
            }
            const hr_block_q8_0 *x = (const hr_block_q8_0 *)((const char *)xq + (size_t)c * xs) + b;
            for (int k = 0; k < 8; k++) memcpy(P + k * 64 + 4 * c, x->qs + 4 * k, 4);
            d[c] = h1(&x->d);
        }
    }
}

/* Tile registers: 0/3 weights (16 rows x 32 bytes), 1/4 the panel's block (8 x 64), 2/5 the
 * sums (16 x 16 int32): two sets, so consecutive blocks do not wait on one register; 6 the 16
 * rows' block scales (16 x 4 bytes: the F16 and 2 bytes past it). */
typedef struct {
    uint8_t palette, start_row, rsv[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_cfg;
static const amx_cfg CFG = {.palette = 1, .colsb = {32, 64, 64, 32, 64, 64, 4}, .rows = {16, 8, 16, 16, 8, 16, 16}};

/* Tile loads and stores that name the memory they touch: the compiler's own clobber all
 * memory, which makes it write the accumulators back to the stack around every one. Weight
 * rows (never written) load without an operand. */
#define TLOAD(t, base, stride) __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(base), "r"((long)(stride)))
#define TLOADM(t, base, stride, bytes) \
    __asm__ volatile("tileloadd (%1,%2,1), %%tmm" #t ::"m"(*(const char(*)[bytes])(base)), "r"(base), "r"((long)(stride)))
#define TSTORE(t, base, stride, bytes) \
    __asm__ volatile("tilestored %%tmm" #t ", (%1,%2,1)" : "=m"(*(char(*)[bytes])(base)) : "r"(base), "r"((long)(stride)))

/* Weights are used where they lie; what a call derives from them (the rows' scales as floats,
 * Q4_0's quants as int8) is made once per chunk of blocks for all the call's panels. */
#define CHUNK_Q8 256
#define CHUNK_Q4 64

/* dwa[b - b0][r]: row r's scale of block b, for b in [b0, b1) */
INLINE void row_scales(float (*dwa)[16], const char *W, size_t ws, size_t bs, int64_t b0, int64_t b1) {
    int32_t ss[16] __attribute__((aligned(64)));
    for (int64_t b = b0; b < b1; b++) {
        TLOAD(6, W + b * bs, ws);
        TSTORE(6, ss, 4, 64);
        _mm512_store_ps(dwa[b - b0], _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_load_si512(ss))));
    }
}

/* Q4_0 rows' blocks [b0, b1) as int8 (q - 8), 16 rows of 32 bytes a block */
INLINE void unpack_q4_0(int8_t *ab, const char *W, size_t ws, int64_t b0, int64_t b1) {
    const __m512i m = _mm512_set1_epi8(0x0f), e8 = _mm512_set1_epi8(8);
    /* qword lanes: row i's low nibbles then its high ones, rows 0, 1 (and 2, 3) */
    const __m512i i01 = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11), i23 = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
    for (int64_t b = b0; b < b1; b++) {
        int8_t *o = ab + (b - b0) * 512;
        _Pragma("GCC unroll 4") for (int r = 0; r < 16; r += 4) {
            const char *q = W + r * ws + b * Q4_BS + 2; /* 4 rows' nibbles, one per 128-bit lane */
            __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)q));
            v = _mm512_mask_broadcast_i32x4(v, 0x00f0, _mm_loadu_si128((const __m128i *)(q + ws)));
            v = _mm512_mask_broadcast_i32x4(v, 0x0f00, _mm_loadu_si128((const __m128i *)(q + 2 * ws)));
            v = _mm512_mask_broadcast_i32x4(v, 0xf000, _mm_loadu_si128((const __m128i *)(q + 3 * ws)));
            const __m512i lo = _mm512_sub_epi8(_mm512_and_si512(v, m), e8);
            const __m512i hi = _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), m), e8);
            _mm512_store_si512(o + 32 * r, _mm512_permutex2var_epi64(lo, i01, hi));
            _mm512_store_si512(o + 32 * r + 64, _mm512_permutex2var_epi64(lo, i23, hi));
        }
    }
}

/* acc[m] (lanes = tokens) += isum[m][c] * (d_w[m] * d_x[c]) for one block: sums cs, row scales
 * dw, token scales dxp */
INLINE void epilogue(__m512 acc[16], const int32_t *cs, const float *dw, const float *dxp) {
    const __m512 dx = _mm512_load_ps(dxp);
    _Pragma("GCC unroll 16") for (int m = 0; m < 16; m++) {
        const __m512 sc = _mm512_mul_ps(_mm512_set1_ps(dw[m]), dx);
        const __m512 v = _mm512_cvtepi32_ps(_mm512_load_si512(cs + 16 * m));
        acc[m] = _mm512_add_ps(acc[m], _mm512_mul_ps(v, sc));
    }
}

/* the outputs y[c*ys + m] of tokens c < n_x, to and from the accumulators' lanes */
INLINE void store16(const __m512 acc[16], float *y, size_t ys, int n_x) {
    float t[16] __attribute__((aligned(64)));
    _Pragma("GCC unroll 16") for (int m = 0; m < 16; m++) {
        _mm512_store_ps(t, acc[m]);
        for (int c = 0; c < n_x; c++) y[(size_t)c * ys + m] = t[c];
    }
}
INLINE void load16(__m512 acc[16], const float *y, size_t ys, int n_x) {
    float t[16] __attribute__((aligned(64))) = {0};
    _Pragma("GCC unroll 16") for (int m = 0; m < 16; m++) {
        for (int c = 0; c < n_x; c++) t[c] = y[(size_t)c * ys + m];
        acc[m] = _mm512_load_ps(t);
    }
}

/* Block b's sums into tile set (A, B, C) and then into cs */
#define BLOCK_TILES(A, B, C, Q4, b, cs)                                                     \
    do {                                                                                    \
        _tile_zero(C);                                                                      \
        if (Q4) TLOADM(A, ab + ((b) - b0) * 512, 32, 512);                                  \
        else TLOAD(A, W + (b) * Q8_BS + 2, ws);                                             \
        TLOADM(B, P + (b) * PB, 64, 512);                                                   \
        _tile_dpbssd(C, A, B);                                                              \
        TSTORE(C, cs, 64, 1024);                                                            \
    } while (0)

/* One panel over blocks [b0, b1), accumulating into y (which holds blocks [0, b0)'s sums):
 * software-pipelined, the tiles of block b+1 running while the vector unit scales block b. */
INLINE void panel_run(int q4, const char *W, size_t ws, const int8_t *ab, float (*dwa)[16], const char *P, int64_t b0,
                      int64_t b1, float *y, size_t ys, int n_x) {
    int32_t cs[2][256] __attribute__((aligned(64)));
    __m512 acc[16]; /* every loop over it unrolled, so that it stays in registers */
    if (b0 == 0) {
        _Pragma("GCC unroll 16") for (int m = 0; m < 16; m++) acc[m] = _mm512_setzero_ps();
    } else {
        load16(acc, y, ys, n_x);
    }
    BLOCK_TILES(0, 1, 2, q4, b0, cs[0]);
    for (int64_t b = b0; b < b1; b++) {
        const int odd = (b - b0) & 1;
        if (b + 1 < b1) {
            if (odd) BLOCK_TILES(0, 1, 2, q4, b + 1, cs[0]);
            else BLOCK_TILES(3, 4, 5, q4, b + 1, cs[1]);
        }
        epilogue(acc, cs[odd], dwa[b - b0], (const float *)(P + b * PB + 512));
    }
    store16(acc, y, ys, n_x);
}

/* ab: Q4_0's unpacked quants, CHUNK_Q4 * 512 bytes, 64-byte aligned (NULL for Q8_0) */
INLINE void tile16_run(int q4, int64_t n, const char *W, size_t ws, const char *panels, size_t pb, float *y, size_t ys,
                       int n_x, int8_t *ab) {
    const int64_t nb = n / HR_QK, chunk = q4 ? CHUNK_Q4 : CHUNK_Q8;
    float dwa[CHUNK_Q8][16] __attribute__((aligned(64)));
    _tile_loadconfig(&CFG);
    for (int64_t b0 = 0; b0 < nb; b0 += chunk) {
        const int64_t b1 = b0 + chunk < nb ? b0 + chunk : nb;
        row_scales(dwa, W, ws, q4 ? Q4_BS : Q8_BS, b0, b1);
        if (q4) unpack_q4_0(ab, W, ws, b0, b1);
        for (int p = 0; 16 * p < n_x; p++)
            panel_run(q4, W, ws, ab, dwa, panels + p * pb, b0, b1, y + (size_t)16 * p * ys, ys,
                      n_x - 16 * p < 16 ? n_x - 16 * p : 16);
    }
    _tile_release();
}

void hr_tile16_q8_0_amx(int64_t n, const void *w, size_t ws, const void *panels, size_t pb, float *y, size_t ys, int n_x) {
    tile16_run(0, n, w, ws, panels, pb, y, ys, n_x, NULL);
}
void hr_tile16_q4_0_amx(int64_t n, const void *w, size_t ws, const void *panels, size_t pb, float *y, size_t ys, int n_x) {
    int8_t ab[CHUNK_Q4 * 512] __attribute__((aligned(64)));
    tile16_run(1, n, w, ws, panels, pb, y, ys, n_x, ab);
}

#else
int hr_amx_usable(void) { return 0; }
#endif
