/* CPU dot-product kernels. Activations are first "prepared" the way ggml does for
 * each weight type, so results track llama.cpp:
 *   F32 weights: x stays F32;  F16: x rounded to F16;  BF16: x rounded to BF16;
 *   Q8_0 and Q4_0: x quantized to Q8_0 blocks (ggml's x86 quantize_row_q8_0, which
 *   rounds to nearest even).
 * A kernel table exists per ISA (scalar reference, AVX2/FMA/F16C, AVX-512, NEON);
 * hr_kernels_best() picks the fastest the running CPU supports. Every SIMD entry has
 * the scalar entry as its reference twin (tests compare them). */
#ifndef HR_KERNELS_H
#define HR_KERNELS_H
#include <stddef.h>
#include <stdint.h>
#include "../../formats/types.h"

/* s = dot(w_row, x_prepared) over n elements (n a multiple of the weight block). */
typedef void (*hr_vec_dot_fn)(int64_t n, float *s, const void *w_row, const void *xq);
/* Prepares n floats into the representation vec_dot expects. */
typedef void (*hr_act_prep_fn)(const float *x, void *xq, int64_t n);
/* Attention's weighted sum of value rows (attn_v.h): one per table, all equal bit for bit. */
typedef void (*hr_attn_wsum_fn)(float *out, const float *w, const void *V, size_t vs, int32_t n, int32_t hd, int f16);
/* The same for a group of tokens over one V (attn_v.h), each token's result attn_wsum's. */
typedef void (*hr_attn_wsum_grp_fn)(float *out, size_t os, const float *w, size_t ws, const void *V, size_t vs,
                                    const int32_t *n, int32_t hd, int f16);

typedef struct hr_kernels {
    const char *name;                      /* "scalar", "avx2", "avxvnni", "avx512", "amx", "neon" */
    hr_vec_dot_fn vec_dot[HR_TYPE_MAX];    /* NULL for unsupported weight types */
    hr_act_prep_fn act_prep[HR_TYPE_MAX];  /* indexed by WEIGHT type */
    hr_attn_wsum_fn attn_wsum;
    hr_attn_wsum_grp_fn attn_wsum_grp;
} hr_kernels;

const hr_kernels *hr_kernels_scalar(void);
const hr_kernels *hr_kernels_avx2(void);   /* NULL if not compiled in or CPU lacks AVX2+FMA+F16C */
const hr_kernels *hr_kernels_avx512(void); /* NULL if not compiled in or CPU lacks AVX-512F/BW/VL/DQ/VNNI */
/* avx2 with AVX-VNNI's vpdpbusd in the Q8_0 and Q4_0 kernels (Intel desktop CPUs since Alder Lake) */
const hr_kernels *hr_kernels_avxvnni(void);
/* avx512 with Q8_0 and Q4_0 on AMX int8 tiles (server CPUs); NULL if not compiled in or unusable */
const hr_kernels *hr_kernels_amx(void);
const hr_kernels *hr_kernels_neon(void);   /* NULL unless built for ARM with NEON */
/* Best available; HEARTH_KERNELS=scalar|avx2|avxvnni|avx512|amx|neon in the environment overrides. */
const hr_kernels *hr_kernels_best(void);

/* Bytes that act_prep writes for n elements of activations for weight type wt. */
size_t hr_act_bytes(uint32_t wt, int64_t n);

/* A weight matrix view in ggml order: n_out rows of n_in contiguous elements. */
typedef struct hr_mat {
    uint32_t type;
    int64_t n_in;      /* ne0 */
    int64_t n_out;     /* ne1 */
    size_t row_bytes;  /* hr_row_bytes(type, n_in) */
    const void *data;
    size_t stride;     /* bytes from a row to the next; 0: row_bytes (rows packed). More when
                          rows of several matrices interleave (an FFN's neuron bundles). */
} hr_mat;

static inline size_t hr_mat_stride(const hr_mat *W) { return W->stride ? W->stride : W->row_bytes; }

#endif
