/* Micro-benchmark of the sparse CPU operators (not a test): GB/s of hr_gather_matmul and
 * hr_sparse_axpy on the rows they read, and of the decode FFN over rows bundled per neuron
 * (hr_sparse_ffn_fused: each active neuron's gate, up and down_t rows adjacent, as the engine
 * lays out predicted-mode layers at load; its rows are 3 per neuron), against hr_matmul's GB/s
 * on the whole matrix and a plain read of the same number of bytes (membw's AVX2 sum), one
 * token. An N_IN x 11008
 * matrix (an FFN of a 7B model at N_IN 4096) with several copies so that ~256 MB rotate
 * through and nothing stays in cache; random active sets (sorted, as a predictor's mask
 * gives them, or unsorted with "unsorted"). Every round runs each kind once, interleaved
 * (the machine may be shared), and medians over rounds are reported:
 *   GB/s    bytes read over the call's wall time;
 *   cpu     at 1 thread, bytes over the call's thread CPU time (time the process was
 *           descheduled does not count: the kernel's own speed on a loaded machine);
 *   dense%  median over rounds of the call's rate over the same round's dense rate
 *           (cpu time at 1 thread, wall time above), i.e. paired with the dense call just
 *           before it, which saw about the same load;
 *   read%   the same, paired with the round's plain read (cpu time at 1 thread).
 * With "huge" the matrices lie in 2 MiB pages (madvise MADV_HUGEPAGE), as the engine's mapping
 * asks for, instead of 4 KiB ones.
 * Usage: bench_sparse [types=q4_0,q8_0,f16] [reps=31] [max_threads=2] [n_in=4096] [unsorted] [huge] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "backends/cpu/sparse.h"
#include "bench_util.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#define N_OUT 11008
#define N_FRAC 2
static const double fracs[N_FRAC] = {0.10, 0.30};
enum { K_MEM, K_DENSE, K_FIRST }; /* then gather, axpy, bundled FFN per fraction */
enum { OP_GATHER, OP_AXPY, OP_FFN, N_OP };
static const char *const op_name[N_OP] = {"gather", "axpy", "ffn"};
#define N_KIND (K_FIRST + N_OP * N_FRAC)

