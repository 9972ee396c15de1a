/* Internal to the CPU backend: the per-ISA tables carry, besides the public
 * hr_kernels, a register-tiled kernel for prompt batches. A tile computes
 * HR_TILE_R weight rows against HR_TILE_C prepared activation rows; each of its
 * outputs is bit-identical to vec_dot of the same pair (same accumulation
 * order), so a token's result does not depend on the batch it was computed in. */
#ifndef HR_KERNELS_IMPL_H
#define HR_KERNELS_IMPL_H
#include <string.h>
#include "kernels.h"

#define HR_TILE_R 2
#define HR_TILE_C 4

/* y[c*ys + r] = dot(w + r*ws, x + c*xs) for r < HR_TILE_R, c < HR_TILE_C;
 * ws, xs in bytes, ys in floats. A NULL tile means: use vec_dot per pair. */
typedef void (*hr_tile_fn)(int64_t n, const void *w, size_t ws, const void *x, size_t xs,
                           float *y, size_t ys);

/* y[r] = dot(w[r], x) for r < 4: rows anywhere (a gathered product's active rows). nx: the
 * 4 rows the caller computes a few calls later (or w again), fetched into L2 at the offsets
 * this call reads, so scattered rows stream as a dense matrix's do; never read for values. */
typedef void (*hr_gather4_fn)(int64_t n, const void *const *w, const void *const *nx, const void *x, float *y);

typedef struct hr_kernels_ext {
    hr_kernels k; /* first member: an hr_kernels* from these tables converts back */
    hr_tile_fn tile[HR_TYPE_MAX];
    /* 2 rows x 1 token (decode): shares the activation-side work of two rows; xs unused. */
    hr_tile_fn rows2[HR_TYPE_MAX];
    /* 4 rows x 1 token, the same way (preferred for decode where present). */
    hr_tile_fn rows4[HR_TYPE_MAX];
    /* rows4 over the activation row re-laid by tile_xprep (decode: re-laid once per product
     * for all its rows), rows4's results bit for bit; NULL where the re-layout saves nothing. */
    hr_tile_fn rows4_x[HR_TYPE_MAX];
    /* 16 contiguous rows x 1 token, rows4's results bit for bit (decode prefers it where present). */
    hr_tile_fn rows16[HR_TYPE_MAX];
    /* 4 scattered rows x 1 token (gathered decode), each result rows4's bit for bit. */
    hr_gather4_fn gather4[HR_TYPE_MAX];
    /* Prompt tiles over activations re-laid once per batch into the lane order and alignment
     * their loads want (instead of shuffling them again for every weight row): tile_xprep
     * turns one act_prep row into that layout, tile_xbytes(n) bytes; tile_x then takes such
     * rows where tile takes act_prep rows, with tile's results bit for bit. */
    hr_tile_fn tile_x[HR_TYPE_MAX];
    /* A wider tile_x where the registers allow one: xw_rows weight rows x xw_cols tokens
     * (multiples of HR_TILE_R and HR_TILE_C), results tile_x's bit for bit. More rows share
     * each activation load (F16, Q8_0, Q4_0: 4 x 4); more tokens share each decoded weight
     * block (K-quants, IQ4_XS: 2 x 8). */
    hr_tile_fn tile_xw[HR_TYPE_MAX];
    unsigned char xw_rows[HR_TYPE_MAX], xw_cols[HR_TYPE_MAX];
    void (*tile_xprep[HR_TYPE_MAX])(const void *xq, void *xt, int64_t n);
    size_t (*tile_xbytes[HR_TYPE_MAX])(int64_t n);
    /* Prompt products of 16 weight rows per call over panels of 16 tokens (the AMX table):
     * tile16_prep re-lays n_x <= 16 act_prep rows (xs bytes apart) into one panel of
     * tile16_bytes(n) bytes, 64-byte aligned, the tokens past n_x as zeros; tile16 takes the
     * panels of n_x tokens, pb bytes apart, and writes y[c*ys + r] for r < 16, c < n_x, each
     * vec_dot's result bit for bit. */
    void (*tile16[HR_TYPE_MAX])(int64_t n, const void *w, size_t ws, const void *panels, size_t pb, float *y, size_t ys,
                                int n_x);
    void (*tile16_prep[HR_TYPE_MAX])(const void *xq, size_t xs, int n_x, void *panel, int64_t n);
    size_t (*tile16_bytes[HR_TYPE_MAX])(int64_t n);
    /* the smallest batch tile16 runs (0: any of 2 or more); below it the other tiles do, as
     * decoding 16 rows for a few tokens costs more than it saves */
    unsigned char tile16_min[HR_TYPE_MAX];
} hr_kernels_ext;

