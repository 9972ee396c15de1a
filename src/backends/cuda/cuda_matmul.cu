/* matmul and gather_matmul: argument checks, activation preparation and the choice of
 * kernel (matrix-vector up to HR_CU_MMV_TOK tokens, tiles beyond). Quantized weights
 * need X as Q8_0 blocks in the scratch; batches too large for it run in token chunks,
 * which changes nothing in any token's result. */
#include "cuda_internal.h"

/* Q8_0 and Q4_0 take X as Q8_0 blocks; every other type (float types, and the newer
 * block types, dequantized in the kernels) takes it as F32. */
static bool is_quant(uint32_t t) { return t == HR_Q8_0 || t == HR_Q4_0; }
static bool is_float(uint32_t t) { return t == HR_F32 || t == HR_F16 || t == HR_BF16; }

static int mm_run(hr_cuda *c, const hr_dmat *W, uint64_t X, int64_t n_tok, const int32_t *idx, int64_t n_rows,
                  uint64_t MASK, uint64_t Y, const char *op, hr_err *e) {
    if (hr_cu_check_mat(c, W, op, e)) return -1;
    if (n_tok < 0 || n_rows < 0) return hr_errf(e, "cuda %s: negative size", op);
    if (n_tok == 0 || n_rows == 0) return 0;
    if (X % 4 || Y % 4) return hr_errf(e, "cuda %s: X and Y must be 4-byte aligned", op);
    if ((uint64_t)n_tok > UINT64_MAX / 4 / (uint64_t)W->n_in || (uint64_t)n_tok > UINT64_MAX / 4 / (uint64_t)n_rows)
        return hr_errf(e, "cuda %s: size overflow", op);
    if (hr_cu_span(c, X, (uint64_t)n_tok * W->n_in * 4, op, "X", e) ||
        hr_cu_span(c, Y, (uint64_t)n_tok * n_rows * 4, op, "Y", e) || hr_cu_enter(c, op, e))
        return -1;
    const uint64_t q_tok = (uint64_t)W->n_in / 32 * 34; /* prepared bytes per token */
    int64_t chunk = n_tok;
    if (is_quant(W->type) && (uint64_t)chunk > HR_CU_SCRATCH_BYTES / q_tok) chunk = (int64_t)(HR_CU_SCRATCH_BYTES / q_tok);
    if (chunk < 1) return hr_errf(e, "cuda %s: rows of %lld elements exceed the activation scratch", op, (long long)W->n_in);
    hr_cu_mm m = {};
    m.W = hr_cu_at<const char>(c, W->off);
    m.row_bytes = W->row_bytes;
    m.n_in = W->n_in;
    m.n_out = W->n_out;
    m.n_rows = n_rows;
    m.idx = idx;
    m.vec = is_float(W->type) && W->off % 16 == 0 && W->row_bytes % 16 == 0 && W->n_in % 8 == 0 && X % 16 == 0;
    for (int64_t t0 = 0; t0 < n_tok; t0 += chunk) {
        m.n_tok = n_tok - t0 < chunk ? n_tok - t0 : chunk;
        m.X = hr_cu_at<const float>(c, X) + t0 * W->n_in;
        m.Y = hr_cu_at<float>(c, Y) + t0 * n_rows;
        m.need = MASK == UINT64_MAX ? NULL : hr_cu_at<const uint8_t>(c, MASK) + t0 * n_rows;
        if (is_quant(W->type)) {
            if (hr_cu_prep_q8(c, m.X, m.n_tok * (W->n_in / 32), c->scratch, e)) return -1;
            m.Xq = c->scratch;
        }
        const bool vec = m.n_tok <= HR_CU_MMV_TOK;
        int rc = vec ? hr_cu_launch_mmv(c, W->type, &m, e) : hr_cu_launch_mmtile(c, W->type, &m, e);
        /* tiles compute every row; the entries no mask sets are zeroed after them */
        if (!rc && m.need && !vec) rc = hr_cu_apply_mask(&c->dev, Y + (uint64_t)(t0 * n_rows) * 4, MASK + (uint64_t)(t0 * n_rows), m.n_tok, n_rows, e);
        if (rc) return idx ? hr_errctx(e, "%s", op) : -1;
    }
    return 0;
}

int hr_cu_matmul(hr_dev *d, const hr_dmat *W, uint64_t X, int64_t n_tok, uint64_t Y, hr_err *e) {
    return mm_run(hr_cu(d), W, X, n_tok, NULL, W->n_out, UINT64_MAX, Y, "matmul", e);
}

int hr_cu_gather_matmul(hr_dev *d, const hr_dmat *W, uint64_t X, int64_t n_tok, uint64_t idx, int64_t n_idx,
                        uint64_t Y, hr_err *e) {
    hr_cuda *c = hr_cu(d);
    if (n_idx < 0 || n_idx > INT32_MAX) return hr_errf(e, "cuda gather_matmul: bad index count %lld", (long long)n_idx);
    if (n_idx == 0) return 0;
    if (idx % 4 || hr_cu_span(c, idx, (uint64_t)n_idx * 4, "gather_matmul", "idx", e))
        return idx % 4 ? hr_errf(e, "cuda gather_matmul: idx must be 4-byte aligned") : -1;
    return mm_run(c, W, X, n_tok, hr_cu_at<const int32_t>(c, idx), n_idx, UINT64_MAX, Y, "gather_matmul", e);
}

int hr_cu_gather_matmul_masked(hr_dev *d, const hr_dmat *W, uint64_t X, int64_t n_tok, uint64_t idx, int64_t n_idx,
                               uint64_t MASK, uint64_t Y, hr_err *e) {
    hr_cuda *c = hr_cu(d);
    const char *op = "gather_matmul_masked";
    if (n_idx < 0 || n_idx > INT32_MAX || n_tok < 0) return hr_errf(e, "cuda %s: bad sizes", op);
    if (n_idx == 0 || n_tok == 0) return 0;
    if (idx % 4 || hr_cu_span(c, idx, (uint64_t)n_idx * 4, op, "idx", e))
        return idx % 4 ? hr_errf(e, "cuda %s: idx must be 4-byte aligned", op) : -1;
    if ((uint64_t)n_tok > UINT64_MAX / (uint64_t)n_idx || hr_cu_span(c, MASK, (uint64_t)(n_tok * n_idx), op, "mask", e))
        return (uint64_t)n_tok > UINT64_MAX / (uint64_t)n_idx ? hr_errf(e, "cuda %s: size overflow", op) : -1;
    return mm_run(c, W, X, n_tok, hr_cu_at<const int32_t>(c, idx), n_idx, MASK, Y, op, e);
}
