/* The AVX2 K-quant and IQ4_XS kernels once more for the AVX-VNNI table (kernels_avxvnni.c):
 * compiled with -mavxvnni, their scale multiply-adds are one vpdpwssd each (madd_add), and the
 * prompt panels (tile16) run on vpdpbusd, IQ4_XS's included. */
#include "kquant_avxvnni_names.h"
#define HR_AVXVNNI 1
#include "kquant_k_avx2.c"
