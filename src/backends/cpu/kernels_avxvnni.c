/* The AVX2 table once more, for CPUs with AVX-VNNI but no AVX-512 (Intel's desktop parts since
 * Alder Lake): the same kernels, compiled with -mavxvnni, whose Q8_0 and Q4_0 integer dots take
 * one vpdpbusd where AVX2 takes maddubs and madd (kernels_avx2.c, dot4), and the K-quants' and
 * IQ4_XS's scale multiply-adds one vpdpwssd (kquant_k_avxvnni.c), the other 32-element types'
 * dots vpdpbusd chains (kquant_legacy_avxvnni.c). The float types and the preps are the AVX2
 * table's. */
#include "kquant_avxvnni_names.h" /* the table takes the AVX-VNNI builds of the K-quant and legacy kernels */
#define HR_AVXVNNI 1
#include "kernels_avx2.c"
