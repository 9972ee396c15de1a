/* Micro-benchmark of a sparse FFN's weight layout (not a test): one decode token through the
 * active neurons of an FFN of n_ff 11008 and n_embd N_IN (a 7B model's at 4096), gate and up
 * rows gathered and the ffn_down_t row added, with Hearth's own kernels (gather4, axpy), three
 * ways:
 *   separate   gate, up and down_t as the file stores them (three matrices), in three passes
 *              over the active set: what src/engine/ffn.c does today;
 *   fused      the same matrices, one pass: per 4 neurons their gate, up, activation, down;
 *   bundled    each neuron's three rows adjacent in one buffer (gate, up, down_t), one pass
 *              as fused: a neuron is one run of 3 x row bytes, which the hardware prefetcher
 *              can follow, where separate rows start a new stream every row;
 *   bundled in 3 passes   the bundles, passed over as separate does (rows 3 x row bytes apart).
 * Each call also prefetches the next 4 neurons' rows of its kind (as the engine's kernels
 * do). Random sorted active sets, drawn anew each round; copies of the weights rotate so
 * that nothing is cached; rounds interleave the three ways; medians of GB/s over the bytes
 * read (3 rows per active neuron) and of each way's rate over the same round's separate one,
 * at 1 thread by thread CPU time.
 * Usage: bench_bundle [types=q4_0,q8_0,f16] [fraction=0.1] [rounds=21] [n_in=4096] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "backends/cpu/kernels_impl.h"
#include "backends/cpu/sparse.h"
#include "bench_util.h"

#define N_FF 11008
enum { W_SEPARATE, W_FUSED, W_BUNDLED, W_BUNDLED_3, N_WAYS };
static const char *const way_name[N_WAYS] = {"separate", "fused", "bundled", "bundled in 3 passes"};

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static float unif(uint64_t *s) { return (float)(bench_rng(s) >> 40) * 0x1p-24f - 0.5f; }

typedef struct {
    hr_gather4_fn g4;
    hr_axpy_fn ax;
    int64_t n;
    size_t rb;
    const char *xq;
    float *g, *u, *h, *y;
} ffn_k;

/* Rows of kind `kind` (0 gate, 1 up, 2 down_t) of the 4 neurons at idx[i..] and of the 4 after
 * (the last repeated): separate matrices lie one after another, bundles interleave them. */
static void rows_of(const ffn_k *k, const char *base, int bundled, const int32_t *idx, int64_t i, int64_t n_idx,
                    int kind, const void **w, const void **nx) {
    const size_t step = bundled ? 3 * k->rb : k->rb;
    const char *b = base + (bundled ? (size_t)kind * k->rb : (size_t)kind * N_FF * k->rb);
    for (int r = 0; r < 4; r++) {
        w[r] = b + (size_t)idx[i + r] * step;
        nx[r] = b + (size_t)idx[i + 4 + r < n_idx ? i + 4 + r : n_idx - 1] * step;
    }
}
static void act4(ffn_k *k, int64_t i) {
    for (int r = 0; r < 4; r++) k->h[i + r] = (k->g[i + r] > 0 ? k->g[i + r] : 0.0f) * k->u[i + r] + 1.0f;
}

static void run_way(ffn_k *k, int way, const char *base, const int32_t *idx, int64_t n_idx) {
    const void *w[4], *nx[4];
    memset(k->y, 0, sizeof(float) * (size_t)k->n);
    if (way == W_SEPARATE || way == W_BUNDLED_3) {
        const int bundled = way == W_BUNDLED_3;
        for (int kind = 0; kind < 2; kind++)
            for (int64_t i = 0; i < n_idx; i += 4) {
                rows_of(k, base, bundled, idx, i, n_idx, kind, w, nx);
                k->g4(k->n, w, nx, k->xq, (kind ? k->u : k->g) + i);
            }
        for (int64_t i = 0; i < n_idx; i += 4) act4(k, i);
        for (int64_t i = 0; i < n_idx; i += 4) {
            rows_of(k, base, bundled, idx, i, n_idx, 2, w, nx);
            k->ax(k->n, 4, w, i + 4 < n_idx ? nx : NULL, k->h + i, 1, k->y, 0);
        }
        return;
    }
    const int bundled = way == W_BUNDLED;
    for (int64_t i = 0; i < n_idx; i += 4) {
        rows_of(k, base, bundled, idx, i, n_idx, 0, w, nx);
        k->g4(k->n, w, nx, k->xq, k->g + i);
        rows_of(k, base, bundled, idx, i, n_idx, 1, w, nx);
        k->g4(k->n, w, nx, k->xq, k->u + i);
        act4(k, i);
        rows_of(k, base, bundled, idx, i, n_idx, 2, w, nx);
        k->ax(k->n, 4, w, i + 4 < n_idx ? nx : NULL, k->h + i, 1, k->y, 0);
    }
}

