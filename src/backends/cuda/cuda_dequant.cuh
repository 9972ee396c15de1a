/* Device dequantizers of the newer block types (Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4, the
 * K-quants, IQ4_XS): element k of a row is its integer level q times the scale d of its
 * scale group, plus the group's offset m for the types with one (m is already negated
 * where dequant.c subtracts: d * q - m == d * q + (-m) exactly). Every product and sum is
 * rounded on its own (__fmul_rn / __fadd_rn, never fused), in dequant.c's order, so each
 * weight is exactly hr_dequant_row's value. Blocks are read by bytes: these block sizes
 * (17 bytes for MXFP4) give rows no alignment to rely on. Included by cuda_numerics.cuh. */
#ifndef HR_CUDA_DEQUANT_CUH
#define HR_CUDA_DEQUANT_CUH
#include <stddef.h>

/* The kernels' byte offsets are the C block layouts (types.h). */
static_assert(offsetof(hr_block_q2_K, d) == 80 && offsetof(hr_block_q3_K, d) == 108, "K-quant layout");
static_assert(offsetof(hr_block_q5_K, qs) == 48 && offsetof(hr_block_q6_K, d) == 208, "K-quant layout");
static_assert(offsetof(hr_block_iq4_xs, qs) == 8 && offsetof(hr_block_q5_1, qs) == 8, "block layout");
static_assert(sizeof(hr_block_mxfp4) == 17 && sizeof(hr_block_q3_K) == 110, "block layout");

/* Block shape per type. The primary template only lets kernels that branch on the type
 * at run time (if, not if constexpr) compile for the other types; it is never used. */
template <int T> struct hr_cu_blk {
    static constexpr int qk = 1, bytes = 0;
    static constexpr bool has_min = false;
};
#define HR_CU_BLK(T, QK, BYTES, MIN)                                                                                   \
    template <> struct hr_cu_blk<T> {                                                                                  \
        static constexpr int qk = QK, bytes = BYTES;                                                                   \
        static constexpr bool has_min = MIN;                                                                           \
    };
HR_CU_BLK(HR_Q4_1, 32, 20, true)
HR_CU_BLK(HR_Q5_0, 32, 22, false)
HR_CU_BLK(HR_Q5_1, 32, 24, true)
HR_CU_BLK(HR_IQ4_NL, 32, 18, false)
HR_CU_BLK(HR_MXFP4, 32, 17, false)
HR_CU_BLK(HR_Q2_K, 256, 84, true)
HR_CU_BLK(HR_Q3_K, 256, 110, false)
HR_CU_BLK(HR_Q4_K, 256, 144, true)
HR_CU_BLK(HR_Q5_K, 256, 176, true)
HR_CU_BLK(HR_Q6_K, 256, 210, false)
HR_CU_BLK(HR_IQ4_XS, 256, 136, false)
#undef HR_CU_BLK

/* The types dequantized here (the rest have their own paths). */
__host__ __device__ constexpr bool hr_cu_is_dq(int t) {
    return t == HR_Q4_1 || t == HR_Q5_0 || t == HR_Q5_1 || t == HR_IQ4_NL || t == HR_MXFP4 || t == HR_Q2_K ||
           t == HR_Q3_K || t == HR_Q4_K || t == HR_Q5_K || t == HR_Q6_K || t == HR_IQ4_XS;
}

__device__ __forceinline__ float hr_cu_h2f_at(const uint8_t *p) { return hr_cu_h2f((uint16_t)(p[0] | p[1] << 8)); }

/* ggml's tables as packed bytes (no memory reads): entry i of 16. */
__device__ __forceinline__ int hr_cu_kv_iq4nl(int i) {
    const unsigned long long lo = 0xF6EADDCFBFAD9881ull, hi = 0x7159453526190D01ull; /* -127 ... -10, 1 ... 113 */
    return (int)(int8_t)((i < 8 ? lo : hi) >> (8 * (i & 7)));
}
__device__ __forceinline__ int hr_cu_kv_mxfp4(int i) {
    const int v = (int)((0x0C08060403020100ull >> (8 * (i & 7))) & 0xff); /* 0 1 2 3 4 6 8 12 */
    return i < 8 ? v : -v;
}

/* Nibble j (0..31) of a 32-element group stored as 16 bytes: low nibbles first. */
__device__ __forceinline__ int hr_cu_nib(const uint8_t *qs, int j) { return j < 16 ? qs[j] & 15 : qs[j - 16] >> 4; }
__device__ __forceinline__ int hr_cu_bit(const uint8_t *p, int j) { return (p[j >> 3] >> (j & 7)) & 1; }

