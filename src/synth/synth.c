/* The synthesizer's file layout (see synth.h) and the write: plan the tensors, generate
 * them into one buffer, add metadata and vocabulary, write through the GGUF writer. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/gguf.h"
#include "formats/types.h"
#include "synth_internal.h"

static uint32_t head_dim(const hr_synth_params *p) { return p->head_dim ? p->head_dim : p->n_embd / p->n_head; }
static bool is_tied(const hr_synth_params *p) { return p->tied || synth_arch(p)->tied_output; }
static bool layer_norm(const hr_synth_params *p) { return synth_arch(p)->norm == HR_NORM_LAYER; }
static bool has(const hr_synth_params *p, uint32_t bits) { return hr_arch_has(synth_arch(p), bits); }

static synth_tensor *plan_add(synth_plan *pl, hr_err *e) {
    if (pl->n == pl->cap) {
        uint32_t cap = pl->cap ? pl->cap * 2 : 64;
        synth_tensor *t = realloc(pl->t, cap * sizeof *t);
        if (!t) {
            hr_errf(e, "out of memory");
            return NULL;
        }
        pl->t = t;
        pl->cap = cap;
    }
    synth_tensor *t = &pl->t[pl->n++];
    memset(t, 0, sizeof *t);
    return t;
}

/* A tensor whose values come from `seed_name` (NULL: its own name). ne2 == 0: 2-D. */
static int add(synth_plan *pl, const char *name, const char *seed_name, uint32_t type, uint64_t ne0, uint64_t ne1,
               uint64_t ne2, synth_fill fill, float std, bool transpose, hr_err *e) {
    synth_tensor *t = plan_add(pl, e);
    if (!t) return -1;
    snprintf(t->name, sizeof t->name, "%s", name);
    snprintf(t->seed_name, sizeof t->seed_name, "%s", seed_name ? seed_name : name);
    t->type = type;
    t->n_dims = ne2 ? 3 : ne1 ? 2 : 1;
    t->ne[0] = ne0;
    t->ne[1] = ne1 ? ne1 : 1;
    t->ne[2] = ne2 ? ne2 : 1;
    t->fill = fill;
    t->std = std;
    t->transpose = transpose;
    const uint64_t rb = hr_row_bytes(type, ne0);
    if (!rb) return hr_errf(e, "%s: row of %llu is not valid for %s", name, (unsigned long long)ne0, hr_type_name(type));
    t->nbytes = rb * t->ne[1] * t->ne[2];
    pl->total_bytes += t->nbytes;
    return 0;
}

static int add_vec(synth_plan *pl, const char *name, uint64_t n, hr_err *e) {
    return add(pl, name, NULL, HR_F32, n, 0, 0, SYNTH_FILL_NORM, 0, false, e);
}

static int add_bias(synth_plan *pl, const char *name, const char *seed_name, uint64_t n, hr_err *e) {
    return add(pl, name, seed_name, HR_F32, n, 0, 0, SYNTH_FILL_NORMAL, HR_SYNTH_BIAS_STD, false, e);
}

/* "<prefix>.weight", plus "<prefix>.bias" for LayerNorm archs. */
static int add_norm(synth_plan *pl, const hr_synth_params *p, const char *prefix, hr_err *e) {
    char n[64];
    snprintf(n, sizeof n, "%s.weight", prefix);
    if (add_vec(pl, n, p->n_embd, e)) return -1;
    if (!layer_norm(p)) return 0;
    snprintf(n, sizeof n, "%s.bias", prefix);
    return add_bias(pl, n, NULL, p->n_embd, e);
}

/* Matrix {n_in, n_out} with std 1/sqrt(n_in). */
static int add_mat(synth_plan *pl, const hr_synth_params *p, const char *name, uint64_t n_in, uint64_t n_out, hr_err *e) {
    return add(pl, name, NULL, p->type, n_in, n_out, 0, SYNTH_FILL_NORMAL, 1.0f / sqrtf((float)n_in), false, e);
}

