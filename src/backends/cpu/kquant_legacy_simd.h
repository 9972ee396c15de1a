/* SIMD kernels of Q4_1, Q5_0, Q5_1, IQ4_NL and MXFP4 (kquant_legacy_avx2.c, its AVX-VNNI
 * build kquant_legacy_avxvnni.c, kquant_legacy_avx512.c), and the table entries kernels_avx2.c / kernels_avx512.c take
 * from here. Per ISA, tile, rows2 and rows4 outputs are bit-identical to that ISA's vec_dot. */
#ifndef HR_KQUANT_LEGACY_SIMD_H
#define HR_KQUANT_LEGACY_SIMD_H
#include "kernels_impl.h"

#define HR_KQL_DECL(NAME, ISA)                                                                        \
    void hr_dot_##NAME##_##ISA(int64_t n, float *s, const void *w, const void *x);                    \
    void hr_tile_##NAME##_##ISA(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, \
                                size_t ys);                                                           \
    void hr_rows4_##NAME##_##ISA(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, \
                                 size_t ys);                                                          \
    void hr_rows2_##NAME##_##ISA(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, \
                                 size_t ys);
#define HR_KQL_DECLS(ISA) \
    HR_KQL_DECL(q4_1, ISA) HR_KQL_DECL(q5_1, ISA) HR_KQL_DECL(q5_0, ISA) HR_KQL_DECL(iq4_nl, ISA) HR_KQL_DECL(mxfp4, ISA)
HR_KQL_DECLS(avx2)
HR_KQL_DECLS(avx512)

/* 256-bit prompt tiles over hr_lanes_x256 (lanes_avx2.h) of Q5_0, IQ4_NL and MXFP4 */
#define HR_KQLX2_DECL(NAME)                                                                            \
    void hr_tile_xprep_##NAME##_avx2(const void *xq, void *xt, int64_t n);                             \
    void hr_tile_x_##NAME##_avx2(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, \
                                 size_t ys);                                                          \
    void hr_rows4_x_##NAME##_avx2(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, \
                                  size_t ys);
HR_KQLX2_DECL(q5_0)
HR_KQLX2_DECL(iq4_nl)
HR_KQLX2_DECL(mxfp4)
#define HR_KQLX2_ENTRIES(KIND) \
    [HR_Q5_0] = hr_##KIND##_q5_0_avx2, [HR_IQ4_NL] = hr_##KIND##_iq4_nl_avx2, [HR_MXFP4] = hr_##KIND##_mxfp4_avx2
#define HR_KQLX2_BYTES(FN) [HR_Q5_0] = FN, [HR_IQ4_NL] = FN, [HR_MXFP4] = FN

/* designated initializers for the tables; the AVX-512 table shares AVX2's preps */
#define HR_KQL_ENTRIES(KIND, ISA)                                                                \
    [HR_Q4_1] = hr_##KIND##_q4_1_##ISA, [HR_Q5_1] = hr_##KIND##_q5_1_##ISA,                     \
    [HR_Q5_0] = hr_##KIND##_q5_0_##ISA, [HR_IQ4_NL] = hr_##KIND##_iq4_nl_##ISA,                 \
    [HR_MXFP4] = hr_##KIND##_mxfp4_##ISA
#define HR_KQL_PREPS                                                                             \
    [HR_Q4_1] = hr_prep_q8_1_avx2, [HR_Q5_1] = hr_prep_q8_1_avx2, [HR_Q5_0] = hr_prep_q8_0_avx2, \
    [HR_IQ4_NL] = hr_prep_q8_0_avx2, [HR_MXFP4] = hr_prep_q8_0_avx2
#endif
