/* Synthesized bamboo, falcon (7B and 40B layouts) and opt files, dense and PowerInfer:
 * every tensor and key the layout contract (synth.h) promises for them, the tensors that
 * must be absent, cross-file identities (PWRI ffn_down_t.bias = dense ffn_down.bias,
 * ffn_down_t = transpose of ffn_down), and the parameters rejected for these archs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/gguf.h"
#include "formats/types.h"
#include "synth/synth.h"
#include "testutil.h"

enum { D = 64, H = 4, FF = 96, V = 320, NL = 2, CTX = 128, R = 16 };

static hr_synth_params base(const char * arch, hr_synth_act act, uint32_t kv) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.arch = arch, p.act = act, p.n_embd = D, p.n_head = H, p.n_head_kv = kv, p.n_ff = FF, p.n_vocab = V;
    p.n_layer = NL, p.n_ctx_train = CTX, p.pred_rank = R, p.seed = 5;
    return p;
}

static bool write_open(const hr_synth_params *p, char *path, size_t cap, const char *sfx, gguf_file *f) {
    hr_err e;
    hr_test_tmp(path, cap, sfx);
    if (hr_synth_write(p, path, &e)) {
        CHECKF(0, "synth %s: %s", sfx, e.msg);
        return false;
    }
    if (gguf_open(f, path, &e)) {
        CHECKF(0, "open %s: %s", sfx, e.msg);
        return false;
    }
    return true;
}

/* Tensor present with this shape (ne1 0: a vector) and type. */
static void has(const gguf_file *f, const char *name, uint64_t ne0, uint64_t ne1, uint32_t type) {
    const gguf_tensor *t = gguf_find_tensor(f, name);
    CHECKF(t, "missing tensor %s", name);
    if (!t) return;
    CHECKF(t->ne[0] == ne0 && t->ne[1] == (ne1 ? ne1 : 1) && t->n_dims == (ne1 ? 2u : 1u),
           "%s shape {%llu, %llu} (%u dims), want {%llu, %llu}", name, (unsigned long long)t->ne[0],
           (unsigned long long)t->ne[1], t->n_dims, (unsigned long long)ne0, (unsigned long long)ne1);
    CHECKF(t->type == type, "%s type %u, want %u", name, t->type, type);
}

static void lacks(const gguf_file *f, const char *name) { CHECKF(!gguf_find_tensor(f, name), "unexpected tensor %s", name); }

static void key_u32(const gguf_file *f, const char *key, uint32_t want) {
    uint32_t v = 0;
    CHECKF(gguf_get_u32(f, key, &v, NULL) == 0 && v == want, "%s = %u, want %u", key, v, want);
}

static void key_str(const gguf_file *f, const char *key, const char *want) {
    gguf_str s = {0};
    CHECKF(gguf_get_str(f, key, &s, NULL) == 0 && gguf_str_eq(s, want), "%s = '%.*s', want '%s'", key, (int)s.len, s.ptr, want);
}

static void no_key(const gguf_file *f, const char *key) { CHECKF(!gguf_find_kv(f, key), "unexpected key %s", key); }

static uint64_t data_bytes(const gguf_file *f) {
    uint64_t n = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++) n += f->tensors[i].nbytes;
    return n;
}

static void falcon(bool f40b, bool pwri) {
    hr_synth_params p = base("falcon", pwri ? HR_SYNTH_RELU : HR_SYNTH_GELU, 1);
    p.falcon_40b = f40b, p.powerinfer = pwri, p.type = pwri ? HR_F16 : HR_Q8_0;
    char path[256], n[64];
    gguf_file f;
    if (!write_open(&p, path, sizeof path, "falcon.gguf", &f)) return;
    CHECK(f.sparse == pwri);
    key_str(&f, "general.architecture", "falcon");
    key_u32(&f, "falcon.embedding_length", D), key_u32(&f, "falcon.attention.head_count_kv", 1);
    key_u32(&f, "falcon.context_length", CTX);
    CHECK(gguf_find_kv(&f, "falcon.attention.layer_norm_epsilon") != NULL);
    no_key(&f, "falcon.attention.layer_norm_rms_epsilon");
    key_str(&f, "hearth.ffn_activation", pwri ? "relu" : "gelu");
    const uint32_t hd = D / H;
    for (int l = 0; l < NL; l++) {
#define N(s) (snprintf(n, sizeof n, "blk.%d.%s", l, s), n)
        has(&f, N("attn_norm.weight"), D, 0, HR_F32), has(&f, N("attn_norm.bias"), D, 0, HR_F32);
        if (f40b) has(&f, N("attn_norm_2.weight"), D, 0, HR_F32), has(&f, N("attn_norm_2.bias"), D, 0, HR_F32);
        else lacks(&f, N("attn_norm_2.weight")), lacks(&f, N("attn_norm_2.bias"));
        has(&f, N("attn_qkv.weight"), D, D + 2 * hd, p.type);
        has(&f, N("attn_output.weight"), D, D, p.type);
        has(&f, N("ffn_up.weight"), D, FF, p.type);
        lacks(&f, N("attn_q.weight")), lacks(&f, N("ffn_gate.weight")), lacks(&f, N("ffn_norm.weight"));
        if (pwri) {
            has(&f, N("ffn_down_t.weight"), D, FF, p.type), lacks(&f, N("ffn_down.weight"));
            has(&f, N("fc1.weight"), D, R, p.type), has(&f, N("fc2.weight"), R, FF, p.type);
        } else {
            has(&f, N("ffn_down.weight"), FF, D, p.type), lacks(&f, N("fc1.weight"));
        }
#undef N
    }
    has(&f, "output_norm.weight", D, 0, HR_F32), has(&f, "output_norm.bias", D, 0, HR_F32);
    has(&f, "output.weight", D, V, p.type);
    CHECK(data_bytes(&f) == hr_synth_data_bytes(&p));
    gguf_close(&f);
    remove(path);
}