/* Scale and offset of the group holding element j of block b; the level of element j. */
struct hr_cu_sg {
    float d, m;
};

template <int T> __device__ __forceinline__ hr_cu_sg hr_cu_group(const uint8_t *b, int j) {
    hr_cu_sg g = {0.0f, 0.0f};
    if (T == HR_Q4_1 || T == HR_Q5_1) {
        g.d = hr_cu_h2f_at(b), g.m = hr_cu_h2f_at(b + 2);
    } else if (T == HR_Q5_0 || T == HR_IQ4_NL) {
        g.d = hr_cu_h2f_at(b);
    } else if (T == HR_MXFP4) { /* E8M0 halved: 2^(e-128), an F32 subnormal below e = 2 */
        const unsigned e = b[0];
        g.d = __uint_as_float(e < 2 ? 0x00200000u << e : (e - 1) << 23);
    } else if (T == HR_Q2_K) { /* 16 groups of 16: scale & 15, min >> 4 */
        const int n = j / 128, s = (j % 128) / 32, half = (j % 32) / 16;
        const int sc = b[8 * n + 2 * s + half];
        g.d = __fmul_rn(hr_cu_h2f_at(b + 80), (float)(sc & 15));
        g.m = -__fmul_rn(hr_cu_h2f_at(b + 82), (float)(sc >> 4));
    } else if (T == HR_Q3_K) { /* 16 six-bit signed scales, low nibbles then top bits */
        const int n = j / 128, s = (j % 128) / 32, half = (j % 32) / 16, i = 8 * n + 2 * s + half;
        const uint8_t *sc = b + 96;
        const int lo = i < 8 ? sc[i] & 15 : sc[i - 8] >> 4, hi = (sc[8 + i % 4] >> (2 * (i / 4))) & 3;
        g.d = __fmul_rn(hr_cu_h2f_at(b + 108), (float)((lo | hi << 4) - 32));
    } else if (T == HR_Q4_K || T == HR_Q5_K) { /* 8 groups of 32, 6-bit scale and min */
        const int sb = j / 32;
        const uint8_t *q = b + 4;
        int sc, mn;
        if (sb < 4) {
            sc = q[sb] & 63, mn = q[sb + 4] & 63;
        } else {
            sc = (q[sb + 4] & 15) | ((q[sb - 4] >> 6) << 4);
            mn = (q[sb + 4] >> 4) | ((q[sb] >> 6) << 4);
        }
        g.d = __fmul_rn(hr_cu_h2f_at(b), (float)sc);
        g.m = -__fmul_rn(hr_cu_h2f_at(b + 2), (float)mn);
    } else if (T == HR_Q6_K) { /* 16 int8 scales: 8n + 2k + l / 16 */
        const int n = j / 128, k = (j % 128) / 32, l = j % 32;
        g.d = __fmul_rn(hr_cu_h2f_at(b + 208), (float)(int8_t)b[192 + 8 * n + 2 * k + l / 16]);
    } else if (T == HR_IQ4_XS) { /* 8 six-bit scales minus 32 */
        const int ib = j / 32;
        const int sh = b[2] | b[3] << 8;
        const int ls = ((b[4 + ib / 2] >> 4 * (ib % 2)) & 15) | ((sh >> 2 * ib) & 3) << 4;
        g.d = __fmul_rn(hr_cu_h2f_at(b), (float)(ls - 32));
    }
    return g;
}

