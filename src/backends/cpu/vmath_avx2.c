/* AVX2 + F16C twins of vmath.c's tanh and table GELU: the same float operations in the same
 * order (no FMA contraction: C11 mode keeps -ffp-contract=off), so each element equals the
 * plain-C value bit for bit (tests/cpu/test_vmath.c compares them); 8 lanes where the
 * auto-vectorized C gets SSE's 4, and the GELU's F16 rounding and table reads in vector
 * instructions instead of a call and a branchy conversion per element. */
#include "vmath.h"

#if defined(HR_X86) && defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>
#include <string.h>

#define V8(x) _mm256_set1_ps(x)

/* vmath.c's exp_0_20, lane by lane. */
static inline __m256 exp_0_20_v(__m256 y) {
    const __m256 magic = V8(12582912.0f);
    const __m256 k = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(y, V8(1.44269504088896341f)), magic), magic);
    const __m256 r = _mm256_sub_ps(_mm256_sub_ps(y, _mm256_mul_ps(k, V8(0.693145751953125f))),
                                   _mm256_mul_ps(k, V8(1.428606765330187045e-06f)));
    __m256 p = V8(1.0f / 5040.0f);
    p = _mm256_add_ps(_mm256_mul_ps(p, r), V8(1.0f / 720.0f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), V8(1.0f / 120.0f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), V8(1.0f / 24.0f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), V8(1.0f / 6.0f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), V8(0.5f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), V8(1.0f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), V8(1.0f));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(k), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

/* vmath.c's exp_neg, lane by lane (max-by-compare keeps its NaN-takes--87 rule). */
static inline __m256 exp_neg_v(__m256 y) {
    const __m256 lo = V8(-87.0f), gt = _mm256_cmp_ps(y, lo, _CMP_GT_OQ);
    const __m256 e = exp_0_20_v(_mm256_blendv_ps(lo, y, gt));
    const __m256 z = _mm256_and_ps(e, gt);
    return _mm256_blendv_ps(y, z, _mm256_cmp_ps(y, y, _CMP_EQ_OQ));
}

/* vmath.c's hr_vexp_sum_c: the 8 partial sums are the 8 lanes, in double as two halves;
 * the remainder goes through the same lanes with zeros after it (adding +0 to a sum of
 * exponentials changes nothing). */
double hr_vexp_sum_avx2(float *x, int64_t n, float m) {
    const __m256 vm = V8(m);
    __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 e = exp_neg_v(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        _mm256_storeu_ps(x + i, e);
        lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    if (i < n) {
        float buf[8];
        for (int j = 0; j < 8; j++) buf[j] = m; /* exp(0) = 1 past the end: masked below */
        memcpy(buf, x + i, sizeof(float) * (size_t)(n - i));
        __m256 e = exp_neg_v(_mm256_sub_ps(_mm256_loadu_ps(buf), vm));
        _mm256_storeu_ps(buf, e);
        memcpy(x + i, buf, sizeof(float) * (size_t)(n - i));
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        e = _mm256_and_ps(e, _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - i)), lane)));
        lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    double a[8];
    _mm256_storeu_pd(a, lo);
    _mm256_storeu_pd(a + 4, hi);
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

