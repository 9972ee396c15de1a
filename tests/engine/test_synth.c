/* Synthesized models: every key and tensor the layout contract (synth.h) promises, weight
 * statistics after dequantization, cross-variant identities (smallthinker experts = llama
 * FFN, ffn_down_t = transpose of ffn_down), determinism, and rejected parameters. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/gguf.h"
#include "formats/types.h"
#include "engine/arch.h"
#include "synth/synth.h"
#include "testutil.h"

static hr_synth_params small(void) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.n_embd = 64;
    p.n_head = 4;
    p.n_head_kv = 4;
    p.n_ff = 96;
    p.n_vocab = 320;
    p.n_layer = 2;
    return p;
}

static const gguf_kv *kv_typed(const gguf_file *f, const char *key, gguf_vtype t) {
    const gguf_kv *kv = gguf_find_kv(f, key);
    CHECKF(kv, "missing key %s", key);
    if (kv) CHECKF(kv->val.type == t, "%s has type %s, want %s", key, gguf_vtype_name(kv->val.type), gguf_vtype_name(t));
    return kv && kv->val.type == t ? kv : NULL;
}

static void check_u32(const gguf_file *f, const char *key, uint64_t want) {
    const gguf_kv *kv = kv_typed(f, key, GGUF_VT_UINT32);
    if (kv) CHECKF(kv->val.v.u == want, "%s = %llu, want %llu", key, (unsigned long long)kv->val.v.u, (unsigned long long)want);
}

static void check_f32(const gguf_file *f, const char *key, double want) {
    const gguf_kv *kv = kv_typed(f, key, GGUF_VT_FLOAT32);
    if (kv) CHECKF(fabs(kv->val.v.f - want) <= 1e-6 * fabs(want), "%s = %g, want %g", key, kv->val.v.f, want);
}

static void check_str(const gguf_file *f, const char *key, const char *want) {
    const gguf_kv *kv = kv_typed(f, key, GGUF_VT_STRING);
    if (kv) CHECKF(gguf_str_eq(kv->val.v.s, want), "%s = '%.*s', want '%s'", key, (int)kv->val.v.s.len, kv->val.v.s.ptr, want);
}

static void check_absent(const gguf_file *f, const char *key) { CHECKF(!gguf_find_kv(f, key), "unexpected key %s", key); }

/* Dequantized mean and std of a tensor against the intended ones (approximately normal values:
 * tolerances from the sampling error of n values, plus quantization noise). */
static void check_stats(const gguf_tensor *t, double want_mean, double want_std) {
    const uint64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    float *v = malloc(n * sizeof *v);
    if (!v) return;
    hr_dequant_row(t->type, t->data, v, (int64_t)n);
    double s = 0, s2 = 0;
    for (uint64_t i = 0; i < n; i++) s += v[i];
    const double mean = s / (double)n;
    for (uint64_t i = 0; i < n; i++) s2 += (v[i] - mean) * (v[i] - mean);
    const double sd = sqrt(s2 / (double)n);
    const double quant = t->type == HR_Q4_0 ? 0.04 : t->type == HR_Q8_0 ? 0.005 : 0.002;
    CHECKF(fabs(mean - want_mean) < 5 * want_std / sqrt((double)n) + 1e-6, "%.*s mean %g, want %g", (int)t->name.len,
           t->name.ptr, mean, want_mean);
    CHECKF(fabs(sd / want_std - 1) < 5 / sqrt(2.0 * (double)n) + quant, "%.*s std %g, want %g", (int)t->name.len,
           t->name.ptr, sd, want_std);
    free(v);
}

/* Expected tensor: name, shape, type, and intended statistics (std 0: a norm vector). */
static int n_checked;
static void expect(const gguf_file *f, const char *name, uint32_t type, uint64_t ne0, uint64_t ne1, uint64_t ne2,
                   uint32_t n_dims, double std) {
    const gguf_tensor *t = gguf_find_tensor(f, name);
    CHECKF(t, "missing tensor %s", name);
    if (!t) return;
    n_checked++;
    CHECKF(t->type == type, "%s type %u, want %u", name, t->type, type);
    CHECKF(t->n_dims == n_dims, "%s n_dims %u, want %u", name, t->n_dims, n_dims);
    CHECKF(t->ne[0] == ne0 && t->ne[1] == ne1 && t->ne[2] == ne2, "%s shape {%llu,%llu,%llu}, want {%llu,%llu,%llu}", name,
           (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], (unsigned long long)t->ne[2],
           (unsigned long long)ne0, (unsigned long long)ne1, (unsigned long long)ne2);
    if (t->type == type && t->ne[0] == ne0 && t->ne[1] == ne1 && t->ne[2] == ne2)
        check_stats(t, std ? 0 : 1, std ? std : HR_SYNTH_NORM_NOISE);
}

