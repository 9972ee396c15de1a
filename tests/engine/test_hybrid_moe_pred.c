/* Hot neurons of host experts in --ffn predicted mode (docs/hybrid.md): the host runs a
 * split expert's predictor over its rows first; the device computes the expert's hot neurons
 * masked by those marks, the CPU its cold predicted ones. Checked here on a calibrated
 * smallthinker F32 file (ffn_down_exps_t) with random expert predictors (expert 0 of every
 * layer has none and runs exact, unmasked): whole-model logits and greedy tokens of the
 * stand-in (or, with HEARTH_TEST_GPU=cuda, the emulated device) against CPU-only predicted mode
 * with 0, 20 and every firing neuron (72) of the host experts on the device, the predictors
 * mattering (predicted differs from exact), the device's share counting only marked neurons,
 * and the plan's mask scratch (n_batch x n_expert_used x n_ff_exp bytes, predicted mode only). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "backends/device/standin.h"
#include "engine/context.h"
#include "engine/gpu_plan.h"
#include "formats/types.h"
#include "sparse/calibrate.h"
#include "sparse/moe_calib.h"
#include "sparse/moe_pred.h"
#include "sparse/stats.h"
#include "synth/synth.h"
#include "hybrid_env.h"
#include "testutil.h"

#define GIB 1073741824.0
enum { NE = 4, K = 2, LAYERS = 3, CTX = 32, SEQ = 2, BATCH = 16, NP = 10, GEN = 4, RANK = 4 };

static hearth_gpu_mode dev = HEARTH_GPU_STANDIN;
static uint64_t dev_over = HR_STANDIN_OVERHEAD;
static double tol = 1e-4; /* the split only reorders the down sums (cold, then hot); CUDA: 1e-2 */

/* Random predictors for every expert but 0 of each layer. */
static hr_moe_pred *random_preds(const hearth_model *m) {
    const hr_hparams *hp = &m->hp;
    const size_t n = (size_t)hp->n_layer * (size_t)hp->n_expert;
    hr_moe_pred *p = calloc(n, sizeof *p);
    hr_rng r = {77};
    for (size_t i = 0; p && i < n; i++) {
        if (i % (size_t)hp->n_expert == 0) continue;
        float *f1 = malloc(sizeof(float) * RANK * (size_t)hp->n_embd), *f2 = malloc(sizeof(float) * RANK * (size_t)hp->n_ff_exp);
        for (int32_t j = 0; f1 && j < RANK * hp->n_embd; j++) f1[j] = hr_rng_normal(&r);
        for (int32_t j = 0; f2 && j < RANK * hp->n_ff_exp; j++) f2[j] = hr_rng_normal(&r);
        p[i].p = (hr_predictor){hp->n_embd, hp->n_ff_exp, RANK, f1, f2, 1, 1, 1, 1, 0, NULL, false};
    }
    return p;
}

static hearth_model *model(char *path, size_t cap) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.arch = "smallthinker", p.type = HR_F32, p.n_embd = 64, p.n_layer = LAYERS, p.n_head = 4, p.n_head_kv = 2, p.n_ff = 96;
    p.n_vocab = 300, p.n_expert = NE, p.n_expert_used = K, p.seed = 31, p.act = HR_SYNTH_REGLU;
    hr_err e = {{0}};
    char raw[256];
    hr_test_tmp(raw, sizeof raw, "hmoep_raw.gguf");
    if (hr_synth_write(&p, raw, &e)) return fprintf(stderr, "synth: %s\n", e.msg), NULL;
    hearth_model *m = hearth_model_load(raw, NULL, &e);
    if (!m) return fprintf(stderr, "load: %s\n", e.msg), NULL;
    hr_moe_pred *preds = random_preds(m);
    const size_t n = (size_t)LAYERS * NE;
    const int rc = preds ? hr_write_moe_sparse(m, preds, false, hr_test_tmp(path, cap, "hmoep.gguf"), &e) : -1;
    hearth_model_free(m), remove(raw);
    hr_moe_preds_free(preds, preds ? n : 0);
    free(preds);
    if (rc) return fprintf(stderr, "sparse: %s\n", e.msg), NULL;
    if (!(m = hearth_model_load(path, NULL, &e))) fprintf(stderr, "load: %s\n", e.msg);
    return m;
}

/* Expert (l, x) fires on the 6 neurons j with (j + 3x + 5l) % 16 == 0; routings uniform. */
static int write_stats(const hearth_model *m, const char *sp, hr_stats *st) {
    const int32_t ff = m->hp.n_ff_exp;
    hr_err e = {{0}};
    if (hr_stats_init_moe(st, LAYERS, NE, K, ff, true, &e)) return fprintf(stderr, "stats: %s\n", e.msg), -1;
    st->n_tokens = 1000;
    hr_test_moe_counts(st->counts, st->expert_counts, LAYERS, NE, ff);
    if (hr_stats_write(sp, st, &e)) return fprintf(stderr, "write stats: %s\n", e.msg), -1;
    return 0;
}