static double clk(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static float unif(uint64_t *s) { return (float)(bench_rng(s) >> 40) * 0x1p-24f * 2.0f - 1.0f; }

/* The plain read the kernels are measured against: membw's loop (4 independent AVX2
 * accumulators) over n bytes, on the calling thread. */
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) static float read_bytes(const char *p, size_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    const float *f = (const float *)p;
    size_t i = 0, m = n / sizeof(float);
    for (; i + 32 <= m; i += 32) {
        a0 = _mm256_add_ps(a0, _mm256_loadu_ps(f + i));
        a1 = _mm256_add_ps(a1, _mm256_loadu_ps(f + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_loadu_ps(f + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_loadu_ps(f + i + 24));
    }
    float l[8];
    _mm256_storeu_ps(l, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    return l[0] + l[7];
}
#else
static float read_bytes(const char *p, size_t n) {
    float a[8] = {0};
    const float *f = (const float *)p;
    for (size_t i = 0; i + 8 <= n / sizeof(float); i += 8)
        for (int k = 0; k < 8; k++) a[k] += f[i + k];
    return a[0] + a[7];
}
#endif

/* k distinct random rows of n, sorted unless `unsorted`. */
static void pick(int32_t *idx, int64_t k, int64_t n, int unsorted, uint64_t *s, char *mark) {
    memset(mark, 0, (size_t)n);
    for (int64_t i = 0; i < k;) {
        int64_t r = (int64_t)(bench_rng(s) % (uint64_t)n);
        if (!mark[r]) mark[r] = 1, i++;
    }
    int64_t m = 0;
    for (int64_t r = 0; r < n; r++)
        if (mark[r]) idx[m++] = (int32_t)r;
    if (unsorted)
        for (int64_t i = k - 1; i > 0; i--) {
            int64_t j = (int64_t)(bench_rng(s) % (uint64_t)(i + 1));
            int32_t t = idx[i];
            idx[i] = idx[j], idx[j] = t;
        }
}

typedef struct {
    double *wall, *cpu; /* [kind * reps + round] */
    double bytes[N_KIND];
    int reps;
} times;

/* Median over rounds of kind k's rate over kind base's rate, by wall or cpu time. */
static double paired(const times *tm, int k, int base, int use_cpu) {
    double *t = use_cpu ? tm->cpu : tm->wall, r[tm->reps];
    for (int i = 0; i < tm->reps; i++)
        r[i] = (tm->bytes[k] / t[k * tm->reps + i]) / (tm->bytes[base] / t[base * tm->reps + i]);
    return bench_median(r, tm->reps);
}
static double rate(const times *tm, int k, int use_cpu) {
    double v[tm->reps];
    memcpy(v, (use_cpu ? tm->cpu : tm->wall) + k * tm->reps, sizeof v);
    return tm->bytes[k] / bench_median(v, tm->reps) / 1e9;
}

static void report(const times *tm, int nth, const char *type, const char *kn, const char *an, int ffn_ok) {
    const int cpu = nth == 1; /* one thread: the kernel's own time is the thread's CPU time */
    printf("%-5s %d thr  read %6.2f GB/s", type, nth, rate(tm, K_MEM, 0));
    if (cpu) printf(" (cpu %6.2f)", rate(tm, K_MEM, 1));
    printf("  dense %6.2f GB/s", rate(tm, K_DENSE, 0));
    if (cpu) printf(" (cpu %6.2f)", rate(tm, K_DENSE, 1));
    printf(" = %3.0f%% of read  (kernels %s, axpy %s)\n", 100 * paired(tm, K_DENSE, K_MEM, cpu), kn, an);
    for (int f = 0; f < N_FRAC; f++) {
        printf("      %2.0f%% rows", fracs[f] * 100);
        for (int op = 0; op < N_OP; op++) {
            const int k = K_FIRST + N_OP * f + op;
            if (op == OP_FFN && !ffn_ok) {
                printf("  ffn n/a (no gather4 kernel)");
                continue;
            }
            printf("  %s %6.2f GB/s", op_name[op], rate(tm, k, 0));
            if (cpu) printf(" (cpu %6.2f)", rate(tm, k, 1));
            printf(" %3.0f%% dense %3.0f%% read", 100 * paired(tm, k, K_DENSE, cpu), 100 * paired(tm, k, K_MEM, cpu));
        }
        printf("\n");
    }
}

/* The FFN's activation: never zero, so the axpy reads every active neuron's down row. */
static void act_nonzero(float *a, const float *g, const float *u, int64_t n, void *arg) {
    (void)arg;
    for (int64_t i = 0; i < n; i++) a[i] = (g[i] > 0 ? g[i] : -g[i]) * u[i] + 1.0f;
}

/* One call of kind k on copy cp; *n_idx gets the active rows drawn for it. */
static int run_kind(hr_cpu *c, hr_sparse_ws *ws, int k, hr_mat W, const char *bun, const float *X, const float *A,
                    int32_t *idx, int64_t n_idx, float *Y, float *GUA, hr_err *e) {
    if (k == K_DENSE) return hr_matmul(c, &W, X, 1, Y, e);
    const int op = (k - K_FIRST) % N_OP;
    if (op == OP_GATHER) return hr_gather_matmul(c, &W, X, 1, idx, n_idx, Y, e);
    if (op == OP_AXPY) return hr_sparse_axpy_ws(c, ws, &W, A, 1, idx, n_idx, Y, e);
    hr_mat g = W, u = W, d = W;
    g.stride = u.stride = d.stride = 3 * W.row_bytes;
    g.data = bun, u.data = bun + W.row_bytes, d.data = bun + 2 * W.row_bytes;
    return hr_sparse_ffn_fused(c, ws, &g, &u, &d, X, idx, n_idx, act_nonzero, NULL, GUA, GUA + N_OUT, GUA + 2 * N_OUT, Y, e);
}

static int bench_type(uint32_t t, int reps, int max_threads, int64_t n_in, int unsorted, int huge) {
    const size_t rb = hr_row_bytes(t, (uint64_t)n_in), mat = rb * N_OUT;
    int copies = (int)((256u << 20) / mat) + 1;
    if (copies < 3) copies = 3;
    /* copies so that ~256 MB rotate; the bundled ones (3 rows per neuron) as many */
    char *w = bench_weights(mat * copies, huge), *bun = bench_weights(3 * mat * copies, huge);
    float *GUA = malloc(3 * N_OUT * sizeof *GUA), *row = malloc(n_in * sizeof *row), *X = malloc(n_in * sizeof *X);
    float *Y = malloc((n_in > N_OUT ? n_in : N_OUT) * sizeof *Y); /* the FFN's output is n_in wide */
    float *A = malloc(N_OUT * sizeof *A);
    int32_t *idx = malloc(N_OUT * sizeof *idx);
    char *mark = malloc(N_OUT);
    times tm = {.wall = malloc(sizeof(double) * reps * N_KIND), .cpu = malloc(sizeof(double) * reps * N_KIND),
                .reps = reps};
    if (!w || !bun || !GUA || !row || !X || !Y || !A || !idx || !mark || !tm.wall || !tm.cpu) return fprintf(stderr, "out of memory\n"), 1;
    uint64_t s = 42;
    for (int64_t o = 0; o < N_OUT; o++) {
        for (int64_t i = 0; i < n_in; i++) row[i] = unif(&s);
        hr_quant_row(t, row, w + o * rb, n_in);
    }
    for (int cp = 1; cp < copies; cp++) memcpy(w + cp * mat, w, mat);
    for (int64_t o = 0; o < 3 * N_OUT; o++) /* gate, up, down_t: this matrix's rows in turn */
        memcpy(bun + o * rb, w + (o / 3 + (o % 3) * 997) % N_OUT * rb, rb);
    for (int cp = 1; cp < copies; cp++) memcpy(bun + 3 * cp * mat, bun, 3 * mat);
    for (int64_t i = 0; i < n_in; i++) X[i] = unif(&s);
    for (int64_t i = 0; i < N_OUT; i++) A[i] = unif(&s) + 2.0f; /* non-zero */
    tm.bytes[K_MEM] = tm.bytes[K_DENSE] = (double)mat;
    for (int f = 0; f < N_FRAC; f++)
        for (int op = 0; op < N_OP; op++)
            tm.bytes[K_FIRST + N_OP * f + op] = (op == OP_FFN ? 3.0 : 1.0) * (double)(int64_t)(fracs[f] * N_OUT) * rb;
    volatile float sink = 0;
    for (int nth = 1; nth <= max_threads; nth++) {
        hr_cpu c;
        hr_err e = {{0}};
        hr_sparse_ws ws;
        hr_sparse_ws_init(&ws);
        if (hr_cpu_init(&c, nth, &e) < 0 || hr_sparse_reserve(&ws, &c, 1, n_in, &e) < 0)
            return fprintf(stderr, "%s\n", e.msg), 1;
        ws.ax = hr_axpy_best();
        const hr_mat probe = {.type = t, .n_in = n_in, .n_out = N_OUT, .row_bytes = rb, .data = w};
        const int ffn_ok = hr_sparse_ffn_fits(&c, &probe);
        int cp = 0;
        for (int r = -2; r < reps; r++) { /* two warm-up rounds */
            for (int k = 0; k < N_KIND; k++) {
                hr_mat W = {.type = t, .n_in = n_in, .n_out = N_OUT, .row_bytes = rb, .data = w + cp * mat};
                const char *b = bun + 3 * (size_t)cp * mat;
                cp = (cp + 1) % copies;
                int64_t n_idx = 0;
                const int op = k >= K_FIRST ? (k - K_FIRST) % N_OP : -1;
                if (op == OP_FFN && !ffn_ok) continue;
                if (k >= K_FIRST) { /* the fused FFN takes its neurons ascending */
                    n_idx = (int64_t)(fracs[(k - K_FIRST) / N_OP] * N_OUT);
                    pick(idx, n_idx, N_OUT, unsorted && op != OP_FFN, &s, mark);
                }
                double w0 = clk(CLOCK_MONOTONIC), c0 = clk(CLOCK_THREAD_CPUTIME_ID);
                int rc = 0;
                if (k == K_MEM) sink += read_bytes(W.data, mat);
                else rc = run_kind(&c, &ws, k, W, b, X, A, idx, n_idx, Y, GUA, &e);
                double c1 = clk(CLOCK_THREAD_CPUTIME_ID), w1 = clk(CLOCK_MONOTONIC);
                if (rc < 0) return fprintf(stderr, "%s\n", e.msg), 1;
                if (r >= 0) tm.wall[k * reps + r] = w1 - w0, tm.cpu[k * reps + r] = c1 - c0;
            }
        }
        report(&tm, nth, hr_type_name(t), c.k->name, ws.ax->name, ffn_ok);
        hr_sparse_ws_free(&ws);
        hr_cpu_free(&c);
    }
    munmap(w, mat * copies), munmap(bun, 3 * mat * copies);
    free(GUA), free(row); free(X); free(Y); free(A); free(idx); free(mark); free(tm.wall); free(tm.cpu);
    return 0;
}

int main(int argc, char **argv) {
    char types[128] = "q4_0,q8_0,f16";
    int reps = argc > 2 ? atoi(argv[2]) : 31, max_threads = argc > 3 ? atoi(argv[3]) : 2;
    int64_t n_in = argc > 4 ? atoll(argv[4]) : 4096;
    int unsorted = 0, huge = 0, bad = 0;
    for (int i = 5; i < argc; i++) {
        if (!strcmp(argv[i], "unsorted")) unsorted = 1;
        else if (!strcmp(argv[i], "huge")) huge = 1;
        else bad = 1;
    }
    if (argc > 1) snprintf(types, sizeof types, "%s", argv[1]);
    if (bad || reps < 1 || max_threads < 1 || n_in < 32 || n_in > (1 << 20))
        return fprintf(stderr, "usage: bench_sparse [types] [reps] [max_threads] [n_in] [unsorted] [huge]\n"), 2;
    printf("%lld x %d, median of %d rounds, %s active rows, %s pages\n", (long long)n_in, N_OUT, reps,
           unsorted ? "unsorted" : "sorted", huge ? "2 MiB" : "4 KiB");
    bench_loadavg("before");
    for (char *tok = strtok(types, ","); tok; tok = strtok(NULL, ",")) {
        int t = hr_type_from_name(tok);
        if (t < 0 || !hr_type_is_weight((uint32_t)t)) return fprintf(stderr, "unknown type %s\n", tok), 2;
        if (bench_type((uint32_t)t, reps, max_threads, n_in, unsorted, huge)) return 1;
    }
    bench_loadavg("after");
    return 0;
}
