/* The engine's logits against an independent double-precision forward pass, for every
 * FFN activation, both RoPE layouts, GQA, tied output, each weight type and KV type;
 * batched prompts against token-by-token decoding; determinism across thread counts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "hearth.h"
#include "reference.h"
#include "synth/synth.h"
#include "testutil.h"
#include "formats/types.h"

#define N_TOK 12

typedef struct {
    const char *what;
    const char * arch;
    hr_synth_act act;
    uint32_t type;
    uint32_t n_head_kv;
    bool tied;
    hearth_kv_type kv;
    double tol; /* max |logit difference|; logits have std ~4 (HR_SYNTH_OUT_STD) */
} fcase;

/* Tolerances: F32 weights and cache accumulate in float over a few hundred terms, about
 * 1e-6 relative per dot, so 2e-3 absolute is generous. The reference rounds activations
 * the way the weight type's dot product does (F16, BF16, Q8_0 blocks), so typical
 * differences stay near 1e-6; but float-vs-double noise can flip one rounding decision
 * (one F16 ulp = 5e-4 relative, one Q8_0 step = 1/127 of a block's max), which then
 * propagates: flips seen on these shapes moved logits by up to 8e-3, hence 5e-2.
 * An F16 cache rounds K, V, q and the attention weights to F16 (relative 5e-4 each),
 * which the reference does not emulate: measured 8e-3, bound 5e-2. */
static const fcase cases[] = {
    {"llama swiglu f32 gqa", "llama", HR_SYNTH_SWIGLU, HR_F32, 2, false, HEARTH_KV_F32, 2e-3},
    {"llama reglu f32", "llama", HR_SYNTH_REGLU, HR_F32, 8, false, HEARTH_KV_F32, 2e-3},
    {"llama drelu f32", "llama", HR_SYNTH_DRELU, HR_F32, 4, false, HEARTH_KV_F32, 2e-3},
    {"llama relu f32", "llama", HR_SYNTH_RELU, HR_F32, 8, false, HEARTH_KV_F32, 2e-3},
    {"exaone neox f32 tied", "exaone", HR_SYNTH_SWIGLU, HR_F32, 2, true, HEARTH_KV_F32, 2e-3},
    {"smallthinker reglu f32", "smallthinker", HR_SYNTH_REGLU, HR_F32, 4, false, HEARTH_KV_F32, 2e-3},
    {"llama f32 kv f16", "llama", HR_SYNTH_SWIGLU, HR_F32, 2, false, HEARTH_KV_F16, 5e-2},
    {"llama f16", "llama", HR_SYNTH_SWIGLU, HR_F16, 2, false, HEARTH_KV_F32, 5e-2},
    {"llama bf16", "llama", HR_SYNTH_SWIGLU, HR_BF16, 2, false, HEARTH_KV_F32, 5e-2},
    {"llama q8_0", "llama", HR_SYNTH_SWIGLU, HR_Q8_0, 2, false, HEARTH_KV_F32, 5e-2},
    {"llama q4_0", "llama", HR_SYNTH_SWIGLU, HR_Q4_0, 2, false, HEARTH_KV_F32, 5e-2},
};

static void synth(const fcase *fc, const char *path) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.arch = fc->arch, p.act = fc->act, p.type = fc->type, p.n_head_kv = fc->n_head_kv, p.tied = fc->tied;
    p.n_embd = 128, p.n_head = 8, p.n_ff = 256, p.n_vocab = 320, p.n_layer = 2, p.seed = 7;
    hr_err e;
    if (hr_synth_write(&p, path, &e)) {
        fprintf(stderr, "synth: %s\n", e.msg);
        exit(1);
    }
}

static hearth_ctx *make_ctx(hearth_model *m, hearth_kv_type kv, int threads, int batch) {
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = 64, cp.n_threads = threads, cp.n_batch = batch, cp.kv_k = cp.kv_v = kv;
    cp.gpu = HEARTH_GPU_OFF; /* the CPU path against the reference (the default, auto, would take a GPU) */
    hr_err e;
    hearth_ctx *c = hearth_ctx_new(m, &cp, &e);
    if (!c) fprintf(stderr, "ctx: %s\n", e.msg);
    return c;
}