static int plan(hearth_model *m, uint64_t arena, hearth_ffn_mode mode, const hr_stats *st, hr_gpu_plan *p, hr_err *e) {
    hr_gpu_plan_in in = {m, CTX, SEQ, BATCH, arena, mode, 0, NULL, 0, st ? st->expert_counts : NULL, 0, st ? st->counts : NULL};
    return hr_gpu_plan_make(&in, p, e);
}

static hearth_ctx *ctx(hearth_model *m, uint64_t budget, const char *ip, hearth_ffn_mode mode, int32_t n_seq, hr_err *e) {
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = CTX, cp.n_threads = 2, cp.n_batch = BATCH, cp.n_seq = n_seq, cp.ffn_mode = mode;
    cp.gpu = budget ? dev : HEARTH_GPU_OFF, cp.vram_budget_gib = budget ? ((double)budget + 0.5) / GIB : 0;
    cp.gpu_index_path = ip, cp.disable_gpu_index = true; /* placed from the statistics, no file */
    return hearth_ctx_new(m, &cp, e);
}

/* NP tokens over two sequences in one batch, then one of each: logits [NP + 2][n_vocab]. */
static int run(hearth_model *m, uint64_t budget, const char *ip, hearth_ffn_mode mode, float *out, hearth_gpu_status *gs,
               hr_err *e) {
    const int nv = m->hp.n_vocab;
    int32_t toks[NP];
    for (int i = 0; i < NP; i++) toks[i] = (i * 41 + 3) % nv;
    hearth_ctx *c = ctx(m, budget, ip, mode, SEQ, e);
    if (!c) return -1;
    const int32_t t2[2] = {17, 201};
    const int rc = hr_test_eval_two_seqs(c, NP, toks, t2, nv, out, e);
    if (gs) hearth_ctx_gpu_status(c, gs);
    hearth_ctx_free(c);
    return rc;
}

static int argmax(const float *l, int n) {
    int b = 0;
    for (int i = 1; i < n; i++) b = l[i] > l[b] ? i : b;
    return b;
}

static int greedy(hearth_model *m, uint64_t budget, const char *ip, int32_t *out, hr_err *e) {
    hearth_ctx *c = ctx(m, budget, ip, HEARTH_FFN_PREDICTED, 1, e);
    if (!c) return -1;
    int32_t t[4] = {5, 77, 140, 9};
    int rc = hearth_eval(c, t, 4, 0, false, e);
    for (int i = 0; !rc && i < GEN; i++) {
        out[i] = argmax(hearth_logits(c, -1), m->hp.n_vocab);
        rc = hearth_eval(c, &out[i], 1, 4 + i, false, e);
    }
    hearth_ctx_free(c);
    return rc;
}

