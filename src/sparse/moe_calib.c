/* Calibration of mixtures of experts (moe_calib.h): the counters the MoE FFN keeps
 * (moe.c: routing per layer and expert, firing per expert neuron) read after a dense run,
 * and the transposed-down rewrite of the model file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/model.h"
#include "engine/moe.h"
#include "formats/types.h"
#include "moe_calib.h"
#include "moe_pred.h"

/* The context's counters into s (counts <= the tokens evaluated, which fit the file's I32). */
static int copy_counts(const hearth_ctx *ctx, const hearth_model *m, hr_stats *s, hr_err *e) {
    const int32_t ne = s->n_expert;
    uint64_t *routed = calloc((size_t)ne, sizeof *routed);
    if (!routed) return hr_errf(e, "out of memory");
    if (s->n_tokens > INT32_MAX) return free(routed), hr_errf(e, "%llu tokens: too many to count in the statistics file", (unsigned long long)s->n_tokens);
    for (int32_t il = 0; il < s->n_layer; il++) {
        if (hearth_ctx_moe_routed(ctx, il, routed)) return free(routed), hr_errf(e, "layer %d has no routing counts", il);
        for (int32_t x = 0; x < ne; x++) s->expert_counts[(size_t)il * (size_t)ne + (size_t)x] = (uint32_t)routed[x];
        const uint32_t *fc = hr_moe_neuron_counts(ctx, il);
        if (s->counts && fc) memcpy(s->counts + (size_t)il * (size_t)ne * (size_t)s->n_ff, fc, sizeof(uint32_t) * (size_t)ne * (size_t)s->n_ff);
    }
    free(routed);
    (void)m;
    return 0;
}

bool hr_calib_is_moe(const hearth_model *m) { return m->hp.n_expert > 0; }

int hr_calib_moe(hearth_model *m, const int32_t *tokens, int64_t n_tokens, const hr_collect_opts *o, hr_stats *stats, hr_moe_pairs *pairs,
                 hr_err *e) {
    const hr_hparams *hp = &m->hp;
    memset(stats, 0, sizeof *stats);
    if (!hp->n_expert) return hr_errf(e, "not a mixture-of-experts model");
    if (n_tokens < 1) return hr_errf(e, "no tokens to calibrate on");
    const bool neurons = hr_act_relu_family(hp->act); /* SwiGLU experts: nothing is exactly zero */
    if (hr_stats_init_moe(stats, hp->n_layer, hp->n_expert, hp->n_expert_used, hp->n_ff_exp, neurons, e)) return -1;
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = o->n_ctx, cp.n_batch = o->n_ctx, cp.n_threads = o->n_threads;
    cp.ffn_mode = HEARTH_FFN_DENSE, cp.gpu = HEARTH_GPU_OFF;
    cp.kv_k = cp.kv_v = HEARTH_KV_F32;
    hearth_ctx *ctx = hearth_ctx_new(m, &cp, e);
    int r = ctx ? 0 : -1;
    if (!r && neurons) r = hr_moe_count_neurons(ctx, e);
    if (!r && neurons && pairs) r = hr_moe_set_observer(ctx, hr_moe_pairs_observe, pairs, e);
    if (!r) r = hr_calib_eval_chunks(ctx, tokens, n_tokens, o, "counting", &stats->n_tokens, e);
    if (!r) r = copy_counts(ctx, m, stats, e);
    hearth_ctx_free(ctx);
    if (r) hr_stats_free(stats);
    return r;
}

/* ---- the transposed-down rewrite ---- */

typedef struct {
    void **bufs; /* transposed tensors, alive until gguf_w_write returns */
    size_t n;
} bufs_t;

/* "blk.<il>.<rest>" -> il and rest; -1 for other names. */
static int layer_of(const char *name, const char **rest) {
    int il, n = 0;
    if (sscanf(name, "blk.%d.%n", &il, &n) != 1 || n == 0) return -1;
    *rest = name + n;
    return il;
}

/* t {n_ff, n_embd, n_expert} -> *out {n_embd, n_ff, n_expert}: each expert's 2-D slice
 * transposed by the dense rewrite's hr_transpose_down_into. */
