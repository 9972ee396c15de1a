/* Broken model files: each gives one error naming the problem, never a crash. */
#include <stdlib.h>
#include <string.h>
#include "formats/gguf.h"
#include "formats/types.h"
#include "engine/model.h"
#include "hearth.h"
#include "synth/synth.h"
#include "testutil.h"

typedef struct {
    const char *drop_tensor;   /* tensor left out */
    const char *drop_key;      /* key left out */
    const char *str_key, *str_val; /* string key replaced */
    const char *u32_key;       /* u32 key replaced */
    uint32_t u32_val;
    const char *reshape;       /* tensor written with ne1 halved */
    const char *reshape0;      /* tensor (a vector) written with ne0 halved */
} mutation;

/* Rewrites src into dst with one mutation, reusing the source's tensor data. */
static int rewrite(const char *src, const char *dst, const mutation *mu) {
    gguf_file f;
    hr_err e;
    if (gguf_open(&f, src, &e)) return -1;
    gguf_writer *w = gguf_writer_new(f.sparse);
    for (uint64_t i = 0; i < f.n_kv; i++) {
        const gguf_kv *kv = &f.kv[i];
        if (mu->drop_key && gguf_str_eq(kv->key, mu->drop_key)) continue;
        if (mu->str_key && gguf_str_eq(kv->key, mu->str_key)) gguf_w_str(w, mu->str_key, mu->str_val);
        else if (mu->u32_key && gguf_str_eq(kv->key, mu->u32_key)) gguf_w_u32(w, mu->u32_key, mu->u32_val);
        else gguf_w_kv_copy(w, kv);
    }
    if (mu->str_key && !gguf_find_kv(&f, mu->str_key)) gguf_w_str(w, mu->str_key, mu->str_val);
    if (mu->u32_key && !gguf_find_kv(&f, mu->u32_key)) gguf_w_u32(w, mu->u32_key, mu->u32_val);
    for (uint64_t i = 0; i < f.n_tensors; i++) {
        const gguf_tensor *t = &f.tensors[i];
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        if (mu->drop_tensor && !strcmp(name, mu->drop_tensor)) continue;
        uint64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
        uint64_t nbytes = t->nbytes;
        if (mu->reshape && !strcmp(name, mu->reshape)) ne[1] /= 2, nbytes /= 2;
        if (mu->reshape0 && !strcmp(name, mu->reshape0)) ne[0] /= 2, nbytes /= 2;
        gguf_w_tensor(w, name, t->type, t->n_dims, ne, t->data, nbytes);
    }
    int r = gguf_w_write(w, dst, &e);
    if (r) fprintf(stderr, "rewrite: %s\n", e.msg);
    gguf_writer_free(w);
    gguf_close(&f);
    return r;
}

static void expect_error(const char *base, const mutation *mu, const char *needle) {
    char path[256];
    hr_test_tmp(path, sizeof path, "bad.gguf");
    CHECK(rewrite(base, path, mu) == 0);
    hr_err e = {{0}};
    hearth_model *m = hearth_model_load(path, NULL, &e);
    CHECKF(m == NULL && strstr(e.msg, needle), "expected an error containing \"%s\", got \"%s\"", needle, m ? "(loaded)" : e.msg);
    hearth_model_free(m);
    remove(path);
}

