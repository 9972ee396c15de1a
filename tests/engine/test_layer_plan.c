/* The layer plan: the step kind the GPU plan gives each layer (gpu_plan.h), written out here
 * per configuration from what the budget buys (docs/hybrid.md): a PowerInfer file at budgets
 * from the scratch alone through attention, predictors, norms and every neuron, in predicted,
 * dense and exact mode and with -ngl; -ngl N and budgets on dense llama and Falcon files; a
 * mixture-of-experts model (split MoE by budget, routed counts, --n-cpu-moe, -ngl). Then a context on the stand-in:
 * a resident layer runs as a split FFN while the host counts its FFN (--stats), and its
 * status counts it accordingly. */
#include <stdio.h>
#include <string.h>
#include "engine/context.h"
#include "engine/gpu_plan.h"
#include "engine/hybrid.h"
#include "formats/types.h"
#include "synth/synth.h"
#include "testutil.h"

enum { EMBD = 64, LAYERS = 3, FF = 128, VOCAB = 320, HEADS = 4, KVH = 2, RANK = 32, CTX = 48, SEQ = 2, BATCH = 8 };
enum { H = HR_STEP_HOST, A = HR_STEP_ATTN, AP = HR_STEP_ATTN_PRED, RS = HR_STEP_RESIDENT, SF = HR_STEP_SPLIT_FFN };

static hearth_model *model(const char *arch, bool pwri, uint32_t n_expert, const char *name, char *path, size_t cap) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.arch = arch, p.n_embd = EMBD, p.n_layer = LAYERS, p.n_head = HEADS, p.n_head_kv = KVH, p.n_ff = FF, p.n_vocab = VOCAB;
    p.type = HR_Q8_0, p.powerinfer = pwri, p.pred_rank = RANK, p.n_expert = n_expert;
    p.act = pwri ? HR_SYNTH_REGLU : hr_synth_default_act(arch, false);
    hr_err e = {{0}};
    hr_test_tmp(path, cap, name);
    if (hr_synth_write(&p, path, &e)) return fprintf(stderr, "synth %s: %s\n", name, e.msg), NULL;
    hearth_model *m = hearth_model_load(path, NULL, &e);
    if (!m) fprintf(stderr, "load %s: %s\n", name, e.msg);
    return m;
}

/* Plans m and checks the step of every layer against want[]; the plan stays in *p. */
static bool steps_are(const char *what, hearth_model *m, uint64_t budget, int ngl, const hr_gpuidx *idx, hearth_ffn_mode mode,
                      const int want[LAYERS], hr_gpu_plan *p) {
    hr_err e = {{0}};
    hr_gpu_plan_in in = {m, CTX, SEQ, BATCH, budget, mode, ngl, idx, 0, NULL, 0, NULL};
    if (hr_gpu_plan_make(&in, p, &e)) {
        CHECKF(0, "%s: %s", what, e.msg);
        return false;
    }
    bool ok = true;
    for (int il = 0; il < LAYERS; il++) {
        const hr_step_kind k = p->layers[il].step;
        CHECKF(k == (hr_step_kind)want[il], "%s: layer %d is '%s', expected '%s'", what, il, hr_step_kind_name(k),
               hr_step_kind_name((hr_step_kind)want[il]));
        ok &= k == (hr_step_kind)want[il];
    }
    return ok;
}

static void expect(const char *what, hearth_model *m, uint64_t budget, int ngl, const hr_gpuidx *idx, hearth_ffn_mode mode,
                   const int want[LAYERS]) {
    hr_gpu_plan p;
    steps_are(what, m, budget, ngl, idx, mode, want, &p);
    hr_gpu_plan_free(&p);
}

/* PowerInfer file: what each budget buys, in the plan's order of value. The budgets come
 * from a plan of everything (identical layers: one layer's share is a third). */