static int plan_ffn(synth_plan *pl, const hr_synth_params *p, uint32_t l, hr_err *e) {
    char n[64], s[64];
    const float sd_in = 1.0f / sqrtf((float)p->n_embd), sd_ff = 1.0f / sqrtf((float)p->n_ff);
#define NAME(buf, suffix) snprintf(buf, sizeof buf, "blk.%u." suffix ".weight", l)
    const uint32_t ne = hr_synth_n_expert(p);
    if (ne) {
        /* One expert takes the dense FFN's values (the same model as llama + reglu); more
         * experts each have their own. */
        const bool one = ne == 1;
        const uint32_t xt = p->has_expert_type ? p->expert_type : p->type;
        /* clamped-SwiGLU experts: inner values wide enough to reach the clamps */
        const float sd_gu = synth_arch(p)->moe_act_limit > 0 ? HR_SYNTH_OAI_EXPERT_STD * sd_in : sd_in;
        int r = 0;
        NAME(n, "ffn_gate_inp");
        r |= add(pl, n, NULL, HR_F32, p->n_embd, ne, 0, SYNTH_FILL_NORMAL, sd_in, false, e);
        NAME(n, "ffn_gate_exps"), NAME(s, "ffn_gate");
        r |= add(pl, n, one ? s : NULL, xt, p->n_embd, p->n_ff, ne, SYNTH_FILL_NORMAL, sd_gu, false, e);
        if (!r) pl->t[pl->n - 1].rank = p->expert_gate_rank;
        NAME(n, "ffn_up_exps"), NAME(s, "ffn_up");
        r |= add(pl, n, one ? s : NULL, xt, p->n_embd, p->n_ff, ne, SYNTH_FILL_NORMAL, sd_gu, false, e);
        NAME(n, "ffn_down_exps"), NAME(s, "ffn_down");
        r |= add(pl, n, one ? s : NULL, xt, p->n_ff, p->n_embd, ne, SYNTH_FILL_NORMAL, sd_ff, false, e);
        if (!r && synth_arch(p)->moe_bias) { /* gpt-oss: router and expert biases */
            static const char *const bn[4] = {"ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"};
            const uint64_t len[4] = {ne, p->n_ff, p->n_ff, p->n_embd};
            for (int i = 0; i < 4 && !r; i++) {
                snprintf(n, sizeof n, "blk.%u.%s.bias", l, bn[i]);
                r = add(pl, n, NULL, HR_F32, len[i], i ? ne : 0, 0, SYNTH_FILL_NORMAL, HR_SYNTH_BIAS_STD, false, e);
            }
        }
        return r ? -1 : 0;
    }
    if (has(p, HR_AT_FUSED_GATE_UP)) /* phi3: one ffn_up, the gate's rows then up's */
        return (NAME(n, "ffn_up"), add_mat(pl, p, n, p->n_embd, 2 * (uint64_t)p->n_ff, e)) ||
                       (NAME(n, "ffn_down"), add_mat(pl, p, n, p->n_ff, p->n_embd, e))
                   ? -1
                   : 0;
    const bool gated = p->act != HR_SYNTH_RELU && p->act != HR_SYNTH_GELU;
    if (gated && (NAME(n, "ffn_gate"), add_mat(pl, p, n, p->n_embd, p->n_ff, e))) return -1;
    if ((NAME(n, "ffn_up"), add_mat(pl, p, n, p->n_embd, p->n_ff, e))) return -1;
    if (has(p, HR_AT_UP_BIAS) && (snprintf(n, sizeof n, "blk.%u.ffn_up.bias", l), add_bias(pl, n, NULL, p->n_ff, e)))
        return -1;
    const bool bias = has(p, HR_AT_DOWN_BIAS);
    if (!p->powerinfer) {
        if ((NAME(n, "ffn_down"), add_mat(pl, p, n, p->n_ff, p->n_embd, e))) return -1;
        return bias ? (snprintf(n, sizeof n, "blk.%u.ffn_down.bias", l), add_bias(pl, n, NULL, p->n_embd, e)) : 0;
    }
    NAME(n, "ffn_down_t"), NAME(s, "ffn_down");
    if (add(pl, n, s, p->type, p->n_embd, p->n_ff, 0, SYNTH_FILL_NORMAL, sd_ff, true, e)) return -1;
    /* PowerInfer's converter renames every ffn_down tensor, the bias included. */
    snprintf(n, sizeof n, "blk.%u.ffn_down_t.bias", l), snprintf(s, sizeof s, "blk.%u.ffn_down.bias", l);
    if (bias && add_bias(pl, n, s, p->n_embd, e)) return -1;
    if ((NAME(n, "fc1"), add_mat(pl, p, n, p->n_embd, p->pred_rank, e))) return -1;
    const uint64_t rows = (p->pred_linear && p->act == HR_SYNTH_DRELU ? 2 : 1) * (uint64_t)p->n_ff;
    if (p->pred_linear && (snprintf(n, sizeof n, "blk.%u.fc2.bias", l), add_bias(pl, n, NULL, rows, e))) return -1;
    return (NAME(n, "fc2"), add_mat(pl, p, n, p->pred_rank, rows, e));
#undef NAME
}

