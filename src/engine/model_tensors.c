/* Tensor lookup with shape and type checks; every failure names the tensor. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "formats/types.h"
#include "model.h"
#include "moe.h"

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
        return hr_errf(e, "tensor '%s' has type %s, which is not a weight type Hearth computes with", name,
                       t->type == HR_I32_OLD ? "i32 (PowerInfer) or IQ3_XXS (ggml id 18, not supported)"
                                             : hr_type_name(t->type) ? hr_type_name(t->type) : "unknown");
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

/* A norm's weight, and its bias with LayerNorm: "<prefix>.weight", "<prefix>.bias". */
static int load_norm(const hearth_model *m, const char *prefix, const float **w, const float **b, hr_err *e) {
    char n[96];
    snprintf(n, sizeof n, "%s.weight", prefix);
    if (hr_get_vec(m, n, m->hp.n_embd, w, e)) return -1;
    *b = NULL;
    if (m->hp.arch->norm != HR_NORM_LAYER) return 0;
    snprintf(n, sizeof n, "%s.bias", prefix);
    return hr_get_vec(m, n, m->hp.n_embd, b, e);
}

/* Splits the fused {n_embd, n_q + 2 n_kv} matrix into row views: q rows first, then k,
 * then v (llama.cpp's falcon graph views it the same way). */
static int load_qkv_fused(const hearth_model *m, int il, hr_layer *L, int64_t d, int64_t q, int64_t kv, hr_err *e) {
    char n[96];
    hr_mat w;
    snprintf(n, sizeof n, "blk.%d.attn_qkv.weight", il);
    if (hr_get_mat(m, n, d, q + 2 * kv, true, &w, e)) return -1;
    const uint8_t *base = w.data;
    L->wq = w, L->wk = w, L->wv = w;
    L->wq.n_out = q, L->wk.n_out = kv, L->wv.n_out = kv;
    L->wk.data = base + w.row_bytes * (size_t)q;
    L->wv.data = base + w.row_bytes * (size_t)(q + kv);
    return 0;
}

/* The vector "blk.<il>.<name>" of n floats when the architecture has `bit`, else NULL. */
static int opt_vec(const hearth_model *m, uint32_t bit, int il, const char *name, int64_t n, const float **out, hr_err *e) {
    char t[96];
    *out = NULL;
    if (!hr_arch_has(m->hp.arch, bit)) return 0;
    snprintf(t, sizeof t, "blk.%d.%s", il, name);
    return hr_get_vec(m, t, n, out, e);
}

static int load_attn(const hearth_model *m, int il, hr_layer *L, hr_err *e) {
    const hr_hparams *hp = &m->hp;
    int64_t d = hp->n_embd, q = (int64_t)hp->n_head * hp->head_dim, kv = (int64_t)hp->n_head_kv * hp->head_dim;
    char n[96];
#define NAME(fmt) (snprintf(n, sizeof n, "blk.%d." fmt, il), n)
    if (hr_arch_has(hp->arch, HR_AT_FUSED_QKV) ? load_qkv_fused(m, il, L, d, q, kv, e)
                      : (hr_get_mat(m, NAME("attn_q.weight"), d, q, true, &L->wq, e) ||
                         hr_get_mat(m, NAME("attn_k.weight"), d, kv, true, &L->wk, e) ||
                         hr_get_mat(m, NAME("attn_v.weight"), d, kv, true, &L->wv, e)))
        return -1;
    if (hr_get_mat(m, NAME("attn_output.weight"), q, d, true, &L->wo, e)) return -1;
#undef NAME
    return opt_vec(m, HR_AT_Q_BIAS, il, "attn_q.bias", q, &L->bq, e) ||
           opt_vec(m, HR_AT_K_BIAS, il, "attn_k.bias", kv, &L->bk, e) ||
           opt_vec(m, HR_AT_V_BIAS, il, "attn_v.bias", kv, &L->bv, e) ||
           opt_vec(m, HR_AT_O_BIAS, il, "attn_output.bias", d, &L->bo, e) ||
           opt_vec(m, HR_AT_QK_NORM, il, "attn_q_norm.weight", hp->head_dim, &L->q_norm, e) ||
           opt_vec(m, HR_AT_QK_NORM, il, "attn_k_norm.weight", hp->head_dim, &L->k_norm, e) ||
           opt_vec(m, HR_AT_SINKS, il, "attn_sinks.weight", hp->n_head, &L->sinks, e)
               ? -1
               : 0;
}

