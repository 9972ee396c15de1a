/* Micro-benchmark of the CPU backend (not a test): decode matrix-vector GB/s per weight
 * type at 1 and 2 threads with ~256 MB of weights (far beyond cache), a plain memory-read
 * bandwidth (sum of a 1 GiB buffer) as the ceiling, and prompt-batch throughput.
 * Usage: bench_kernels [MB] [max_threads] [type] [nomem]; MB 0: a 4096x4096 matrix of each
 * type (in the last-level cache on larger CPUs: the kernels' own speed). Decode prints the
 * best and the median call.
 * bench_kernels kq [MB] [LIB] [TYPES]: the decode kernels alone, 1 thread, no pool: vec_dot
 * (one row after the other), rows4 (and rows4_x over the re-laid row, where the type has it) of Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS, Q4_0, Q4_1, Q8_0, Q5_0, IQ4_NL, MXFP4, F16, BF16, F32 (or the
 * comma-separated TYPES) over ~256 rows of 4096 (in L2) and over MB of rows (default 256, out
 * of cache), with llama.cpp's ggml_vec_dot_<type>[_<act type>] on the same bytes when LIB is
 * one of its libggml-cpu-*.so (it needs libggml-base.so on LD_LIBRARY_PATH; LIB "" for none).
 * bench_kernels kq MB LIB TYPES N_IN: rows of N_IN (a multiple of 256) instead of 4096: the
 * short rows of a mixture of experts (Qwen3-30B-A3B's down rows are 768 long). */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/kernels_impl.h"
#include "backends/cpu/matmul.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU seconds of the whole process: with other processes on the cores, wall time
 * understates what the code does, so results also show rate per (cpu time / threads). */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
    const float *buf;
    size_t n;
    double part[64];
} sum_job;

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
__attribute__((target("avx2"))) static double sum_range(const float *p, size_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_add_ps(a0, _mm256_loadu_ps(p + i));
        a1 = _mm256_add_ps(a1, _mm256_loadu_ps(p + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_loadu_ps(p + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_loadu_ps(p + i + 24));
    }
    float t[8];
    _mm256_storeu_ps(t, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    double s = 0;
    for (int k = 0; k < 8; k++) s += t[k];
    for (; i < n; i++) s += p[i];
    return s;
}
#else
static double sum_range(const float *p, size_t n) {
    float a[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) a[k] += p[i + k];
    double s = 0;
    for (int k = 0; k < 8; k++) s += a[k];
    for (; i < n; i++) s += p[i];
    return s;
}
#endif

static void sum_task(void *arg, int ith, int nth) {
    sum_job *j = arg;
    size_t per = (j->n + nth - 1) / nth, a = per * ith, b = a + per > j->n ? j->n : a + per;
    j->part[ith] = a < b ? sum_range(j->buf + a, b - a) : 0;
}

static double mem_bw(int nth) {
    size_t bytes = (size_t)1 << 30, n = bytes / sizeof(float);
    float *buf = malloc(bytes);
    if (!buf) return 0;
    for (size_t i = 0; i < n; i++) buf[i] = (float)(i & 7);
    hr_pool *p = hr_pool_new(nth, NULL);
    sum_job j = {.buf = buf, .n = n};
    hr_pool_run(p, sum_task, &j); /* warm */
    double best = 1e9;
    for (int r = 0; r < 3; r++) {
        double t = now();
        hr_pool_run(p, sum_task, &j);
        t = now() - t;
        if (t < best) best = t;
    }
    double c0 = cpu_now();
    hr_pool_run(p, sum_task, &j);
    printf("  (sum of 1 GiB, %d thr: cpu-time rate %.1f GB/s)\n", nth, bytes / ((cpu_now() - c0) / nth) / 1e9);
    double chk = 0;
    for (int i = 0; i < nth; i++) chk += j.part[i];
    if (chk < 0) printf("impossible\n");
    hr_pool_free(p);
    free(buf);
    return bytes / best / 1e9;
}

static int cmp_double(const void *a, const void *b) {
    double u = *(const double *)a, v = *(const double *)b;
    return (u > v) - (u < v);
}

/* n_out rows of n_in weights of type t: a few random rows repeated. */
static void *make_weights(uint32_t t, int64_t n_in, int64_t n_out, size_t *rb) {
    *rb = hr_row_bytes(t, (uint64_t)n_in);
    char *w = malloc(*rb * n_out);
    float *row = malloc(n_in * sizeof *row);
    if (!w || !row) { free(w); free(row); return NULL; }
    unsigned s = 1;
    for (int64_t r = 0; r < n_out && r < 16; r++) {
        for (int64_t i = 0; i < n_in; i++) {
            s = s * 1103515245u + 12345u;
            row[i] = ((int)(s >> 16 & 0x7fff) - 16384) / 16384.0f;
        }
        hr_quant_row(t, row, w + r * *rb, n_in);
    }
    for (int64_t r = 16; r < n_out; r++) memcpy(w + r * *rb, w + (r % 16) * *rb, *rb);
    free(row);
    return w;
}

/* ---- kq mode: single-thread K-quant vec_dot / rows4 against llama.cpp's vec_dot ---- */
typedef void (*ggml_dot_fn)(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc);
enum { KQ_HEARTH_DOT, KQ_HEARTH_ROWS4, KQ_HEARTH_ROWS4X, KQ_LLAMA_DOT, KQ_KINDS };

/* this thread's CPU seconds: on a shared machine wall time counts other processes' turns */
static double thread_cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* one pass over n_out rows; thread CPU seconds (xt: xq re-laid for rows4_x) */
static double kq_pass(int kind, const hr_kernels *k, ggml_dot_fn ld, uint32_t t, const char *w, size_t rb,
                      int64_t n_in, int64_t n_out, const void *xq, const void *xt, float *y) {
    const hr_tile_fn rows4 = hr_kernels_ext_of(k)->rows4[t], rows4_x = hr_kernels_ext_of(k)->rows4_x[t];
    const double t0 = thread_cpu_now();
    if (kind == KQ_HEARTH_ROWS4 && rows4)
        for (int64_t r = 0; r + 4 <= n_out; r += 4) rows4(n_in, w + r * rb, rb, xq, 0, y + r, 0);
    else if (kind == KQ_HEARTH_ROWS4X)
        for (int64_t r = 0; r + 4 <= n_out; r += 4) rows4_x(n_in, w + r * rb, rb, xt, 0, y + r, 0);
    else if (kind == KQ_LLAMA_DOT)
        for (int64_t r = 0; r < n_out; r++) ld((int)n_in, y + r, 0, w + r * rb, 0, xq, 0, 1);
    else
        for (int64_t r = 0; r < n_out; r++) k->vec_dot[t](n_in, y + r, w + r * rb, xq);
    return thread_cpu_now() - t0;
}

/* name is one of the comma-separated names in list */
static int type_listed(const char *list, const char *name) {
    const size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == 0)) return 1;
    return 0;
}

