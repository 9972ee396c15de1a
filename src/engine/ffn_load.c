/* Loading one layer's FFN: dense (ffn_down) or PowerInfer (ffn_down_t + predictor). */
#include <stdio.h>
#include <string.h>
#include "ffn.h"
#include "formats/gguf.h"
#include "model.h"

/* blk.N.fc2.bias {m n_ff} F32 (m = 1 or 2): the linear form, fc2's rows m n_ff; {2 n_ff}
 * with n_ff rows in a gated model with thresholds: the band form (model.h). */
static int load_linear(hearth_model *m, int il, const gguf_tensor *t2, hr_ffn_weights *f, hr_err *e) {
    char nb[96];
    snprintf(nb, sizeof nb, "blk.%d.fc2.bias", il);
    const gguf_tensor *tb = gguf_find_tensor(&m->file, nb);
    const int64_t ff = m->hp.n_ff;
    if (!tb) return 0;
    if (m->hp.arch->norm == HR_NORM_LAYER)
        return hr_errf(e, "layer %d has a linear predictor ('%s'), which needs an RMSNorm model; this architecture uses LayerNorm", il, nb);
    const int64_t rows = (int64_t)t2->ne[1];
    if (rows != ff && !(rows == 2 * ff && m->hp.act == HR_ACT_DRELU && f->gate.data))
        return hr_errf(e, "linear predictor of layer %d: 'blk.%d.fc2.weight' has %lld score rows; %s", il, il, (long long)rows,
                       m->hp.act == HR_ACT_DRELU ? "expected n_ff or 2 n_ff (gate and up)" : "expected n_ff");
    f->pred_m = (int32_t)(rows / ff);
    /* twice fc2's rows in a threshold file: the two sides of its band, which test the gate */
    f->pred_band = rows == ff && (int64_t)tb->ne[0] == 2 * ff && f->gate.data && gguf_find_kv(&m->file, HR_KEY_FFN_THRESHOLD);
    return hr_get_vec(m, nb, rows * (f->pred_band ? 2 : 1), &f->pred_b, e);
}

static int load_predictor(hearth_model *m, int il, hr_ffn_weights *f, hr_err *e) {
    char n1[96], n2[96];
    snprintf(n1, sizeof n1, "blk.%d.fc1.weight", il);
    snprintf(n2, sizeof n2, "blk.%d.fc2.weight", il);
    const gguf_tensor *t1 = gguf_find_tensor(&m->file, n1), *t2 = gguf_find_tensor(&m->file, n2);
    if (!t1 && !t2) return 0;
    if (!t1 || !t2) return hr_errf(e, "layer %d has '%s' but not '%s' (the predictor needs both)", il, t1 ? n1 : n2, t1 ? n2 : n1);
    int64_t r = (int64_t)t1->ne[1];
    if ((int64_t)t2->ne[0] != r)
        return hr_errf(e, "predictor rank mismatch in layer %d: '%s' has %lld outputs but '%s' takes %llu inputs", il, n1,
                       (long long)r, n2, (unsigned long long)t2->ne[0]);
    if (r < 1) return hr_errf(e, "tensor '%s' has no rows", n1);
    if (load_linear(m, il, t2, f, e)) return -1;
    const int64_t rows = (f->pred_m ? f->pred_m : 1) * (int64_t)m->hp.n_ff;
    return hr_get_mat(m, n1, m->hp.n_embd, r, true, &f->fc1, e) || hr_get_mat(m, n2, r, rows, true, &f->fc2, e) ? -1 : 0;
}

/* Phi-3's fused ffn_up {n_embd, 2 n_ff}: row views, the gate's n_ff rows first, then up's
 * (llama.cpp's swiglu of the fused product takes its first half as the gate). */
static int load_gate_up_fused(hearth_model *m, int il, hr_ffn_weights *f, hr_err *e) {
    char n[96];
    hr_mat w;
    snprintf(n, sizeof n, "blk.%d.ffn_up.weight", il);
    if (hr_get_mat(m, n, m->hp.n_embd, 2 * (int64_t)m->hp.n_ff, true, &w, e)) return -1;
    f->gate = w, f->up = w;
    f->gate.n_out = f->up.n_out = m->hp.n_ff;
    f->up.data = (const uint8_t *)w.data + w.row_bytes * (size_t)m->hp.n_ff;
    return 0;
}

int hr_load_ffn(hearth_model *m, int il, const char *suffix, hr_ffn_weights *f, hr_err *e) {
    const hr_hparams *hp = &m->hp;
    const int64_t d = hp->n_embd, ff = hp->n_ff;
    char n[96], nt[96];
    memset(f, 0, sizeof *f);
    if (hr_arch_has(hp->arch, HR_AT_FUSED_GATE_UP)) {
        if (load_gate_up_fused(m, il, f, e)) return -1;
    } else {
        snprintf(n, sizeof n, "blk.%d.ffn_gate%s.weight", il, suffix);
        if (hr_get_mat(m, n, d, ff, hp->has_gate, &f->gate, e)) return -1;
        snprintf(n, sizeof n, "blk.%d.ffn_up%s.weight", il, suffix);
        if (hr_get_mat(m, n, d, ff, true, &f->up, e)) return -1;
    }
    snprintf(n, sizeof n, "blk.%d.ffn_down%s.weight", il, suffix);
    snprintf(nt, sizeof nt, "blk.%d.ffn_down_t.weight", il);
    bool has_down = gguf_find_tensor(&m->file, n) != NULL, has_t = gguf_find_tensor(&m->file, nt) != NULL;
    if (!has_down && !has_t) return hr_errf(e, "layer %d has neither '%s' nor '%s'", il, n, nt);
    /* Prefer the transposed matrix: it is what the sparse path reads. */
    if (has_t ? hr_get_mat(m, nt, d, ff, true, &f->down_t, e) : hr_get_mat(m, n, ff, d, true, &f->down, e)) return -1;
    return load_predictor(m, il, f, e);
}
