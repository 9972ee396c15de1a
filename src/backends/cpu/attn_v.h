/* Attention's weighted sum of value rows: out = sum over p of w[p] * V[p], p in order. The
 * plain loop converted each F16 value with a branchy scalar call and went element by
 * element; at 256 prompt tokens it was a third of the prompt's time. */
#ifndef HR_ATTN_V_H
#define HR_ATTN_V_H
#include <stddef.h>
#include <stdint.h>

/* out[d] = (((0 + w[0]*V[0][d]) + w[1]*V[1][d]) + ...) for d < hd, each product and sum
 * rounded to float in that order (no fused multiply-add), so every element is the plain
 * loop's bit for bit. V rows are F16 (f16 != 0) or F32, vs bytes apart.
 *
 * The plain-C version and its AVX2 + F16C and AVX-512 twins (x86 builds; call one only where
 * the CPU has its features): equal bit for bit; each kernel table (kernels.h: attn_wsum)
 * carries its own. */
void hr_attn_wsum_c(float *out, const float *w, const void *V, size_t vs, int32_t n, int32_t hd, int f16);

/* The same for HR_WSUM_GRP tokens over one V: token i's row out + i*os from weights w + i*ws
 * over rows [0, n[i]), each token's result attn_wsum's bit for bit. The AVX-512 version reads
 * and converts each value row once for the group (rows all of them see, then each one's
 * own); the others run attn_wsum per token. Kernel tables carry one (kernels.h: attn_wsum_grp). */
enum { HR_WSUM_GRP = 4 };
void hr_attn_wsum_grp_c(float *out, size_t os, const float *w, size_t ws, const void *V, size_t vs, const int32_t *n,
                        int32_t hd, int f16);
void hr_attn_wsum_grp_avx2(float *out, size_t os, const float *w, size_t ws, const void *V, size_t vs,
                           const int32_t *n, int32_t hd, int f16);
void hr_attn_wsum_grp_avx512(float *out, size_t os, const float *w, size_t ws, const void *V, size_t vs,
                             const int32_t *n, int32_t hd, int f16);
void hr_attn_wsum_avx2(float *out, const float *w, const void *V, size_t vs, int32_t n, int32_t hd, int f16);
void hr_attn_wsum_avx512(float *out, const float *w, const void *V, size_t vs, int32_t n, int32_t hd, int f16);
#endif