static inline const hr_kernels_ext *hr_kernels_ext_of(const hr_kernels *k) {
    return (const hr_kernels_ext *)k;
}

/* Tables per ISA (NULL where not compiled in); hr_kernels_* add the CPU check. */
const hr_kernels_ext *hr_kext_scalar(void);
const hr_kernels_ext *hr_kext_avx2(void);
const hr_kernels_ext *hr_kext_avxvnni(void); /* kernels_avxvnni.c */
const hr_kernels_ext *hr_kext_avx512(int bf16); /* bf16: the table with vdpbf16ps for BF16 */
const hr_kernels_ext *hr_kext_neon(void);
/* The AVX-512 table with AMX prompt tiles for Q8_0 and Q4_0 (kernels_avx512.c, its kernels in
 * kernels_amx.c); NULL where not compiled in. hr_amx_usable: the CPU has AMX-INT8 and the
 * kernel grants this process the tile state (Linux asks for it once per process). */
const hr_kernels_ext *hr_kext_amx(int bf16);
int hr_amx_usable(void);
/* kernels_amx.c: Q8_0 and Q4_0 with the scalar twin's arithmetic (exact integer sum per block,
 * then sum += isum * (d_w * d_x) block after block), so every kernel of the AMX table equals
 * kernels_scalar.c's dot bit for bit: vec_dot, rows4, gather4, the 2 x 4 tile and tile16. */
#define HR_AMX_DECL(T)                                                                                              \
    void hr_dot_##T##_amx(int64_t n, float *s, const void *w, const void *x);                                      \
    void hr_rows4_##T##_amx(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys);   \
    void hr_tile_##T##_amx(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys);    \
    void hr_gather4_##T##_amx(int64_t n, const void *const *w, const void *const *nx, const void *x, float *y);    \
    void hr_tile16_##T##_amx(int64_t n, const void *w, size_t ws, const void *panels, size_t pb, float *y, size_t ys, \
                             int n_x);
HR_AMX_DECL(q8_0)
HR_AMX_DECL(q4_0)
void hr_rows16_q4_0_amx(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys);
void hr_tile16_prep_q8_amx(const void *xq, size_t xs, int n_x, void *panel, int64_t n);
size_t hr_tile16_bytes_q8_amx(int64_t n);

/* The K-quants' prompts (Q2_K ... Q6_K) on the 256-bit tables, and IQ4_XS's on AVX-VNNI (kquant_k_avx2.c;
 * its AVX-VNNI build's names end in _avxvnni): panels of 16 tokens (one prep and size for all:
 * Q8_K rows), tile16's contract above, each output vec_dot's bit for bit. */
#define HR_KP_DECL(T, ISA)                                                                                        \
    void hr_tile16_##T##_##ISA(int64_t n, const void *w, size_t ws, const void *panels, size_t pb, float *y,       \
                               size_t ys, int n_x);
HR_KP_DECL(q4_K, avx2)
HR_KP_DECL(q5_K, avx2)
HR_KP_DECL(q6_K, avx2)
HR_KP_DECL(q3_K, avx2)
HR_KP_DECL(q2_K, avx2)
HR_KP_DECL(iq4_xs, avxvnni)
HR_KP_DECL(q4_K, avxvnni)
HR_KP_DECL(q5_K, avxvnni)
HR_KP_DECL(q6_K, avxvnni)
HR_KP_DECL(q3_K, avxvnni)
HR_KP_DECL(q2_K, avxvnni)
void hr_tile16_prep_q8K_avx2(const void *xq, size_t xs, int n_x, void *panel, int64_t n);
size_t hr_tile16_bytes_q8K_avx2(int64_t n);
void hr_tile16_prep_q8K_avxvnni(const void *xq, size_t xs, int n_x, void *panel, int64_t n);
size_t hr_tile16_bytes_q8K_avxvnni(int64_t n);
/* Round to nearest, ties to even, as _mm256_round_ps(_MM_ROUND_NEAREST) does; adding and
 * removing 1.5*2^23 leaves the FPU's default rounding to do it (|v| <= 2^22 here). ISO C
 * mode, no fast-math: the pair is not folded. */
static inline float hr_round_even(float v) {
    const float big = 0x1.8p23f;
    return (v + big) - big;
}
/* One 32-element block quantized as ggml's x86 Q8_0 prep does; returns the unrounded d. */
float hr_q8_block_scalar(const float *x, int8_t qs[HR_QK]);