/* The smallest arena holding at least want neurons and no whole expert. */
static uint64_t arena_for(hearth_model *m, const hr_stats *st, uint64_t lo, uint64_t hi, int64_t want) {
    while (lo < hi) {
        const uint64_t mid = lo + (hi - lo) / 2;
        hr_gpu_plan p;
        hr_err e = {{0}};
        int64_t n = -1;
        if (!plan(m, mid, HEARTH_FFN_PREDICTED, st, &p, &e)) n = p.n_xneurons_total;
        hr_gpu_plan_free(&p);
        if (n >= want) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

int main(void) {
    if (hr_test_gpu_env(&dev, &dev_over)) return 77;
    if (dev == HEARTH_GPU_CUDA) tol = 1e-2;
    char path[256], sp[300], ip[300];
    hearth_model *m = model(path, sizeof path);
    CHECKF(m, "model");
    if (!m) return TEST_END();
    snprintf(sp, sizeof sp, "%s.stats.gguf", path), snprintf(ip, sizeof ip, "%s.generated.gpuidx", path);
    hr_stats st;
    hr_err e = {{0}};
    if (write_stats(m, sp, &st)) {
        CHECK(0);
        return TEST_END();
    }
    /* the plan: the mask scratch in predicted mode only; neurons placed as in dense mode */
    hr_gpu_plan all, dn;
    const int32_t ff = m->hp.n_ff_exp, nv = m->hp.n_vocab;
    if (plan(m, 1ull << 34, HEARTH_FFN_PREDICTED, NULL, &all, &e) || plan(m, 1ull << 34, HEARTH_FFN_DENSE, NULL, &dn, &e)) {
        CHECKF(0, "plan: %s", e.msg);
        return TEST_END();
    }
    const uint64_t mask_b = hr_dev_round((uint64_t)BATCH * K * (uint64_t)ff);
    CHECKF(all.expert_masks && !dn.expert_masks && all.bytes[HEARTH_GPU_CAT_SCRATCH] == dn.bytes[HEARTH_GPU_CAT_SCRATCH] + mask_b,
           "mask scratch: predicted %llu, dense %llu, mask %llu", (unsigned long long)all.bytes[HEARTH_GPU_CAT_SCRATCH],
           (unsigned long long)dn.bytes[HEARTH_GPU_CAT_SCRATCH], (unsigned long long)mask_b);
    const uint64_t base = all.total - all.bytes[HEARTH_GPU_CAT_FFN], one = all.bytes[HEARTH_GPU_CAT_FFN] / (uint64_t)all.n_exp_total;
    hr_gpu_plan_free(&all), hr_gpu_plan_free(&dn);
    const uint64_t arenas[3] = {base + 64, arena_for(m, &st, base, base + one, 20), arena_for(m, &st, base, base + one, 72)};
    const char *what[3] = {"0 neurons", "20 neurons", "every firing neuron"};
    const int64_t want[3] = {0, 20, 72};
    const size_t n = (size_t)(NP + 2) * (size_t)nv;
    float *ref = malloc(sizeof(float) * n), *got = malloc(sizeof(float) * n), *ex = malloc(sizeof(float) * n);
    CHECKF(!run(m, 0, ip, HEARTH_FFN_PREDICTED, ref, NULL, &e) && !run(m, 0, ip, HEARTH_FFN_EXACT, ex, NULL, &e), "cpu: %s", e.msg);
    CHECKF(hr_test_max_diff(ref, ex, n) > 1e-3, "the predictors change nothing (%g): the test would not see a missing mask", hr_test_max_diff(ref, ex, n));
    int32_t gref[GEN], ggot[GEN];
    CHECKF(!greedy(m, 0, ip, gref, &e), "cpu greedy: %s", e.msg);
    for (int k = dev == HEARTH_GPU_CUDA ? 1 : 0; k < 3; k++) {
        hr_gpu_plan p;
        if (plan(m, arenas[k], HEARTH_FFN_PREDICTED, &st, &p, &e)) {
            CHECKF(0, "plan %s: %s", what[k], e.msg);
            continue;
        }
        CHECKF(!p.n_exp_total && p.n_xneurons_total >= want[k] && (k || !p.n_xneurons_total), "%s: %d experts, %lld neurons",
               what[k], p.n_exp_total, (long long)p.n_xneurons_total);
        const int64_t placed = p.n_xneurons_total;
        hr_gpu_plan_free(&p);
        hearth_gpu_status gs = {0};
        if (run(m, arenas[k] + dev_over, ip, HEARTH_FFN_PREDICTED, got, &gs, &e)) {
            CHECKF(0, "%s: %s", what[k], e.msg);
            continue;
        }
        const double d = hr_test_max_diff(ref, got, n);
        int same = 0;
        for (int r = 0; r < NP + 2; r++) same += argmax(ref + (size_t)r * nv, nv) == argmax(got + (size_t)r * nv, nv);
        printf("predicted, %s: %lld expert neurons of %d experts on the device, %llu split evaluations, %llu device "
               "activations; max |logit - cpu| %.2e\n",
               what[k], (long long)gs.expert_neurons_device, gs.experts_split, (unsigned long long)gs.expert_split_evals,
               (unsigned long long)gs.act_device, d);
        CHECKF(d <= tol && same == NP + 2, "%s: logits differ from CPU predicted mode by %g, %d of %d argmax equal", what[k], d,
               same, NP + 2);
        CHECKF(gs.expert_neurons_device == placed && (k ? gs.expert_split_evals > 0 : gs.expert_split_evals == 0),
               "%s: %lld neurons, %llu split evaluations", what[k], (long long)gs.expert_neurons_device,
               (unsigned long long)gs.expert_split_evals);
        /* masked: the device computes fewer than every hot neuron of every split evaluation */
        if (k) CHECKF(gs.act_device > 0 && gs.act_device < gs.expert_split_evals * (uint64_t)placed, "%s: %llu device activations",
                      what[k], (unsigned long long)gs.act_device);
        if (k == 2)
            CHECKF(!greedy(m, arenas[k] + dev_over + 4096, ip, ggot, &e) && !memcmp(gref, ggot, sizeof gref),
                   "%s: greedy tokens differ (%s)", what[k], e.msg);
    }
    free(ref), free(got), free(ex);
    hr_stats_free(&st);
    hearth_model_free(m);
    remove(path), remove(sp), remove(ip);
    return TEST_END();
}
