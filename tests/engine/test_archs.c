/* PowerInfer's architectures (bamboo, falcon 7B and 40B layouts, opt) and Gemma 2/3
 * against the independent double-precision reference: batched prompts and token-by-token decoding,
 * F32 and quantized weights, dense GGUF and PowerInfer (PWRI) files; the activation each
 * file resolves to; and one load error per missing or misshapen arch-specific tensor. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "formats/gguf.h"
#include "formats/types.h"
#include "hearth.h"
#include "reference.h"
#include "synth/synth.h"
#include "testutil.h"

#define N_TOK 12

typedef struct {
    const char *what;
    const char * arch;
    hr_synth_act act;
    uint32_t type;
    uint32_t n_head_kv;
    bool f40b, powerinfer;
    hearth_ffn_mode mode;
    double tol, tol_med; /* bounds on every position's and the median position's max |logit difference| */
} acase;

/* Gemma's settings of a case: layers, head size, window, soft-caps, RoPE bases (0: the synth
 * default, or the key not written). */
typedef struct {
    uint32_t n_layer, head_dim, n_swa;
    float attn_cap, final_cap, rope_base, rope_base_swa;
} gemma_opts;

/* Tolerances. F32 accumulates in float: 2e-3 is generous. Quantized weights make the
 * reference and the engine round the same activations (Q8_0 blocks; GELU's F16 input and
 * output), so most positions agree to ~1e-6; but float-vs-double noise can flip one such
 * rounding (one Q8_0 step = 1/127 of a block's max), which moves that position's logits,
 * and later ones through its K/V (all heads with one KV head), by up to ~0.2 here (logit
 * std ~4). Hence a loose bound per position (0.5) and a tighter one on the median (5e-2):
 * a real defect moves every position by far more. */
static const acase cases[] = {
    {"bamboo f32 gqa", "bamboo", HR_SYNTH_DRELU, HR_F32, 2, false, false, HEARTH_FFN_DENSE, 2e-3, 2e-3},
    {"bamboo q8_0", "bamboo", HR_SYNTH_DRELU, HR_Q8_0, 4, false, false, HEARTH_FFN_DENSE, 0.5, 5e-2},
    {"falcon-7b gelu f32 mqa", "falcon", HR_SYNTH_GELU, HR_F32, 1, false, false, HEARTH_FFN_DENSE, 2e-3, 2e-3},
    {"falcon-40b relu f32", "falcon", HR_SYNTH_RELU, HR_F32, 2, true, false, HEARTH_FFN_DENSE, 2e-3, 2e-3},
    {"falcon-7b gelu q4_0", "falcon", HR_SYNTH_GELU, HR_Q4_0, 1, false, false, HEARTH_FFN_DENSE, 0.5, 5e-2},
    {"falcon-40b gelu q8_0", "falcon", HR_SYNTH_GELU, HR_Q8_0, 2, true, false, HEARTH_FFN_DENSE, 0.5, 5e-2},
    {"opt f32", "opt", HR_SYNTH_RELU, HR_F32, 8, false, false, HEARTH_FFN_DENSE, 2e-3, 2e-3},
    {"opt q4_0", "opt", HR_SYNTH_RELU, HR_Q4_0, 8, false, false, HEARTH_FFN_DENSE, 0.5, 5e-2},
    /* PowerInfer files (ffn_down_t, predictors) in dense mode, and exact mode, which must
     * agree with dense for these ReLU-family FFNs. */
    {"bamboo pwri f32", "bamboo", HR_SYNTH_DRELU, HR_F32, 2, false, true, HEARTH_FFN_DENSE, 2e-3, 2e-3},
    {"falcon-40b pwri f32", "falcon", HR_SYNTH_RELU, HR_F32, 2, true, true, HEARTH_FFN_DENSE, 2e-3, 2e-3},
    {"opt pwri f32", "opt", HR_SYNTH_RELU, HR_F32, 8, false, true, HEARTH_FFN_DENSE, 2e-3, 2e-3},
    {"opt pwri f32 exact", "opt", HR_SYNTH_RELU, HR_F32, 8, false, true, HEARTH_FFN_EXACT, 2e-3, 2e-3},
    {"falcon-7b pwri f32 exact", "falcon", HR_SYNTH_RELU, HR_F32, 1, false, true, HEARTH_FFN_EXACT, 2e-3, 2e-3},
};