static void opt_layout(const gguf_file *f, bool pwri, uint32_t type) {
    char n[64];
    key_str(f, "general.architecture", "opt");
    key_u32(f, "opt.context_length", CTX + 2);
    CHECK(gguf_find_kv(f, "opt.attention.layer_norm_epsilon") != NULL);
    no_key(f, "opt.rope.freq_base"), no_key(f, "opt.rope.dimension_count");
    has(f, "token_embd.weight", D, V, type), has(f, "position_embd.weight", D, CTX + 2, type);
    for (int l = 0; l < NL; l++) {
#define N(s) (snprintf(n, sizeof n, "blk.%d.%s", l, s), n)
        has(f, N("attn_norm.weight"), D, 0, HR_F32), has(f, N("attn_norm.bias"), D, 0, HR_F32);
        has(f, N("ffn_norm.weight"), D, 0, HR_F32), has(f, N("ffn_norm.bias"), D, 0, HR_F32);
        has(f, N("attn_q.weight"), D, D, type), has(f, N("attn_q.bias"), D, 0, HR_F32);
        has(f, N("attn_k.weight"), D, D, type), has(f, N("attn_k.bias"), D, 0, HR_F32);
        has(f, N("attn_v.weight"), D, D, type), has(f, N("attn_v.bias"), D, 0, HR_F32);
        has(f, N("attn_output.weight"), D, D, type), has(f, N("attn_output.bias"), D, 0, HR_F32);
        has(f, N("ffn_up.weight"), D, FF, type), has(f, N("ffn_up.bias"), FF, 0, HR_F32);
        lacks(f, N("ffn_gate.weight"));
        if (pwri) {
            has(f, N("ffn_down_t.weight"), D, FF, type), has(f, N("ffn_down_t.bias"), D, 0, HR_F32);
            lacks(f, N("ffn_down.weight")), lacks(f, N("ffn_down.bias"));
        } else {
            has(f, N("ffn_down.weight"), FF, D, type), has(f, N("ffn_down.bias"), D, 0, HR_F32);
            lacks(f, N("ffn_down_t.bias"));
        }
#undef N
    }
    has(f, "output_norm.weight", D, 0, HR_F32), has(f, "output_norm.bias", D, 0, HR_F32);
    lacks(f, "output.weight");
}

static const float *f32_data(const gguf_file *f, const char *name) {
    const gguf_tensor *t = gguf_find_tensor(f, name);
    return t && t->type == HR_F32 ? t->data : NULL;
}

/* Dense and PWRI opt files of one seed: the same model, down bias renamed, down transposed. */
static void opt(void) {
    hr_synth_params p = base("opt", HR_SYNTH_RELU, H), q = p;
    q.powerinfer = true;
    char pd[256], pp[256];
    gguf_file fd, fp;
    if (!write_open(&p, pd, sizeof pd, "opt.gguf", &fd)) return;
    if (!write_open(&q, pp, sizeof pp, "optpi.gguf", &fp)) {
        gguf_close(&fd);
        return;
    }
    opt_layout(&fd, false, HR_F32), opt_layout(&fp, true, HR_F32);
    CHECK(!fd.sparse && fp.sparse);
    const float *b = f32_data(&fd, "blk.1.ffn_down.bias"), *bt = f32_data(&fp, "blk.1.ffn_down_t.bias");
    CHECK(b && bt && !memcmp(b, bt, D * sizeof(float)));
    const float *w = f32_data(&fd, "blk.0.ffn_down.weight"), *wt = f32_data(&fp, "blk.0.ffn_down_t.weight");
    bool transposed = w && wt;
    for (int j = 0; transposed && j < FF; j++)
        for (int i = 0; i < D; i++) transposed &= w[i * FF + j] == wt[j * D + i];
    CHECK(transposed);
    /* biases are random, not zero: a loader that ignored them would be caught */
    double s = 0;
    for (int i = 0; b && i < D; i++) s += b[i] * b[i];
    CHECKF(fabs(sqrt(s / D) / HR_SYNTH_BIAS_STD - 1) < 0.35, "bias rms %g, want about %g", sqrt(s / D), HR_SYNTH_BIAS_STD);
    /* the tied flag changes nothing for opt: never an output.weight */
    p.tied = false;
    CHECK(hr_synth_data_bytes(&p) == data_bytes(&fd));
    gguf_close(&fd), gguf_close(&fp);
    remove(pd), remove(pp);
}

