/* The AVX2 table once more, for CPUs with AVX-VNNI but no AVX-512 (Intel's desktop parts since
 * Alder Lake): the same kernels, compiled with -mavxvnni, whose Q8_0 and Q4_0 integer dots take
 * one vpdpbusd where AVX2 takes maddubs and madd (kernels_avx2.c, dot4). The K-quants and the
 * float types are the AVX2 table's. */
#define HR_AVXVNNI 1
#include "kernels_avx2.c"