template <int T> __device__ __forceinline__ int hr_cu_level(const uint8_t *b, int j) {
    if (T == HR_Q4_1) return hr_cu_nib(b + 4, j);
    if (T == HR_Q5_0) return (hr_cu_nib(b + 6, j) | hr_cu_bit(b + 2, j) << 4) - 16;
    if (T == HR_Q5_1) return hr_cu_nib(b + 8, j) | hr_cu_bit(b + 4, j) << 4;
    if (T == HR_IQ4_NL) return hr_cu_kv_iq4nl(hr_cu_nib(b + 2, j));
    if (T == HR_MXFP4) return hr_cu_kv_mxfp4(hr_cu_nib(b + 1, j));
    if (T == HR_Q2_K || T == HR_Q3_K) { /* 2 bits at shift 2s of qs[32n + l] */
        const int n = j / 128, s = (j % 128) / 32, l = j % 32;
        const uint8_t *qs = b + (T == HR_Q2_K ? 16 : 32);
        const int q = (qs[32 * n + l] >> (2 * s)) & 3;
        return T == HR_Q2_K ? q : q - (hr_cu_bit(b, 8 * l + 4 * n + s) ? 0 : 4); /* hmask[l] bit 4n + s */
    }
    if (T == HR_Q4_K || T == HR_Q5_K) {
        const int sb = j / 32, l = j % 32;
        const uint8_t *qs = b + (T == HR_Q4_K ? 16 : 48);
        const int q = (qs[32 * (sb / 2) + l] >> (4 * (sb & 1))) & 15;
        return T == HR_Q4_K ? q : q + (hr_cu_bit(b + 16, 8 * l + sb) << 4); /* qh[l] bit sb */
    }
    if (T == HR_Q6_K) {
        const int n = j / 128, k = (j % 128) / 32, l = j % 32;
        const int lo = (b[64 * n + l + (k & 1 ? 32 : 0)] >> (k >= 2 ? 4 : 0)) & 15;
        const int hi = (b[128 + 32 * n + l] >> (2 * k)) & 3;
        return (lo | hi << 4) - 32;
    }
    if (T == HR_IQ4_XS) {
        const int ib = j / 32, l = j % 32;
        return hr_cu_kv_iq4nl(hr_cu_nib(b + 8 + 16 * ib, l));
    }
    return 0;
}

/* q * d (+ m): the exact products of dequant.c (q * d == d * q in IEEE arithmetic). */
template <int T> __device__ __forceinline__ float hr_cu_apply(hr_cu_sg g, int q) {
    const float p = __fmul_rn((float)q, g.d);
    return hr_cu_blk<T>::has_min ? __fadd_rn(p, g.m) : p;
}

/* Element k of a row. */
template <int T> __device__ __forceinline__ float hr_cu_dq(const char *row, int64_t k) {
    const uint8_t *b = (const uint8_t *)row + (k / hr_cu_blk<T>::qk) * hr_cu_blk<T>::bytes;
    const int j = (int)(k % hr_cu_blk<T>::qk);
    return hr_cu_apply<T>(hr_cu_group<T>(b, j), hr_cu_level<T>(b, j));
}

/* Elements k..k+3 (k a multiple of 4: one scale group) with one scale decode. */
template <int T> __device__ __forceinline__ void hr_cu_dq4(const char *row, int64_t k, float w[4]) {
    const uint8_t *b = (const uint8_t *)row + (k / hr_cu_blk<T>::qk) * hr_cu_blk<T>::bytes;
    const int j = (int)(k % hr_cu_blk<T>::qk);
    const hr_cu_sg g = hr_cu_group<T>(b, j);
#pragma unroll
    for (int i = 0; i < 4; i++) w[i] = hr_cu_apply<T>(g, hr_cu_level<T>(b, j + i));
}

#define HR_CU_DQ_WEIGHT(T)                                                                                             \
    template <> __device__ __forceinline__ float hr_cu_weight<T>(const char *row, int64_t k) { return hr_cu_dq<T>(row, k); }
HR_CU_DQ_WEIGHT(HR_Q4_1)
HR_CU_DQ_WEIGHT(HR_Q5_0)
HR_CU_DQ_WEIGHT(HR_Q5_1)
HR_CU_DQ_WEIGHT(HR_IQ4_NL)
HR_CU_DQ_WEIGHT(HR_MXFP4)
HR_CU_DQ_WEIGHT(HR_Q2_K)
HR_CU_DQ_WEIGHT(HR_Q3_K)
HR_CU_DQ_WEIGHT(HR_Q4_K)
HR_CU_DQ_WEIGHT(HR_Q5_K)
HR_CU_DQ_WEIGHT(HR_Q6_K)
HR_CU_DQ_WEIGHT(HR_IQ4_XS)
#undef HR_CU_DQ_WEIGHT

/* Launch-table helper: `X(T)` for every type above. */
#define HR_CU_DQ_TYPES(X) X(HR_Q4_1) X(HR_Q5_0) X(HR_Q5_1) X(HR_IQ4_NL) X(HR_MXFP4) X(HR_Q2_K) X(HR_Q3_K) \
    X(HR_Q4_K) X(HR_Q5_K) X(HR_Q6_K) X(HR_IQ4_XS)
#endif
