/* Helpers the micro-benchmarks share (header only: each is its own program). */
#ifndef HR_BENCH_UTIL_H
#define HR_BENCH_UTIL_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
