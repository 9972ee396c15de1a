/* Internal to the CPU backend: the per-ISA tables carry, besides the public
 * hr_kernels, a register-tiled kernel for prompt batches. A tile computes
 * HR_TILE_R weight rows against HR_TILE_C prepared activation rows; each of its
 * outputs is bit-identical to vec_dot of the same pair (same accumulation
 * order), so a token's result does not depend on the batch it was computed in. */
#ifndef HR_KERNELS_IMPL_H
#define HR_KERNELS_IMPL_H
#include "kernels.h"

#define HR_TILE_R 2
#define HR_TILE_C 4

/* y[c*ys + r] = dot(w + r*ws, x + c*xs) for r < HR_TILE_R, c < HR_TILE_C;
 * ws, xs in bytes, ys in floats. A NULL tile means: use vec_dot per pair. */
typedef void (*hr_tile_fn)(int64_t n, const void *w, size_t ws, const void *x, size_t xs,
                           float *y, size_t ys);

typedef struct hr_kernels_ext {
    hr_kernels k; /* first member: an hr_kernels* from these tables converts back */
    hr_tile_fn tile[HR_TYPE_MAX];
    /* 2 rows x 1 token (decode): shares the activation-side work of two rows; xs unused. */
    hr_tile_fn rows2[HR_TYPE_MAX];
    /* 4 rows x 1 token, the same way (preferred for decode where present). */
    hr_tile_fn rows4[HR_TYPE_MAX];
} hr_kernels_ext;

static inline const hr_kernels_ext *hr_kernels_ext_of(const hr_kernels *k) {
    return (const hr_kernels_ext *)k;
}

/* Tables per ISA (NULL where not compiled in); hr_kernels_* add the CPU check. */
const hr_kernels_ext *hr_kext_scalar(void);
const hr_kernels_ext *hr_kext_avx2(void);
const hr_kernels_ext *hr_kext_avx512(void);
const hr_kernels_ext *hr_kext_neon(void);

/* Scalar pieces the SIMD files reuse for odd tails. */
void hr_prep_f16_scalar(const float *x, void *xq, int64_t n);
void hr_prep_bf16_scalar(const float *x, void *xq, int64_t n);
void hr_prep_q8_0_scalar(const float *x, void *xq, int64_t n);
/* AVX2 preps, shared with the AVX-512 table (only called where AVX2 runs). */
void hr_prep_f16_avx2(const float *x, void *xq, int64_t n);
void hr_prep_bf16_avx2(const float *x, void *xq, int64_t n);
void hr_prep_q8_0_avx2(const float *x, void *xq, int64_t n);
#endif
