/* Shared by the kernel and matmul tests: weight rows of every CPU weight type, and an
 * independent double-precision reference of vec_dot built only from the dequantizers. */
#ifndef HR_TEST_KERNEL_ROWS_H
#define HR_TEST_KERNEL_ROWS_H
#include <stdint.h>

#include "formats/types.h"
#include "testutil.h"

/* The type whose dequantizer gives the values of the prepared activations of weight type t. */
uint32_t kt_act_type(uint32_t t);
/* 1 for the float types, else the block size. */
int64_t kt_block(uint32_t t);
/* A row of n elements of type t. Float types and Q8_0/Q4_0: random normals, converted.
 * Other block types: random bytes (every bit pattern of quants and packed sub-block scales)
 * with the F16 scale fields set to finite moderate values (MXFP4: an exponent near 1). */
void kt_weight_row(hr_rng *r, uint32_t t, void *w, int64_t n);
/* Reference dot of weight row w and prepared activations xq, and a magnitude bounding
 * the rounding of a float evaluation: sum of |terms| the kernel may form, with the min
 * parts (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K) counted separately since they can cancel. The
 * Q8_1 types use the activation's s field for the min part, as ggml does (s is F16 of
 * d * sum(q), not exactly the dequantized sum). */
double kt_ref_dot(uint32_t t, const void *w, const void *xq, int64_t n, double *mag);
#endif
