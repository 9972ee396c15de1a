/* Device attention of the layers users run most: Llama-3.1 RoPE frequency factors with
 * YaRN (rope_freqs, rope.scaling.type yarn), Qwen2's q/k/v biases, Qwen3's per-head q/k
 * RMSNorms, phi3's LongRoPE factors with its attention factor and OPT's four biases. Each
 * synthetic file runs on the stand-in device (or, with HEARTH_TEST_GPU=cuda, the CUDA
 * backend: a GPU or the CPU emulator) against the CPU path: the logits of a prompt batch
 * and of greedy decodes within the hybrid tolerance and the same greedy tokens, with the
 * attention of every placed layer on the device: whole layers at about 25% and 100% of the
 * FFN (dense files, by budget), -ngl over all layers and the output, and the attention of a
 * PowerInfer file (dense parts; llama's predictor fused with it) with its FFN on the host. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/device/standin.h"
#include "engine/context.h"
#include "engine/gpu_plan.h"
#include "engine/hybrid.h"
#include "formats/types.h"
#include "synth/synth.h"
#include "hybrid_env.h"
#include "testutil.h"

#define GIB 1073741824.0
#define NP 10 /* prompt tokens */
#define ND 6  /* decoded tokens */
#define NL 4  /* layers: one whole layer is 25% of the FFN */

static int32_t prompt[NP];
static hearth_gpu_mode dev = HEARTH_GPU_STANDIN;
static uint64_t dev_over = HR_STANDIN_OVERHEAD;

/* As test_hybrid_model: the stand-in sums like the CPU; CUDA's other summation orders
 * reach a few 1e-3 through the layers. */
static double tol_for(double standin) { return dev == HEARTH_GPU_CUDA && standin < 1e-2 ? 1e-2 : standin; }

typedef struct {
    hearth_gpu_mode gpu;
    double budget_gib;
    int ngl;
} setup;

static int32_t argmax(const float *x, int n) {
    int32_t b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* The CPU run's greedy tokens, which the device runs decode too: a near-tie between two logits
 * may go either way under another summation order, and decoding its own choice would then
 * compare logits of different sequences. */
static int32_t ref_tok[ND];
static bool forced;

/* Logits of the prompt and of ND greedy decodes into out [(NP + ND)][n_vocab]; with forced the
 * decodes take ref_tok, without they choose greedily and record it there. */
static int run(hearth_model *m, const setup *s, hearth_ffn_mode mode, float *out, hearth_gpu_status *st) {
    hr_err e = {{0}};
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = 32, cp.n_threads = 2, cp.n_batch = 16, cp.ffn_mode = mode, cp.n_seq = 1;
    cp.gpu = s->gpu, cp.vram_budget_gib = s->budget_gib, cp.n_gpu_layers = s->ngl, cp.disable_gpu_index = true;
    hearth_ctx *c = hearth_ctx_new(m, &cp, &e);
    if (!c) return fprintf(stderr, "ctx: %s\n", e.msg), -1;
    const int nv = hearth_model_get_info(m)->n_vocab;
    int rc = hearth_eval(c, prompt, NP, 0, true, &e);
    for (int t = 0; !rc && t < NP; t++) memcpy(out + t * nv, hearth_logits(c, t), sizeof(float) * (size_t)nv);
    for (int i = 0; !rc && i < ND; i++) {
        int32_t tok = forced ? ref_tok[i] : (ref_tok[i] = argmax(out + (NP - 1 + i) * nv, nv));
        rc = hearth_eval(c, &tok, 1, NP + i, false, &e);
        if (!rc) memcpy(out + (NP + i) * nv, hearth_logits(c, -1), sizeof(float) * (size_t)nv);
    }
    if (rc) fprintf(stderr, "eval: %s\n", e.msg);
    if (st) hearth_ctx_gpu_status(c, st);
    hearth_ctx_free(c);
    return rc;
}

/* How far the CPU's best logit leads its second. */
static double margin(const float *x, int n) {
    const int32_t b = argmax(x, n);
    double second = -INFINITY;
    for (int i = 0; i < n; i++)
        if (i != b) second = fmax(second, x[i]);
    return (double)x[b] - second;
}

/* Largest logit difference; agree counts the rows with the same greedy token, or where the
 * CPU's two best are within twice the tolerance (a tie either order may break). */
static double compare(const float *a, const float *b, int nv, double tie, int *agree, int *over) {
    double d = 0;
    *agree = *over = 0;
    for (int r = 0; r < NP + ND; r++) {
        double dr = 0;
        for (int i = 0; i < nv; i++) dr = fmax(dr, fabs((double)a[r * nv + i] - b[r * nv + i]));
        d = fmax(d, dr), *over += dr > tie;
        *agree += argmax(a + r * nv, nv) == argmax(b + r * nv, nv) || margin(a + r * nv, nv) <= 2 * tie;
    }
    return d;
}

/* The budget (GiB) of a plan with -ngl ngl: automatic placement then takes the same. */
static double budget_ngl(hearth_model *m, hearth_ffn_mode mode, int ngl, bool *ok) {
    hr_gpu_plan p;
    hr_err e = {{0}};
    hr_gpu_plan_in in = {m, 32, 1, 16, 1ull << 34, mode, ngl, NULL, 0, NULL, 0, NULL};
    *ok = !hr_gpu_plan_make(&in, &p, &e);
    CHECKF(*ok, "plan -ngl %d: %s", ngl, e.msg);
    const uint64_t total = p.total;
    hr_gpu_plan_free(&p);
    return (double)(total + dev_over + 64) / GIB;
}

typedef struct {
    const char *arch, *what;
    bool rope_freqs, pwri;
    const char *rope_scaling;
    hr_synth_act act;
} model_spec;

static hearth_model *make(const model_spec *ms, const char *path) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.arch = ms->arch, p.type = HR_F32, p.act = ms->act, p.powerinfer = ms->pwri, p.pred_rank = 32;
    p.n_embd = 128, p.n_head = 4, p.n_head_kv = 2, p.n_ff = 256, p.n_vocab = 300, p.n_layer = NL, p.seed = 11;
    p.rope_freqs = ms->rope_freqs;
    if (ms->rope_scaling) p.rope_scaling = ms->rope_scaling, p.rope_scale = 4.0f, p.rope_orig_ctx = 512;
    if (strcmp(ms->arch, "phi3") == 0) p.n_ctx_train = 64, p.rope_orig_ctx = 16; /* contexts beyond 16: long factors */
    hr_err e = {{0}};
    if (hr_synth_write(&p, path, &e)) return fprintf(stderr, "synth %s: %s\n", ms->what, e.msg), NULL;
    hearth_model *m = hearth_model_load(path, NULL, &e);
    if (!m) fprintf(stderr, "load %s: %s\n", ms->what, e.msg);
    return m;
}