/* Gemma with a window of 5 that the 12 positions cross, caps near the score and logit
 * sizes (scores ~1, logits ~1..4: a cap left out moves them by O(1)). The reference
 * emulates GEGLU's F16 rounding as GELU's, so F32 keeps the F32 bounds. */
static const struct { acase c; gemma_opts g; } gemma_cases[] = {
    {{"gemma2 f32 swa caps", "gemma2", HR_SYNTH_GEGLU, HR_F32, 2, false, false, HEARTH_FFN_DENSE, 2e-3, 2e-3},
     {2, 0, 5, 2.0f, 3.0f, 0, 0}},
    {{"gemma2 q8_0 default caps", "gemma2", HR_SYNTH_GEGLU, HR_Q8_0, 4, false, false, HEARTH_FFN_DENSE, 0.5, 5e-2},
     {2, 0, 5, 0, 0, 0, 0}},
    {{"gemma3 f32 hd 32 6 layers", "gemma3", HR_SYNTH_GEGLU, HR_F32, 2, false, false, HEARTH_FFN_DENSE, 2e-3, 2e-3},
     {6, 32, 5, 0, 0, 1e6f, 0}},
    {{"gemma3 q4_0 final cap", "gemma3", HR_SYNTH_GEGLU, HR_Q4_0, 2, false, false, HEARTH_FFN_DENSE, 0.5, 5e-2},
     {3, 0, 5, 0, 3.0f, 1e6f, 3e4f}},
};

static void gemma_params(const gemma_opts *g, hr_synth_params *p) {
    if (g->n_layer) p->n_layer = g->n_layer;
    p->head_dim = g->head_dim, p->n_swa = g->n_swa, p->attn_softcap = g->attn_cap, p->final_softcap = g->final_cap;
    if (g->rope_base > 0) p->rope_base = g->rope_base;
    p->rope_base_swa = g->rope_base_swa;
}

static void params(const acase *ac, hr_synth_params *p) {
    hr_synth_defaults(p);
    p->arch = ac->arch, p->act = ac->act, p->type = ac->type, p->n_head_kv = ac->n_head_kv;
    p->falcon_40b = ac->f40b, p->powerinfer = ac->powerinfer, p->pred_rank = 32;
    p->n_embd = 128, p->n_head = 8, p->n_ff = 256, p->n_vocab = 320, p->n_layer = 2, p->seed = 11, p->n_ctx_train = 64;
}

static bool synth(const hr_synth_params *p, const char *path) {
    hr_err e;
    bool ok = hr_synth_write(p, path, &e) == 0;
    CHECKF(ok, "synth: %s", e.msg);
    return ok;
}