/* Scalar pieces the SIMD files reuse for odd tails. */
void hr_prep_f16_scalar(const float *x, void *xq, int64_t n);
void hr_prep_bf16_scalar(const float *x, void *xq, int64_t n);
void hr_prep_q8_0_scalar(const float *x, void *xq, int64_t n);
/* Activation preps of the newer weight types (kernels_scalar_quant.c): Q8_K as ggml's
 * quantize_row_q8_K_ref (what its x86 build runs), Q8_1 as ggml's x86 AVX2 quantize_row_q8_1. */
void hr_prep_q8_K_scalar(const float *x, void *xq, int64_t n);
void hr_prep_q8_1_scalar(const float *x, void *xq, int64_t n);
/* Scalar vec_dots of the newer weight types against their prepared activations (Q8_1 for
 * Q4_1/Q5_1; Q8_0 for Q5_0, IQ4_NL, MXFP4; Q8_K for the K-quants and IQ4_XS), with the
 * integer arithmetic of ggml's generic kernels: the SIMD versions' twins. */
void hr_dot_q4_1_scalar(int64_t n, float *s, const void *w, const void *x);
void hr_dot_q5_0_scalar(int64_t n, float *s, const void *w, const void *x);
void hr_dot_q5_1_scalar(int64_t n, float *s, const void *w, const void *x);
void hr_dot_iq4_nl_scalar(int64_t n, float *s, const void *w, const void *x);
void hr_dot_mxfp4_scalar(int64_t n, float *s, const void *w, const void *x);
void hr_dot_q2_K_scalar(int64_t n, float *s, const void *w, const void *x);
void hr_dot_q3_K_scalar(int64_t n, float *s, const void *w, const void *x);
void hr_dot_q4_K_scalar(int64_t n, float *s, const void *w, const void *x);
void hr_dot_q5_K_scalar(int64_t n, float *s, const void *w, const void *x);
void hr_dot_q6_K_scalar(int64_t n, float *s, const void *w, const void *x);
void hr_dot_iq4_xs_scalar(int64_t n, float *s, const void *w, const void *x);
/* AVX2 preps, shared with the AVX-512 table (only called where AVX2 runs). */
void hr_prep_f16_avx2(const float *x, void *xq, int64_t n);
void hr_prep_bf16_avx2(const float *x, void *xq, int64_t n);
void hr_prep_q8_0_avx2(const float *x, void *xq, int64_t n);
void hr_prep_q8_1_avx2(const float *x, void *xq, int64_t n); /* kquant_legacy_avx2.c */
void hr_prep_q8_K_avx2(const float *x, void *xq, int64_t n); /* kquant_k_avx2.c */
/* K-quant and IQ4_XS kernels against Q8_K (kquant_k_avx2.c, kquant_k_avx512.c): vec_dot,
 * rows4 (4 rows x 1 token), tile and gather4, each bit-identical to its ISA's vec_dot. */
#define HR_KQ_DECL(T, ISA)                                                                      \
    void hr_dot_##T##_##ISA(int64_t n, float *s, const void *w, const void *x);                 \
    void hr_rows4_##T##_##ISA(int64_t n, const void *w, size_t ws, const void *x, size_t xs,    \
                              float *y, size_t ys);                                             \
    void hr_tile_##T##_##ISA(int64_t n, const void *w, size_t ws, const void *x, size_t xs,     \
                             float *y, size_t ys);                                              \
    void hr_gather4_##T##_##ISA(int64_t n, const void *const *w, const void *const *nx,         \
                                const void *x, float *y);
#define HR_KQ_DECL_ALL(ISA) \
    HR_KQ_DECL(q2_K, ISA) HR_KQ_DECL(q3_K, ISA) HR_KQ_DECL(q4_K, ISA) \
    HR_KQ_DECL(q5_K, ISA) HR_KQ_DECL(q6_K, ISA) HR_KQ_DECL(iq4_xs, ISA)
HR_KQ_DECL_ALL(avx2)
HR_KQ_DECL_ALL(avx512)
/* Tiles over re-laid Q8_K rows (tile_x; kquant_k_avx2.c, kquant_k_avx512.c) of Q4_K, Q5_K and
 * IQ4_XS, and their table entries (KIND: tile_x or tile_xprep). */
#define HR_KQX_DECL(T, ISA)                                                                         \
    void hr_tile_x_##T##_##ISA(int64_t n, const void *w, size_t ws, const void *x, size_t xs,       \
                               float *y, size_t ys);                                                \
    void hr_tile_xprep_##T##_##ISA(const void *xq, void *xt, int64_t n);
