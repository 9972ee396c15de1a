/* Neuron-aware sparse operators: compute only chosen rows of a matrix.
 * The gathered product splits its index list across threads; each output is one dot
 * product. hr_sparse_axpy splits the matrix's rows into fixed ranges (chunks), sums each
 * chunk's active rows in index order into a partial, and adds the partials in chunk
 * order: a token's result depends only on the thread count and its own coefficients,
 * never on timing, on the other tokens of the batch, or on extra indices whose
 * coefficient is zero (given an ascending index list). */
#ifndef HR_SPARSE_H
#define HR_SPARSE_H
#include "matmul.h"

/* Gathered product: Y[t*n_idx + i] = dot(W row idx[i], X[t*W->n_in ...]) for i < n_idx,
 * t < n_tok (activations prepared as for hr_matmul). idx entries must be < W->n_out. */
int hr_gather_matmul(hr_cpu *c, const hr_mat *W, const float *X, int64_t n_tok, const int32_t *idx, int64_t n_idx,
                     float *Y, hr_err *e);

/* One product of a group (hr_gather_group, hr_sparse_axpy_group): the single call's arguments,
 * X the gathered product's activations [n_tok][W->n_in] or the axpy's coefficients
 * [n_tok][n_idx], W the axpy's Wt. */
typedef struct hr_sparse_item {
    const hr_mat *W;
    const float *X;
    int64_t n_tok;
    const int32_t *idx;
    int64_t n_idx;
    float *Y;
} hr_sparse_item;
/* Several gathered products in one pool run (a mixture of experts' experts): every item's
 * activations prepared, then all their rows in chunks any thread claims. Every value is the
 * item's hr_gather_matmul result bit for bit; items must not write each other's inputs. */
int hr_gather_group(hr_cpu *c, const hr_sparse_item *items, int n_items, hr_err *e);

/* Sparse axpy over rows of Wt (each row W->n_in long):
 * Y[t*Wt->n_in + k] = sum over i < n_idx of A[t*n_idx + i] * Wt[idx[i]][k], Y overwritten;
 * terms with A == 0 are skipped. Rows are dequantized exactly (hr_dequant_row semantics)
 * and accumulated in F32. */
int hr_sparse_axpy(hr_cpu *c, const hr_mat *Wt, const float *A, int64_t n_tok, const int32_t *idx, int64_t n_idx,
                   float *Y, hr_err *e);
/* ---- additions (sparse-kernels): axpy kernel tables and a caller-owned workspace ---- */

/* Rows handed to one axpy kernel call at most: several rows share each pass over the
 * output, cutting loads and stores of the accumulator. */
#define HR_AXPY_ROWS 4

/* For t < n_tok, then r < n_rows (1..HR_AXPY_ROWS) in that order, skipping a == 0:
 *   y[t*ys + k] += a[t*HR_AXPY_ROWS + r] * dequant(w[r])[k]   for k < n.
 * Each output element sees its terms in row order, so variants differ only by
 * rounding (SIMD fuses the multiply-add, the scalar twin does not).
 * next: NULL, or HR_AXPY_ROWS rows (of the same length) the caller passes next; the
 * kernel fetches them into cache as it goes (rows are scattered: no hardware stream
 * finds them in time), so the next call finds its rows there. Never read for values. */
typedef void (*hr_axpy_fn)(int64_t n, int n_rows, const void *const *w, const void *const *next, const float *a,
                           int64_t n_tok, float *y, size_t ys);

/* A batch's panel of rows at once: for t < n_tok and k < n (a multiple of 32), then r < n_rows
 * in that order, skipping a == 0:
 *   y[t*ys + k] += a[t*as + r] * dequant(w[r])[k].
 * The terms and their order are hr_axpy_fn's, so the results equal n_rows / HR_AXPY_ROWS calls
 * of the type's axpy bit for bit; but a block of outputs of several tokens stays in registers
 * over all n_rows rows, where the axpy reads and writes the outputs once per HR_AXPY_ROWS rows
 * (a prompt's ffn_down_t product spent most of its time on that traffic). */
typedef void (*hr_axpy_panel_fn)(int64_t n, int n_rows, const void *const *w, const float *a, size_t as, int64_t n_tok,
                                 float *y, size_t ys);
#define HR_AXPY_PANEL_MAX 256 /* n_rows of a panel call at most */