static void test_powerinfer(void) {
    char path[256];
    hearth_model *m = model("llama", true, 0, "lp-pwri.gguf", path, sizeof path);
    if (!m) return;
    hr_err e = {{0}};
    hr_gpuidx all;
    CHECK(!hr_gpuidx_init(&all, LAYERS, FF, &e));
    for (int i = 0; i < LAYERS * FF; i++) all.hot[i] = 1;
    const uint64_t big = 64 << 20;
    hr_gpu_plan p;
    const int fused[] = {AP, AP, AP};
    if (!steps_are("predicted, every neuron", m, big, 0, &all, HEARTH_FFN_PREDICTED, fused, &p)) goto out;
    CHECK(p.n_hot_total == (int64_t)LAYERS * FF && p.output);
    const uint64_t *B = p.bytes, sc = B[HEARTH_GPU_CAT_SCRATCH];
    const uint64_t attn1 = (B[HEARTH_GPU_CAT_ATTN] + B[HEARTH_GPU_CAT_KV]) / LAYERS, norms1 = B[HEARTH_GPU_CAT_NORMS] / LAYERS;
    const uint64_t preds = sc + LAYERS * attn1 + B[HEARTH_GPU_CAT_PRED];
    hr_gpu_plan_free(&p);

    const int host[] = {H, H, H}, attn0[] = {A, H, H}, split[] = {SF, SF, SF}, two_fused[] = {AP, AP, SF};
    expect("scratch alone (budget 0 beyond it)", m, sc, 0, NULL, HEARTH_FFN_PREDICTED, host);
    expect("layer 0's attention", m, sc + attn1, 0, NULL, HEARTH_FFN_PREDICTED, attn0);
    expect("attention and predictors, no norms", m, preds, 0, NULL, HEARTH_FFN_PREDICTED, split);
    expect("norms of two layers", m, preds + 2 * norms1, 0, NULL, HEARTH_FFN_PREDICTED, two_fused);
    expect("dense parts, no index", m, big, 0, NULL, HEARTH_FFN_PREDICTED, fused);
    /* dense mode: no predictor, attention on the device, every neuron hot: split, not resident */
    expect("dense mode, every neuron", m, big, 0, &all, HEARTH_FFN_DENSE, split);
    const int attn_only[] = {A, A, A};
    expect("dense mode, no index", m, big, 0, NULL, HEARTH_FFN_DENSE, attn_only);
    /* -ngl: whole layers; resident only without a predictor, and with neuron rows to compute */
    const int res2[] = {RS, RS, H}, split2[] = {SF, SF, H}, attn2[] = {A, A, H};
    expect("-ngl 2, dense mode", m, big, 2, NULL, HEARTH_FFN_DENSE, res2);
    expect("-ngl 2, predicted", m, big, 2, NULL, HEARTH_FFN_PREDICTED, split2);
    expect("-ngl 2, exact (PowerInfer FFNs stay on the CPU)", m, big, 2, NULL, HEARTH_FFN_EXACT, attn2);
out:
    hr_gpuidx_free(&all);
    hearth_model_free(m);
    remove(path);
}