/* What the model must have for the test to mean anything. */
static void check_features(const hearth_model *m, const model_spec *ms) {
    const hr_layer *L = &m->layers[0];
    if (ms->rope_freqs) CHECKF(m->rope_freqs && L->rope_ext, "%s: no rope_freqs", ms->what);
    if (ms->rope_scaling) CHECKF(m->hp.rope_yarn.ext_factor != 0.0f && L->rope_ext, "%s: no YaRN", ms->what);
    if (strcmp(ms->arch, "qwen2") == 0) CHECKF(L->bq && L->bk && L->bv, "%s: no q/k/v biases", ms->what);
    if (strcmp(ms->arch, "opt") == 0) CHECKF(L->bq && L->bk && L->bv && L->bo, "%s: no attention biases", ms->what);
    if (strcmp(ms->arch, "qwen3") == 0) CHECKF(L->q_norm && L->k_norm, "%s: no q/k norms", ms->what);
    if (strcmp(ms->arch, "phi3") == 0)
        CHECKF(hr_rope_factors(m, 32) == m->rope_long && m->rope_long && m->hp.rope_yarn.attn_factor != 1.0f && L->rope_ext,
               "%s: no LongRoPE long factors / attention factor", ms->what);
}

static void one_run(hearth_model *m, const model_spec *ms, const setup *s, hearth_ffn_mode mode, const float *ref,
                    float *got, int want_attn, int want_whole, const char *how) {
    const int nv = m->hp.n_vocab;
    hearth_gpu_status st;
    int agree = 0;
    memset(&st, 0, sizeof st);
    forced = true;
    const int rc = run(m, s, mode, got, &st);
    forced = false;
    if (rc) {
        CHECKF(0, "%s %s: the run failed", ms->what, how);
        return;
    }
    int over = 0;
    const double d = compare(ref, got, nv, tol_for(1e-4), &agree, &over);
    /* Predicted mode on CUDA: the predictor's scores sum in another order there, so a neuron
     * within rounding of the threshold may be computed on one side only: a step in that
     * token's hidden state, carried on through the KV cache to the later rows (on the
     * emulator, against the AVX2 kernels: 0.34 at most, 10 of 16 rows over 1e-2, one greedy
     * token other). There the logits must stay within 1 and all greedy tokens but one agree;
     * the stand-in sums as the CPU does and must agree everywhere. */
    const bool pred_cuda = dev == HEARTH_GPU_CUDA && mode == HEARTH_FFN_PREDICTED;
    printf("%s %s: attention %d, whole %d, resident %d: max |diff| %.3g, greedy %d/%d\n", ms->what, how, st.layers_attn,
           st.layers_whole, st.layers_resident, d, agree, NP + ND);
    CHECKF(pred_cuda ? d < 1.0 && agree >= NP + ND - 1 : d <= tol_for(1e-4) && agree == NP + ND,
           "%s %s: logits differ by %g (%d rows over the tolerance), greedy %d/%d", ms->what, how, d, over, agree, NP + ND);
    CHECKF(st.layers_attn == want_attn && st.layers_whole == want_whole, "%s %s: %d layers' attention, %d whole, want %d, %d",
           ms->what, how, st.layers_attn, st.layers_whole, want_attn, want_whole);
    CHECKF(st.layers_resident == want_whole, "%s %s: %d resident layers, want %d", ms->what, how, st.layers_resident,
           want_whole);
}