static int kq_main(int argc, char **argv) {
    const double mb = argc > 2 ? atof(argv[2]) : 256;
    void *lib = argc > 3 && argv[3][0] ? dlopen(argv[3], RTLD_NOW | RTLD_LOCAL) : NULL;
    if (argc > 3 && argv[3][0] && !lib) fprintf(stderr, "cannot load %s: %s (llama.cpp column left out)\n", argv[3], dlerror());
    const char *only = argc > 4 ? argv[4] : NULL;
    const hr_kernels *k = hr_kernels_best();
    /* llama.cpp's activation types are Hearth's act_prep layouts (Q8_K, Q8_0, F16, BF16, F32) */
    const uint32_t types[] = {HR_Q2_K, HR_Q3_K, HR_Q4_K, HR_Q5_K, HR_Q6_K, HR_IQ4_XS, HR_Q4_0, HR_Q4_1, HR_Q8_0,
                              HR_Q5_0, HR_IQ4_NL, HR_MXFP4, HR_F16, HR_BF16, HR_F32};
    const char *lname[] = {"ggml_vec_dot_q2_K_q8_K", "ggml_vec_dot_q3_K_q8_K", "ggml_vec_dot_q4_K_q8_K", "ggml_vec_dot_q5_K_q8_K", "ggml_vec_dot_q6_K_q8_K",
                           "ggml_vec_dot_iq4_xs_q8_K", "ggml_vec_dot_q4_0_q8_0", "ggml_vec_dot_q4_1_q8_1",
                           "ggml_vec_dot_q8_0_q8_0", "ggml_vec_dot_q5_0_q8_0", "ggml_vec_dot_iq4_nl_q8_0",
                           "ggml_vec_dot_mxfp4_q8_0", "ggml_vec_dot_f16", "ggml_vec_dot_bf16", "ggml_vec_dot_f32"};
    const char *kname[KQ_KINDS] = {"hearth vec_dot", "hearth rows4", "hearth rows4_x", "llama vec_dot"};
    const int64_t n_in = argc > 5 ? atoll(argv[5]) : 4096;
    if (n_in < 256 || n_in % 256) {
        fprintf(stderr, "bench_kernels kq: N_IN must be a multiple of 256 (got %s)\n", argv[5]);
        return 2;
    }
    printf("kernels: %s, 1 thread, n_in %lld; GB/s of weight rows per CPU second (median of the passes), ns per 256 weights\n",
           k->name, (long long)n_in);
    float *x = malloc(n_in * sizeof *x);
    void *xq = malloc(n_in * sizeof(float)); /* the largest act_prep row (F32) */
    void *xt = aligned_alloc(64, 2 * n_in * sizeof(float)); /* re-laid rows: at most 320 bytes per 256 */
    if (!x || !xq || !xt) return 1;
    for (int64_t i = 0; i < n_in; i++) x[i] = (float)((i * 7919) % 2001 - 1000) / 1000.0f;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const uint32_t t = types[ti];
        if (only && !type_listed(only, hr_type_name(t))) continue;
        ggml_dot_fn ld = lib ? (ggml_dot_fn)(uintptr_t)dlsym(lib, lname[ti]) : NULL;
        k->act_prep[t](x, xq, n_in);
        const bool has_x = hr_kernels_ext_of(k)->rows4_x[t] != NULL;
        if (has_x) hr_kernels_ext_of(k)->tile_xprep[t](xq, xt, n_in);
        for (int big = 0; big < 2; big++) {
            size_t rb;
            /* in L2: 256 rows where they fit in ~640 KB (the K-quants), fewer for wide rows */
            const size_t rb1 = hr_row_bytes(t, n_in);
            const int64_t n_l2 = rb1 * 256 <= 640000 ? 256 : (int64_t)(640000 / rb1) / 4 * 4;
            const int64_t n_out = big ? (int64_t)(mb * 1e6 / rb1) / 4 * 4 : n_l2;
            char *w = make_weights(t, n_in, n_out, &rb);
            float *y = malloc((size_t)n_out * sizeof *y);
            if (!w || !y) return 1;
            /* passes interleaved over the kernels (A B C A B C ...), so a noisy moment hits all */
            enum { PASSES = 15 };
            double tm[KQ_KINDS][PASSES];
            const int reps = big ? 1 : 64; /* in-cache passes repeat the matrix to last ~1 ms+ */
            for (int p = -1; p < PASSES; p++)
                for (int kind = 0; kind < KQ_KINDS; kind++) {
                    if ((kind == KQ_LLAMA_DOT && !ld) || (kind == KQ_HEARTH_ROWS4X && !has_x)) continue;
                    double s = 0;
                    for (int r = 0; r < reps; r++) s += kq_pass(kind, k, ld, t, w, rb, n_in, n_out, xq, xt, y);
                    if (p >= 0) tm[kind][p] = s / reps;
                }
            printf("%-5s %s:", hr_type_name(t), big ? "DRAM" : "L2  ");
            for (int kind = 0; kind < KQ_KINDS; kind++) {
                if ((kind == KQ_LLAMA_DOT && !ld) || (kind == KQ_HEARTH_ROWS4X && !has_x)) continue;
                qsort(tm[kind], PASSES, sizeof tm[kind][0], cmp_double);
                const double med = tm[kind][PASSES / 2];
                printf("  %s %5.1f GB/s %5.1f ns", kname[kind], (double)rb * n_out / med / 1e9,
                       med * 1e9 / ((double)n_out * (n_in / 256)));
            }
            printf("\n");
            free(w);
            free(y);
        }
    }
    free(x);
    free(xq);
    free(xt);
    if (lib) dlclose(lib);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "kq") == 0) return kq_main(argc, argv);
    double mb = argc > 1 ? atof(argv[1]) : 256;
    int max_thr = argc > 2 ? atoi(argv[2]) : 2;
    const uint32_t types[] = {HR_Q4_0, HR_Q8_0, HR_F16, HR_BF16, HR_F32,
                              HR_Q2_K, HR_Q3_K, HR_Q4_K, HR_Q5_K, HR_Q6_K, HR_IQ4_XS,
                              HR_Q4_1, HR_Q5_0, HR_Q5_1, HR_IQ4_NL, HR_MXFP4};
    double bw[3] = {0};
    const char *only = argc > 3 ? argv[3] : NULL;
    for (int nth = 1; nth <= max_thr && nth <= 2 && argc <= 4; nth++) {
        bw[nth] = mem_bw(nth);
        printf("memory read (sum of 1 GiB), %d thread(s): %.1f GB/s\n", nth, bw[nth]);
    }
    printf("kernels: %s\n", hr_kernels_best()->name);
    const int64_t n_in = 4096;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        uint32_t t = types[ti];
        if (only && strcmp(only, hr_type_name(t)) != 0) continue;
        size_t rb = hr_row_bytes(t, n_in);
        int64_t n_out = mb > 0 ? (int64_t)(mb * 1e6 / rb) : 4096;
        void *w = make_weights(t, n_in, n_out, &rb);
        float *x = malloc(64 * n_in * sizeof *x), *y = malloc(64 * (size_t)n_out * sizeof *y);
        if (!w || !x || !y) { fprintf(stderr, "out of memory\n"); return 1; }
        for (int64_t i = 0; i < 64 * n_in; i++) x[i] = (float)((i * 7919) % 2001 - 1000) / 1000.0f;
        hr_mat W = {.type = t, .n_in = n_in, .n_out = n_out, .row_bytes = rb, .data = w};
        for (int nth = 1; nth <= max_thr; nth++) {
            hr_cpu c;
            hr_err e;
            if (hr_cpu_init(&c, nth, &e) < 0) { fprintf(stderr, "%s\n", e.msg); return 1; }
            hr_matmul(&c, &W, x, 1, y, &e); /* warm: page in */
            /* best of >= 5 calls and >= 0.3 s: small (in-cache) matrices get many calls,
             * so the best one is rarely disturbed by other processes */
            enum { MAX_TIMES = 4096 };
            double *times = malloc(MAX_TIMES * sizeof *times);
            if (!times) { fprintf(stderr, "out of memory\n"); return 1; }
            double best = 1e9, c0 = cpu_now(), tstart = now();
            int reps = 0;
            for (; reps < 5 || now() - tstart < 0.3; reps++) {
                double t0 = now();
                hr_matmul(&c, &W, x, 1, y, &e);
                double dt = now() - t0;
                if (dt < best) best = dt;
                if (reps < MAX_TIMES) times[reps] = dt;
            }
            int nt = reps < MAX_TIMES ? reps : MAX_TIMES;
            qsort(times, (size_t)nt, sizeof times[0], cmp_double);
            double med = times[nt / 2];
            free(times);
            double cpu = (cpu_now() - c0) / reps / nth;
            double gbs = (double)rb * n_out / best / 1e9;
            printf("decode %-6s %d thr: %6.1f GB/s, median %6.1f (%3.0f%% of read bw; cpu-time rate %.1f GB/s)\n",
                   hr_type_name(t), nth, gbs, (double)rb * n_out / med / 1e9,
                   nth <= 2 && bw[nth] > 0 ? 100 * gbs / bw[nth] : 0, (double)rb * n_out / cpu / 1e9);
            /* prompt: 64 tokens against the first 2048 rows (8-32 MB) */
            hr_mat Wp = W;
            Wp.n_out = n_out < 2048 ? n_out : 2048;
            double t0 = now();
            c0 = cpu_now();
            reps = 0;
            do { hr_matmul(&c, &Wp, x, 64, y, &e); reps++; } while (now() - t0 < 0.5);
            double macs = (double)n_in * Wp.n_out * 64 * reps;
            double gmac = macs / (now() - t0) / 1e9, gmac_cpu = macs / ((cpu_now() - c0) / nth) / 1e9;
            printf("prompt %-5s %d thr: %6.1f GMAC/s (~%.0f tok/s on a 542M-weight model; cpu-time rate %.1f GMAC/s)\n",
                   hr_type_name(t), nth, gmac, gmac / 0.542, gmac_cpu);
            hr_cpu_free(&c);
        }
        free(w); free(x); free(y);
    }
    return 0;
}