/* FFN biases: up {n_ff}; down {n_embd}, which PowerInfer's converter names
 * ffn_down_t.bias because it renames everything called ffn_down. */
static int load_ffn_bias(const hearth_model *m, int il, hr_ffn_weights *f, hr_err *e) {
    char n[96];
    if (opt_vec(m, HR_AT_UP_BIAS, il, "ffn_up.bias", m->hp.n_ff, &f->b_up, e)) return -1;
    if (!hr_arch_has(m->hp.arch, HR_AT_DOWN_BIAS)) return 0;
    snprintf(n, sizeof n, "blk.%d.ffn_down.bias", il);
    if (!gguf_find_tensor(&m->file, n)) snprintf(n, sizeof n, "blk.%d.ffn_down_t.bias", il);
    if (!gguf_find_tensor(&m->file, n))
        return hr_errf(e, "missing tensor 'blk.%d.ffn_down.bias' (or 'blk.%d.ffn_down_t.bias')", il, il);
    return hr_get_vec(m, n, m->hp.n_embd, &f->b_down, e);
}

static int load_layer(hearth_model *m, int il, hr_layer *L, hr_err *e) {
    const hr_hparams *hp = &m->hp;
    char n[96];
#define NAME(fmt) (snprintf(n, sizeof n, "blk.%d." fmt, il), n)
    if (load_norm(m, NAME("attn_norm"), &L->attn_norm, &L->attn_norm_b, e)) return -1;
    /* Falcon-40B: attn_norm_2 normalises the attention input, attn_norm the FFN input. */
    if (hr_arch_has(hp->arch, HR_AT_ATTN_NORM_2) && gguf_find_tensor(&m->file, NAME("attn_norm_2.weight")) &&
        load_norm(m, NAME("attn_norm_2"), &L->attn_norm2, &L->attn_norm2_b, e))
        return -1;
#undef NAME
    const char *ffn_norm = hp->arch->ffn_norm_name ? hp->arch->ffn_norm_name : "ffn_norm";
    snprintf(n, sizeof n, "blk.%d.%s", il, ffn_norm);
    if (!hp->arch->parallel && load_norm(m, n, &L->ffn_norm, &L->ffn_norm_b, e)) return -1;
    if (opt_vec(m, HR_AT_POST_NORMS, il, "post_attention_norm.weight", hp->n_embd, &L->attn_post_norm, e) ||
        opt_vec(m, HR_AT_POST_NORMS, il, "post_ffw_norm.weight", hp->n_embd, &L->ffn_post_norm, e))
        return -1;
    if (load_attn(m, il, L, e) ||
        (hp->n_expert ? hr_load_moe(m, il, &L->moe, e)
                      : hr_load_ffn(m, il, hp->arch->ffn_suffix, &L->ffn, e) || load_ffn_bias(m, il, &L->ffn, e)))
        return -1;
    L->use_rope = hp->arch->rope != HR_ROPE_NONE && !L->nope;
    L->rope_ext = L->use_rope && (m->rope_freqs || m->rope_long || m->rope_short || hp->rope_yarn.ext_factor != 0.0f ||
                                  hp->rope_yarn.attn_factor != 1.0f);
    return 0;
}

/* Learned absolute positions (OPT): {n_embd, n_pos}; rows below pos_offset are never
 * used, so the usable context is n_pos - pos_offset. */