/* Attention weights of layer l: separate q/k/v or a fused qkv, with the biases and per-head
 * q/k norms the architecture's entry names. */
static int plan_attn(synth_plan *pl, const hr_synth_params *p, uint32_t l, hr_err *e) {
    const uint64_t n_q = (uint64_t)head_dim(p) * p->n_head, n_kv = (uint64_t)head_dim(p) * p->n_head_kv;
    char n[64];
    if (has(p, HR_AT_FUSED_QKV)) {
        if ((snprintf(n, sizeof n, "blk.%u.attn_qkv.weight", l), add_mat(pl, p, n, p->n_embd, n_q + 2 * n_kv, e))) return -1;
    } else {
        static const char *const qkv[3] = {"q", "k", "v"};
        static const uint32_t bias_bit[3] = {HR_AT_Q_BIAS, HR_AT_K_BIAS, HR_AT_V_BIAS};
        for (int i = 0; i < 3; i++) {
            const uint64_t rows = i ? n_kv : n_q;
            if ((snprintf(n, sizeof n, "blk.%u.attn_%s.weight", l, qkv[i]), add_mat(pl, p, n, p->n_embd, rows, e))) return -1;
            if (has(p, bias_bit[i]) && (snprintf(n, sizeof n, "blk.%u.attn_%s.bias", l, qkv[i]), add_bias(pl, n, NULL, rows, e)))
                return -1;
        }
    }
    if (has(p, HR_AT_QK_NORM)) {
        if ((snprintf(n, sizeof n, "blk.%u.attn_q_norm.weight", l), add_vec(pl, n, head_dim(p), e)) ||
            (snprintf(n, sizeof n, "blk.%u.attn_k_norm.weight", l), add_vec(pl, n, head_dim(p), e)))
            return -1;
    }
    if ((snprintf(n, sizeof n, "blk.%u.attn_output.weight", l), add_mat(pl, p, n, n_q, p->n_embd, e))) return -1;
    if (has(p, HR_AT_O_BIAS) && (snprintf(n, sizeof n, "blk.%u.attn_output.bias", l), add_bias(pl, n, NULL, p->n_embd, e)))
        return -1;
    return has(p, HR_AT_SINKS) ? (snprintf(n, sizeof n, "blk.%u.attn_sinks.weight", l),
                                  add(pl, n, NULL, HR_F32, p->n_head, 0, 0, SYNTH_FILL_NORMAL, HR_SYNTH_SINK_STD, false, e))
                               : 0;
}

