/* Helpers the micro-benchmarks share (header only: each is its own program). */
#ifndef HR_BENCH_UTIL_H
#define HR_BENCH_UTIL_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static inline uint64_t bench_rng(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of v[0..n) (sorts v). */
static inline double bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* bytes of anonymous memory for weights, in 2 MiB pages when `huge` (as the engine asks for
 * its mapping and bundles); NULL when out of memory. */
static inline char *bench_weights(size_t bytes, int huge) {
    char *w = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (w == MAP_FAILED) return NULL;
    if (huge && madvise(w, bytes, MADV_HUGEPAGE)) fprintf(stderr, "madvise(MADV_HUGEPAGE) failed: 4 KiB pages\n");
    return w;
}

/* "load average WHEN: ..." from /proc/loadavg (the machine may be shared). */
static inline void bench_loadavg(const char *when) {
    FILE *f = fopen("/proc/loadavg", "r");
    char buf[128] = "?\n";
    if (f) {
        if (!fgets(buf, sizeof buf, f)) strcpy(buf, "?\n");
        fclose(f);
    }
    printf("load average %s: %s", when, buf);
}
#endif