static int load_positions(hearth_model *m, hr_err *e) {
    hr_hparams *hp = &m->hp;
    const gguf_tensor *t = find(m, "position_embd.weight", true, e);
    if (!t) return -1;
    const int32_t off = hp->arch->pos_offset;
    if (t->ne[1] <= (uint64_t)off || t->ne[1] > (1u << 24))
        return hr_errf(e, "tensor 'position_embd.weight' has %llu positions, needs more than %d",
                       (unsigned long long)t->ne[1], off);
    if (hr_get_mat(m, "position_embd.weight", hp->n_embd, (int64_t)t->ne[1], true, &m->pos_embd, e)) return -1;
    const int32_t usable = (int32_t)t->ne[1] - off;
    if (hp->n_ctx_train > usable) hp->n_ctx_train = usable;
    return 0;
}

/* An optional RoPE factor vector {n_rot/2} (a global tensor, as llama.cpp names it); every
 * factor divides an angle, so each must be positive and finite. */
static int opt_factors(const hearth_model *m, const char *name, const float **out, hr_err *e) {
    *out = NULL;
    if (!gguf_find_tensor(&m->file, name)) return 0;
    if (hr_get_vec(m, name, m->hp.n_rot / 2, out, e)) return -1;
    for (int32_t i = 0; i < m->hp.n_rot / 2; i++)
        if (!((*out)[i] > 0) || !isfinite((*out)[i]))
            return hr_errf(e, "tensor '%s' has factor %g at %d; RoPE factors must be positive", name, (*out)[i], i);
    return 0;
}

/* rope_freqs where the entry has it, or LongRoPE's long/short pair (phi3; llama with
 * rope.scaling.type longrope), as llama.cpp's loaders read them; all optional. */
static int load_rope_factors(hearth_model *m, hr_err *e) {
    if (m->hp.arch->rope == HR_ROPE_NONE) return 0;
    if (m->hp.rope_longrope)
        return opt_factors(m, "rope_factors_long.weight", &m->rope_long, e) ||
                       opt_factors(m, "rope_factors_short.weight", &m->rope_short, e)
                   ? -1
                   : 0;
    return hr_arch_has(m->hp.arch, HR_AT_ROPE_FREQS) ? opt_factors(m, "rope_freqs.weight", &m->rope_freqs, e) : 0;
}

/* llama.cpp's get_rope_factors: rope_freqs whatever the context; LongRoPE's long factors
 * when the context per sequence (which llama.cpp pads to a multiple of 256) exceeds the
 * original one, else the short ones. */
const float *hr_rope_factors(const hearth_model *m, int32_t n_ctx) {
    if (m->rope_freqs) return m->rope_freqs;
    const int64_t padded = ((int64_t)n_ctx + 255) / 256 * 256;
    return padded > m->hp.n_ctx_orig ? m->rope_long : m->rope_short;
}

int hr_load_tensors(hearth_model *m, hr_err *e) {
    const hr_hparams *hp = &m->hp;
    const gguf_tensor *emb = find(m, "token_embd.weight", true, e);
    if (!emb) return -1;
    if (emb->ne[1] == 0 || emb->ne[1] > (1u << 24)) return hr_errf(e, "tensor 'token_embd.weight' has a bad vocabulary size %llu", (unsigned long long)emb->ne[1]);
    m->hp.n_vocab = (int32_t)emb->ne[1];
    if (hr_get_mat(m, "token_embd.weight", hp->n_embd, hp->n_vocab, true, &m->token_embd, e) ||
        load_norm(m, "output_norm", &m->output_norm, &m->output_norm_b, e) ||
        (!hp->arch->tied_output && hr_get_mat(m, "output.weight", hp->n_embd, hp->n_vocab, false, &m->output, e)) ||
        (hp->arch->learned_pos && load_positions(m, e)) || load_rope_factors(m, e))
        return -1;
    if (!m->output.data) m->output = m->token_embd; /* tied embeddings */
    for (int il = 0; il < hp->n_layer; il++)
        if (load_layer(m, il, &m->layers[il], e)) return -1;
    return 0;
}