static int plan_layer(synth_plan *pl, const hr_synth_params *p, uint32_t l, hr_err *e) {
    char n[64];
    if ((snprintf(n, sizeof n, "blk.%u.attn_norm", l), add_norm(pl, p, n, e))) return -1;
    if (p->falcon_40b && (snprintf(n, sizeof n, "blk.%u.attn_norm_2", l), add_norm(pl, p, n, e))) return -1;
    if (plan_attn(pl, p, l, e)) return -1;
    const bool post = has(p, HR_AT_POST_NORMS); /* Gemma: norms of the attention and FFN outputs */
    if (post && (snprintf(n, sizeof n, "blk.%u.post_attention_norm.weight", l), add_vec(pl, n, p->n_embd, e))) return -1;
    /* parallel blocks (falcon): the FFN reads attn_norm's output, no ffn_norm */
    const char *ffn_norm = synth_arch(p)->ffn_norm_name ? synth_arch(p)->ffn_norm_name : "ffn_norm";
    if (!synth_arch(p)->parallel && (snprintf(n, sizeof n, "blk.%u.%s", l, ffn_norm), add_norm(pl, p, n, e))) return -1;
    if (plan_ffn(pl, p, l, e)) return -1;
    return post ? (snprintf(n, sizeof n, "blk.%u.post_ffw_norm.weight", l), add_vec(pl, n, p->n_embd, e)) : 0;
}

/* RoPE factor vectors {head_dim/2}: synth.h lists them and their ramps. */
static int plan_rope_factors(synth_plan *pl, const hr_synth_params *p, hr_err *e) {
    const uint64_t n = head_dim(p) / 2;
    if (p->rope_freqs && add(pl, "rope_freqs.weight", NULL, HR_F32, n, 0, 0, SYNTH_FILL_RAMP, 8.0f, false, e)) return -1;
    if (!has(p, HR_AT_ROPE_LONG_SHORT)) return 0;
    return add(pl, "rope_factors_long.weight", NULL, HR_F32, n, 0, 0, SYNTH_FILL_RAMP, 16.0f, false, e) ||
                   add(pl, "rope_factors_short.weight", NULL, HR_F32, n, 0, 0, SYNTH_FILL_RAMP, 2.0f, false, e)
               ? -1
               : 0;
}

int synth_plan_build(const hr_synth_params *p, synth_plan *pl, hr_err *e) {
    memset(pl, 0, sizeof *pl);
    const float sd_embd = 1.0f / sqrtf((float)p->n_embd);
    int r = add(pl, "token_embd.weight", NULL, p->type, p->n_embd, p->n_vocab, 0, SYNTH_FILL_NORMAL,
                (is_tied(p) ? HR_SYNTH_TIED_EMBD_STD : HR_SYNTH_EMBD_STD) * sd_embd, false, e);
    if (!r) r = plan_rope_factors(pl, p, e);
    if (!r && synth_arch(p)->learned_pos)
        r = add(pl, "position_embd.weight", NULL, p->type, p->n_embd,
                (uint64_t)p->n_ctx_train + (uint64_t)synth_arch(p)->pos_offset, 0, SYNTH_FILL_NORMAL,
                HR_SYNTH_TIED_EMBD_STD * sd_embd, false, e);
    for (uint32_t l = 0; l < p->n_layer && !r; l++) r = plan_layer(pl, p, l, e);
    if (!r) r = add_norm(pl, p, "output_norm", e);
    if (!r && !is_tied(p))
        r = add(pl, "output.weight", NULL, p->type, p->n_embd, p->n_vocab, 0, SYNTH_FILL_NORMAL,
                HR_SYNTH_OUT_STD * sd_embd, false, e);
    if (r) synth_plan_free(pl);
    return r ? -1 : 0;
}

void synth_plan_free(synth_plan *pl) {
    free(pl->t);
    memset(pl, 0, sizeof *pl);
}

