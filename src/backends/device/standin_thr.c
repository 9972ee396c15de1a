/* The stand-in's operations of FFN mode threshold's split: the threshold test on the gate
 * values (hr_gate_mag, the host's own function, so the decision is the host's bit for bit
 * on equal gate values) and the gathered product over the rows some token needs (the CPU's
 * gather over those rows: each row's value is the one the full gather gives). */
#include <stdlib.h>
#include <string.h>
#include "backends/cpu/ops.h"
#include "formats/types.h"
#include "standin_impl.h"

int hr_standin_thr_mask(hr_dev *d, uint64_t G, int64_t n, float thr, int act, uint64_t MASK, hr_err *e) {
    if (n < 0 || act < 0 || act >= HR_ACT_COUNT) return hr_errf(e, "standin: thr_mask of %lld elements, activation %d", (long long)n, act);
    if (G % 4) return hr_errf(e, "standin: thr_mask gate at offset %llu is not 4-byte aligned", (unsigned long long)G);
    const float *g = hr_standin_span(d, G, (uint64_t)n * 4, "thr_mask gate", e);
    uint8_t *m = g ? hr_standin_span(d, MASK, (uint64_t)n, "thr_mask mask", e) : NULL;
    float *mag = m ? malloc(sizeof(float) * (size_t)(n ? n : 1)) : NULL;
    if (!mag) return m ? hr_errf(e, "standin: out of memory") : -1;
    hr_gate_mag(mag, g, n, (hr_act)act);
    for (int64_t i = 0; i < n; i++) m[i] = mag[i] > thr;
    free(mag);
    return 0;
}

/* The rows some token's mask sets, in order; returns their count. */
static int64_t needed_rows(const uint8_t *mk, int64_t n_tok, int64_t n_idx, const int32_t *idx, int32_t *sel, int64_t *pos) {
    int64_t k = 0;
    for (int64_t i = 0; i < n_idx; i++) {
        bool any = false;
        for (int64_t t = 0; t < n_tok && !any; t++) any = mk[t * n_idx + i] != 0;
        if (any) sel[k] = idx[i], pos[k++] = i;
    }
    return k;
}

int hr_standin_gather_masked(hr_dev *d, const hr_dmat *W, uint64_t X, int64_t n_tok, uint64_t idx, int64_t n_idx,
                             uint64_t MASK, uint64_t Y, hr_err *e) {
    if (n_tok < 1 || n_idx < 0) return hr_errf(e, "standin: gather_matmul_masked of %lld tokens, %lld rows", (long long)n_tok, (long long)n_idx);
    if (idx % 4 || Y % 4) return hr_errf(e, "standin: gather_matmul_masked: idx and Y must be 4-byte aligned");
    const int32_t *ix = hr_standin_span(d, idx, (uint64_t)n_idx * 4, "gather_matmul_masked index", e);
    const uint8_t *mk = ix ? hr_standin_span(d, MASK, (uint64_t)(n_tok * n_idx), "gather_matmul_masked mask", e) : NULL;
    float *y = mk ? hr_standin_span(d, Y, (uint64_t)(n_tok * n_idx) * 4, "gather_matmul_masked output", e) : NULL;
    if (!y) return -1;
    int32_t *sel = malloc(sizeof(int32_t) * (size_t)(n_idx ? n_idx : 1));
    int64_t *pos = malloc(sizeof(int64_t) * (size_t)(n_idx ? n_idx : 1));
    float *tmp = malloc(sizeof(float) * (size_t)(n_tok * (n_idx ? n_idx : 1)));
    int rc = sel && pos && tmp ? 0 : hr_errf(e, "standin: out of memory");
    const int64_t k = rc ? 0 : needed_rows(mk, n_tok, n_idx, ix, sel, pos);
    if (!rc) memset(y, 0, sizeof(float) * (size_t)(n_tok * n_idx));
    if (!rc && k) rc = hr_standin_gather_rows(d, W, X, n_tok, sel, k, tmp, e); /* checks the rows */
    for (int64_t t = 0; !rc && k && t < n_tok; t++)
        for (int64_t i = 0; i < k; i++)
            if (mk[t * n_idx + pos[i]]) y[t * n_idx + pos[i]] = tmp[t * k + i];
    free(sel), free(pos), free(tmp);
    return rc;
}