static int transpose_experts(const gguf_tensor *t, void **out, uint64_t *nbytes, hr_err *e) {
    gguf_tensor v = *t;
    const uint64_t nx = t->ne[2], in_bytes = hr_row_bytes(t->type, t->ne[0]) * t->ne[1];
    v.n_dims = 2, v.ne[2] = 1, v.nbytes = in_bytes;
    const uint64_t ob = hr_down_t_bytes(&v, e);
    if (!ob) return -1;
    uint8_t *dst = malloc((size_t)(ob * nx));
    if (!dst) return hr_errf(e, "out of memory transposing %llu experts' down matrices", (unsigned long long)nx);
    for (uint64_t x = 0; x < nx; x++) {
        v.data = (const uint8_t *)t->data + x * in_bytes;
        if (hr_transpose_down_into(&v, dst + x * ob, e)) return free(dst), -1;
    }
    *out = dst, *nbytes = ob * nx;
    return 0;
}

static int add_tensors(gguf_writer *w, const hearth_model *m, bufs_t *k, int *n_t, hr_err *e) {
    static const char *const pred_names[] = {"fc1_exps.", "fc2_exps."};
    const gguf_file *f = &m->file;
    char name[256];
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        if (t->name.len >= sizeof name) return hr_errf(e, "tensor name too long");
        memcpy(name, t->name.ptr, t->name.len), name[t->name.len] = 0;
        const char *rest = NULL;
        const int il = layer_of(name, &rest);
        const bool in_range = il >= 0 && il < m->hp.n_layer;
        uint64_t ne[GGUF_MAX_DIMS], nbytes = t->nbytes;
        memcpy(ne, t->ne, sizeof ne);
        const void *data = t->data;
        if (in_range && !strcmp(rest, "ffn_down_exps_t.weight")) (*n_t)++; /* already transposed */
        if (in_range && (!strncmp(rest, pred_names[0], 9) || !strncmp(rest, pred_names[1], 9))) continue; /* replaced */
        if (in_range && !strcmp(rest, "ffn_down_exps.weight")) {
            void *out = NULL;
            if (transpose_experts(t, &out, &nbytes, e)) return hr_errctx(e, "%s", name);
            k->bufs[k->n++] = out;
            data = out, ne[0] = t->ne[1], ne[1] = t->ne[0];
            snprintf(name, sizeof name, "blk.%d.ffn_down_exps_t.weight", il);
            (*n_t)++;
        }
        gguf_w_tensor(w, name, t->type, t->n_dims, ne, data, nbytes);
    }
    return 0;
}

int hr_write_moe_down_t(const hearth_model *m, const char *path, hr_err *e) { return hr_write_moe_sparse(m, NULL, false, path, e); }

int hr_write_moe_sparse(const hearth_model *m, const hr_moe_pred *preds, bool f16, const char *path, hr_err *e) {
    if (!m->hp.n_expert) return hr_errf(e, "not a mixture-of-experts model");
    gguf_writer *w = gguf_writer_new(false);
    const size_t n_bufs = (size_t)m->hp.n_layer + 1 + (preds ? 2 * (size_t)m->hp.n_layer * (size_t)m->hp.n_expert : 0);
    bufs_t k = {calloc(n_bufs, sizeof(void *)), 0};
    if (!w || !k.bufs) return gguf_writer_free(w), free(k.bufs), hr_errf(e, "out of memory");
    const gguf_file *f = &m->file;
    for (uint64_t i = 0; i < f->n_kv; i++) gguf_w_kv_copy(w, &f->kv[i]);
    int n_t = 0, rc = add_tensors(w, m, &k, &n_t, e);
    if (!rc && n_t != m->hp.n_layer)
        rc = hr_errf(e, "the model has ffn_down_exps in %d of %d layers; every layer needs it", n_t, m->hp.n_layer);
    if (!rc && preds) rc = hr_moe_preds_add(w, m, preds, f16, k.bufs, &k.n, e);
    if (!rc) rc = gguf_w_write(w, path, e);
    gguf_writer_free(w);
    for (size_t i = 0; i < k.n; i++) free(k.bufs[i]);
    free(k.bufs);
    return rc ? hr_errctx(e, "writing %s", path) : 0;
}
