/* membw: memory read bandwidth, measured as the reference figures were (baseline.md): sum a
 * 1 GiB float buffer, AVX2 when the CPU has it (scalar otherwise), best of 7, per thread
 * count. Decode speed is bounded by this: tokens/s <= GB/s / bytes read per token.
 * Usage: membw [--json] [--threads 1,2] [--mib 1024] [--reps 7] */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MEMBW_X86 1
#endif

typedef double (*sum_fn)(const float *p, size_t n);

typedef struct {
    const float *p;
    size_t n;
    sum_fn fn;
    double sum;
} slice;

/* Eight independent accumulators so the adds are not one dependency chain. */
static double sum_scalar(const float *p, size_t n) {
    float a[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) a[j] += p[i + j];
    double s = 0;
    for (int j = 0; j < 8; j++) s += a[j];
    for (; i < n; i++) s += p[i];
    return s;
}

#ifdef MEMBW_X86
__attribute__((target("avx2"))) static double sum_avx2(const float *p, size_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_add_ps(a0, _mm256_loadu_ps(p + i));
        a1 = _mm256_add_ps(a1, _mm256_loadu_ps(p + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_loadu_ps(p + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_loadu_ps(p + i + 24));
    }
    float l[8];
    _mm256_storeu_ps(l, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    double s = 0;
    for (int j = 0; j < 8; j++) s += l[j];
    for (; i < n; i++) s += p[i];
    return s;
}
#endif

static void *run_slice(void *arg) {
    slice *s = arg;
    s->sum = s->fn(s->p, s->n);
    return NULL;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One pass over the buffer split in nt contiguous slices; returns seconds, or -1. */
static double pass(const float *buf, size_t n, int nt, sum_fn fn, double *sum) {
    slice sl[64];
    pthread_t th[64];
    size_t per = (n / (size_t)nt) & ~(size_t)15;
    double t0 = now_s();
    for (int t = 0; t < nt; t++) {
        sl[t] = (slice){buf + per * (size_t)t, t == nt - 1 ? n - per * (size_t)t : per, fn, 0};
        if (t > 0 && pthread_create(&th[t], NULL, run_slice, &sl[t])) return -1;
    }
    run_slice(&sl[0]);
    for (int t = 1; t < nt; t++) pthread_join(th[t], NULL);
    double dt = now_s() - t0;
    *sum = 0;
    for (int t = 0; t < nt; t++) *sum += sl[t].sum;
    return dt;
}

static int parse_threads(const char *v, int *out, int cap) {
    int n = 0;
    while (*v) {
        char *end;
        errno = 0;
        long x = strtol(v, &end, 10);
        if (errno || end == v || x < 1 || x > 64 || n == cap) return -1;
        out[n++] = (int)x;
        if (*end == ',') end++;
        else if (*end) return -1;
        v = end;
    }
    return n;
}

static int usage(FILE *f, int rc) {
    fprintf(f, "usage: membw [--json] [--threads LIST] [--mib N] [--reps N]\n"
               "Sums a float buffer (default 1024 MiB) best of N (default 7) times per thread count\n"
               "(default 1,2) and prints the read bandwidth in GB/s (1e9 bytes/s).\n"
               "  --scalar   force the scalar loop even where AVX2 exists\n");
    return rc;
}

int main(int argc, char **argv) {
    int threads[16] = {1, 2}, n_threads = 2, json = 0, force_scalar = 0;
    long mib = 1024, reps = 7;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        char *end;
        if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--scalar")) force_scalar = 1;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(stdout, 0);
        else if (i + 1 < argc && !strcmp(a, "--threads")) {
            if ((n_threads = parse_threads(argv[++i], threads, 16)) <= 0) {
                fprintf(stderr, "membw: --threads: '%s' is not a list of counts in 1..64\n", argv[i]);
                return 2;
            }
        } else if (i + 1 < argc && (!strcmp(a, "--mib") || !strcmp(a, "--reps"))) {
            long x = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || x < 1 || x > (1L << 20)) {
                fprintf(stderr, "membw: %s: '%s' is not a positive integer\n", a, argv[i]);
                return 2;
            }
            *(!strcmp(a, "--mib") ? &mib : &reps) = x;
        } else {
            fprintf(stderr, "membw: unknown flag or missing value '%s'\n", a);
            return usage(stderr, 2);
        }
    }
    sum_fn fn = sum_scalar;
    const char *isa = "scalar";
#ifdef MEMBW_X86
    __builtin_cpu_init();
    if (!force_scalar && __builtin_cpu_supports("avx2")) fn = sum_avx2, isa = "avx2";
#endif
    size_t n = (size_t)mib * 1048576 / sizeof(float);
    float *buf = NULL;
    if (posix_memalign((void **)&buf, 64, n * sizeof(float))) {
        fprintf(stderr, "membw: cannot allocate %ld MiB\n", mib);
        return 1;
    }
    for (size_t i = 0; i < n; i++) buf[i] = (float)(i & 3); /* touches every page before timing */
    double best[16], sum = 0;
    for (int k = 0; k < n_threads; k++) {
        best[k] = 1e30;
        for (long r = 0; r < reps; r++) {
            double dt = pass(buf, n, threads[k], fn, &sum);
            if (dt < 0) {
                fprintf(stderr, "membw: cannot start %d threads\n", threads[k]);
                return 1;
            }
            if (dt < best[k]) best[k] = dt;
            /* float accumulators round past 2^24, so only a sign of life is checked */
            if (!(sum > 0)) {
                fprintf(stderr, "membw: checksum %g: the buffer was not summed\n", sum);
                return 1;
            }
        }
    }
    double bytes = (double)n * sizeof(float);
    if (json) {
        printf("{\"isa\":\"%s\",\"buffer_bytes\":%.0f,\"reps\":%ld,\"gb_s\":{", isa, bytes, reps);
        for (int k = 0; k < n_threads; k++) printf("%s\"%d\":%.3f", k ? "," : "", threads[k], bytes / best[k] / 1e9);
        printf("}}\n");
    } else {
        printf("memory read bandwidth (%s, %ld MiB buffer, best of %ld)\n", isa, mib, reps);
        for (int k = 0; k < n_threads; k++)
            printf("  %2d thread%s  %7.2f GB/s\n", threads[k], threads[k] > 1 ? "s" : " ", bytes / best[k] / 1e9);
    }
    free(buf);
    return 0;
}