static void check_file(const hr_synth_params *p, const char *path) {
    gguf_file f;
    hr_err e = {{0}};
    if (gguf_open(&f, path, &e)) {
        CHECKF(0, "gguf_open %s: %s", path, e.msg);
        return;
    }
    const char *a = p->arch;
    const uint64_t hd = p->head_dim ? p->head_dim : p->n_embd / p->n_head, nq = hd * p->n_head, nkv = hd * p->n_head_kv;
    char k[128];
#define K(s) (snprintf(k, sizeof k, "%s." s, a), k)
    CHECK(f.sparse == p->powerinfer);
    check_str(&f, "general.architecture", a);
    check_str(&f, "general.name", p->name ? p->name : "hearth-synth");
    const uint32_t ftypes[] = {[HR_F32] = 0, [HR_F16] = 1, [HR_Q4_0] = 2, [HR_Q8_0] = 7, [HR_BF16] = 32};
    check_u32(&f, "general.file_type", ftypes[p->type]);
    check_u32(&f, K("context_length"), p->n_ctx_train);
    check_u32(&f, K("embedding_length"), p->n_embd);
    check_u32(&f, K("block_count"), p->n_layer);
    check_u32(&f, K("feed_forward_length"), p->n_ff);
    check_u32(&f, K("attention.head_count"), p->n_head);
    check_u32(&f, K("attention.head_count_kv"), p->n_head_kv);
    check_u32(&f, K("rope.dimension_count"), hd);
    check_u32(&f, K("vocab_size"), p->n_vocab);
    check_f32(&f, K("attention.layer_norm_rms_epsilon"), p->rms_eps);
    check_f32(&f, K("rope.freq_base"), p->rope_base);
    if (hd * p->n_head != p->n_embd) {
        check_u32(&f, K("attention.key_length"), hd);
        check_u32(&f, K("attention.value_length"), hd);
    } else {
        check_absent(&f, K("attention.key_length"));
    }
    if (!strcmp(p->arch, "smallthinker")) {
        check_u32(&f, K("expert_count"), 1);
        check_u32(&f, K("expert_used_count"), 1);
        check_u32(&f, K("expert_feed_forward_length"), p->n_ff);
        check_u32(&f, K("expert_gating_func"), 1);
    } else {
        check_absent(&f, K("expert_count"));
    }
    if (p->act == HR_SYNTH_SWIGLU) check_absent(&f, "hearth.ffn_activation");
    else check_str(&f, "hearth.ffn_activation", hr_synth_act_name(p->act));
    if (p->powerinfer && p->has_sparse_threshold) check_f32(&f, "powerinfer.sparse_threshold", p->sparse_threshold);
    else check_absent(&f, "powerinfer.sparse_threshold");
    const gguf_kv *toks = gguf_find_kv(&f, "tokenizer.ggml.tokens");
    CHECK(toks && toks->val.type == GGUF_VT_ARRAY && toks->val.v.a.n == p->n_vocab);
    CHECK(gguf_find_kv(&f, "tokenizer.ggml.model") != NULL);
#undef K

    n_checked = 0;
    const uint32_t T = p->type, E = p->n_embd, F = p->n_ff;
    const double sE = 1 / sqrt((double)E), sF = 1 / sqrt((double)F), sQ = 1 / sqrt((double)nq);
    expect(&f, "token_embd.weight", T, E, p->n_vocab, 1, 2, (p->tied ? HR_SYNTH_TIED_EMBD_STD : HR_SYNTH_EMBD_STD) * sE);
    expect(&f, "output_norm.weight", HR_F32, E, 1, 1, 1, 0);
    if (!p->tied) expect(&f, "output.weight", T, E, p->n_vocab, 1, 2, HR_SYNTH_OUT_STD * sE);
    CHECK(p->tied == !gguf_find_tensor(&f, "output.weight"));
    for (uint32_t l = 0; l < p->n_layer; l++) {
        char n[64];
#define N(s) (snprintf(n, sizeof n, "blk.%u." s ".weight", l), n)
        expect(&f, N("attn_norm"), HR_F32, E, 1, 1, 1, 0);
        expect(&f, N("ffn_norm"), HR_F32, E, 1, 1, 1, 0);
        expect(&f, N("attn_q"), T, E, nq, 1, 2, sE);
        expect(&f, N("attn_k"), T, E, nkv, 1, 2, sE);
        expect(&f, N("attn_v"), T, E, nkv, 1, 2, sE);
        expect(&f, N("attn_output"), T, nq, E, 1, 2, sQ);
        if (!strcmp(p->arch, "smallthinker")) {
            expect(&f, N("ffn_gate_inp"), HR_F32, E, 1, 1, 2, sE);
            expect(&f, N("ffn_gate_exps"), T, E, F, 1, 3, sE);
            expect(&f, N("ffn_up_exps"), T, E, F, 1, 3, sE);
            expect(&f, N("ffn_down_exps"), T, F, E, 1, 3, sF);
            continue;
        }
        if (p->act != HR_SYNTH_RELU) expect(&f, N("ffn_gate"), T, E, F, 1, 2, sE);
        expect(&f, N("ffn_up"), T, E, F, 1, 2, sE);
        if (p->powerinfer) {
            expect(&f, N("ffn_down_t"), T, E, F, 1, 2, sF);
            expect(&f, N("fc1"), T, E, p->pred_rank, 1, 2, sE);
            expect(&f, N("fc2"), T, p->pred_rank, F, 1, 2, 1 / sqrt((double)p->pred_rank));
        } else {
            expect(&f, N("ffn_down"), T, F, E, 1, 2, sF);
        }
#undef N
    }
    CHECKF(f.n_tensors == (uint64_t)n_checked, "%llu tensors in the file, %d expected", (unsigned long long)f.n_tensors,
           n_checked);
    uint64_t bytes = 0;
    for (uint64_t i = 0; i < f.n_tensors; i++) bytes += f.tensors[i].nbytes;
    CHECK(bytes == hr_synth_data_bytes(p));
    gguf_close(&f);
}