static void test_model(const model_spec *ms) {
    char name[96], path[256];
    snprintf(name, sizeof name, "hyattn-%s.gguf", ms->what);
    hearth_model *m = make(ms, hr_test_tmp(path, sizeof path, name));
    CHECKF(m != NULL, "%s: no model", ms->what);
    if (!m) return;
    check_features(m, ms);
    const int nv = m->hp.n_vocab;
    float *ref = malloc(sizeof(float) * (NP + ND) * (size_t)nv), *got = malloc(sizeof(float) * (NP + ND) * (size_t)nv);
    const setup cpu = {HEARTH_GPU_OFF, 0, 0};
    if (ms->pwri) {
        /* dense parts only (attention, predictors, norms, output), FFN on the host */
        CHECK(!run(m, &cpu, HEARTH_FFN_PREDICTED, ref, NULL));
        const setup s = {dev, (double)dev_over / GIB + 0.05, 0};
        one_run(m, ms, &s, HEARTH_FFN_PREDICTED, ref, got, NL, 0, "dense parts");
    } else {
        CHECK(!run(m, &cpu, HEARTH_FFN_DENSE, ref, NULL));
        bool ok = false;
        const setup q = {dev, budget_ngl(m, HEARTH_FFN_DENSE, 1, &ok), 0};
        if (ok) one_run(m, ms, &q, HEARTH_FFN_DENSE, ref, got, 1, 1, "25% of the FFN");
        const setup all = {dev, budget_ngl(m, HEARTH_FFN_DENSE, NL + 1, &ok), 0};
        if (ok) one_run(m, ms, &all, HEARTH_FFN_DENSE, ref, got, NL, NL, "100% of the FFN");
        const setup ngl = {dev, (double)dev_over / GIB + 0.05, NL + 1};
        one_run(m, ms, &ngl, HEARTH_FFN_DENSE, ref, got, NL, NL, "-ngl all");
    }
    free(ref), free(got);
    hearth_model_free(m);
    remove(path);
}

int main(void) {
    for (int i = 0; i < NP; i++) prompt[i] = (int32_t)((i * 37 + 11) % 300);
    if (hr_test_gpu_env(&dev, &dev_over)) return 77;
    const model_spec specs[] = {
        {"llama", "llama-rope_freqs-yarn", true, false, "yarn", HR_SYNTH_SWIGLU},
        {"llama", "llama-rope_freqs", true, false, NULL, HR_SYNTH_SWIGLU},
        {"llama", "llama-pwri-rope_freqs-yarn", true, true, "yarn", HR_SYNTH_REGLU},
        {"qwen2", "qwen2", false, false, NULL, HR_SYNTH_SWIGLU},
        {"qwen3", "qwen3", false, false, NULL, HR_SYNTH_SWIGLU},
        {"phi3", "phi3-longrope", false, false, NULL, HR_SYNTH_SWIGLU},
        {"opt", "opt-pwri-biases", false, true, NULL, HR_SYNTH_RELU}, /* all four biases, LayerNorm, no RoPE */
    };
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) test_model(&specs[i]);
    return TEST_END();
}