static void test_dense(void) {
    char lp[256], fp[256];
    hearth_model *lm = model("llama", false, 0, "lp-dense.gguf", lp, sizeof lp);
    hearth_model *fm = model("falcon", false, 0, "lp-falcon.gguf", fp, sizeof fp);
    if (!lm || !fm) goto out;
    const uint64_t big = 64 << 20;
    const int r1[] = {RS, H, H}, r3[] = {RS, RS, RS}, f1[] = {SF, H, H}, f3[] = {SF, SF, SF}, host[] = {H, H, H};
    expect("dense llama -ngl 1", lm, big, 1, NULL, HEARTH_FFN_DENSE, r1);
    expect("dense llama -ngl all", lm, big, LAYERS + 1, NULL, HEARTH_FFN_DENSE, r3);
    expect("dense llama, budget", lm, big, 0, NULL, HEARTH_FFN_DENSE, r3);
    expect("dense llama, exact", lm, big, 0, NULL, HEARTH_FFN_EXACT, r3);
    hr_gpu_plan p;
    if (steps_are("dense llama, budget", lm, big, 0, NULL, HEARTH_FFN_DENSE, r3, &p)) {
        const uint64_t sc = p.bytes[HEARTH_GPU_CAT_SCRATCH];
        hr_gpu_plan_free(&p);
        expect("dense llama, scratch alone", lm, sc, 0, NULL, HEARTH_FFN_DENSE, host);
    } else hr_gpu_plan_free(&p);
    /* Falcon's parallel LayerNorm blocks never run resident: attention and whole FFN, one trip each */
    expect("dense falcon -ngl 1", fm, big, 1, NULL, HEARTH_FFN_DENSE, f1);
    expect("dense falcon, budget", fm, big, 0, NULL, HEARTH_FFN_DENSE, f3);
out:
    if (lm) hearth_model_free(lm);
    if (fm) hearth_model_free(fm);
    remove(lp), remove(fp);
}

/* m's plan for a budget, -ngl and --n-cpu-moe, optional routing counts; its step kinds
 * against want[] and its experts per layer against n_exp[]. */
static void expect_moe(const char *what, hearth_model *m, uint64_t budget, int ngl, int32_t n_cpu_moe, const uint32_t *freq,
                       const int want[LAYERS], const int n_exp[LAYERS]) {
    hr_err e = {{0}};
    hr_gpu_plan p;
    hr_gpu_plan_in in = {m, CTX, SEQ, BATCH, budget, HEARTH_FFN_DENSE, ngl, NULL, n_cpu_moe, freq, 0, NULL};
    if (hr_gpu_plan_make(&in, &p, &e)) {
        CHECKF(0, "%s: %s", what, e.msg);
        return;
    }
    for (int il = 0; il < LAYERS; il++) {
        CHECKF(p.layers[il].step == (hr_step_kind)want[il], "%s: layer %d is '%s', expected '%s'", what, il,
               hr_step_kind_name(p.layers[il].step), hr_step_kind_name((hr_step_kind)want[il]));
        CHECKF(p.layers[il].n_exp == n_exp[il], "%s: layer %d has %d experts on the device, expected %d", what, il,
               p.layers[il].n_exp, n_exp[il]);
    }
    hr_gpu_plan_free(&p);
}

/* Mixture-of-experts layers (4 experts): attention layer by layer, the output, then whole
 * experts, uniform order (lowest layer and id first) or by routed counts; --n-cpu-moe,
 * --cpu-moe and -ngl. Budgets from the plan's own byte counts at a large budget. */