static int write_tmp(const hr_synth_params *p, char *path, size_t cap, const char *suffix) {
    hr_test_tmp(path, cap, suffix);
    hr_err e = {{0}};
    int r = hr_synth_write(p, path, &e);
    CHECKF(r == 0, "hr_synth_write %s: %s", suffix, e.msg);
    return r;
}

static void variants(void) {
    hr_synth_params v[10];
    int n = 0;
    v[n++] = small();
    v[n] = small(), v[n].type = HR_Q8_0, v[n].act = HR_SYNTH_REGLU, v[n].tokenizer = HR_TOK_BPE, v[n++].tied = true;
    v[n] = small(), v[n].type = HR_Q4_0, v[n].act = HR_SYNTH_DRELU, v[n].name = "tiny q4", v[n++].seed = 99;
    v[n] = small(), v[n].type = HR_F16, v[n++].act = HR_SYNTH_RELU;
    v[n] = small(), v[n].type = HR_BF16, v[n].n_head_kv = 2, v[n].head_dim = 32, v[n].rope_base = 500000.0f,
    v[n].rms_eps = 1e-6f, v[n++].n_ctx_train = 4096;
    v[n] = small(), v[n].arch = "smallthinker", v[n].type = HR_Q8_0, v[n++].act = HR_SYNTH_REGLU;
    v[n] = small(), v[n].arch = "exaone", v[n].type = HR_F16, v[n].n_head_kv = 1, v[n++].tied = true;
    v[n] = small(), v[n].powerinfer = true, v[n].act = HR_SYNTH_REGLU, v[n].pred_rank = 32, v[n].has_sparse_threshold = true,
    v[n++].sparse_threshold = 0.25f;
    v[n] = small(), v[n].powerinfer = true, v[n].type = HR_Q4_0, v[n].act = HR_SYNTH_DRELU, v[n++].pred_rank = 64;
    v[n] = small(), v[n].powerinfer = true, v[n].act = HR_SYNTH_RELU, v[n].pred_rank = 8, v[n++].type = HR_F16;
    for (int i = 0; i < n; i++) {
        char path[256], sfx[32];
        snprintf(sfx, sizeof sfx, "synth%d.gguf", i);
        if (write_tmp(&v[i], path, sizeof path, sfx)) continue;
        check_file(&v[i], path);
        remove(path);
    }
}

