/* The AVX2 kernels of Q4_1, Q5_1, Q5_0, IQ4_NL and MXFP4 once more for the AVX-VNNI table
 * (kernels_avxvnni.c): compiled with -mavxvnni, their integer dots are vpdpbusd chains, and
 * IQ4_NL's values ride unsigned (+ 128) as the other types' do instead of taking x's sign. */
#include "kquant_avxvnni_names.h"
#define HR_AVXVNNI 1
#include "kquant_legacy_avx2.c"