typedef struct hr_axpy_kernels {
    const char *name;             /* "scalar", "avx2", "avx512" */
    hr_axpy_fn axpy[HR_TYPE_MAX]; /* every weight type (hr_type_is_weight) */
    hr_axpy_panel_fn panel[HR_TYPE_MAX]; /* NULL where the table has none: batches take axpy */
} hr_axpy_kernels;

const hr_axpy_kernels *hr_axpy_scalar(void);
const hr_axpy_kernels *hr_axpy_avx2(void);   /* NULL unless compiled in and the CPU has AVX2+FMA+F16C */
const hr_axpy_kernels *hr_axpy_avx512(void); /* NULL unless compiled in and the CPU has AVX-512F/BW/VL/DQ */
/* Best available; HEARTH_KERNELS=scalar|avx2|avx512 overrides as for hr_kernels_best. */
const hr_axpy_kernels *hr_axpy_best(void);

/* Workspace of hr_sparse_axpy_ws, one per context next to its hr_cpu (hr_cpu's own
 * scratch holds hr_matmul's prepared activations and is not shared). Holds the
 * partial sums of idx chunks 1.. (chunk 0 sums straight into Y), grown on demand.
 * Chunks: 4 row ranges per thread (claimed dynamically, so a thread slowed by another
 * process sheds work), fewer for small matrices; batches run in groups of 16 tokens,
 * so the workspace holds (chunks - 1) x 16 output rows at most.
 * Zero-initialise, or hr_sparse_ws_init; free with hr_sparse_ws_free. */
typedef struct hr_sparse_ws {
    const hr_axpy_kernels *ax; /* NULL: hr_axpy_best() on first use; tests may set a table */
    float *part;
    size_t part_floats;
} hr_sparse_ws;

void hr_sparse_ws_init(hr_sparse_ws *ws);
void hr_sparse_ws_free(hr_sparse_ws *ws);
/* Grows ws for calls of up to n_tok tokens on matrices of rows n_in long (the output
 * length) on c's pool, so the decode loop never allocates. Optional: hr_sparse_axpy_ws
 * grows it as needed. */
int hr_sparse_reserve(hr_sparse_ws *ws, const hr_cpu *c, int64_t n_tok, int64_t n_in, hr_err *e);
/* hr_sparse_axpy with a caller-owned workspace (hr_sparse_axpy allocates a temporary
 * one per call: fine for tests and tools, not for the decode loop). A batch reads each
 * row once per 16 tokens; rows whose 16 coefficients are all zero are not read. */
int hr_sparse_axpy_ws(hr_cpu *c, hr_sparse_ws *ws, const hr_mat *Wt, const float *A, int64_t n_tok,
                      const int32_t *idx, int64_t n_idx, float *Y, hr_err *e);

/* Several sparse axpys in one pool run for their rows and one for their partial sums (or a
 * few of each, where the partials would outgrow ws): every value is the item's
 * hr_sparse_axpy_ws result bit for bit (each keeps its own chunks and order); items must not
 * write each other's inputs. ws grows only where one item's 16 tokens need more than it has. */
int hr_sparse_axpy_group(hr_cpu *c, hr_sparse_ws *ws, const hr_sparse_item *items, int n_items, hr_err *e);

/* One token's gated FFN over the neurons idx[0..n_idx) (ascending) in one pass: per group of 4
 * neurons, their gate and up products, act, and their down_t rows added, so the three rows of
 * a neuron are read together (a layout with them adjacent, hr_mat.stride, streams them as one).
 * G, U, A [n_idx] receive gate·x, up·x and act(G, U); Y [down_t->n_in] = sum A[i] down_t row
 * idx[i]. Every value is bit for bit what hr_gather_matmul (gate, up), act, and
 * hr_sparse_axpy_ws give: the same kernels, chunks and order. act must be element-wise; it
 * runs on the pool's threads, several at once, on disjoint ranges. */
typedef void (*hr_ffn_act_fn)(float *a, const float *g, const float *u, int64_t n, void *arg);
int hr_sparse_ffn_fused(hr_cpu *c, hr_sparse_ws *ws, const hr_mat *gate, const hr_mat *up, const hr_mat *down_t,
                        const float *x, const int32_t *idx, int64_t n_idx, hr_ffn_act_fn act, void *act_arg, float *G,
                        float *U, float *A, float *Y, hr_err *e);
/* Whether gate's type has what hr_sparse_ffn_fused needs (a gather4 kernel). */
bool hr_sparse_ffn_fits(const hr_cpu *c, const hr_mat *gate);
#endif