/* vmath.c's tanh_one, lane by lane (min-by-compare keeps its NaN-takes-10 rule). */
static inline __m256 tanh_v(__m256 x) {
    const __m256 sign = V8(-0.0f);
    const __m256 a0 = _mm256_andnot_ps(sign, x);
    const __m256 a = _mm256_blendv_ps(V8(10.0f), a0, _mm256_cmp_ps(a0, V8(10.0f), _CMP_LT_OQ));
    const __m256 big =
        _mm256_sub_ps(V8(1.0f), _mm256_div_ps(V8(2.0f), _mm256_add_ps(exp_0_20_v(_mm256_mul_ps(V8(2.0f), a)), V8(1.0f))));
    const __m256 s = _mm256_mul_ps(a, a);
    __m256 q = V8(-929569.0f / 638512875.0f);
    q = _mm256_add_ps(_mm256_mul_ps(q, s), V8(21844.0f / 6081075.0f));
    q = _mm256_add_ps(_mm256_mul_ps(q, s), V8(-1382.0f / 155925.0f));
    q = _mm256_add_ps(_mm256_mul_ps(q, s), V8(62.0f / 2835.0f));
    q = _mm256_add_ps(_mm256_mul_ps(q, s), V8(-17.0f / 315.0f));
    q = _mm256_add_ps(_mm256_mul_ps(q, s), V8(2.0f / 15.0f));
    q = _mm256_add_ps(_mm256_mul_ps(q, s), V8(-1.0f / 3.0f));
    const __m256 small = _mm256_add_ps(a, _mm256_mul_ps(_mm256_mul_ps(a, s), q));
    const __m256 m = _mm256_blendv_ps(big, small, _mm256_cmp_ps(a, V8(0.5f), _CMP_LT_OQ));
    const __m256 t = _mm256_or_ps(_mm256_andnot_ps(sign, m), _mm256_and_ps(sign, x));
    return _mm256_blendv_ps(x, t, _mm256_cmp_ps(x, x, _CMP_EQ_OQ));
}

void hr_vtanh_scaled_avx2(float *y, const float *x, int64_t n, float pre, float post) {
    const __m256 vpre = V8(pre), vpost = V8(post);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_mul_ps(tanh_v(_mm256_mul_ps(_mm256_loadu_ps(x + i), vpre)), vpost));
    if (i == n) return;
    float buf[8] = {0}; /* the remainder through the same lanes */
    memcpy(buf, x + i, sizeof(float) * (size_t)(n - i));
    _mm256_storeu_ps(buf, _mm256_mul_ps(tanh_v(_mm256_mul_ps(_mm256_loadu_ps(buf), vpre)), vpost));
    memcpy(y + i, buf, sizeof(float) * (size_t)(n - i));
}

/* GELU of 8 values through the table: F16 rounding to nearest even (as hr_f32_to_f16), a
 * gather of the entries of the lanes inside (-10, 10) only (NaN lanes included in none, so
 * no index past the table is read), F16 back to F32; 0 at or below -10, the input at or
 * above 10 and for NaN. */
static inline __m256 gelu_v(__m256 v, const uint16_t *tab) {
    const __m256 inr = _mm256_and_ps(_mm256_cmp_ps(v, V8(-10.0f), _CMP_GT_OQ), _mm256_cmp_ps(v, V8(10.0f), _CMP_LT_OQ));
    const __m256i idx = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    /* 32-bit reads at 2-byte steps: entry idx is the low half of each */
    const __m256i got = _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), (const int *)tab, idx, _mm256_castps_si256(inr), 2);
    const __m128i lo16 = _mm_set1_epi32(0xffff);
    const __m128i h = _mm_packus_epi32(_mm_and_si128(_mm256_castsi256_si128(got), lo16),
                                       _mm_and_si128(_mm256_extracti128_si256(got, 1), lo16));
    const __m256 g = _mm256_blendv_ps(v, _mm256_cvtph_ps(h), inr);
    return _mm256_blendv_ps(g, _mm256_setzero_ps(), _mm256_cmp_ps(v, V8(-10.0f), _CMP_LE_OQ));
}