uint64_t hr_synth_data_bytes(const hr_synth_params *p) {
    synth_plan pl;
    if (hr_synth_validate(p, NULL) || synth_plan_build(p, &pl, NULL)) return 0;
    const uint64_t n = pl.total_bytes;
    synth_plan_free(&pl);
    return n;
}

/* RoPE scaling keys (hr_synth_params), and phi3's LongRoPE keys as llama.cpp's converter
 * writes them (synth.h). */
static void put_rope_keys(gguf_writer *w, const hr_synth_params *p) {
    const char *a = synth_arch(p)->name;
    char k[128];
#define KEY(suffix) (snprintf(k, sizeof k, "%s." suffix, a), k)
    if (p->rope_scaling) gguf_w_str(w, KEY("rope.scaling.type"), p->rope_scaling);
    if (p->rope_scale > 0) gguf_w_f32(w, KEY("rope.scaling.factor"), p->rope_scale);
    const bool longrope = has(p, HR_AT_ROPE_LONG_SHORT);
    const uint32_t orig = p->rope_orig_ctx ? p->rope_orig_ctx : longrope ? p->n_ctx_train : 0;
    if (orig) gguf_w_u32(w, KEY("rope.scaling.original_context_length"), orig);
    if (longrope) {
        const float s = (float)p->n_ctx_train / (float)orig;
        gguf_w_f32(w, KEY("rope.scaling.attn_factor"), s > 1.0f ? sqrtf(1.0f + logf(s) / logf((float)orig)) : 1.0f);
        gguf_w_u32(w, KEY("attention.sliding_window"), 16);
    }
#undef KEY
}

static void put_keys(gguf_writer *w, const hr_synth_params *p) {
    const hr_arch *A = synth_arch(p);
    const char *a = A->name;
    char k[128];
#define KEY(suffix) (snprintf(k, sizeof k, "%s." suffix, a), k)
    gguf_w_str(w, "general.architecture", a);
    gguf_w_str(w, "general.name", p->name ? p->name : "hearth-synth");
    gguf_w_u32(w, "general.file_type", hr_synth_ftype(p->type));
    gguf_w_u32(w, KEY("context_length"), p->n_ctx_train + (A->learned_pos ? (uint32_t)A->pos_offset : 0));
    gguf_w_u32(w, KEY("embedding_length"), p->n_embd);
    gguf_w_u32(w, KEY("block_count"), p->n_layer);
    gguf_w_u32(w, KEY("feed_forward_length"), p->n_ff);
    gguf_w_u32(w, KEY("attention.head_count"), p->n_head);
    gguf_w_u32(w, KEY("attention.head_count_kv"), p->n_head_kv);
    if (layer_norm(p)) gguf_w_f32(w, KEY("attention.layer_norm_epsilon"), p->rms_eps);
    else gguf_w_f32(w, KEY("attention.layer_norm_rms_epsilon"), p->rms_eps);
    if (A->rope != HR_ROPE_NONE) {
        gguf_w_f32(w, KEY("rope.freq_base"), p->rope_base);
        gguf_w_u32(w, KEY("rope.dimension_count"), head_dim(p));
    }
    gguf_w_u32(w, KEY("vocab_size"), p->n_vocab);
    if (A->rope != HR_ROPE_NONE) put_rope_keys(w, p);
    if (head_dim(p) * p->n_head != p->n_embd) {
        gguf_w_u32(w, KEY("attention.key_length"), head_dim(p));
        gguf_w_u32(w, KEY("attention.value_length"), head_dim(p));
    }
    if (hr_synth_n_expert(p)) {
        gguf_w_u32(w, KEY("expert_count"), hr_synth_n_expert(p));
        gguf_w_u32(w, KEY("expert_used_count"), hr_synth_n_expert_used(p));
        if (A->moe_ff_key || A->one_expert) gguf_w_u32(w, KEY("expert_feed_forward_length"), p->n_ff);
        /* softmax: one expert gets weight exactly 1 */
        if (A->moe_gate_key) gguf_w_u32(w, KEY("expert_gating_func"), p->moe_sigmoid ? HR_MOE_SIGMOID : HR_MOE_SOFTMAX);
    }
    if (p->n_swa || A->swa_required) gguf_w_u32(w, KEY("attention.sliding_window"), p->n_swa ? p->n_swa : 128);
    if (p->has_swa_pattern) gguf_w_u32(w, KEY("attention.sliding_window_pattern"), p->swa_pattern);
    if (p->rope_base_swa > 0) gguf_w_f32(w, KEY("rope.freq_base_swa"), p->rope_base_swa);
    if (p->attn_softcap > 0) gguf_w_f32(w, KEY("attn_logit_softcapping"), p->attn_softcap);
    if (p->final_softcap > 0) gguf_w_f32(w, KEY("final_logit_softcapping"), p->final_softcap);
#undef KEY
    /* PowerInfer files without the key mean the arch's PowerInfer activation to Hearth, so
     * they always carry it. */
    if (p->act != HR_SYNTH_SWIGLU || p->powerinfer) gguf_w_str(w, "hearth.ffn_activation", hr_synth_act_name(p->act));
    if (p->powerinfer && p->has_sparse_threshold) gguf_w_f32(w, "powerinfer.sparse_threshold", p->sparse_threshold);
}

