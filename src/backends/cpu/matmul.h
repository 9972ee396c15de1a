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

/* y[c*ys + r] = dot(row r of w, activation row c) for r < n_rows, c < n_x, on the calling
 * thread: weight rows ws bytes apart, activation rows xs bytes apart as k->act_prep[type]
 * writes them. Decode's 4- and 2-row kernels for one activation row, the prompt tiles for
 * several, each value vec_dot's bit for bit: a product inside a caller's own task
 * (attention's scores over a head's cached K rows, for one query or a few). xt: NULL, or room
 * for n_x rows xs bytes apart where several activation rows are re-laid for the table's
 * tile_x (as hr_matmul does) when each fits (hr_rows_dot_xbytes <= xs). */
void hr_rows_dot(const hr_kernels *k, uint32_t type, int64_t n, const void *w, size_t ws, int64_t n_rows,
                 const void *xq, size_t xs, int32_t n_x, float *y, size_t ys, void *xt);
/* Bytes of one re-laid activation row of hr_rows_dot's xt (0: the table re-lays none). */
size_t hr_rows_dot_xbytes(const hr_kernels *k, uint32_t type, int64_t n);

/* Work a product's caller wants done on the rows it has just computed, inside the same pool
 * run (element-wise work after a product then runs on every thread instead of the caller
 * alone): fn(arg, r0, r1) once per chunk, after rows [r0, r1) of Y (and Y1) are final for
 * every token. Chunks are disjoint and together cover [0, n_out), so an element-wise fn
 * gives the same result for any thread count. */
typedef struct hr_mm_epi {
    void (*fn)(void *arg, int64_t r0, int64_t r1);
    void *arg;
} hr_mm_epi;
/* hr_matmul, then ep (NULL: none) on each chunk of rows. */
int hr_matmul_ep(hr_cpu *c, const hr_mat *W, const float *X, int64_t n_tok, float *Y, const hr_mm_epi *ep, hr_err *e);
/* Y0 = X W0^T and Y1 = X W1^T in one pool run with the activations prepared once, then ep
 * on each chunk of rows of both (an FFN's gate and up with its activation). W0 and W1 must
 * share type, n_in and n_out (hr_matmul_pair_fits); every value equals hr_matmul's. */
bool hr_matmul_pair_fits(const hr_mat *W0, const hr_mat *W1);
int hr_matmul_pair(hr_cpu *c, const hr_mat *W0, const hr_mat *W1, const float *X, int64_t n_tok, float *Y0, float *Y1,
                   const hr_mm_epi *ep, hr_err *e);

/* One product of hr_matmul_group: Y = X W^T over n_tok activation rows and, where W1 is set,
 * Y1 = X W1^T as hr_matmul_pair; then ep (NULL: none) on each chunk of its rows. */
typedef struct hr_mm_item {
    const hr_mat *W, *W1;
    const float *X;
    int64_t n_tok;
    float *Y, *Y1;
    const hr_mm_epi *ep;
} hr_mm_item;
/* Several products in one pool run (a mixture of experts' products over their tokens): every
 * item's activations prepared, then all their rows as one range run (pool.h), so many small
 * products pay one hand-off instead of one each. Every value equals the item's
 * hr_matmul (hr_matmul_pair) result bit for bit; items must not write each other's inputs. */
int hr_matmul_group(hr_cpu *c, const hr_mm_item *items, int n_items, hr_err *e);

#endif
