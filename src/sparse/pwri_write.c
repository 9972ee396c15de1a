/* Writes a calibrated model as a PowerInfer GGUF: the input's KVs and tensors, ffn_down
 * transposed to ffn_down_t (same weight type: dequantize, transpose, requantize), and the
 * trained predictors. Tensor data of the input is used in place from its mapping.
 * So that PowerInfer itself (its 2023 llama.cpp fork) runs the file with Hearth's meaning:
 * its sparse loader requires output.weight (llama, bamboo, falcon), so a tied output is
 * written out as a copy of token_embd; and its llama computes ReLU(gate) * up, so a dReLU
 * llama is written as its bamboo (the llama layout with ReLU(gate) * ReLU(up)), every
 * llama.* key renamed bamboo.*. Hearth reads both changes with the same meaning. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "calibrate.h"
#include "engine/model.h"
#include "formats/types.h"

typedef struct {
    void **bufs; /* allocations that must outlive gguf_w_write */
    size_t n, cap;
} keep_list;

static void *keep(keep_list *k, size_t bytes) {
    if (k->n == k->cap) {
        size_t nc = k->cap ? 2 * k->cap : 64;
        void **nb = realloc(k->bufs, nc * sizeof *nb);
        if (!nb) return NULL;
        k->bufs = nb, k->cap = nc;
    }
    void *p = malloc(bytes ? bytes : 1);
    if (p) k->bufs[k->n++] = p;
    return p;
}

static void keep_free(keep_list *k) {
    for (size_t i = 0; i < k->n; i++) free(k->bufs[i]);
    free(k->bufs);
}

/* {n_ff, n_embd} down -> {n_embd, n_ff} down_t of the same type. */
static int transpose_down(const gguf_tensor *t, keep_list *k, void **out, uint64_t *nbytes, hr_err *e) {
    uint64_t nb = hr_down_t_bytes(t, e);
    uint8_t *dst = nb ? keep(k, (size_t)nb) : NULL;
    if (!nb) return -1;
    if (!dst) return hr_errf(e, "out of memory transposing ffn_down");
    if (hr_transpose_down_into(t, dst, e)) return -1;
    *out = dst, *nbytes = nb;
    return 0;
}

uint64_t hr_down_t_bytes(const gguf_tensor *t, hr_err *e) {
    const int64_t ff = (int64_t)t->ne[0], d = (int64_t)t->ne[1];
    const uint32_t ty = t->type;
    const uint64_t blk = hr_type_block_elems(ty), in_row = hr_row_bytes(ty, (uint64_t)ff), out_row = hr_row_bytes(ty, (uint64_t)d);
    if (!hr_type_is_weight(ty) || !blk || d % (int64_t)blk || !in_row || !out_row) {
        hr_errf(e, "cannot transpose ffn_down of type %s and shape {%lld, %lld} (n_embd must be a multiple of the %llu-element block)",
                hr_type_name(ty) ? hr_type_name(ty) : "unknown", (long long)ff, (long long)d, (unsigned long long)blk);
        return 0;
    }
    return out_row * (uint64_t)ff;
}

int hr_transpose_down_into(const gguf_tensor *t, void *out, hr_err *e) {
    const int64_t ff = (int64_t)t->ne[0], d = (int64_t)t->ne[1];
    const uint32_t ty = t->type;
    const uint64_t in_row = hr_row_bytes(ty, (uint64_t)ff), out_row = hr_row_bytes(ty, (uint64_t)d);
    uint8_t *dst = out;
    float *F = malloc(sizeof(float) * (size_t)(ff * d)), *row = malloc(sizeof(float) * (size_t)(ff > d ? ff : d));
    if (!F || !row) {
        free(F), free(row);
        return hr_errf(e, "out of memory transposing ffn_down");
    }
    for (int64_t i = 0; i < d; i++) {
        hr_dequant_row(ty, (const uint8_t *)t->data + (size_t)(in_row * (uint64_t)i), row, ff);
        for (int64_t j = 0; j < ff; j++) F[j * d + i] = row[j];
    }
    for (int64_t j = 0; j < ff; j++) hr_quant_row(ty, F + j * d, dst + (size_t)(out_row * (uint64_t)j), d);
    free(F), free(row);
    return 0;
}

static void *keep_cb(void *ud, size_t bytes) { return keep(ud, bytes); }

int hr_w_predictor(gguf_writer *w, const hr_predictor *p, int il, bool f16, void *(*alloc)(void *, size_t), void *ud, hr_err *e) {
    char n1[64], n2[64];
    snprintf(n1, sizeof n1, "blk.%d.fc1.weight", il), snprintf(n2, sizeof n2, "blk.%d.fc2.weight", il);
    const int64_t rows = (int64_t)(p->m ? p->m : 1) * p->n_ff;
    const int64_t c1 = (int64_t)p->r * p->n_embd, c2 = rows * p->r;
    uint64_t ne1[2] = {(uint64_t)p->n_embd, (uint64_t)p->r}, ne2[2] = {(uint64_t)p->r, (uint64_t)rows};
    if (p->bias) { /* the linear form (ffn_load.c reads it by this tensor) */
        char nb[64];
        snprintf(nb, sizeof nb, "blk.%d.fc2.bias", il);
        uint64_t neb[1] = {(uint64_t)rows * (p->band ? 2 : 1)};
        gguf_w_tensor(w, nb, HR_F32, 1, neb, p->bias, neb[0] * 4);
    }
    if (!f16) {
        gguf_w_tensor(w, n1, HR_F32, 2, ne1, p->fc1, (uint64_t)c1 * 4);
        gguf_w_tensor(w, n2, HR_F32, 2, ne2, p->fc2, (uint64_t)c2 * 4);
        return 0;
    }
    uint16_t *h1 = alloc(ud, (size_t)c1 * 2), *h2 = alloc(ud, (size_t)c2 * 2);
    if (!h1 || !h2) return hr_errf(e, "out of memory");
    for (int64_t i = 0; i < c1; i++) h1[i] = hr_f32_to_f16(p->fc1[i]);
    for (int64_t i = 0; i < c2; i++) h2[i] = hr_f32_to_f16(p->fc2[i]);
    gguf_w_tensor(w, n1, HR_F16, 2, ne1, h1, (uint64_t)c1 * 2);
    gguf_w_tensor(w, n2, HR_F16, 2, ne2, h2, (uint64_t)c2 * 2);
    return 0;
}

