/* Threaded matrix-vector and matrix-matrix products over hr_mat weights.
 * Work is split by output rows; each thread writes its own slice, so results
 * do not depend on timing for a given thread count. */
#ifndef HR_MATMUL_H
#define HR_MATMUL_H
#include "kernels.h"
#include "pool.h"

typedef struct hr_cpu {
    hr_pool *pool;
    const hr_kernels *k;
    void *scratch;         /* prepared activations */
    size_t scratch_bytes;
    struct hr_prof *prof;  /* NULL unless profiling (prof.h) */
} hr_cpu;

int hr_cpu_init(hr_cpu *c, int n_threads, hr_err *e);
/* Grows c->scratch (prepared activations, 64-byte aligned) to at least bytes. */
int hr_cpu_reserve(hr_cpu *c, size_t bytes, hr_err *e);
void hr_cpu_free(hr_cpu *c);

/* Y[t*n_out + r] = dot(W row r, X[t*n_in ...]) for t < n_tok (n_tok == 1: decode).
 * X is F32 [n_tok][n_in]; Y is F32 [n_tok][n_out]. Returns -1 if scratch cannot grow. */
int hr_matmul(hr_cpu *c, const hr_mat *W, const float *X, int64_t n_tok, float *Y, hr_err *e);

#endif