void hr_vgelu_tab_avx2(float *h, const float *g, const float *u, int64_t n, const uint16_t *tab) {
    const float *x = g ? g : u;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 a = gelu_v(_mm256_loadu_ps(x + i), tab);
        if (g) a = _mm256_mul_ps(a, _mm256_loadu_ps(u + i));
        _mm256_storeu_ps(h + i, a);
    }
    if (i == n) return;
    float bx[8] = {0}, bu[8] = {0};
    memcpy(bx, x + i, sizeof(float) * (size_t)(n - i));
    memcpy(bu, u + i, sizeof(float) * (size_t)(n - i));
    __m256 a = gelu_v(_mm256_loadu_ps(bx), tab);
    if (g) a = _mm256_mul_ps(a, _mm256_loadu_ps(bu));
    _mm256_storeu_ps(bx, a);
    memcpy(h + i, bx, sizeof(float) * (size_t)(n - i));
}
/* vmath.c's silu_one lane by lane: -|v| by flipping the sign bit, as the C negation does. */
static inline __m256 silu_v(__m256 v) {
    const __m256 sign = V8(-0.0f);
    const __m256 e = exp_neg_v(_mm256_or_ps(v, sign));
    const __m256 num = _mm256_blendv_ps(_mm256_mul_ps(v, e), v, _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GE_OQ));
    return _mm256_div_ps(num, _mm256_add_ps(V8(1.0f), e));
}

void hr_vswiglu_avx2(float *h, const float *g, const float *u, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(h + i, _mm256_mul_ps(silu_v(_mm256_loadu_ps(g + i)), _mm256_loadu_ps(u + i)));
    if (i == n) return;
    float bg[8] = {0}, bu[8] = {0};
    memcpy(bg, g + i, sizeof(float) * (size_t)(n - i));
    memcpy(bu, u + i, sizeof(float) * (size_t)(n - i));
    _mm256_storeu_ps(bg, _mm256_mul_ps(silu_v(_mm256_loadu_ps(bg)), _mm256_loadu_ps(bu)));
    memcpy(h + i, bg, sizeof(float) * (size_t)(n - i));
}

void hr_vsilu_abs_avx2(float *y, const float *g, int64_t n) {
    const __m256 mag = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_and_ps(silu_v(_mm256_loadu_ps(g + i)), mag));
    if (i == n) return;
    float b[8] = {0};
    memcpy(b, g + i, sizeof(float) * (size_t)(n - i));
    _mm256_storeu_ps(b, _mm256_and_ps(silu_v(_mm256_loadu_ps(b)), mag));
    memcpy(y + i, b, sizeof(float) * (size_t)(n - i));
}

/* 8 values to F16 as hr_f32_to_f16: vcvtps2ph rounds to nearest even as it does, and keeps
 * NaN's sign but part of its payload, so NaN lanes become sign | 0x7e00. */
static inline __m128i to_f16_v(__m256 v) {
    const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    const __m128i nan16 = _mm_packs_epi32(_mm256_castsi256_si128(nan), _mm256_extracti128_si256(nan, 1));
    const __m128i qnan = _mm_or_si128(_mm_and_si128(h, _mm_set1_epi16((short)0x8000)), _mm_set1_epi16(0x7e00));
    return _mm_blendv_epi8(h, qnan, nan16);
}

void hr_vto_f16_avx2(uint16_t *y, const float *x, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm_storeu_si128((__m128i *)(y + i), to_f16_v(_mm256_loadu_ps(x + i)));
    if (i == n) return;
    float bx[8] = {0};
    uint16_t by[8];
    memcpy(bx, x + i, sizeof(float) * (size_t)(n - i));
    _mm_storeu_si128((__m128i *)by, to_f16_v(_mm256_loadu_ps(bx)));
    memcpy(y + i, by, sizeof(uint16_t) * (size_t)(n - i));
}

void hr_vround_f16_avx2(float *x, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_cvtph_ps(to_f16_v(_mm256_loadu_ps(x + i))));
    if (i == n) return;
    float b[8] = {0};
    memcpy(b, x + i, sizeof(float) * (size_t)(n - i));
    _mm256_storeu_ps(b, _mm256_cvtph_ps(to_f16_v(_mm256_loadu_ps(b))));
    memcpy(x + i, b, sizeof(float) * (size_t)(n - i));
}
#endif