static hearth_ctx *make_ctx(hearth_model *m, hearth_ffn_mode mode, int threads, int batch, int n_ctx) {
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = n_ctx, cp.n_threads = threads, cp.n_batch = batch, cp.kv_k = cp.kv_v = HEARTH_KV_F32, cp.ffn_mode = mode;
    cp.gpu = HEARTH_GPU_OFF; /* the CPU path's results (the default, auto, would take a GPU) */
    hr_err e;
    hearth_ctx *c = hearth_ctx_new(m, &cp, &e);
    CHECKF(c != NULL, "ctx: %s", e.msg);
    return c;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

static double max_diff(const float *a, const double *b, int n) {
    double d = 0;
    for (int i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

static void check_case(const acase *ac, const gemma_opts *g, const int32_t *toks) {
    char path[256];
    hr_synth_params p;
    params(ac, &p);
    if (g) gemma_params(g, &p);
    if (!synth(&p, hr_test_tmp(path, sizeof path, "arch.gguf"))) return;
    hr_err e;
    hearth_model *m = hearth_model_load(path, NULL, &e);
    ref_model *r = ref_load(path);
    CHECKF(m && r, "%s: load: %s", ac->what, m ? "reference" : e.msg);
    if (!m || !r) {
        hearth_model_free(m), ref_free(r), remove(path);
        return;
    }
    int nv = ref_n_vocab(r);
    double *want = malloc(sizeof(double) * N_TOK * (size_t)nv);
    ref_forward(r, toks, N_TOK, want);
    hearth_ctx *c = make_ctx(m, ac->mode, 2, 5, 64); /* batch 5: the prompt spans 3 chunks */
    CHECK(c && !hearth_eval(c, toks, N_TOK, 0, true, &e));
    double worst = 0, err[N_TOK] = {0}, err1[N_TOK] = {0};
    for (int t = 0; c && t < N_TOK; t++) worst = fmax(worst, err[t] = max_diff(hearth_logits(c, t), want + (size_t)t * nv, nv));
    double med = median(err, N_TOK);
    CHECKF(worst <= ac->tol && med <= ac->tol_med, "%s: batched logits differ from the reference by %g (median position %g)",
           ac->what, worst, med);
    /* Token-by-token decoding must agree with the batched prompt. */
    hearth_ctx *c1 = make_ctx(m, ac->mode, 1, 1, 64);
    double worst1 = 0;
    for (int t = 0; c1 && t < N_TOK; t++) {
        CHECK(!hearth_eval(c1, &toks[t], 1, t, false, &e));
        worst1 = fmax(worst1, err1[t] = max_diff(hearth_logits(c1, -1), want + (size_t)t * nv, nv));
    }
    double med1 = median(err1, N_TOK);
    CHECKF(worst1 <= ac->tol && med1 <= ac->tol_med, "%s: decoded logits differ from the reference by %g (median position %g)",
           ac->what, worst1, med1);
    printf("%-26s batched %.3g decoded %.3g, medians %.3g %.3g (tolerance %g)\n", ac->what, worst, worst1, med, med1, ac->tol);
    hearth_ctx_free(c), hearth_ctx_free(c1);
    hearth_model_free(m), ref_free(r), free(want);
    remove(path);
}

/* ---- file mutations ---- */

typedef struct {
    const char *drop_tensor;  /* tensor left out */
    const char *shrink;       /* tensor written with ne0 halved (its first half) */
    const char *drop_key;     /* key left out */
    const char *str_key, *str_val;
} mutation;

static int rewrite(const char *src, const char *dst, const mutation *mu) {
    gguf_file f;
    hr_err e;
    if (gguf_open(&f, src, &e)) return -1;
    gguf_writer *w = gguf_writer_new(f.sparse);
    for (uint64_t i = 0; i < f.n_kv; i++) {
        const gguf_kv *kv = &f.kv[i];
        if (mu->drop_key && gguf_str_eq(kv->key, mu->drop_key)) continue;
        if (mu->str_key && gguf_str_eq(kv->key, mu->str_key)) continue;
        gguf_w_kv_copy(w, kv);
    }
    if (mu->str_key) gguf_w_str(w, mu->str_key, mu->str_val);
    for (uint64_t i = 0; i < f.n_tensors; i++) {
        const gguf_tensor *t = &f.tensors[i];
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        if (mu->drop_tensor && !strcmp(name, mu->drop_tensor)) continue;
        uint64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]}, nbytes = t->nbytes;
        if (mu->shrink && !strcmp(name, mu->shrink)) ne[0] /= 2, nbytes = hr_row_bytes(t->type, ne[0]) * ne[1] * ne[2] * ne[3];
        gguf_w_tensor(w, name, t->type, t->n_dims, ne, t->data, nbytes);
    }
    int r = gguf_w_write(w, dst, &e);
    if (r) fprintf(stderr, "rewrite: %s\n", e.msg);
    gguf_writer_free(w);
    gguf_close(&f);
    return r;
}

/* Loads base with one mutation; needle NULL: must load, and *act (if given) is its FFN activation. */
static void expect(const char *base, const mutation *mu, const char *needle, const char *act) {
    char path[256];
    CHECK(rewrite(base, hr_test_tmp(path, sizeof path, "mut.gguf"), mu) == 0);
    hr_err e = {{0}};
    hearth_model *m = hearth_model_load(path, NULL, &e);
    if (needle)
        CHECKF(m == NULL && strstr(e.msg, needle), "expected an error containing \"%s\", got \"%s\"", needle, m ? "(loaded)" : e.msg);
    else
        CHECKF(m && (!act || !strcmp(hearth_model_get_info(m)->ffn_act, act)), "expected a %s model, got %s", act ? act : "loaded",
               m ? hearth_model_get_info(m)->ffn_act : e.msg);
    hearth_model_free(m);
    remove(path);
}

static void check_load(void) {
    char fal[256], f40[256], fpi[256], opt[256], opi[256], bam[256];
    hr_synth_params p;
    params(&cases[2], &p), p.n_embd = 64, p.n_ff = 128, p.n_head = 4;
    bool ok = synth(&p, hr_test_tmp(fal, sizeof fal, "fal.gguf"));
    p.falcon_40b = true, p.n_head_kv = 2;
    ok = ok && synth(&p, hr_test_tmp(f40, sizeof f40, "f40.gguf"));
    p.powerinfer = true, p.act = HR_SYNTH_RELU;
    ok = ok && synth(&p, hr_test_tmp(fpi, sizeof fpi, "fpi.gguf"));
    params(&cases[6], &p), p.n_embd = 64, p.n_ff = 128, p.n_head = 4, p.n_head_kv = 4;
    ok = ok && synth(&p, hr_test_tmp(opt, sizeof opt, "opt.gguf"));
    p.powerinfer = true;
    ok = ok && synth(&p, hr_test_tmp(opi, sizeof opi, "opi.gguf"));
    params(&cases[0], &p), p.n_embd = 64, p.n_ff = 128, p.n_head = 4;
    ok = ok && synth(&p, hr_test_tmp(bam, sizeof bam, "bam.gguf"));
    if (!ok) return;

    expect(fal, &(mutation){0}, NULL, "gelu");
    expect(fal, &(mutation){.drop_tensor = "blk.1.attn_qkv.weight"}, "missing tensor 'blk.1.attn_qkv.weight'", NULL);
    expect(fal, &(mutation){.shrink = "blk.0.attn_qkv.weight"}, "tensor 'blk.0.attn_qkv.weight' has shape", NULL);
    expect(fal, &(mutation){.drop_tensor = "blk.0.attn_norm.bias"}, "missing tensor 'blk.0.attn_norm.bias'", NULL);
    expect(fal, &(mutation){.shrink = "output_norm.bias"}, "tensor 'output_norm.bias' has shape", NULL);
    expect(f40, &(mutation){.drop_tensor = "blk.0.attn_norm_2.bias"}, "missing tensor 'blk.0.attn_norm_2.bias'", NULL);
    /* Without the Hearth key: GELU in a plain GGUF (llama.cpp's falcon), ReLU in PWRI. */
    expect(fal, &(mutation){.drop_key = "hearth.ffn_activation"}, NULL, "gelu");
    expect(fpi, &(mutation){.drop_key = "hearth.ffn_activation"}, NULL, "relu");
    expect(fal, &(mutation){.str_key = "hearth.ffn_activation", .str_val = "relu"}, NULL, "relu");
    expect(opt, &(mutation){.drop_tensor = "position_embd.weight"}, "missing tensor 'position_embd.weight'", NULL);
    expect(opt, &(mutation){.shrink = "blk.0.attn_q.bias"}, "tensor 'blk.0.attn_q.bias' has shape", NULL);
    expect(opt, &(mutation){.shrink = "blk.1.ffn_up.bias"}, "tensor 'blk.1.ffn_up.bias' has shape", NULL);
    expect(opt, &(mutation){.drop_tensor = "blk.1.attn_output.bias"}, "missing tensor 'blk.1.attn_output.bias'", NULL);
    expect(opt, &(mutation){.drop_tensor = "blk.0.ffn_down.bias"}, "blk.0.ffn_down.bias", NULL);
    expect(opi, &(mutation){.shrink = "blk.0.ffn_down_t.bias"}, "tensor 'blk.0.ffn_down_t.bias' has shape", NULL);
    expect(opt, &(mutation){.drop_tensor = "blk.0.ffn_norm.bias"}, "missing tensor 'blk.0.ffn_norm.bias'", NULL);
    expect(opt, &(mutation){.drop_key = "hearth.ffn_activation"}, NULL, "relu");
    expect(bam, &(mutation){.drop_key = "hearth.ffn_activation"}, NULL, "drelu");
    expect(bam, &(mutation){.drop_tensor = "blk.0.ffn_gate.weight"}, "missing tensor 'blk.0.ffn_gate.weight'", NULL);
    /* bamboo's entry fixes dReLU: the key cannot change it */
    expect(bam, &(mutation){.str_key = "hearth.ffn_activation", .str_val = "gelu"}, NULL, "drelu");
    expect(bam, &(mutation){.str_key = "general.architecture", .str_val = "gpt2"},
           "unknown architecture 'gpt2' (supported: llama, exaone, smallthinker, bamboo, falcon, opt, qwen2, qwen3", NULL); /* later entries follow */
    remove(fal), remove(f40), remove(fpi), remove(opt), remove(opi), remove(bam);
}

/* OPT's positions are a table: the usable context is its rows minus the offset 2, and
 * evaluating past it is an error, not a read out of bounds. */
static void check_opt_positions(void) {
    char path[256];
    hr_synth_params p;
    params(&cases[6], &p), p.n_ctx_train = 16;
    if (!synth(&p, hr_test_tmp(path, sizeof path, "pos.gguf"))) return;
    hr_err e = {{0}};
    hearth_model *m = hearth_model_load(path, NULL, &e);
    CHECKF(m != NULL, "%s", e.msg);
    if (!m) return;
    CHECK(hearth_model_get_info(m)->n_ctx_train == 16);
    hearth_ctx *c = make_ctx(m, HEARTH_FFN_DENSE, 1, 8, 32);
    int32_t toks[4] = {5, 6, 7, 8};
    CHECK(c && !hearth_eval(c, toks, 4, 12, false, &e));
    CHECK(c && hearth_eval(c, toks, 4, 13, false, &e) < 0 && strstr(e.msg, "learned positions"));
    hearth_ctx_free(c);
    hearth_model_free(m);
    remove(path);
}

/* GELU is not ReLU-family: 'exact' would drop neurons whose small GELU is not zero. */
static void check_gelu_exact_rejected(void) {
    char path[256];
    hr_synth_params p;
    params(&cases[2], &p);
    if (!synth(&p, hr_test_tmp(path, sizeof path, "gelu.gguf"))) return;
    hr_err e = {{0}};
    hearth_model *m = hearth_model_load(path, NULL, &e);
    CHECKF(m != NULL, "%s", e.msg);
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = 16, cp.ffn_mode = HEARTH_FFN_EXACT, cp.gpu = HEARTH_GPU_OFF;
    hearth_ctx *c = m ? hearth_ctx_new(m, &cp, &e) : NULL;
    CHECKF(m && !c && strstr(e.msg, "gelu"), "exact mode on a GELU model: %s", c ? "accepted" : e.msg);
    hearth_ctx_free(c);
    hearth_model_free(m);
    remove(path);
}

int main(void) {
    hr_rng rng = {7};
    int32_t toks[N_TOK];
    for (int i = 0; i < N_TOK; i++) toks[i] = (int32_t)(hr_rng_next(&rng) % 320);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i], NULL, toks);
    for (size_t i = 0; i < sizeof gemma_cases / sizeof gemma_cases[0]; i++) check_case(&gemma_cases[i].c, &gemma_cases[i].g, toks);
    check_load();
    check_opt_positions();
    check_gelu_exact_rejected();
    return TEST_END();
}