/* bamboo is the llama layout with dReLU: same tensors as a llama drelu file of one seed. */
static void bamboo(void) {
    hr_synth_params p = base("bamboo", HR_SYNTH_DRELU, 2), q = p;
    q.arch = "llama";
    char pb[256], pl[256];
    gguf_file fb, fl;
    if (!write_open(&p, pb, sizeof pb, "bamboo.gguf", &fb)) return;
    if (!write_open(&q, pl, sizeof pl, "llama.gguf", &fl)) {
        gguf_close(&fb);
        return;
    }
    key_str(&fb, "general.architecture", "bamboo");
    key_u32(&fb, "bamboo.attention.head_count_kv", 2);
    CHECK(gguf_find_kv(&fb, "bamboo.attention.layer_norm_rms_epsilon") != NULL);
    CHECK(fb.n_tensors == fl.n_tensors);
    for (uint64_t i = 0; i < fb.n_tensors && i < fl.n_tensors; i++) {
        const gguf_tensor *a = &fb.tensors[i], *b = &fl.tensors[i];
        CHECKF(a->name.len == b->name.len && !memcmp(a->name.ptr, b->name.ptr, a->name.len) && a->nbytes == b->nbytes &&
                   !memcmp(a->data, b->data, a->nbytes),
               "tensor %llu differs", (unsigned long long)i);
    }
    gguf_close(&fb), gguf_close(&fl);
    remove(pb), remove(pl);
}

static void rejects(void) {
    struct { hr_synth_params p; const char *msg; } c[12];
    int n = 0;
    c[n].p = base("bamboo", HR_SYNTH_SWIGLU, H), c[n++].msg = "drelu";
    c[n].p = base("falcon", HR_SYNTH_REGLU, H), c[n++].msg = "relu or gelu";
    c[n].p = base("opt", HR_SYNTH_DRELU, H), c[n++].msg = "relu";
    c[n].p = base("llama", HR_SYNTH_GELU, H), c[n++].msg = "gelu";
    c[n].p = base("llama", HR_SYNTH_SWIGLU, H), c[n].p.falcon_40b = true, c[n++].msg = "falcon_40b";
    c[n].p = base("falcon", HR_SYNTH_GELU, H), c[n].p.head_dim = 8, c[n++].msg = "n_embd";
    c[n].p = base("smallthinker", HR_SYNTH_REGLU, H), c[n].p.powerinfer = true, c[n++].msg = "powerinfer";
    c[n].p = base("llama", HR_SYNTH_GEGLU, H), c[n++].msg = "geglu";
    c[n].p = base("gemma2", HR_SYNTH_SWIGLU, H), c[n++].msg = "geglu";
    c[n].p = base("llama", HR_SYNTH_SWIGLU, H), c[n].p.n_swa = 16, c[n++].msg = "sliding window";
    c[n].p = base("gemma3", HR_SYNTH_GEGLU, H), c[n].p.attn_softcap = 30, c[n++].msg = "attention soft-cap";
    for (int i = 0; i < n; i++) {
        hr_err e = {{0}};
        CHECKF(hr_synth_validate(&c[i].p, &e) < 0 && strstr(e.msg, c[i].msg), "case %d: '%s' does not name %s", i, e.msg, c[i].msg);
    }
    hr_synth_params ok = base("falcon", HR_SYNTH_RELU, 2);
    ok.powerinfer = true, ok.falcon_40b = true;
    hr_err e = {{0}};
    CHECKF(hr_synth_validate(&ok, &e) == 0, "%s", e.msg);
}

int main(void) {
    falcon(false, false);
    falcon(true, false);
    falcon(true, true);
    opt();
    bamboo();
    rejects();
    CHECK(hr_synth_act_from_name("gelu") == HR_SYNTH_GELU);
    return TEST_END();
}