#define HR_KQX_DECL_ALL(ISA) \
    HR_KQX_DECL(q4_K, ISA) HR_KQX_DECL(q5_K, ISA) HR_KQX_DECL(iq4_xs, ISA) size_t hr_tile_xbytes_q8Kt_##ISA(int64_t n);
HR_KQX_DECL_ALL(avx2)
HR_KQX_DECL_ALL(avx512)
/* IQ4_XS's 256-bit tile_xw: 2 rows x 8 tokens */
void hr_tile_xw_iq4_xs_avx2(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys);
/* AVX-512 only: Q6_K's tile_x, and the 2 x 8 wide tiles (tile_xw) of all four */
HR_KQX_DECL(q6_K, avx512)
#define HR_KQXW_DECL(T)                                                                             \
    void hr_tile_xw_##T##_avx512(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys);
HR_KQXW_DECL(q4_K)
HR_KQXW_DECL(q5_K)
void hr_rows4_x_q4_K_avx512(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys);
void hr_rows4_x_q5_K_avx512(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys);
void hr_rows4_x_iq4_xs_avx512(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys);
/* AVX-512 prompt tiles over re-laid activations of Q5_0, IQ4_NL and MXFP4 (kquant_legacy_avx512.c) */
#define HR_KQLX_DECL(T)                                                                                        \
    size_t hr_tile_xbytes_##T##_avx512(int64_t n);                                                             \
    void hr_tile_xprep_##T##_avx512(const void *xq, void *xt, int64_t n);                                      \
    void hr_tile_x_##T##_avx512(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys); \
    void hr_tile_xw_##T##_avx512(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys);
HR_KQLX_DECL(q5_0)
HR_KQLX_DECL(iq4_nl)
HR_KQLX_DECL(mxfp4)
void hr_rows4_x_q5_0_avx512(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys);
#define HR_KQLX_ENTRIES(KIND) [HR_Q5_0] = hr_##KIND##_q5_0_avx512, [HR_IQ4_NL] = hr_##KIND##_iq4_nl_avx512, \
                              [HR_MXFP4] = hr_##KIND##_mxfp4_avx512
HR_KQXW_DECL(q6_K)
HR_KQXW_DECL(iq4_xs)
#define HR_KQX_ENTRIES(KIND, ISA) \
    [HR_Q4_K] = hr_##KIND##_q4_K_##ISA, [HR_Q5_K] = hr_##KIND##_q5_K_##ISA, [HR_IQ4_XS] = hr_##KIND##_iq4_xs_##ISA
#define HR_KQX_SHAPE(V) [HR_Q4_K] = (V), [HR_Q5_K] = (V), [HR_IQ4_XS] = (V)
#define HR_KQX_BYTES(ISA)                                                                          \
    [HR_Q4_K] = hr_tile_xbytes_q8Kt_##ISA, [HR_Q5_K] = hr_tile_xbytes_q8Kt_##ISA,                  \
    [HR_IQ4_XS] = hr_tile_xbytes_q8Kt_##ISA
/* Their table entries: KIND is dot, rows4, tile or gather4; all six take Q8_K activations. */
#define HR_KQ_ENTRIES(KIND, ISA)                                                          \
    [HR_Q2_K] = hr_##KIND##_q2_K_##ISA, [HR_Q3_K] = hr_##KIND##_q3_K_##ISA,               \
    [HR_Q4_K] = hr_##KIND##_q4_K_##ISA, [HR_Q5_K] = hr_##KIND##_q5_K_##ISA,               \
    [HR_Q6_K] = hr_##KIND##_q6_K_##ISA, [HR_IQ4_XS] = hr_##KIND##_iq4_xs_##ISA
#define HR_KQ_PREP(FN) \
    [HR_Q2_K] = FN, [HR_Q3_K] = FN, [HR_Q4_K] = FN, [HR_Q5_K] = FN, [HR_Q6_K] = FN, [HR_IQ4_XS] = FN
/* Blocks b.. of a Q8_0 activation row of nb blocks, for the tile_xprep kernels: the row's
 * own grp blocks, or (the ragged last group) pad holding them zero-filled to grp; zero blocks
 * add exactly +0, as in the vec_dot kernels' tails. */
static inline const hr_block_q8_0 *hr_q8_grp_src(const hr_block_q8_0 *x, int64_t b, int64_t nb, int grp, hr_block_q8_0 *pad) {
    if (b + grp <= nb) return x + b;
    memset(pad, 0, sizeof *pad * (size_t)grp);
    memcpy(pad, x + b, (size_t)(nb - b) * sizeof *pad);
    return pad;
}

#endif