/* "blk.<il>.<rest>" -> il and rest; -1 for other names. */
static int layer_of(const char *name, const char **rest) {
    int il, n = 0;
    if (sscanf(name, "blk.%d.%n", &il, &n) != 1 || n == 0) return -1;
    *rest = name + n;
    return il;
}

/* PowerInfer's name for the written architecture where it differs from the input's: a
 * dReLU llama becomes bamboo. Not with rope_freqs (Llama-3.1+), which bamboo does not read. */
static const char *written_arch(const hearth_model *m) {
    return !strcmp(m->arch, "llama") && m->hp.act == HR_ACT_DRELU && !m->rope_freqs ? "bamboo" : NULL;
}

/* The input ties the output matrix to token_embd although its architecture reads an
 * output.weight (not OPT's or Gemma's, which always use token_embd). */
static bool untie_output(const hearth_model *m) {
    return !m->hp.arch->tied_output && !gguf_find_tensor(&m->file, "output.weight");
}

static int add_tensors(gguf_writer *w, const hearth_model *m, const hr_predictor *preds, bool f16, keep_list *k, int *n_pred, hr_err *e) {
    const gguf_file *f = &m->file;
    const bool untie = untie_output(m);
    char name[256], nn[256];
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        if (t->name.len >= sizeof name) return hr_errf(e, "tensor name too long");
        memcpy(name, t->name.ptr, t->name.len), name[t->name.len] = 0;
        const char *rest = NULL;
        int il = layer_of(name, &rest);
        bool in_range = il >= 0 && il < m->hp.n_layer;
        if (in_range && (!strcmp(rest, "fc1.weight") || !strcmp(rest, "fc2.weight") || !strcmp(rest, "fc2.bias"))) continue; /* replaced */
        const void *data = t->data;
        uint64_t nbytes = t->nbytes, ne[GGUF_MAX_DIMS];
        memcpy(ne, t->ne, sizeof ne);
        bool down_w = in_range && (!strcmp(rest, "ffn_down.weight") || !strcmp(rest, "ffn_down_t.weight"));
        if (in_range && !strcmp(rest, "ffn_down.weight")) {
            void *out = NULL;
            if (transpose_down(t, k, &out, &nbytes, e)) return hr_errctx(e, "%s", name);
            data = out, ne[0] = t->ne[1], ne[1] = t->ne[0];
        }
        if (in_range && !strncmp(rest, "ffn_down.", 9)) { /* PowerInfer's converter renames all of ffn_down (OPT's bias too) */
            snprintf(nn, sizeof nn, "blk.%d.ffn_down_t.%s", il, rest + 9);
            memcpy(name, nn, strlen(nn) + 1);
        }
        gguf_w_tensor(w, name, t->type, t->n_dims, ne, data, nbytes);
        if (untie && !strcmp(name, "token_embd.weight")) gguf_w_tensor(w, "output.weight", t->type, t->n_dims, ne, data, nbytes);
        if (down_w) {
            if (hr_w_predictor(w, &preds[il], il, f16, keep_cb, k, e)) return -1;
            (*n_pred)++;
        }
    }
    return 0;
}

int hr_write_powerinfer(const hearth_model *m, const hr_predictor *preds, bool f16, const char *path, hr_err *e) {
    gguf_writer *w = gguf_writer_new(true);
    if (!w) return hr_errf(e, "out of memory");
    const gguf_file *f = &m->file;
    const char *arch = written_arch(m);
    char key[512];
    for (uint64_t i = 0; i < f->n_kv; i++) {
        gguf_kv kv = f->kv[i];
        if (gguf_str_eq(kv.key, "powerinfer.sparse_threshold")) continue; /* predictors are calibrated for 0 */
        if (arch && gguf_str_eq(kv.key, "general.architecture")) {
            gguf_w_str(w, "general.architecture", arch);
            continue;
        }
        if (arch && kv.key.len > 6 && kv.key.len < sizeof key - 8 && !memcmp(kv.key.ptr, "llama.", 6)) {
            int n = snprintf(key, sizeof key, "%s.%.*s", arch, (int)(kv.key.len - 6), kv.key.ptr + 6);
            kv.key = (gguf_str){key, (uint64_t)n};
        }
        gguf_w_kv_copy(w, &kv);
    }
    keep_list k = {0};
    int n_pred = 0;
    int rc = add_tensors(w, m, preds, f16, &k, &n_pred, e);
    if (!rc && n_pred != m->hp.n_layer)
        rc = hr_errf(e, "the model has %d of %d layers with blk.N.ffn_down.weight; a PowerInfer file needs it in every layer (architecture %s)",
                     n_pred, m->hp.n_layer, m->arch);
    if (!rc) rc = gguf_w_write(w, path, e);
    gguf_writer_free(w);
    keep_free(&k);
    return rc ? hr_errctx(e, "writing %s", path) : 0;
}
