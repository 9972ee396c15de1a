/* Writes a model with the thresholds of FFN mode threshold: the input's KVs (its own
 * hearth.ffn_threshold replaced) and tensors, optionally ffn_down as ffn_down_t and the
 * per-layer predictors blk.N.fc1/fc2 (replacing the input's). The magic stays the input's
 * (GGUF, or PWRI for a PowerInfer file). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "calibrate.h"
#include "engine/ffn.h"
#include "engine/model.h"
#include "formats/types.h"

static int add_tensor(gguf_writer *w, const hearth_model *m, const gguf_tensor *t, bool down_t, void **buf, hr_err *e) {
    char name[256];
    if (t->name.len >= sizeof name) return hr_errf(e, "tensor name too long");
    memcpy(name, t->name.ptr, t->name.len), name[t->name.len] = 0;
    int il, n = 0;
    bool is_down = sscanf(name, "blk.%d.%n", &il, &n) == 1 && n > 0 && il >= 0 && il < m->hp.n_layer &&
                   !strcmp(name + n, "ffn_down.weight");
    if (!down_t || !is_down) {
        gguf_w_tensor(w, name, t->type, t->n_dims, t->ne, t->data, t->nbytes);
        return 0;
    }
    uint64_t nb = hr_down_t_bytes(t, e), ne[GGUF_MAX_DIMS];
    if (!nb) return hr_errctx(e, "%s", name);
    if (!(*buf = malloc((size_t)nb))) return hr_errf(e, "out of memory transposing %s", name);
    if (hr_transpose_down_into(t, *buf, e)) return hr_errctx(e, "%s", name);
    memcpy(ne, t->ne, sizeof ne);
    ne[0] = t->ne[1], ne[1] = t->ne[0];
    snprintf(name, sizeof name, "blk.%d.ffn_down_t.weight", il);
    gguf_w_tensor(w, name, t->type, t->n_dims, ne, *buf, nb);
    return 0;
}

/* "blk.N.fc1.weight" / "blk.N.fc2.weight" of a layer the model has. */
static bool is_predictor(const hearth_model *m, const gguf_tensor *t) {
    char name[256];
    int il, n = 0;
    if (t->name.len >= sizeof name) return false;
    memcpy(name, t->name.ptr, t->name.len), name[t->name.len] = 0;
    return sscanf(name, "blk.%d.%n", &il, &n) == 1 && n > 0 && il >= 0 && il < m->hp.n_layer &&
           (!strcmp(name + n, "fc1.weight") || !strcmp(name + n, "fc2.weight"));
}

/* Layer il's fc1 {n_embd, r} and fc2 {r, n_ff}, F16 (into bufs, alive until written) or F32. */
static int add_predictor(gguf_writer *w, const hr_predictor *p, int il, bool f16, void **bufs, hr_err *e) {
    char n1[64], n2[64];
    snprintf(n1, sizeof n1, "blk.%d.fc1.weight", il), snprintf(n2, sizeof n2, "blk.%d.fc2.weight", il);
    const int64_t c1 = (int64_t)p->r * p->n_embd, c2 = (int64_t)p->n_ff * p->r;
    uint64_t ne1[GGUF_MAX_DIMS] = {(uint64_t)p->n_embd, (uint64_t)p->r, 1, 1}, ne2[GGUF_MAX_DIMS] = {(uint64_t)p->r, (uint64_t)p->n_ff, 1, 1};
    if (!f16) {
        gguf_w_tensor(w, n1, HR_F32, 2, ne1, p->fc1, (uint64_t)c1 * 4);
        gguf_w_tensor(w, n2, HR_F32, 2, ne2, p->fc2, (uint64_t)c2 * 4);
        return 0;
    }
    uint16_t *h1 = bufs[0] = malloc((size_t)c1 * 2), *h2 = bufs[1] = malloc((size_t)c2 * 2);
    if (!h1 || !h2) return hr_errf(e, "out of memory");
    for (int64_t i = 0; i < c1; i++) h1[i] = hr_f32_to_f16(p->fc1[i]);
    for (int64_t i = 0; i < c2; i++) h2[i] = hr_f32_to_f16(p->fc2[i]);
    gguf_w_tensor(w, n1, HR_F16, 2, ne1, h1, (uint64_t)c1 * 2);
    gguf_w_tensor(w, n2, HR_F16, 2, ne2, h2, (uint64_t)c2 * 2);
    return 0;
}

int hr_write_thresholds(const hearth_model *m, const float *thr, bool down_t, const char *path, hr_err *e) {
    return hr_write_thresholds_pred(m, thr, down_t, NULL, false, path, e);
}

int hr_write_thresholds_pred(const hearth_model *m, const float *thr, bool down_t, const hr_predictor *preds, bool f16,
                             const char *path, hr_err *e) {
    const gguf_file *f = &m->file;
    gguf_writer *w = gguf_writer_new(f->sparse);
    const uint64_t nb = f->n_tensors + (preds ? 2 * (uint64_t)m->hp.n_layer : 0);
    void **bufs = calloc(nb + 1, sizeof *bufs); /* transposed data and F16 predictors, alive until written */
    if (!w || !bufs) {
        gguf_writer_free(w), free(bufs);
        return hr_errf(e, "out of memory");
    }
    for (uint64_t i = 0; i < f->n_kv; i++)
        if (!gguf_str_eq(f->kv[i].key, HR_KEY_FFN_THRESHOLD)) gguf_w_kv_copy(w, &f->kv[i]);
    gguf_w_arr_f32(w, HR_KEY_FFN_THRESHOLD, thr, (uint64_t)m->hp.n_layer);
    int rc = 0;
    for (uint64_t i = 0; i < f->n_tensors && !rc; i++)
        if (!preds || !is_predictor(m, &f->tensors[i])) rc = add_tensor(w, m, &f->tensors[i], down_t, &bufs[i], e);
    for (int32_t il = 0; preds && il < m->hp.n_layer && !rc; il++)
        rc = add_predictor(w, &preds[il], il, f16, bufs + f->n_tensors + 2 * (uint64_t)il, e);
    if (!rc) rc = gguf_w_write(w, path, e);
    gguf_writer_free(w);
    for (uint64_t i = 0; i < nb; i++) free(bufs[i]);
    free(bufs);
    return rc ? hr_errctx(e, "writing %s", path) : 0;
}
