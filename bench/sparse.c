/* Micro-benchmark of the sparse CPU operators (not a test): GB/s of hr_gather_matmul and
 * hr_sparse_axpy on the rows they read, against hr_matmul's GB/s on the whole matrix,
 * one token. A 4096 x 11008 matrix (an FFN of a 7B model) with several copies so that
 * ~256 MB rotate through and nothing stays in cache; random active sets (sorted, as a
 * predictor's mask gives them, or unsorted with "unsorted"). Calls of each kind are
 * interleaved and the median reported, as the machine may be shared; "paired" is the
 * median over rounds of sparse GB/s over the same round's dense GB/s, "best" the
 * fastest sparse round over the fastest dense one (the least disturbed of each).
 * Usage: bench_sparse [types=q4_0,q8_0,f16] [reps=31] [max_threads=2] [unsorted] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/sparse.h"

#define N_IN 4096
#define N_OUT 11008
#define N_FRAC 3
static const double fracs[N_FRAC] = {0.10, 0.25, 0.50};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rng(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static float unif(uint64_t *s) { return (float)(rng(s) >> 40) * 0x1p-24f * 2.0f - 1.0f; }

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void loadavg(const char *when) {
    FILE *f = fopen("/proc/loadavg", "r");
    char buf[128] = "?";
    if (f) {
        if (!fgets(buf, sizeof buf, f)) strcpy(buf, "?\n");
        fclose(f);
    }
    printf("load average %s: %s", when, buf);
}

/* k distinct random rows of n, sorted unless `unsorted`. */
static void pick(int32_t *idx, int64_t k, int64_t n, int unsorted, uint64_t *s, char *mark) {
    memset(mark, 0, (size_t)n);
    for (int64_t i = 0; i < k;) {
        int64_t r = (int64_t)(rng(s) % (uint64_t)n);
        if (!mark[r]) mark[r] = 1, i++;
    }
    int64_t m = 0;
    for (int64_t r = 0; r < n; r++)
        if (mark[r]) idx[m++] = (int32_t)r;
    if (unsorted)
        for (int64_t i = k - 1; i > 0; i--) {
            int64_t j = (int64_t)(rng(s) % (uint64_t)(i + 1));
            int32_t t = idx[i];
            idx[i] = idx[j], idx[j] = t;
        }
}