static double max_diff_ref(const float *a, const double *b, int n) {
    double d = 0;
    for (int i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

static void check_case(const fcase *fc, const int32_t *toks) {
    char path[256];
    synth(fc, hr_test_tmp(path, sizeof path, "fwd.gguf"));
    hr_err e;
    hearth_model *m = hearth_model_load(path, NULL, &e);
    ref_model *r = ref_load(path);
    CHECKF(m && r, "%s: load: %s", fc->what, m ? "reference" : e.msg);
    if (!m || !r) return;
    int nv = ref_n_vocab(r);
    double *want = malloc(sizeof(double) * N_TOK * (size_t)nv);
    ref_forward(r, toks, N_TOK, want);
    hearth_ctx *c = make_ctx(m, fc->kv, 2, 5); /* batch 5: the prompt spans 3 chunks */
    CHECK(c && !hearth_eval(c, toks, N_TOK, 0, true, &e));
    double worst = 0;
    for (int t = 0; c && t < N_TOK; t++) worst = fmax(worst, max_diff_ref(hearth_logits(c, t), want + (size_t)t * nv, nv));
    CHECKF(worst <= fc->tol, "%s: batched logits differ from the reference by %g (tolerance %g)", fc->what, worst, fc->tol);
    /* Token-by-token decoding must agree with the batched prompt. */
    hearth_ctx *c1 = make_ctx(m, fc->kv, 1, 1);
    double worst1 = 0;
    for (int t = 0; c1 && t < N_TOK; t++) {
        CHECK(!hearth_eval(c1, &toks[t], 1, t, false, &e));
        worst1 = fmax(worst1, max_diff_ref(hearth_logits(c1, -1), want + (size_t)t * nv, nv));
    }
    CHECKF(worst1 <= fc->tol, "%s: decoded logits differ from the reference by %g (tolerance %g)", fc->what, worst1, fc->tol);
    printf("%-24s batched %.3g decoded %.3g (tolerance %g)\n", fc->what, worst, worst1, fc->tol);
    hearth_ctx_free(c), hearth_ctx_free(c1);
    hearth_model_free(m), ref_free(r), free(want);
    remove(path);
}

/* For a given thread count results are reproducible, and since every output row and
 * attention head is computed whole by one thread, they do not depend on the count. */
static void check_threads(const int32_t *toks) {
    fcase fc = cases[9];
    char path[256];
    synth(&fc, hr_test_tmp(path, sizeof path, "thr.gguf"));
    hr_err e;
    hearth_model *m = hearth_model_load(path, NULL, &e);
    CHECK(m != NULL);
    if (!m) return;
    int nv = hearth_model_get_info(m)->n_vocab;
    float *first = malloc(sizeof(float) * (size_t)nv);
    int threads[] = {1, 2, 3, 2};
    for (int k = 0; k < 4; k++) {
        hearth_ctx *c = make_ctx(m, HEARTH_KV_F16, threads[k], 512);
        CHECK(!hearth_eval(c, toks, N_TOK, 0, false, &e));
        if (k == 0) memcpy(first, hearth_logits(c, -1), sizeof(float) * (size_t)nv);
        else CHECKF(!memcmp(first, hearth_logits(c, -1), sizeof(float) * (size_t)nv), "logits with %d threads differ", threads[k]);
        hearth_ctx_free(c);
    }
    free(first);
    hearth_model_free(m);
    remove(path);
}

static void check_errors(const int32_t *toks) {
    fcase fc = cases[0];
    char path[256];
    synth(&fc, hr_test_tmp(path, sizeof path, "err.gguf"));
    hr_err e = {{0}};
    hearth_model *m = hearth_model_load(path, NULL, &e);
    hearth_ctx *c = make_ctx(m, HEARTH_KV_F32, 1, 8);
    CHECK(hearth_eval(c, toks, 10, 60, false, &e) < 0 && strstr(e.msg, "context"));
    int32_t bad = 320;
    CHECK(hearth_eval(c, &bad, 1, 0, false, &e) < 0 && strstr(e.msg, "vocabulary"));
    CHECK(hearth_eval(c, toks, 0, 0, false, &e) < 0);
    hearth_ctx_free(c);
    hearth_model_free(m);
    remove(path);
    CHECK(hearth_model_load("/nonexistent/model.gguf", NULL, &e) == NULL && strstr(e.msg, "nonexistent"));
}

int main(void) {
    hr_rng rng = {42};
    int32_t toks[N_TOK];
    for (int i = 0; i < N_TOK; i++) toks[i] = (int32_t)(hr_rng_next(&rng) % 320);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i], toks);
    check_threads(toks);
    check_errors(toks);
    return TEST_END();
}
