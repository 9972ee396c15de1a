/* Run-time choice of the kernel table: what was compiled in, what the CPU runs,
 * and the HEARTH_KERNELS override. */
#include <stdlib.h>
#include <string.h>

#include "kernels_impl.h"
#if defined(HR_X86) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

const hr_kernels *hr_kernels_scalar(void) { return &hr_kext_scalar()->k; }

#if defined(HR_X86) && (defined(__GNUC__) || defined(__clang__))
static int cpu_has_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("f16c");
}
static int cpu_has_avx512(void) {
    __builtin_cpu_init();
    return cpu_has_avx2() && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni");
}
/* AVX-VNNI (VEX vpdpbusd): CPUID.(7,1):EAX bit 4 */
static int cpu_has_avxvnni(void) {
    unsigned a, b, c, d;
    return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 4));
}
/* AVX512_BF16 (vdpbf16ps): CPUID.(7,1):EAX bit 5 */
static int cpu_has_avx512bf16(void) {
    unsigned a, b, c, d;
    return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5));
}
#else
static int cpu_has_avx512bf16(void) { return 0; }
static int cpu_has_avxvnni(void) { return 0; }
static int cpu_has_avx2(void) { return 0; }
static int cpu_has_avx512(void) { return 0; }
#endif

const hr_kernels *hr_kernels_avx2(void) {
    const hr_kernels_ext *e = hr_kext_avx2();
    return e && cpu_has_avx2() ? &e->k : NULL;
}

const hr_kernels *hr_kernels_avxvnni(void) {
    const hr_kernels_ext *e = hr_kext_avxvnni();
    return e && cpu_has_avx2() && cpu_has_avxvnni() ? &e->k : NULL;
}

const hr_kernels *hr_kernels_avx512(void) {
    const hr_kernels_ext *e = hr_kext_avx512(cpu_has_avx512() && cpu_has_avx512bf16());
    return e && cpu_has_avx512() ? &e->k : NULL;
}

const hr_kernels *hr_kernels_amx(void) {
    const hr_kernels_ext *e = hr_kext_amx(cpu_has_avx512() && cpu_has_avx512bf16());
    return e && cpu_has_avx512() && hr_amx_usable() ? &e->k : NULL;
}

const hr_kernels *hr_kernels_neon(void) {
    const hr_kernels_ext *e = hr_kext_neon();
    return e ? &e->k : NULL;
}

const hr_kernels *hr_kernels_best(void) {
    const char *env = getenv("HEARTH_KERNELS");
    if (env && *env) {
        const hr_kernels *k = NULL;
        if (strcmp(env, "scalar") == 0) k = hr_kernels_scalar();
        else if (strcmp(env, "avx2") == 0) k = hr_kernels_avx2();
        else if (strcmp(env, "avxvnni") == 0) k = hr_kernels_avxvnni();
        else if (strcmp(env, "avx512") == 0) k = hr_kernels_avx512();
        else if (strcmp(env, "amx") == 0) k = hr_kernels_amx();
        else if (strcmp(env, "neon") == 0) k = hr_kernels_neon();
        if (k) return k; /* an unavailable request falls back to the best below */
    }
    const hr_kernels *k;
    if ((k = hr_kernels_amx())) return k;
    if ((k = hr_kernels_avx512())) return k;
    if ((k = hr_kernels_avxvnni())) return k;
    if ((k = hr_kernels_avx2())) return k;
    if ((k = hr_kernels_neon())) return k;
    return hr_kernels_scalar();
}

size_t hr_act_bytes(uint32_t wt, int64_t n) {
    if (n < 0) return 0;
    switch (wt) {
    case HR_F32: return (size_t)n * 4;
    case HR_F16: case HR_BF16: return (size_t)n * 2;
    case HR_Q8_0: case HR_Q4_0: case HR_Q5_0: case HR_IQ4_NL: case HR_MXFP4:
        return (size_t)(n / HR_QK) * sizeof(hr_block_q8_0);
    case HR_Q4_1: case HR_Q5_1: return (size_t)(n / HR_QK) * sizeof(hr_block_q8_1);
    case HR_Q2_K: case HR_Q3_K: case HR_Q4_K: case HR_Q5_K: case HR_Q6_K: case HR_IQ4_XS:
        return (size_t)(n / HR_QK_K) * sizeof(hr_block_q8_K);
    default: return 0;
    }
}
