/* Neuron-aware sparse operators: compute only chosen rows of a matrix.
 * Both split their index list across threads in contiguous chunks. hr_sparse_axpy sums
 * each chunk into a per-thread partial and adds the partials in chunk order, so results
 * depend only on the thread count, never on timing. */
#ifndef HR_SPARSE_H
#define HR_SPARSE_H
#include "matmul.h"

/* Gathered product: Y[t*n_idx + i] = dot(W row idx[i], X[t*W->n_in ...]) for i < n_idx,
 * t < n_tok (activations prepared as for hr_matmul). idx entries must be < W->n_out. */
int hr_gather_matmul(hr_cpu *c, const hr_mat *W, const float *X, int64_t n_tok, const int32_t *idx, int64_t n_idx,
                     float *Y, hr_err *e);

/* Sparse axpy over rows of Wt (each row W->n_in long):
 * Y[t*Wt->n_in + k] = sum over i < n_idx of A[t*n_idx + i] * Wt[idx[i]][k], Y overwritten;
 * terms with A == 0 are skipped. Rows are dequantized exactly (hr_dequant_row semantics)
 * and accumulated in F32. */
int hr_sparse_axpy(hr_cpu *c, const hr_mat *Wt, const float *A, int64_t n_tok, const int32_t *idx, int64_t n_idx,
                   float *Y, hr_err *e);
#endif