static int bench_type(uint32_t t, double frac, int rounds, int64_t n) {
    const hr_kernels *K = hr_kernels_best();
    ffn_k k = {.g4 = hr_kernels_ext_of(K)->gather4[t], .ax = hr_axpy_best()->axpy[t], .n = n,
               .rb = hr_row_bytes(t, (uint64_t)n)};
    if (!k.g4 || !k.ax) return fprintf(stderr, "%s: no gather4 kernel in the %s table\n", hr_type_name(t), K->name), 1;
    const size_t set = k.rb * N_FF * 3; /* one FFN: gate, up, down_t */
    const int copies = (int)((512u << 20) / set) + 1;
    char *sep = bench_weights(set * copies, 1), *bun = bench_weights(set * copies, 1);
    if (!sep || !bun) return fprintf(stderr, "out of memory\n"), 1;
    float *row = malloc(sizeof(float) * (size_t)n), *x = malloc(sizeof(float) * (size_t)n);
    char *xq = aligned_alloc(64, (hr_act_bytes(t, n) + 127) & ~(size_t)63);
    int32_t *idx = malloc(sizeof(int32_t) * N_FF);
    k.g = malloc(sizeof(float) * N_FF), k.u = malloc(sizeof(float) * N_FF), k.h = malloc(sizeof(float) * N_FF);
    k.y = aligned_alloc(64, sizeof(float) * (size_t)((n + 15) & ~15));
    double *rate = malloc(sizeof(double) * rounds * N_WAYS), *ratio = malloc(sizeof(double) * rounds * N_WAYS);
    if (!row || !x || !xq || !idx || !k.g || !k.u || !k.h || !k.y || !rate || !ratio) return fprintf(stderr, "out of memory\n"), 1;
    uint64_t s = 7;
    for (int64_t o = 0; o < 3 * N_FF; o++) {
        for (int64_t i = 0; i < n; i++) row[i] = unif(&s);
        hr_quant_row(t, row, sep + o * k.rb, n);
    }
    for (int64_t i = 0; i < N_FF; i++)
        for (int kind = 0; kind < 3; kind++) memcpy(bun + (i * 3 + kind) * k.rb, sep + (kind * N_FF + i) * k.rb, k.rb);
    for (int cp = 1; cp < copies; cp++) memcpy(sep + cp * set, sep, set), memcpy(bun + cp * set, bun, set);
    for (int64_t i = 0; i < n; i++) x[i] = unif(&s);
    K->act_prep[t](x, xq, n);
    k.xq = xq;
    int cp = 0;
    for (int r = -2; r < rounds; r++) { /* two warm-up rounds */
        for (int way = 0; way < N_WAYS; way++) {
            int64_t n_idx = 0;
            for (int64_t i = 0; i < N_FF; i++)
                if ((double)(bench_rng(&s) >> 11) * 0x1p-53 < frac) idx[n_idx++] = (int32_t)i;
            n_idx &= ~(int64_t)3;
            if (n_idx < 8) return fprintf(stderr, "fraction %g leaves too few neurons\n", frac), 1;
            const char *base = (way >= W_BUNDLED ? bun : sep) + (size_t)cp * set;
            cp = (cp + 1) % copies;
            const double t0 = cpu_now();
            run_way(&k, way, base, idx, n_idx);
            const double dt = cpu_now() - t0;
            if (r >= 0) rate[way * rounds + r] = 3.0 * (double)n_idx * (double)k.rb / dt / 1e9;
        }
        for (int way = 0; r >= 0 && way < N_WAYS; way++) ratio[way * rounds + r] = rate[way * rounds + r] / rate[r];
    }
    printf("%-5s %2.0f%% of %d neurons, rows of %lld (%zu bytes), kernels %s / axpy %s:", hr_type_name(t), frac * 100,
           N_FF, (long long)n, k.rb, K->name, hr_axpy_best()->name);
    for (int way = 0; way < N_WAYS; way++) {
        const double g = bench_median(rate + way * rounds, rounds), q = bench_median(ratio + way * rounds, rounds);
        printf("  %s %.2f GB/s", way_name[way], g);
        if (way) printf(" (%.2fx)", q);
    }
    printf("\n");
    munmap(sep, set * copies), munmap(bun, set * copies);
    free(row), free(x), free(xq), free(idx), free(k.g), free(k.u), free(k.h), free(k.y), free(rate), free(ratio);
    return 0;
}

int main(int argc, char **argv) {
    char types[256] = "q4_0,q8_0,f16";
    if (argc > 1) snprintf(types, sizeof types, "%s", argv[1]);
    const double frac = argc > 2 ? atof(argv[2]) : 0.1;
    const int rounds = argc > 3 ? atoi(argv[3]) : 21;
    const int64_t n = argc > 4 ? atoll(argv[4]) : 4096;
    if (!(frac > 0 && frac <= 1) || rounds < 1 || n < 256 || n % 256)
        return fprintf(stderr, "usage: bench_bundle [types] [fraction in (0,1]] [rounds >= 1] [n_in, a multiple of 256]\n"), 2;
    printf("median of %d rounds, 1 thread, weights in 2 MiB pages\n", rounds);
    bench_loadavg("before");
    for (char *tok = strtok(types, ","); tok; tok = strtok(NULL, ",")) {
        const int t = hr_type_from_name(tok);
        if (t < 0) return fprintf(stderr, "unknown type %s\n", tok), 2;
        if (bench_type((uint32_t)t, frac, rounds, n)) return 1;
    }
    return 0;
}
