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

/* The F16 predictor buffers of the layers, in slots alive until the file is written. */
typedef struct {
    void **slot;
    int used, cap;
} slots;

static void *slot_alloc(void *ud, size_t bytes) {
    slots *s = ud;
    return s->used < s->cap ? (s->slot[s->used++] = malloc(bytes ? bytes : 1)) : NULL;
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
        rc = hr_w_predictor(w, &preds[il], il, f16, slot_alloc, &(slots){bufs + f->n_tensors + 2 * (uint64_t)il, 0, 2}, e);
    if (!rc) rc = gguf_w_write(w, path, e);
    gguf_writer_free(w);
    for (uint64_t i = 0; i < nb; i++) free(bufs[i]);
    free(bufs);
    return rc ? hr_errctx(e, "writing %s", path) : 0;
}
