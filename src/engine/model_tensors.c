/* Tensor lookup with shape and type checks; every failure names the tensor. */
#include <stdio.h>
#include <string.h>
#include "formats/types.h"
#include "model.h"

static const gguf_tensor *find(const hearth_model *m, const char *name, bool required, hr_err *e) {
    const gguf_tensor *t = gguf_find_tensor(&m->file, name);
    if (!t && required) hr_errf(e, "missing tensor '%s'", name);
    return t;
}

static int shape_error(const gguf_tensor *t, const char *name, int64_t a, int64_t b, hr_err *e) {
    return hr_errf(e, "tensor '%s' has shape {%llu, %llu, %llu, %llu}, expected {%lld, %lld}", name,
                   (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], (unsigned long long)t->ne[2],
                   (unsigned long long)t->ne[3], (long long)a, (long long)b);
}

/* A matrix {n_in, n_out}; 3-D tensors with ne2 == 1 (one expert) are accepted. */
int hr_get_mat(const hearth_model *m, const char *name, int64_t n_in, int64_t n_out, bool required, hr_mat *out, hr_err *e) {
    const gguf_tensor *t = find(m, name, required, e);
    memset(out, 0, sizeof *out);
    if (!t) return required ? -1 : 0;
    if ((int64_t)t->ne[0] != n_in || (int64_t)t->ne[1] != n_out || t->ne[2] != 1 || t->ne[3] != 1)
        return shape_error(t, name, n_in, n_out, e);
    if (!hr_type_is_weight(t->type))
        return hr_errf(e, "tensor '%s' has type %s, which Hearth cannot compute with (f32, f16, bf16, q8_0, q4_0)", name,
                       hr_type_name(t->type) ? hr_type_name(t->type) : "unknown");
    *out = (hr_mat){.type = t->type, .n_in = n_in, .n_out = n_out, .row_bytes = hr_row_bytes(t->type, (uint64_t)n_in), .data = t->data};
    return 0;
}

int hr_get_vec(const hearth_model *m, const char *name, int64_t n, const float **out, hr_err *e) {
    const gguf_tensor *t = find(m, name, true, e);
    if (!t) return -1;
    if ((int64_t)t->ne[0] != n || t->ne[1] != 1 || t->ne[2] != 1 || t->ne[3] != 1) return shape_error(t, name, n, 1, e);
    if (t->type != HR_F32) return hr_errf(e, "tensor '%s' has type %s, expected f32", name, hr_type_name(t->type) ? hr_type_name(t->type) : "unknown");
    if ((uintptr_t)t->data % sizeof(float)) return hr_errf(e, "tensor '%s' data is not 4-byte aligned", name);
    *out = t->data;
    return 0;
}

static int load_layer(hearth_model *m, int il, hr_layer *L, hr_err *e) {
    const hr_hparams *hp = &m->hp;
    int64_t d = hp->n_embd, q = (int64_t)hp->n_head * hp->head_dim, kv = (int64_t)hp->n_head_kv * hp->head_dim;
    bool st = !strcmp(m->arch, "smallthinker");
    char n[96];
#define NAME(fmt) (snprintf(n, sizeof n, "blk.%d." fmt, il), n)
    if (hr_get_vec(m, NAME("attn_norm.weight"), d, &L->attn_norm, e) || hr_get_vec(m, NAME("ffn_norm.weight"), d, &L->ffn_norm, e) ||
        hr_get_mat(m, NAME("attn_q.weight"), d, q, true, &L->wq, e) || hr_get_mat(m, NAME("attn_k.weight"), d, kv, true, &L->wk, e) ||
        hr_get_mat(m, NAME("attn_v.weight"), d, kv, true, &L->wv, e) ||
        hr_get_mat(m, NAME("attn_output.weight"), q, d, true, &L->wo, e) ||
        hr_load_ffn(m, il, st ? "_exps" : "", &L->ffn, e))
        return -1;
#undef NAME
    L->use_rope = true;
    return 0;
}

int hr_load_tensors(hearth_model *m, hr_err *e) {
    const hr_hparams *hp = &m->hp;
    const gguf_tensor *emb = find(m, "token_embd.weight", true, e);
    if (!emb) return -1;
    if (emb->ne[1] == 0 || emb->ne[1] > (1u << 24)) return hr_errf(e, "tensor 'token_embd.weight' has a bad vocabulary size %llu", (unsigned long long)emb->ne[1]);
    m->hp.n_vocab = (int32_t)emb->ne[1];
    if (hr_get_mat(m, "token_embd.weight", hp->n_embd, hp->n_vocab, true, &m->token_embd, e) ||
        hr_get_vec(m, "output_norm.weight", hp->n_embd, &m->output_norm, e) ||
        hr_get_mat(m, "output.weight", hp->n_embd, hp->n_vocab, false, &m->output, e))
        return -1;
    if (!m->output.data) m->output = m->token_embd; /* tied embeddings */
    for (int il = 0; il < hp->n_layer; il++)
        if (load_layer(m, il, &m->layers[il], e)) return -1;
    return 0;
}