static void *read_all(const char *path, size_t *n) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long sz = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    void *b = malloc(sz > 0 ? (size_t)sz : 1);
    *n = b && fread(b, 1, (size_t)sz, fp) == (size_t)sz ? (size_t)sz : 0;
    fclose(fp);
    return b;
}

static void determinism(void) {
    hr_synth_params p = small();
    p.type = HR_Q8_0;
    char a[256], b[256], c[256];
    if (write_tmp(&p, a, sizeof a, "det_a.gguf") || write_tmp(&p, b, sizeof b, "det_b.gguf")) return;
    p.seed = 2;
    if (write_tmp(&p, c, sizeof c, "det_c.gguf")) return;
    size_t na, nb, nc;
    void *da = read_all(a, &na), *db = read_all(b, &nb), *dc = read_all(c, &nc);
    CHECK(da && db && dc && na > 0);
    CHECK(na == nb && da && db && !memcmp(da, db, na));
    CHECK(na == nc && da && dc && memcmp(da, dc, na) != 0); /* same layout, other values */
    free(da), free(db), free(dc);
    remove(a), remove(b), remove(c);
}

/* Float values of a tensor (any type). */
static float *values(const gguf_file *f, const char *name, uint64_t *n) {
    const gguf_tensor *t = gguf_find_tensor(f, name);
    CHECKF(t, "missing %s", name);
    if (!t) return NULL;
    *n = t->ne[0] * t->ne[1] * t->ne[2];
    float *v = malloc(*n * sizeof *v);
    if (v) hr_dequant_row(t->type, t->data, v, (int64_t)*n);
    return v;
}

/* One seed = one model across archs and variants; quantization stays close to f32. */
static void identities(void) {
    hr_synth_params p = small();
    p.act = HR_SYNTH_REGLU;
    char pd[256], ps[256], pp[256], pq[256];
    hr_synth_params st = p, pi = p, q = p;
    st.arch = "smallthinker";
    pi.powerinfer = true;
    pi.pred_rank = 16;
    q.type = HR_Q8_0;
    if (write_tmp(&p, pd, sizeof pd, "id_dense.gguf") || write_tmp(&st, ps, sizeof ps, "id_st.gguf") ||
        write_tmp(&pi, pp, sizeof pp, "id_pi.gguf") || write_tmp(&q, pq, sizeof pq, "id_q8.gguf"))
        return;
    gguf_file fd, fs, fp, fq;
    hr_err e = {{0}};
    if (gguf_open(&fd, pd, &e) || gguf_open(&fs, ps, &e) || gguf_open(&fp, pp, &e) || gguf_open(&fq, pq, &e)) {
        CHECKF(0, "open: %s", e.msg);
        return;
    }
    const char *pairs[][2] = {{"blk.1.ffn_gate.weight", "blk.1.ffn_gate_exps.weight"},
                              {"blk.1.ffn_up.weight", "blk.1.ffn_up_exps.weight"},
                              {"blk.1.ffn_down.weight", "blk.1.ffn_down_exps.weight"},
                              {"blk.0.attn_q.weight", "blk.0.attn_q.weight"},
                              {"token_embd.weight", "token_embd.weight"}};
    for (int i = 0; i < 5; i++) {
        uint64_t n1 = 0, n2 = 0;
        float *a = values(&fd, pairs[i][0], &n1), *b = values(&fs, pairs[i][1], &n2);
        CHECKF(a && b && n1 == n2 && !memcmp(a, b, n1 * sizeof *a), "%s differs from %s", pairs[i][0], pairs[i][1]);
        free(a), free(b);
    }
    uint64_t nd = 0, nt = 0, nq = 0;
    float *down = values(&fd, "blk.0.ffn_down.weight", &nd), *dt = values(&fp, "blk.0.ffn_down_t.weight", &nt);
    const uint64_t E = p.n_embd, F = p.n_ff;
    int bad = 0;
    if (down && dt && nd == E * F && nt == E * F)
        for (uint64_t r = 0; r < E; r++) /* ffn_down: E rows of F; ffn_down_t: F rows of E */
            for (uint64_t j = 0; j < F; j++) bad += down[r * F + j] != dt[j * E + r];
    CHECKF(down && dt && !bad, "ffn_down_t is not the transpose of ffn_down (%d mismatches)", bad);
    float *q8 = values(&fq, "blk.0.ffn_down.weight", &nq);
    double maxerr = 0;
    for (uint64_t i = 0; q8 && down && i < nd && nq == nd; i++) maxerr = fmax(maxerr, fabs(q8[i] - down[i]));
    /* Q8_0: step = max|x| / 127 per block; values are bounded by 3.47 std */
    CHECKF(q8 && maxerr > 0 && maxerr <= 3.47 / sqrt((double)F) / 127 * 0.5 + 1e-6, "q8_0 max error %g", maxerr);
    free(down), free(dt), free(q8);
    gguf_close(&fd), gguf_close(&fs), gguf_close(&fp), gguf_close(&fq);
    remove(pd), remove(ps), remove(pp), remove(pq);
}

