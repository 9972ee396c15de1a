/* Fixed-work prompt micro-benchmark (not a test): REPS calls of a 64-token batch against
 * 2048 rows of 4096 weights of one type, on one thread, in the last-level cache. Meant for
 * `perf stat -e cycles,instructions build/bench/bench_prompt TYPE REPS`: per-process
 * cycles per MAC do not depend on what else the machine runs the way wall time does.
 * Usage: bench_prompt TYPE [REPS] [N_TOK] [N_IN]; prints the MACs done and the wall-time rate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/matmul.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: bench_prompt TYPE [REPS] [N_TOK] [N_IN]\n"); return 2; }
    uint32_t t = HR_TYPE_MAX;
    for (uint32_t i = 0; i < HR_TYPE_MAX; i++)
        if (hr_type_name(i) && strcmp(hr_type_name(i), argv[1]) == 0) t = i;
    if (t == HR_TYPE_MAX) { fprintf(stderr, "unknown type %s\n", argv[1]); return 2; }
    const int reps = argc > 2 ? atoi(argv[2]) : 20, n_tok = argc > 3 ? atoi(argv[3]) : 64;
    const int64_t n_in = argc > 4 ? atoi(argv[4]) : 4096, n_out = 2048;
    const size_t rb = hr_row_bytes(t, n_in);
    char *w = malloc(rb * n_out);
    float *x = malloc(sizeof(float) * n_in * n_tok), *y = malloc(sizeof(float) * n_out * n_tok);
    float *row = malloc(sizeof(float) * n_in);
    if (!w || !x || !y || !row) { fprintf(stderr, "out of memory\n"); return 1; }
    unsigned s = 1;
    for (int64_t r = 0; r < n_out; r++) {
        for (int64_t i = 0; i < n_in; i++) {
            s = s * 1103515245u + 12345u;
            row[i] = ((int)(s >> 16 & 0x7fff) - 16384) / 16384.0f;
        }
        if (r < 16) hr_quant_row(t, row, w + r * rb, n_in);
        else memcpy(w + r * rb, w + (r % 16) * rb, rb);
    }
    for (int64_t i = 0; i < n_in * n_tok; i++) x[i] = (float)((i * 7919) % 2001 - 1000) / 1000.0f;
    hr_mat W = {.type = t, .n_in = n_in, .n_out = n_out, .row_bytes = rb, .data = w};
    hr_cpu c;
    hr_err e;
    if (hr_cpu_init(&c, 1, &e) < 0) { fprintf(stderr, "%s\n", e.msg); return 1; }
    double t0 = now();
    for (int r = 0; r < reps; r++)
        if (hr_matmul(&c, &W, x, n_tok, y, &e) < 0) { fprintf(stderr, "%s\n", e.msg); return 1; }
    double dt = now() - t0, macs = (double)n_in * n_out * n_tok * reps;
    printf("%s %s: %.3g MACs, %.1f GMAC/s wall, y[0] %g\n", hr_kernels_best()->name, argv[1], macs, macs / dt / 1e9, y[0]);
    hr_cpu_free(&c);
    free(w); free(x); free(y); free(row);
    return 0;
}