/* Generates every tensor into one buffer and registers it with the writer. */
static int gen_tensors(gguf_writer *w, const hr_synth_params *p, const synth_plan *pl, uint8_t *buf, hr_err *e) {
    uint64_t off = 0;
    for (uint32_t i = 0; i < pl->n; i++) {
        const synth_tensor *t = &pl->t[i];
        if (synth_fill_tensor(t, p->seed, buf + off, e)) return -1;
        gguf_w_tensor(w, t->name, t->type, t->n_dims, t->ne, buf + off, t->nbytes);
        off += t->nbytes;
        if (p->progress && off < pl->total_bytes) p->progress(p->progress_ud, off, pl->total_bytes);
    }
    if (p->progress) p->progress(p->progress_ud, pl->total_bytes, pl->total_bytes);
    return 0;
}

int hr_synth_write(const hr_synth_params *p, const char *path, hr_err *e) {
    if (hr_synth_validate(p, e)) return -1;
    if (!path || !*path) return hr_errf(e, "no output path");
    synth_plan pl;
    if (synth_plan_build(p, &pl, e)) return -1;
    hr_vocab_desc vocab;
    memset(&vocab, 0, sizeof vocab);
    int r = -1;
    uint8_t *buf = NULL;
    gguf_writer *w = NULL;
    if (hr_vocab_synth(p->tokenizer, p->n_vocab, &vocab, e)) {
        hr_errctx(e, "vocabulary");
        goto out_plan;
    }
    if (vocab.n != p->n_vocab) {
        hr_errf(e, "vocabulary has %u tokens, wanted %u", vocab.n, p->n_vocab);
        goto out;
    }
    buf = malloc(pl.total_bytes ? (size_t)pl.total_bytes : 1);
    w = gguf_writer_new(p->powerinfer);
    if (!buf || !w || (size_t)pl.total_bytes != pl.total_bytes) {
        hr_errf(e, "out of memory for %llu bytes of weights", (unsigned long long)pl.total_bytes);
        goto out;
    }
    put_keys(w, p);
    hr_vocab_write_gguf(w, &vocab);
    if (gen_tensors(w, p, &pl, buf, e)) goto out;
    r = gguf_w_write(w, path, e);
out:
    gguf_writer_free(w);
    free(buf);
    hr_vocab_free(&vocab);
out_plan:
    synth_plan_free(&pl);
    return r;
}