static void rejects(void) {
    struct {
        const char *what, *msg;
        hr_synth_params p;
    } c[16];
    int n = 0;
#define BAD(field_set, text)                                                                                           \
    do {                                                                                                               \
        c[n].p = small();                                                                                              \
        hr_synth_params *q = &c[n].p;                                                                                  \
        field_set;                                                                                                     \
        c[n].what = #field_set;                                                                                        \
        c[n++].msg = text;                                                                                             \
    } while (0)
    BAD(q->n_embd = 66, "multiple of n_head");
    BAD(q->n_embd = 60, "head_dim");
    BAD(q->n_head_kv = 3, "n_head_kv");
    BAD((q->type = HR_Q8_0, q->n_ff = 100), "n_ff");
    BAD((q->type = HR_Q4_0, q->n_embd = 80, q->n_head = 4), "n_embd");
    BAD(q->n_vocab = 100, "n_vocab");
    BAD(q->n_layer = 0, "n_layer");
    BAD(q->type = HR_I32, "type");
    BAD((q->arch = "smallthinker", q->act = HR_SYNTH_SWIGLU), "reglu");
    BAD((q->arch = "exaone", q->act = HR_SYNTH_REGLU), "swiglu");
    BAD((q->arch = "exaone", q->powerinfer = true), "powerinfer");
    BAD((q->powerinfer = true, q->type = HR_Q8_0, q->pred_rank = 20), "pred_rank");
    BAD((q->has_sparse_threshold = true, q->sparse_threshold = 0.5f), "sparse_threshold");
    BAD(q->rms_eps = 0, "rms_eps");
    BAD(q->head_dim = 7, "head_dim");
#undef BAD
    for (int i = 0; i < n; i++) {
        hr_err e = {{0}};
        char path[256];
        hr_test_tmp(path, sizeof path, "bad.gguf");
        CHECKF(hr_synth_validate(&c[i].p, &e) < 0, "accepted: %s", c[i].what);
        CHECKF(strstr(e.msg, c[i].msg), "%s: message '%s' does not name %s", c[i].what, e.msg, c[i].msg);
        CHECKF(hr_synth_write(&c[i].p, path, &e) < 0, "wrote: %s", c[i].what);
        CHECKF(hr_synth_data_bytes(&c[i].p) == 0, "sized: %s", c[i].what);
        FILE *fp = fopen(path, "rb");
        CHECKF(!fp, "file left behind: %s", c[i].what);
        if (fp) fclose(fp), remove(path);
    }
    hr_synth_params ok = small();
    hr_err e = {{0}};
    CHECK(hr_synth_validate(&ok, &e) == 0);
    CHECK(hr_synth_write(&ok, "", &e) < 0);
    CHECK(hr_synth_write(&ok, "/nonexistent-dir/x.gguf", &e) < 0 && e.msg[0]);
}