static int bench_type(uint32_t t, int reps, int max_threads, int unsorted) {
    const size_t rb = hr_row_bytes(t, N_IN), mat = rb * N_OUT;
    int copies = (int)((256u << 20) / mat) + 1;
    if (copies < 2) copies = 2;
    char *w = malloc(mat * copies);
    float *row = malloc(N_IN * sizeof *row), *X = malloc(N_IN * sizeof *X), *Y = malloc(N_OUT * sizeof *Y);
    float *A = malloc(N_OUT * sizeof *A);
    int32_t *idx = malloc(N_OUT * sizeof *idx);
    char *mark = malloc(N_OUT);
    double *tm = malloc(sizeof(double) * reps * (1 + 2 * N_FRAC));
    if (!w || !row || !X || !Y || !A || !idx || !mark || !tm) return fprintf(stderr, "out of memory\n"), 1;
    uint64_t s = 42;
    for (int64_t o = 0; o < N_OUT; o++) {
        for (int64_t i = 0; i < N_IN; i++) row[i] = unif(&s);
        hr_quant_row(t, row, w + o * rb, N_IN);
    }
    for (int cp = 1; cp < copies; cp++) memcpy(w + cp * mat, w, mat);
    for (int64_t i = 0; i < N_IN; i++) X[i] = unif(&s);
    for (int64_t i = 0; i < N_OUT; i++) A[i] = unif(&s) + 2.0f; /* non-zero */
    for (int nth = 1; nth <= max_threads; nth++) {
        hr_cpu c;
        hr_err e = {{0}};
        hr_sparse_ws ws;
        hr_sparse_ws_init(&ws);
        if (hr_cpu_init(&c, nth, &e) < 0 || hr_sparse_reserve(&ws, &c, 1, N_IN, &e) < 0)
            return fprintf(stderr, "%s\n", e.msg), 1;
        ws.ax = hr_axpy_best();
        int cp = 0;
        for (int r = -2; r < reps; r++) { /* two warm-up rounds */
            hr_mat W = {.type = t, .n_in = N_IN, .n_out = N_OUT, .row_bytes = rb, .data = w + cp * mat};
            cp = (cp + 1) % copies;
            double t0 = now();
            hr_matmul(&c, &W, X, 1, Y, &e);
            if (r >= 0) tm[r] = now() - t0;
            for (int f = 0; f < N_FRAC; f++) {
                int64_t k = (int64_t)(fracs[f] * N_OUT);
                pick(idx, k, N_OUT, unsorted, &s, mark);
                W.data = w + cp * mat;
                cp = (cp + 1) % copies;
                t0 = now();
                hr_gather_matmul(&c, &W, X, 1, idx, k, Y, &e);
                if (r >= 0) tm[reps * (1 + 2 * f) + r] = now() - t0;
                pick(idx, k, N_OUT, unsorted, &s, mark);
                W.data = w + cp * mat;
                cp = (cp + 1) % copies;
                t0 = now();
                if (hr_sparse_axpy_ws(&c, &ws, &W, A, 1, idx, k, Y, &e) < 0) return fprintf(stderr, "%s\n", e.msg), 1;
                if (r >= 0) tm[reps * (2 + 2 * f) + r] = now() - t0;
            }
        }
        double tdense[reps];
        memcpy(tdense, tm, sizeof tdense);
        double dense = mat / median(tdense, reps) / 1e9, dense_best = mat / tdense[0] / 1e9;
        printf("%-5s threads %d  dense matmul %6.2f GB/s, best %6.2f  (kernels %s, axpy %s)\n", hr_type_name(t), nth,
               dense, dense_best, c.k->name, ws.ax->name);
        for (int f = 0; f < N_FRAC; f++) {
            double bytes = (double)(int64_t)(fracs[f] * N_OUT) * rb;
            /* paired ratios: each round's sparse call against the dense call just before
             * it, which saw about the same load from other processes */
            double rg[reps], ra[reps];
            for (int r = 0; r < reps; r++) {
                rg[r] = bytes / tm[reps * (1 + 2 * f) + r] / (mat / tm[r]);
                ra[r] = bytes / tm[reps * (2 + 2 * f) + r] / (mat / tm[r]);
            }
            double g = bytes / median(tm + reps * (1 + 2 * f), reps) / 1e9;
            double a = bytes / median(tm + reps * (2 + 2 * f), reps) / 1e9;
            double gb = bytes / tm[reps * (1 + 2 * f)] / 1e9, ab = bytes / tm[reps * (2 + 2 * f)] / 1e9;
            printf("      %2.0f%% rows  gather %6.2f GB/s (%3.0f%%, paired %3.0f%%, best %3.0f%%)   "
                   "axpy %6.2f GB/s (%3.0f%%, paired %3.0f%%, best %3.0f%%)\n",
                   fracs[f] * 100, g, 100 * g / dense, 100 * median(rg, reps), 100 * gb / dense_best, a,
                   100 * a / dense, 100 * median(ra, reps), 100 * ab / dense_best);
        }
        hr_sparse_ws_free(&ws);
        hr_cpu_free(&c);
    }
    free(w); free(row); free(X); free(Y); free(A); free(idx); free(mark); free(tm);
    return 0;
}

int main(int argc, char **argv) {
    char types[128] = "q4_0,q8_0,f16";
    int reps = argc > 2 ? atoi(argv[2]) : 31, max_threads = argc > 3 ? atoi(argv[3]) : 2;
    int unsorted = argc > 4 && strcmp(argv[4], "unsorted") == 0;
    if (argc > 1) snprintf(types, sizeof types, "%s", argv[1]);
    if (reps < 1 || max_threads < 1) return fprintf(stderr, "usage: bench_sparse [types] [reps] [max_threads] [unsorted]\n"), 2;
    printf("%d x %d, median of %d, %s active rows\n", N_IN, N_OUT, reps, unsorted ? "unsorted" : "sorted");
    loadavg("before");
    for (char *tok = strtok(types, ","); tok; tok = strtok(NULL, ",")) {
        int t = hr_type_from_name(tok);
        if (t < 0 || !hr_type_is_weight((uint32_t)t)) return fprintf(stderr, "unknown type %s\n", tok), 2;
        if (bench_type((uint32_t)t, reps, max_threads, unsorted)) return 1;
    }
    loadavg("after");
    return 0;
}
