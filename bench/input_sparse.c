/* What input sparsity (TEAL: skip the weights of every product whose input is near zero)
 * could give at decode with Hearth's own kernels (not a test). One decode step's seven products
 * per layer (q, k, v, o: n_embd x n_embd; gate, up: n_ff x n_embd; down: n_embd x n_ff) run
 * dense (hr_matmul, gate and up paired, as the forward pass runs them) and as sparse axpys over
 * transposed copies (hr_sparse_axpy_ws: row i of a copy is column i of the matrix, read only
 * when input i is active), each with a random share of its inputs active. Both sets are in
 * anonymous 2 MiB pages, together far beyond the last-level cache; rounds alternate dense and
 * sparse, and the table gives medians.
 * Usage: bench_input_sparse [THREADS] [TYPE] [LAYERS] [N_EMBD] [N_FF] [ROUNDS]
 *   defaults 2 q4_0 4 4096 11008 9 (a 7B shape; q4_0, q8_0, f16, or any weight type name). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/sparse.h"
#include "bench_util.h"
#include "formats/types.h"

enum { N_MATS = 7, MAX_ROUNDS = 64 };

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Rows of random weights of type t, quantized from floats in [-1, 1) (a few rows, repeated:
 * the values do not change the kernels' work). */
static int fill(hr_mat *m, uint32_t t, int64_t n_out, int64_t n_in, uint64_t *seed) {
    const size_t rb = hr_row_bytes(t, (uint64_t)n_in);
    char *w = bench_weights(rb * (size_t)n_out, 1);
    float *row = malloc(sizeof(float) * (size_t)n_in);
    if (!w || !row) return free(row), -1;
    for (int64_t r = 0; r < n_out; r++) {
        if (r < 8) {
            for (int64_t i = 0; i < n_in; i++) row[i] = (float)(bench_rng(seed) >> 40) / (float)(1 << 23) - 1.0f;
            hr_quant_row(t, row, w + (size_t)r * rb, n_in);
        } else {
            memcpy(w + (size_t)r * rb, w + (size_t)(r % 8) * rb, rb);
        }
    }
    free(row);
    *m = (hr_mat){.type = t, .n_in = n_in, .n_out = n_out, .row_bytes = rb, .data = w};
    return 0;
}

int main(int argc, char **argv) {
    const int nth = argc > 1 ? atoi(argv[1]) : 2, nl = argc > 3 ? atoi(argv[3]) : 4;
    const int64_t ne = argc > 4 ? atoll(argv[4]) : 4096, nf = argc > 5 ? atoll(argv[5]) : 11008;
    const int rounds = argc > 6 ? atoi(argv[6]) : 9;
    uint32_t t = HR_TYPE_MAX;
    for (uint32_t i = 0; i < HR_TYPE_MAX; i++)
        if (hr_type_name(i) && !strcmp(hr_type_name(i), argc > 2 ? argv[2] : "q4_0")) t = i;
    if (t == HR_TYPE_MAX || nth < 1 || nl < 1 || ne < 32 || nf < 32 || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: bench_input_sparse [THREADS] [TYPE] [LAYERS] [N_EMBD] [N_FF] [ROUNDS <= %d]\n", MAX_ROUNDS);
        return 2;
    }
    const int64_t shape[N_MATS][2] = {{ne, ne}, {ne, ne}, {ne, ne}, {ne, ne}, {nf, ne}, {nf, ne}, {ne, nf}}; /* out, in */
    hr_mat *dense = calloc((size_t)nl * N_MATS, sizeof *dense), *tr = calloc((size_t)nl * N_MATS, sizeof *tr);
    const int64_t wide = nf > ne ? nf : ne;
    float *x = malloc(sizeof(float) * (size_t)wide), *y0 = malloc(sizeof(float) * (size_t)wide);
    float *y1 = malloc(sizeof(float) * (size_t)wide), *a = malloc(sizeof(float) * (size_t)wide);
    int32_t *idx = malloc(sizeof(int32_t) * (size_t)wide);
    uint64_t seed = 1;
    double bytes = 0;
    if (!dense || !tr || !x || !y0 || !y1 || !a || !idx) return fprintf(stderr, "out of memory\n"), 1;
    for (int l = 0; l < nl; l++)
        for (int m = 0; m < N_MATS; m++) {
            if (fill(&dense[l * N_MATS + m], t, shape[m][0], shape[m][1], &seed) ||
                fill(&tr[l * N_MATS + m], t, shape[m][1], shape[m][0], &seed))
                return fprintf(stderr, "out of memory for the weights\n"), 1;
            bytes += (double)dense[l * N_MATS + m].row_bytes * (double)shape[m][0];
        }
    for (int64_t i = 0; i < wide; i++) x[i] = (float)(bench_rng(&seed) >> 40) / (float)(1 << 23) - 1.0f;
    hr_cpu c;
    hr_err e = {{0}};
    hr_sparse_ws ws;
    hr_sparse_ws_init(&ws);
    if (hr_cpu_init(&c, nth, &e) || hr_sparse_reserve(&ws, &c, 1, wide, &e)) return fprintf(stderr, "%s\n", e.msg), 1;
    bench_loadavg("before");
    printf("%s, %d threads, %d layers of %lld x %lld (n_ff %lld): %.0f MB of weights per step (and as many transposed)\n",
           hr_type_name(t), nth, nl, (long long)ne, (long long)ne, (long long)nf, bytes / 1e6);
    printf("%13s %10s %10s %12s %10s\n", "inputs active", "dense ms", "axpy ms", "dense/axpy", "axpy GB/s");
    const double shares[] = {1.0, 0.75, 0.6, 0.5, 0.4};
    for (size_t s = 0; s < sizeof shares / sizeof shares[0]; s++) {
        double td[MAX_ROUNDS], ts[MAX_ROUNDS], read = 0;
        for (int r = 0; r < rounds; r++) {
            double t0 = now();
            for (int l = 0; l < nl; l++) {
                const hr_mat *D = dense + l * N_MATS;
                int rc = 0;
                for (int m = 0; m < 4; m++) rc |= hr_matmul(&c, &D[m], x, 1, y0, &e);
                rc |= hr_matmul_pair(&c, &D[4], &D[5], x, 1, y0, y1, NULL, &e) | hr_matmul(&c, &D[6], x, 1, y0, &e);
                if (rc) return fprintf(stderr, "%s\n", e.msg), 1;
            }
            td[r] = now() - t0;
            double ts_r = 0;
            read = 0;
            for (int l = 0; l < nl; l++)
                for (int m = 0; m < N_MATS; m++) {
                    const hr_mat *T = &tr[l * N_MATS + m];
                    int64_t n = 0;
                    for (int64_t i = 0; i < T->n_out; i++) /* the inputs this product keeps */
                        if ((double)(bench_rng(&seed) >> 11) * 0x1p-53 < shares[s]) idx[n] = (int32_t)i, a[n++] = x[i];
                    read += (double)n * (double)T->row_bytes;
                    t0 = now();
                    if (hr_sparse_axpy_ws(&c, &ws, T, a, 1, idx, n, y0, &e)) return fprintf(stderr, "%s\n", e.msg), 1;
                    ts_r += now() - t0;
                }
            ts[r] = ts_r;
        }
        const double md = bench_median(td, rounds), ms = bench_median(ts, rounds);
        printf("%12.0f%% %10.2f %10.2f %11.2fx %10.1f\n", shares[s] * 100, md * 1e3, ms * 1e3, md / ms, read / ms / 1e9);
    }
    bench_loadavg("after");
    hr_sparse_ws_free(&ws);
    hr_cpu_free(&c);
    return 0;
}