static void names(void) {
    for (int a = 0; a <= HR_SYNTH_GEGLU; a++) CHECK(hr_synth_act_from_name(hr_synth_act_name((hr_synth_act)a)) == a);
    CHECK(hr_synth_act_from_name("swish") == -1);
    /* every architecture of the engine's table can be synthesized and loaded back */
    for (size_t i = 0; i < hr_arch_count(); i++) {
        hr_synth_params p;
        hr_synth_defaults(&p);
        p.arch = hr_arch_at(i)->name, p.act = hr_synth_default_act(p.arch, false);
        if (hr_arch_at(i)->moe_required && !hr_arch_at(i)->one_expert) p.n_expert = 4; /* qwen3moe: experts only */
        hr_err e = {{0}};
        CHECKF(hr_synth_validate(&p, &e) == 0, "%s: %s", p.arch, e.msg);
    }
    hr_synth_params q;
    hr_synth_defaults(&q);
    q.arch = "gpt2";
    hr_err e = {{0}};
    CHECK(hr_synth_validate(&q, &e) < 0 && strstr(e.msg, "unknown arch 'gpt2'"));
    CHECK(hr_synth_ftype(HR_BF16) == 32 && hr_synth_ftype(HR_Q8_0) == 7 && hr_synth_ftype(HR_I32) == UINT32_MAX);
}

static void progress_cb(void *ud, uint64_t done, uint64_t total) {
    uint64_t *s = ud;
    CHECK(done <= total && done >= s[0]);
    s[0] = done;
    s[1] = total;
    s[2]++;
}

static void progress(void) {
    hr_synth_params p = small();
    uint64_t s[3] = {0, 0, 0};
    p.progress = progress_cb;
    p.progress_ud = s;
    char path[256];
    if (write_tmp(&p, path, sizeof path, "progress.gguf")) return;
    CHECK(s[2] >= 2 && s[0] == s[1] && s[1] == hr_synth_data_bytes(&p));
    remove(path);
}

/* gpt-oss files: expert tensors of their own type (the rest in --type), sinks and biases,
 * the window key even when unset; expert types checked against the shapes. */
static void expert_type(void) {
    hr_synth_params p = small();
    p.arch = "gpt-oss", p.n_expert = 4, p.has_expert_type = true, p.expert_type = HR_MXFP4;
    char path[256];
    if (write_tmp(&p, path, sizeof path, "gptoss.gguf")) return;
    gguf_file f;
    hr_err e = {{0}};
    if (!gguf_open(&f, path, &e)) {
        const gguf_tensor *g = gguf_find_tensor(&f, "blk.1.ffn_gate_exps.weight"), *q = gguf_find_tensor(&f, "blk.1.attn_q.weight");
        const gguf_tensor *sk = gguf_find_tensor(&f, "blk.0.attn_sinks.weight"), *db = gguf_find_tensor(&f, "blk.0.ffn_down_exps.bias");
        uint32_t swa = 0;
        CHECK(g && g->type == HR_MXFP4 && g->ne[2] == 4 && q && q->type == HR_F32);
        CHECK(sk && sk->ne[0] == 4 && sk->type == HR_F32 && db && db->ne[0] == 64 && db->ne[1] == 4);
        CHECK(gguf_find_tensor(&f, "blk.0.post_attention_norm.weight") && !gguf_find_tensor(&f, "blk.0.ffn_norm.weight"));
        CHECK(gguf_get_u32(&f, "gpt-oss.attention.sliding_window", &swa, &e) == 0 && swa == 128);
        gguf_close(&f);
    } else CHECKF(0, "%s", e.msg);
    remove(path);
    p.n_ff = 80; /* not a whole number of MXFP4 blocks */
    CHECK(hr_synth_validate(&p, &e) < 0 && strstr(e.msg, "expert type mxfp4"));
    p = small();
    p.has_expert_type = true, p.expert_type = HR_Q8_0; /* a dense model has no experts */
    CHECK(hr_synth_validate(&p, &e) < 0 && strstr(e.msg, "expert_type need n_expert > 0"));
}

int main(void) {
    names();
    expert_type();
    variants();
    determinism();
    identities();
    rejects();
    progress();
    return TEST_END();
}