int main(void) {
    char base[256], st[256];
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.n_embd = 64, p.n_head = 4, p.n_head_kv = 2, p.n_ff = 128, p.n_vocab = 300;
    hr_err e;
    CHECKF(hr_synth_write(&p, hr_test_tmp(base, sizeof base, "base.gguf"), &e) == 0, "%s", e.msg);
    p.arch = "smallthinker", p.act = HR_SYNTH_REGLU;
    CHECKF(hr_synth_write(&p, hr_test_tmp(st, sizeof st, "st.gguf"), &e) == 0, "%s", e.msg);
    if (hr_test_failures) return TEST_END();

    /* The unmodified rewrite loads: the mutations below are what breaks it. */
    mutation none = {0};
    char ok[256];
    CHECK(rewrite(base, hr_test_tmp(ok, sizeof ok, "ok.gguf"), &none) == 0);
    hearth_model *m = hearth_model_load(ok, NULL, &e);
    CHECKF(m != NULL, "clean rewrite does not load: %s", e.msg);
    hearth_model_free(m);
    remove(ok);

    expect_error(base, &(mutation){.drop_tensor = "blk.1.ffn_up.weight"}, "missing tensor 'blk.1.ffn_up.weight'");
    expect_error(base, &(mutation){.drop_tensor = "output_norm.weight"}, "missing tensor 'output_norm.weight'");
    expect_error(base, &(mutation){.drop_tensor = "token_embd.weight"}, "missing tensor 'token_embd.weight'");
    expect_error(base, &(mutation){.reshape = "blk.0.attn_k.weight"}, "tensor 'blk.0.attn_k.weight' has shape");
    expect_error(base, &(mutation){.str_key = "general.architecture", .str_val = "gpt-j"}, "unknown architecture 'gpt-j'");
    expect_error(base, &(mutation){.drop_key = "general.architecture"}, "general.architecture");
    expect_error(base, &(mutation){.drop_key = "llama.embedding_length"}, "llama.embedding_length");
    expect_error(base, &(mutation){.u32_key = "llama.attention.head_count_kv", .u32_val = 3}, "head_count_kv");
    expect_error(base, &(mutation){.u32_key = "llama.block_count", .u32_val = 0}, "block_count");
    expect_error(base, &(mutation){.u32_key = "llama.block_count", .u32_val = 3}, "missing tensor 'blk.2.");
    expect_error(base, &(mutation){.str_key = "hearth.ffn_activation", .str_val = "gelu"}, "gelu");
    expect_error(base, &(mutation){.str_key = "tokenizer.ggml.model", .str_val = "bert"}, "bert");
    /* llama has no sliding window in llama.cpp (the key is ignored there): it loads, no layer slides */
    char swa[256];
    CHECK(rewrite(base, hr_test_tmp(swa, sizeof swa, "swa.gguf"),
                  &(mutation){.u32_key = "llama.attention.sliding_window", .u32_val = 128}) == 0);
    hearth_model *ms = hearth_model_load(swa, NULL, &e);
    CHECKF(ms != NULL, "llama with a sliding_window key: %s", e.msg);
    if (ms) CHECK(ms->hp.n_swa == 0 && !ms->layers[0].swa);
    hearth_model_free(ms);
    remove(swa);
    /* more experts than the one-expert file's router holds */
    expect_error(st, &(mutation){.u32_key = "smallthinker.expert_count", .u32_val = 4}, "tensor 'blk.0.ffn_gate_inp.weight' has shape");
    /* Mixtures of experts: counts out of range, router and expert tensors missing or misshapen. */
    char moe[256], q3m[256], stm[256];
    p.n_expert = 4, p.n_expert_used = 2, p.arch = "llama", p.act = HR_SYNTH_SWIGLU;
    CHECKF(hr_synth_write(&p, hr_test_tmp(moe, sizeof moe, "moe.gguf"), &e) == 0, "%s", e.msg);
    p.arch = "qwen3moe";
    CHECKF(hr_synth_write(&p, hr_test_tmp(q3m, sizeof q3m, "q3m.gguf"), &e) == 0, "%s", e.msg);
    p.arch = "smallthinker", p.act = HR_SYNTH_REGLU;
    CHECKF(hr_synth_write(&p, hr_test_tmp(stm, sizeof stm, "stm.gguf"), &e) == 0, "%s", e.msg);
    p.n_expert = 0, p.n_expert_used = 0, p.arch = "llama";
    expect_error(moe, &(mutation){.u32_key = "llama.expert_used_count", .u32_val = 0}, "llama.expert_used_count = 0 is out of range [1, 4]");
    expect_error(moe, &(mutation){.u32_key = "llama.expert_used_count", .u32_val = 5}, "llama.expert_used_count = 5 is out of range [1, 4]");
    expect_error(moe, &(mutation){.drop_key = "llama.expert_used_count"}, "llama.expert_used_count = 0 is out of range");
    expect_error(moe, &(mutation){.u32_key = "llama.expert_count", .u32_val = 2000}, "llama.expert_count = 2000 is out of range");
    expect_error(moe, &(mutation){.u32_key = "llama.expert_count", .u32_val = 8}, "tensor 'blk.0.ffn_gate_inp.weight' has shape");
    expect_error(moe, &(mutation){.reshape = "blk.1.ffn_gate_inp.weight"}, "tensor 'blk.1.ffn_gate_inp.weight' has shape");
    expect_error(moe, &(mutation){.drop_tensor = "blk.0.ffn_gate_inp.weight"}, "missing tensor 'blk.0.ffn_gate_inp.weight'");
    expect_error(moe, &(mutation){.drop_tensor = "blk.0.ffn_up_exps.weight"}, "missing tensor 'blk.0.ffn_up_exps.weight'");
    expect_error(moe, &(mutation){.drop_tensor = "blk.1.ffn_gate_exps.weight"}, "missing tensor 'blk.1.ffn_gate_exps.weight'");
    expect_error(moe, &(mutation){.reshape = "blk.1.ffn_down_exps.weight"}, "tensor 'blk.1.ffn_down_exps.weight' has shape");
    expect_error(moe, &(mutation){.str_key = "hearth.ffn_activation", .str_val = "relu"}, "need a gated activation");
    expect_error(q3m, &(mutation){.u32_key = "qwen3moe.expert_count", .u32_val = 0}, "qwen3moe needs qwen3moe.expert_count > 0");
    expect_error(q3m, &(mutation){.u32_key = "qwen3moe.expert_feed_forward_length", .u32_val = 64}, "tensor 'blk.0.ffn_gate_exps.weight' has shape");
    expect_error(stm, &(mutation){.u32_key = "smallthinker.expert_gating_func", .u32_val = 7}, "expert_gating_func = 7 is not supported");
    remove(moe), remove(q3m), remove(stm);
    /* gpt-oss: sinks, biases of the router and experts, its FFN norm's name, the window key. */
    char go[256];
    p.n_expert = 4, p.n_expert_used = 2, p.arch = "gpt-oss", p.act = HR_SYNTH_SWIGLU;
    CHECKF(hr_synth_write(&p, hr_test_tmp(go, sizeof go, "gptoss.gguf"), &e) == 0, "%s", e.msg);
    p.n_expert = 0, p.n_expert_used = 0, p.arch = "llama";
    expect_error(go, &(mutation){.drop_tensor = "blk.1.attn_sinks.weight"}, "missing tensor 'blk.1.attn_sinks.weight'");
    expect_error(go, &(mutation){.reshape0 = "blk.0.attn_sinks.weight"}, "tensor 'blk.0.attn_sinks.weight' has shape");
    expect_error(go, &(mutation){.drop_tensor = "blk.0.ffn_gate_inp.bias"}, "missing tensor 'blk.0.ffn_gate_inp.bias'");
    expect_error(go, &(mutation){.drop_tensor = "blk.1.ffn_up_exps.bias"}, "missing tensor 'blk.1.ffn_up_exps.bias'");
    expect_error(go, &(mutation){.reshape = "blk.0.ffn_down_exps.bias"}, "tensor 'blk.0.ffn_down_exps.bias' has shape");
    expect_error(go, &(mutation){.drop_tensor = "blk.0.attn_output.bias"}, "missing tensor 'blk.0.attn_output.bias'");
    expect_error(go, &(mutation){.drop_tensor = "blk.1.post_attention_norm.weight"}, "missing tensor 'blk.1.post_attention_norm.weight'");
    expect_error(go, &(mutation){.drop_key = "gpt-oss.attention.sliding_window"}, "missing metadata key 'gpt-oss.attention.sliding_window'");
    expect_error(go, &(mutation){.drop_key = "gpt-oss.expert_feed_forward_length"}, "gpt-oss.expert_feed_forward_length");
    expect_error(go, &(mutation){.u32_key = "gpt-oss.expert_count", .u32_val = 0}, "gpt-oss needs gpt-oss.expert_count > 0");
    remove(go);
    /* PowerInfer files: predictor and transposed down matrix. */
    char pw[256];
    p.arch = "llama", p.act = HR_SYNTH_REGLU, p.powerinfer = true, p.pred_rank = 16;
    CHECKF(hr_synth_write(&p, hr_test_tmp(pw, sizeof pw, "pw.gguf"), &e) == 0, "%s", e.msg);
    expect_error(pw, &(mutation){.drop_tensor = "blk.1.fc2.weight"}, "'blk.1.fc1.weight' but not 'blk.1.fc2.weight'");
    expect_error(pw, &(mutation){.drop_tensor = "blk.0.fc1.weight"}, "'blk.0.fc2.weight' but not 'blk.0.fc1.weight'");
    expect_error(pw, &(mutation){.reshape = "blk.0.fc1.weight"}, "predictor rank mismatch in layer 0");
    expect_error(pw, &(mutation){.reshape = "blk.1.ffn_down_t.weight"}, "tensor 'blk.1.ffn_down_t.weight' has shape");
    expect_error(pw, &(mutation){.drop_tensor = "blk.0.ffn_down_t.weight"}, "neither 'blk.0.ffn_down.weight' nor 'blk.0.ffn_down_t.weight'");
    expect_error(pw, &(mutation){.reshape = "blk.1.fc2.weight"}, "tensor 'blk.1.fc2.weight' has shape");
    /* Linear predictors: the bias's length, fc2's score rows, RMSNorm only. */
    char lin[256];
    p.act = HR_SYNTH_DRELU, p.pred_linear = true;
    CHECKF(hr_synth_write(&p, hr_test_tmp(lin, sizeof lin, "lin.gguf"), &e) == 0, "%s", e.msg);
    expect_error(lin, &(mutation){.reshape0 = "blk.0.fc2.bias"}, "tensor 'blk.0.fc2.bias' has shape");
    expect_error(lin, &(mutation){.reshape = "blk.1.fc2.weight"}, "tensor 'blk.1.fc2.bias' has shape {256, 1, 1, 1}, expected {128, 1}");
    expect_error(lin, &(mutation){.drop_tensor = "blk.1.fc2.bias"}, "tensor 'blk.1.fc2.weight' has shape");
    expect_error(lin, &(mutation){.str_key = "hearth.ffn_activation", .str_val = "reglu"}, "has 256 score rows; expected n_ff");
    hearth_model *ml = hearth_model_load(lin, NULL, &e);
    CHECKF(ml && ml->layers[1].ffn.pred_m == 2 && ml->layers[1].ffn.pred_b, "linear predictor file: %s", ml ? "no blocks" : e.msg);
    hearth_model_free(ml);
    remove(lin);
    p.arch = "opt", p.act = HR_SYNTH_RELU;
    CHECKF(hr_synth_write(&p, hr_test_tmp(lin, sizeof lin, "lin-opt.gguf"), &e) == 0, "%s", e.msg);
    ml = hearth_model_load(lin, NULL, &e);
    CHECKF(!ml && strstr(e.msg, "needs an RMSNorm model"), "opt with a linear predictor: %s", ml ? "(loaded)" : e.msg);
    hearth_model_free(ml);
    remove(lin);
    p.arch = "llama", p.act = HR_SYNTH_REGLU, p.pred_linear = false;
    /* PowerInfer's own llama files carry no activation key: the PWRI magic means ReGLU. */
    char nokey[256];
    CHECK(rewrite(pw, hr_test_tmp(nokey, sizeof nokey, "nokey.gguf"), &(mutation){.drop_key = "hearth.ffn_activation"}) == 0);
    hearth_model *mk = hearth_model_load(nokey, NULL, &e);
    CHECKF(mk && !strcmp(hearth_model_get_info(mk)->ffn_act, "reglu"), "PWRI llama without a key: %s",
           mk ? hearth_model_get_info(mk)->ffn_act : e.msg);
    hearth_model_free(mk);
    remove(nokey);
    remove(pw);
    /* The tensors an architecture's entry adds: qwen2's q/k/v biases, qwen3's q/k norms
     * (whose length is the head size from attention.key_length). */
    char q2[256], q3[256];
    hr_synth_defaults(&p);
    p.n_embd = 64, p.n_head = 4, p.n_head_kv = 2, p.n_ff = 128, p.n_vocab = 300, p.arch = "qwen2";
    CHECKF(hr_synth_write(&p, hr_test_tmp(q2, sizeof q2, "q2.gguf"), &e) == 0, "%s", e.msg);
    p.arch = "qwen3", p.head_dim = 32;
    CHECKF(hr_synth_write(&p, hr_test_tmp(q3, sizeof q3, "q3.gguf"), &e) == 0, "%s", e.msg);
    expect_error(q2, &(mutation){.drop_tensor = "blk.1.attn_k.bias"}, "missing tensor 'blk.1.attn_k.bias'");
    expect_error(q2, &(mutation){.drop_tensor = "blk.0.attn_q.bias"}, "missing tensor 'blk.0.attn_q.bias'");
    /* expert_count on an architecture whose entry has no experts */
    expect_error(q3, &(mutation){.u32_key = "qwen3.expert_count", .u32_val = 4}, "qwen3 with 4 experts (mixture of experts) is not supported");
    expect_error(q3, &(mutation){.drop_tensor = "blk.0.attn_q_norm.weight"}, "missing tensor 'blk.0.attn_q_norm.weight'");
    expect_error(q3, &(mutation){.drop_tensor = "blk.1.attn_k_norm.weight"}, "missing tensor 'blk.1.attn_k_norm.weight'");
    /* without key_length the head size is n_embd / n_head = 16, which the file contradicts */
    expect_error(q3, &(mutation){.drop_key = "qwen3.attention.key_length"}, "rope.dimension_count 32 must be even and <= head size 16");
    remove(q2), remove(q3);
    /* Gemma's post norms, q/k norms and keys. */
    char g2[256], g3[256];
    hr_synth_defaults(&p);
    p.n_embd = 64, p.n_head = 4, p.n_head_kv = 2, p.n_ff = 128, p.n_vocab = 300, p.arch = "gemma2", p.act = HR_SYNTH_GEGLU;
    CHECKF(hr_synth_write(&p, hr_test_tmp(g2, sizeof g2, "g2.gguf"), &e) == 0, "%s", e.msg);
    p.arch = "gemma3", p.head_dim = 32, p.n_swa = 8;
    CHECKF(hr_synth_write(&p, hr_test_tmp(g3, sizeof g3, "g3.gguf"), &e) == 0, "%s", e.msg);
    expect_error(g2, &(mutation){.drop_tensor = "blk.1.post_attention_norm.weight"}, "missing tensor 'blk.1.post_attention_norm.weight'");
    expect_error(g2, &(mutation){.drop_tensor = "blk.0.post_ffw_norm.weight"}, "missing tensor 'blk.0.post_ffw_norm.weight'");
    expect_error(g3, &(mutation){.drop_tensor = "blk.0.post_ffw_norm.weight"}, "missing tensor 'blk.0.post_ffw_norm.weight'");
    expect_error(g3, &(mutation){.drop_tensor = "blk.1.attn_k_norm.weight"}, "missing tensor 'blk.1.attn_k_norm.weight'");
    expect_error(g2, &(mutation){.u32_key = "gemma2.attn_logit_softcapping", .u32_val = 0}, "gemma2.attn_logit_softcapping");
    remove(g2), remove(g3);
    /* phi3's fused gate|up and LongRoPE factors; llama's rope_freqs and scaling types. */
    char ph[256], lf[256];
    hr_synth_defaults(&p);
    p.n_embd = 64, p.n_head = 4, p.n_head_kv = 2, p.n_ff = 128, p.n_vocab = 300, p.arch = "phi3";
    p.n_ctx_train = 4096, p.rope_orig_ctx = 300;
    CHECKF(hr_synth_write(&p, hr_test_tmp(ph, sizeof ph, "ph.gguf"), &e) == 0, "%s", e.msg);
    p.arch = "llama", p.rope_orig_ctx = 0, p.rope_freqs = true;
    CHECKF(hr_synth_write(&p, hr_test_tmp(lf, sizeof lf, "lf.gguf"), &e) == 0, "%s", e.msg);
    hearth_model *mp = hearth_model_load(ph, NULL, &e);
    CHECKF(mp != NULL, "phi3: %s", e.msg);
    if (mp) {
        /* gate rows first, then up, in one tensor; llama.cpp's 256-padded context picks the
         * factors (300 < 512: long; 256: short); phi3's sliding_window key is ignored */
        CHECK(mp->layers[0].ffn.gate.n_out == 128 && mp->layers[0].ffn.up.n_out == 128);
        CHECK((const uint8_t *)mp->layers[0].ffn.up.data - (const uint8_t *)mp->layers[0].ffn.gate.data ==
              (ptrdiff_t)(128 * mp->layers[0].ffn.gate.row_bytes));
        CHECK(mp->rope_long && mp->rope_short && !mp->rope_freqs && mp->hp.n_ctx_orig == 300);
        CHECK(hr_rope_factors(mp, 257) == mp->rope_long && hr_rope_factors(mp, 256) == mp->rope_short);
        CHECK(mp->layers[1].rope_ext && mp->hp.n_swa == 0 && !mp->layers[0].swa);
        CHECK(mp->hp.rope_yarn.ext_factor == 0 && mp->hp.rope_yarn.attn_factor > 1.0f);
    }
    hearth_model_free(mp);
    expect_error(ph, &(mutation){.reshape = "blk.1.ffn_up.weight"}, "tensor 'blk.1.ffn_up.weight' has shape {64, 128, 1, 1}, expected {64, 256}");
    expect_error(ph, &(mutation){.reshape0 = "rope_factors_long.weight"}, "tensor 'rope_factors_long.weight' has shape {4, 1, 1, 1}, expected {8, 1}");
    expect_error(lf, &(mutation){.reshape0 = "rope_freqs.weight"}, "tensor 'rope_freqs.weight' has shape {4, 1, 1, 1}, expected {8, 1}");
    expect_error(lf, &(mutation){.str_key = "llama.rope.scaling.type", .str_val = "dynamic"}, "rope scaling type 'dynamic' is not supported");
    expect_error(st, &(mutation){.str_key = "smallthinker.rope.scaling.type", .str_val = "longrope"},
                 "rope scaling type 'longrope' is not supported for smallthinker");
    remove(ph), remove(lf);
    remove(base), remove(st);
    return TEST_END();
}
