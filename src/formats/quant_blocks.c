/* Dispatch of the reference quantizers of the block types beyond Q8_0/Q4_0
 * (quant_legacy.c, quant_k.c). */
#include "quant_internal.h"

bool hr_quant_row_blocks(uint32_t t, const float *src, void *dst, int64_t n) {
    switch (t) {
    case HR_Q4_1: hr_quant_q4_1(src, dst, n); return true;
    case HR_Q5_0: hr_quant_q5_0(src, dst, n); return true;
    case HR_Q5_1: hr_quant_q5_1(src, dst, n); return true;
    case HR_Q8_1: hr_quant_q8_1(src, dst, n); return true;
    case HR_IQ4_NL: hr_quant_iq4_nl(src, dst, n); return true;
    case HR_MXFP4: hr_quant_mxfp4(src, dst, n); return true;
    case HR_Q2_K: hr_quant_q2_K(src, dst, n); return true;
    case HR_Q3_K: hr_quant_q3_K(src, dst, n); return true;
    case HR_Q4_K: hr_quant_q4_K(src, dst, n); return true;
    case HR_Q5_K: hr_quant_q5_K(src, dst, n); return true;
    case HR_Q6_K: hr_quant_q6_K(src, dst, n); return true;
    case HR_Q8_K: hr_quant_q8_K(src, dst, n); return true;
    case HR_IQ4_XS: hr_quant_iq4_xs(src, dst, n); return true;
    default: return false;
    }
}

void hr_quant_row_file(uint32_t t, const float *src, void *dst, int64_t n) {
    if (t == HR_IQ4_NL) hr_quant_iq4_nl_file(src, dst, n);
    else hr_quant_row(t, src, dst, n);
}
