/* Against llama.cpp's own x86 CPU backend (libggml-cpu-haswell.so, the AVX2 build, loaded
 * at run time): the Q8_1 and Q8_K activation preps of every kernel table byte for byte
 * with ggml's quantize_row_q8_1 / quantize_row_q8_K, and the scalar vec_dot of every newer
 * weight type within float rounding of ggml's ggml_vec_dot_<type>_q8_<x> on the same
 * bytes. Skips (77) without the library (installed by the llama_ref fixture) or AVX2. */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels_impl.h"
#include "kernel_rows.h"
#include "testutil.h"

typedef void (*ggml_prep_fn)(const float *x, void *y, int64_t n);
typedef void (*ggml_dot_fn)(int n, float *s, size_t bs, const void *x, size_t bx, const void *y, size_t by, int nrc);

static void *open_lib(void) {
    char path[1024];
    const char *lib = getenv("HEARTH_GGML_LIB"), *src = getenv("HEARTH_SRC");
    if (lib && *lib) { /* the base library's folder holds the CPU variants too */
        snprintf(path, sizeof path, "%s", lib);
        char *slash = strrchr(path, '/');
        if (slash) snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path), "libggml-cpu-haswell.so");
    } else {
        snprintf(path, sizeof path, "%s/tests/conformance/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-cpu-haswell.so",
                 src && *src ? src : ".");
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) printf("SKIP: cannot load %s (run the llama_ref fixture: scripts/llama-ref-setup.sh)\n", path);
    return h;
}

static void fill(hr_rng *r, float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = hr_rng_normal(r) * (i % 7 == 0 ? 5.0f : 1.0f);
    for (int64_t i = 0; i < n && i < 32; i++) x[i] = 0.0f;              /* an all-zero Q8_1 block */
    for (int64_t i = 64; i + 1 < n && i < 96; i++) x[i] = (float)(i % 9) * 0.5f; /* ties */
}

static void check_prep(const hr_kernels *k, ggml_prep_fn ref, uint32_t wt, int64_t n, hr_rng *r) {
    const size_t xb = hr_act_bytes(wt, n);
    float *x = malloc((size_t)n * sizeof *x);
    unsigned char *a = calloc(1, xb), *b = calloc(1, xb);
    fill(r, x, n);
    k->act_prep[wt](x, a, n);
    ref(x, b, n);
    if (wt == HR_Q4_K) /* ggml leaves an all-zero block's bsums unset: compare them elsewhere */
        for (int64_t i = 0; i < n / HR_QK_K; i++)
            if (((hr_block_q8_K *)b)[i].d == 0.0f) memcpy(((hr_block_q8_K *)b)[i].bsums, ((hr_block_q8_K *)a)[i].bsums, 32);
    CHECKF(memcmp(a, b, xb) == 0, "%s prep for %s n=%lld differs from ggml", k->name, hr_type_name(wt), (long long)n);
    free(x); free(a); free(b);
}

static void check_dot(void *h, uint32_t t, int64_t n, hr_rng *r) {
    char sym[64];
    const uint32_t at = kt_act_type(t);
    snprintf(sym, sizeof sym, "ggml_vec_dot_%s_%s", hr_type_name(t), hr_type_name(at));
    for (char *p = sym; *p; p++) if (*p == 'k') *p = 'K'; /* ggml spells q4_K, q8_K */
    ggml_dot_fn gd;
    void *f = dlsym(h, sym);
    memcpy(&gd, &f, sizeof gd);
    CHECKF(gd != NULL, "no %s in ggml", sym);
    if (!gd) return;
    void *w = malloc(hr_row_bytes(t, (uint64_t)n)), *xq = malloc(hr_act_bytes(t, n));
    float *x = malloc((size_t)n * sizeof *x);
    kt_weight_row(r, t, w, n);
    fill(r, x, n);
    hr_kernels_scalar()->act_prep[t](x, xq, n);
    float ours = NAN, theirs = NAN;
    hr_kernels_scalar()->vec_dot[t](n, &ours, w, xq);
    gd((int)n, &theirs, 0, w, 0, xq, 0, 1);
    double mag;
    (void)kt_ref_dot(t, w, xq, n, &mag);
    const double tl = 2.0 * ((double)n / 8 + 32) * 0x1p-24 * mag + 1e-30;
    CHECKF(fabs((double)ours - theirs) <= tl, "%s n=%lld: %.9g vs ggml %.9g", sym, (long long)n, ours, theirs);
    free(w); free(xq); free(x);
}

int main(void) {
    if (!hr_kernels_avx2()) {
        printf("SKIP: ggml's AVX2 build needs an AVX2 CPU\n");
        return 77;
    }
    void *h = open_lib();
    if (!h) return 77;
    void (*cpu_init)(void); /* fills ggml's F16 lookup table, which its dots read */
    void *fi = dlsym(h, "ggml_cpu_init");
    memcpy(&cpu_init, &fi, sizeof cpu_init);
    CHECK(cpu_init != NULL);
    if (cpu_init) cpu_init();
    ggml_prep_fn q81, q8k;
    void *f1 = dlsym(h, "quantize_row_q8_1"), *fk = dlsym(h, "quantize_row_q8_K");
    memcpy(&q81, &f1, sizeof q81);
    memcpy(&q8k, &fk, sizeof q8k);
    CHECK(q81 && q8k);
    hr_rng r = {99};
    const hr_kernels *tabs[] = {hr_kernels_scalar(), hr_kernels_avx2(), hr_kernels_avxvnni(), hr_kernels_avx512(), hr_kernels_amx()};
    for (size_t ki = 0; q81 && q8k && ki < sizeof tabs / sizeof tabs[0]; ki++) {
        const hr_kernels *k = tabs[ki];
        if (!k) continue;
        for (int64_t n = 32; n <= 32 * 40; n += 32 * 13) check_prep(k, q81, HR_Q4_1, n, &r);
        if (k->act_prep[HR_Q4_K])
            for (int64_t n = 256; n <= 256 * 9; n += 256 * 4) check_prep(k, q8k, HR_Q4_K, n, &r);
    }
    const uint32_t types[] = {HR_Q4_1, HR_Q5_0, HR_Q5_1, HR_IQ4_NL, HR_MXFP4, HR_Q2_K,
                              HR_Q3_K, HR_Q4_K, HR_Q5_K, HR_Q6_K, HR_IQ4_XS};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        for (int64_t m = 1; m <= 9; m += 4) check_dot(h, types[i], m * kt_block(types[i]) * (kt_block(types[i]) == 32 ? 3 : 1), &r);
    dlclose(h);
    return TEST_END();
}