static void test_moe(void) {
    char path[256];
    hearth_model *m = model("llama", false, 4, "lp-moe.gguf", path, sizeof path);
    if (!m) return;
    hr_gpu_plan big;
    hr_err e = {{0}};
    hr_gpu_plan_in in = {m, CTX, SEQ, BATCH, 64 << 20, HEARTH_FFN_DENSE, 0, NULL, 0, NULL, 0, NULL};
    if (hr_gpu_plan_make(&in, &big, &e)) {
        CHECKF(0, "MoE plan: %s", e.msg);
        goto out;
    }
    const uint64_t one = big.bytes[HEARTH_GPU_CAT_FFN] / (uint64_t)big.n_exp_total;
    const uint64_t dense = big.total - big.bytes[HEARTH_GPU_CAT_FFN], scratch = big.bytes[HEARTH_GPU_CAT_SCRATCH];
    CHECK(big.n_exp_total == 4 * LAYERS && big.output);
    hr_gpu_plan_free(&big);
    const int SM = HR_STEP_SPLIT_MOE;
    const int all[] = {SM, SM, SM}, attn[] = {A, A, A}, host[] = {H, H, H}, some[] = {SM, SM, A}, first[] = {A, SM, SM};
    const int n4[] = {4, 4, 4}, n0[] = {0, 0, 0}, n5[] = {4, 1, 0}, n_first[] = {0, 4, 4};
    expect_moe("MoE, large budget", m, 64 << 20, 0, 0, NULL, all, n4);
    expect_moe("MoE, scratch alone", m, scratch, 0, 0, NULL, host, n0);
    expect_moe("MoE, dense parts and 5 experts", m, dense + 5 * one + one / 2, 0, 0, NULL, some, n5);
    expect_moe("MoE, dense parts alone", m, dense + one - 1, 0, 0, NULL, attn, n0);
    expect_moe("MoE, --cpu-moe", m, 64 << 20, 0, 1 << 20, NULL, attn, n0);
    expect_moe("MoE, --n-cpu-moe 1", m, 64 << 20, 0, 1, NULL, first, n_first);
    const int ngl1[] = {SM, H, H}, ngl2c1[] = {A, SM, H}, n_ngl1[] = {4, 0, 0}, n_ngl2c1[] = {0, 4, 0};
    expect_moe("MoE, -ngl 1", m, 64 << 20, 1, 0, NULL, ngl1, n_ngl1);
    expect_moe("MoE, -ngl 2 --n-cpu-moe 1", m, 64 << 20, 2, 1, NULL, ngl2c1, n_ngl2c1);
    /* routed counts: layer 2's experts most, then layer 0's expert 3: 5 experts fit */
    const uint32_t freq[LAYERS * 4] = {1, 1, 1, 50, 0, 0, 0, 0, 90, 80, 70, 60};
    const int by_freq[] = {SM, A, SM}, n_freq[] = {1, 0, 4};
    expect_moe("MoE, routed counts, 5 experts", m, dense + 5 * one + one / 2, 0, 0, freq, by_freq, n_freq);
out:
    hearth_model_free(m);
    remove(path);
}

/* A context on the stand-in: resident layers as planned, run as split FFNs while the host
 * counts the FFN; both evaluate. */
static void test_runtime(void) {
    char path[256];
    hearth_model *m = model("llama", false, 0, "lp-rt.gguf", path, sizeof path);
    if (!m) return;
    for (int stats = 0; stats < 2; stats++) {
        hr_err e = {{0}};
        hearth_ctx_params cp = hearth_ctx_default_params();
        cp.n_ctx = 32, cp.n_batch = 8, cp.n_threads = 1, cp.ffn_mode = HEARTH_FFN_DENSE, cp.ffn_stats = stats;
        cp.gpu = HEARTH_GPU_STANDIN, cp.vram_budget_gib = 0.05, cp.n_gpu_layers = 2;
        hearth_ctx *c = hearth_ctx_new(m, &cp, &e);
        CHECKF(c, "ctx: %s", e.msg);
        if (!c) continue;
        const hr_step_kind want = stats ? HR_STEP_SPLIT_FFN : HR_STEP_RESIDENT;
        for (int il = 0; il < LAYERS; il++) {
            CHECK(c->hy->plan.layers[il].step == (il < 2 ? HR_STEP_RESIDENT : HR_STEP_HOST));
            CHECKF(hr_hybrid_step(c, il) == (il < 2 ? want : HR_STEP_HOST), "stats %d layer %d runs '%s'", stats, il,
                   hr_step_kind_name(hr_hybrid_step(c, il)));
        }
        hearth_gpu_status st;
        CHECK(!hearth_ctx_gpu_status(c, &st) && st.layers_resident == (stats ? 0 : 2) && st.layers_whole == 2);
        const int32_t toks[4] = {1, 5, 9, 2};
        CHECKF(!hearth_eval(c, toks, 4, 0, false, &e), "eval: %s", e.msg);
        hearth_ctx_free(c);
    }
    hearth_model_free(m);
    remove(path);
}

int main(void) {
    test_powerinfer();
    test_dense();
    test_moe();
    test_runtime();
    return TEST_END();
}
