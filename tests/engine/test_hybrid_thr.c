/* FFN mode threshold split between a device and the CPU (hybrid_ffn_thr.c), on the stand-in
 * (or, with HEARTH_TEST_GPU=cuda, the CUDA backend: the emulator in a -DHEARTH_CUDA_EMU=ON
 * build) against CPU-only threshold mode: a prompt batch's logits and greedy decodes at
 * budgets putting 0%, about 25% and 100% of the FFN's neurons on the device, on a dense
 * SwiGLU file that `hearth calibrate --target-sparsity` would write (F32 and Q8_0). On the
 * stand-in the device's threshold test is the host's on the same gate values, so the
 * neurons computed equal CPU-only mode's exactly and the logits differ only by the split's
 * summation order; on CUDA the gate sums in another order (tolerance 1e-2, computed counts
 * within 0.5%). The hot set comes from the statistics beside the model (index made and
 * written, then read back unchanged); a budget below the scratch is refused. Predicted and
 * dense mode on such a file split its neurons too (check_predicted). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "backends/device/standin.h"
#include "engine/context.h"
#include "engine/gpu_plan.h"
#include "formats/types.h"
#include "sparse/calibrate.h"
#include "sparse/stats.h"
#include "synth/synth.h"
#include "hybrid_env.h"
#include "testutil.h"

#define GIB 1073741824.0
#define NP 10 /* prompt tokens */
#define ND 6  /* decoded tokens */
#define NV 300
#define N_CAL 96

static int32_t prompt[NP], cal[N_CAL];
static hearth_gpu_mode dev = HEARTH_GPU_STANDIN;
static uint64_t dev_over = HR_STANDIN_OVERHEAD;

/* CUDA: test_hybrid_model's tolerances (1e-2; Q8_0 5e-2, which its attention and output
 * reach alone here: 3.5e-2 on the emulator with no hot neuron) */
static double tol_cuda;
static double tol_for(double standin) { return dev == HEARTH_GPU_CUDA ? fmax(standin, tol_cuda) : standin; }

static int32_t argmax(const float *x, int n) {
    int32_t b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* Prompt logits and ND greedy decodes into out [(NP + ND)][NV]; neurons computed over all
 * layers into *computed. */
static hearth_ffn_mode run_mode = HEARTH_FFN_THRESHOLD; /* what run() and budget_for() use */

static int run(hearth_model *m, hearth_gpu_mode gpu, double budget, const char *idx, float *out, hearth_gpu_status *st,
               uint64_t *computed, hr_err *e) {
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = 32, cp.n_threads = 2, cp.n_batch = 16, cp.ffn_mode = run_mode;
    cp.gpu = gpu, cp.vram_budget_gib = budget, cp.gpu_index_path = idx;
    hearth_ctx *c = hearth_ctx_new(m, &cp, e);
    if (!c) return -1;
    int rc = hearth_eval(c, prompt, NP, 0, true, e);
    for (int t = 0; !rc && t < NP; t++) memcpy(out + t * NV, hearth_logits(c, t), sizeof(float) * NV);
    for (int i = 0; !rc && i < ND; i++) {
        int32_t tok = argmax(out + (NP - 1 + i) * NV, NV);
        rc = hearth_eval(c, &tok, 1, NP + i, false, e);
        if (!rc) memcpy(out + (NP + i) * NV, hearth_logits(c, -1), sizeof(float) * NV);
    }
    *computed = 0;
    for (int il = 0; il < m->hp.n_layer; il++) {
        hearth_ffn_stats s;
        hearth_ctx_ffn_stats(c, il, &s);
        *computed += s.computed;
    }
    if (st) hearth_ctx_gpu_status(c, st);
    hearth_ctx_free(c);
    return rc;
}

static double compare(const float *a, const float *b, int *agree) {
    double d = 0;
    *agree = 0;
    for (int r = 0; r < NP + ND; r++) {
        for (int i = 0; i < NV; i++) d = fmax(d, fabs((double)a[r * NV + i] - b[r * NV + i]));
        *agree += argmax(a + r * NV, NV) == argmax(b + r * NV, NV);
    }
    return d;
}

/* The --vram-budget giving share of the FFN bytes to hot neurons (as test_hybrid_model). */
static double budget_for(hearth_model *m, double share) {
    hr_gpu_plan p;
    hr_err e = {{0}};
    hr_gpu_plan_in in = {.m = m, .n_ctx = 32, .n_seq = 1, .n_batch = 16, .budget = 1ull << 34, .mode = run_mode};
    CHECKF(!hr_gpu_plan_make(&in, &p, &e), "%s", e.msg);
    const uint64_t dense = p.total, ffn = p.ffn_bytes, slack = (uint64_t)m->hp.n_layer * 3 * (HR_DEV_ALIGN - 1);
    CHECKF(p.hot_ok, "threshold file: the plan takes no hot neurons");
    hr_gpu_plan_free(&p);
    return (double)(dense + dev_over + (share > 0 ? slack + (uint64_t)(share * (double)ffn) : 0) + 64) / GIB;
}

/* Fixed width-4 predictors of PowerInfer's form: scores of either sign, so about half the
 * neurons go unpredicted (the cold part's narrowing must show). */
static void fixed_preds(hr_predictor *p, int n_layer, int d, int ff) {
    for (int l = 0; l < n_layer; l++) {
        p[l] = (hr_predictor){d, ff, 4, malloc(sizeof(float) * 4 * (size_t)d), malloc(sizeof(float) * 4 * (size_t)ff), 1, 1, 0, 0, 0, NULL, false};
        for (int i = 0; i < 4 * d; i++) p[l].fc1[i] = (float)((i * 37 + l) % 11) / 5.0f - 1.0f;
        for (int i = 0; i < 4 * ff; i++) p[l].fc2[i] = (float)((i * 53 + l) % 13) / 6.0f - 1.0f;
    }
}

/* A SwiGLU file with thresholds at 40% sparsity and ffn_down_t, and its statistics; with
 * pred_path, the same file with fixed predictors too (and the same statistics). */
static hearth_model *thr_model(const char *dense, const char *path, uint32_t type, const char *pred_path) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.type = type, p.act = HR_SYNTH_SWIGLU, p.n_embd = 128, p.n_head = 4, p.n_head_kv = 2, p.n_ff = 256, p.n_vocab = NV;
    p.n_layer = 2, p.seed = 11;
    hr_err e = {{0}};
    hearth_model *m = NULL;
    if (hr_synth_write(&p, dense, &e) || !(m = hearth_model_load(dense, NULL, &e))) return fprintf(stderr, "synth: %s\n", e.msg), NULL;
    float thr[2];
    hr_collect_opts o = {32, 2, 1, -1, NULL, NULL};
    hr_stats st;
    hr_pairs pairs;
    char spath[300];
    int rc = hr_calib_thresholds(m, cal, N_CAL, &o, 0.4, thr, &e) || hr_write_thresholds(m, thr, true, path, &e) ||
             hr_calib_collect_thr(m, cal, N_CAL, &o, thr, &st, &pairs, &e);
    if (!rc) {
        snprintf(spath, sizeof spath, "%s.stats.gguf", path);
        rc = hr_stats_write(spath, &st, &e);
        if (!rc && pred_path) {
            hr_predictor pr[2];
            fixed_preds(pr, 2, 128, 256);
            snprintf(spath, sizeof spath, "%s.stats.gguf", pred_path);
            rc = hr_write_thresholds_pred(m, thr, true, pr, false, pred_path, &e) || hr_stats_write(spath, &st, &e);
            for (int l = 0; l < 2; l++) hr_predictor_free(&pr[l]);
        }
        hr_stats_free(&st), hr_pairs_free(&pairs);
    }
    hearth_model_free(m);
    remove(dense);
    m = rc ? NULL : hearth_model_load(path, NULL, &e);
    if (!m) fprintf(stderr, "threshold file: %s\n", e.msg);
    return m;
}

static void check_file(const char *name, uint32_t type, double tol_sd) {
    char dense[256], path[256], idx[300], spath[300];
    hr_test_tmp(dense, sizeof dense, "thr-dense.gguf");
    hearth_model *m = thr_model(dense, hr_test_tmp(path, sizeof path, name), type, NULL);
    CHECK(m != NULL);
    if (!m) return;
    snprintf(idx, sizeof idx, "%s.generated.gpuidx", path), snprintf(spath, sizeof spath, "%s.stats.gguf", path);
    remove(idx);
    float *ref = malloc(sizeof(float) * (NP + ND) * NV), *got = malloc(sizeof(float) * (NP + ND) * NV);
    hr_err e = {{0}};
    uint64_t comp_cpu = 0, comp = 0;
    CHECKF(!run(m, HEARTH_GPU_OFF, 0, NULL, ref, NULL, &comp_cpu, &e), "%s cpu: %s", name, e.msg);
    const uint64_t all = (uint64_t)(NP + ND) * 2 * 256;
    CHECKF(comp_cpu > all / 4 && comp_cpu < all * 9 / 10, "%s: CPU threshold mode computed %llu of %llu", name,
           (unsigned long long)comp_cpu, (unsigned long long)all);
    const double shares[] = {0.0, 0.25, 1.0};
    for (int k = 0; k < 3; k++) {
        hearth_gpu_status st;
        if (run(m, dev, budget_for(m, shares[k]), idx, got, &st, &comp, &e)) {
            CHECKF(0, "%s share %.2f: %s", name, shares[k], e.msg);
            continue;
        }
        int agree;
        const double d = compare(ref, got, &agree);
        printf("%-16s share %.2f (placed %.3f, %lld hot): max |diff| %.3g, greedy %d/%d, computed %llu (cpu %llu), device %llu; %s\n",
               name, shares[k], st.ffn_share, (long long)st.hot_neurons, d, agree, NP + ND, (unsigned long long)comp,
               (unsigned long long)comp_cpu, (unsigned long long)st.act_device, st.note);
        CHECKF(d <= tol_for(tol_sd) && agree == NP + ND, "%s share %.2f: logits differ by %g (tolerance %g), greedy %d/%d", name,
               shares[k], d, tol_for(tol_sd), agree, NP + ND);
        CHECKF(fabs(st.ffn_share - shares[k]) < 0.03, "%s: placed %.3f, wanted %.2f", name, st.ffn_share, shares[k]);
        if (dev == HEARTH_GPU_STANDIN) CHECKF(comp == comp_cpu, "%s share %.2f: computed %llu neurons, CPU %llu", name, shares[k],
                                              (unsigned long long)comp, (unsigned long long)comp_cpu);
        else CHECKF(fabs((double)comp - (double)comp_cpu) <= 0.005 * (double)comp_cpu, "%s: computed %llu, CPU %llu", name,
                    (unsigned long long)comp, (unsigned long long)comp_cpu);
        CHECK(st.act_total == comp && st.layers_attn == 2 && st.output_on_device);
        if (k == 0) CHECK(st.hot_neurons == 0 && st.act_device == 0);
        if (k == 1) CHECK(st.act_device > 0 && st.act_device < st.act_total && st.ffn_splits > 0 && strstr(st.note, "made from statistics"));
        if (k == 2) CHECK(st.hot_neurons == 2 * 256 && st.act_device == st.act_total);
        if (k == 1) { /* the index it wrote is read back unchanged by the next context */
            struct stat s0, s1;
            CHECK(stat(idx, &s0) == 0);
            CHECK(!run(m, dev, budget_for(m, shares[k]), idx, got, &st, &comp, &e) && strstr(st.note, "read from"));
            CHECK(stat(idx, &s1) == 0 && s1.st_size == s0.st_size);
            CHECK(compare(ref, got, &agree) <= tol_for(tol_sd) && agree == NP + ND);
        }
    }
    /* below the device scratch: the plan's error, with the bytes */
    CHECK(run(m, dev, (double)(dev_over + 4096) / GIB, idx, got, NULL, &comp, &e) != 0 && strstr(e.msg, "GPU budget too small"));
    free(ref), free(got);
    hearth_model_free(m);
    remove(path), remove(idx), remove(spath);
}

/* Predicted mode on a threshold file with predictors: the device tests every hot neuron and
 * the predictor narrows only the cold ones, so with every neuron cold the split is CPU-only
 * predicted mode and with every neuron hot it is threshold mode; between, the neurons
 * computed lie between the two. Dense mode on the file splits its neurons as well. */
static void check_predicted(void) {
    char dense[256], path[256], ppath[256], idx[300];
    hr_test_tmp(dense, sizeof dense, "thrp-dense.gguf");
    hr_test_tmp(path, sizeof path, "thrp.gguf"), hr_test_tmp(ppath, sizeof ppath, "thrp-pred.gguf");
    hearth_model *t = thr_model(dense, path, HR_F32, ppath);
    hr_err e = {{0}};
    hearth_model *m = t ? hearth_model_load(ppath, NULL, &e) : NULL;
    CHECKF(m && hearth_model_has_predictors(m), "predictor file: %s", e.msg);
    hearth_model_free(t);
    if (!m) return;
    snprintf(idx, sizeof idx, "%s.generated.gpuidx", ppath);
    remove(idx);
    const size_t nl = (size_t)(NP + ND) * NV;
    float *thr = malloc(sizeof(float) * nl), *pred = malloc(sizeof(float) * nl), *got = malloc(sizeof(float) * nl);
    uint64_t c_thr = 0, c_pred = 0, comp = 0;
    run_mode = HEARTH_FFN_THRESHOLD;
    CHECKF(!run(m, HEARTH_GPU_OFF, 0, NULL, thr, NULL, &c_thr, &e), "cpu threshold: %s", e.msg);
    run_mode = HEARTH_FFN_PREDICTED;
    CHECKF(!run(m, HEARTH_GPU_OFF, 0, NULL, pred, NULL, &c_pred, &e), "cpu predicted: %s", e.msg);
    CHECKF(c_pred < c_thr * 9 / 10 && c_pred > 0, "the fixed predictors narrow nothing: computed %llu, threshold mode %llu",
           (unsigned long long)c_pred, (unsigned long long)c_thr);
    const double shares[] = {0.0, 0.25, 1.0};
    for (int k = 0; k < 3; k++) {
        hearth_gpu_status st;
        if (run(m, dev, budget_for(m, shares[k]), idx, got, &st, &comp, &e)) {
            CHECKF(0, "predicted share %.2f: %s", shares[k], e.msg);
            continue;
        }
        int agree;
        const float *ref = k == 0 ? pred : thr;
        const uint64_t c_ref = k == 0 ? c_pred : c_thr;
        const double d = compare(ref, got, &agree);
        printf("predicted on a threshold file, share %.2f (placed %.3f): max |diff| %.3g from %s, computed %llu (predicted %llu, "
               "threshold %llu)\n",
               shares[k], st.ffn_share, k == 0 ? d : compare(thr, got, &agree), k == 0 ? "CPU predicted" : "CPU threshold",
               (unsigned long long)comp, (unsigned long long)c_pred, (unsigned long long)c_thr);
        CHECKF(fabs(st.ffn_share - shares[k]) < 0.03, "predicted: placed %.3f, wanted %.2f", st.ffn_share, shares[k]);
        if (k == 1) {
            CHECKF(comp > c_pred && comp < c_thr && st.act_device > 0, "share 0.25: computed %llu, not between %llu and %llu",
                   (unsigned long long)comp, (unsigned long long)c_pred, (unsigned long long)c_thr);
            continue;
        }
        CHECKF(compare(ref, got, &agree) <= tol_for(2e-3), "predicted share %.2f: logits differ by %g", shares[k], compare(ref, got, &agree));
        if (dev == HEARTH_GPU_STANDIN) CHECKF(comp == c_ref, "predicted share %.2f: computed %llu, CPU %llu", shares[k],
                                              (unsigned long long)comp, (unsigned long long)c_ref);
    }
    /* dense mode on the same file: no ffn_down to place whole, so its neurons split too */
    run_mode = HEARTH_FFN_DENSE;
    uint64_t c_dense = 0;
    CHECKF(!run(m, HEARTH_GPU_OFF, 0, NULL, thr, NULL, &c_dense, &e), "cpu dense: %s", e.msg);
    for (int k = 1; k < 3; k++) {
        hearth_gpu_status st;
        int agree;
        CHECKF(!run(m, dev, budget_for(m, shares[k]), idx, got, &st, &comp, &e), "dense share %.2f: %s", shares[k], e.msg);
        const double d = compare(thr, got, &agree);
        printf("dense on a threshold file, share %.2f (placed %.3f, %lld hot): max |diff| %.3g from CPU dense\n", shares[k],
               st.ffn_share, (long long)st.hot_neurons, d);
        CHECKF(fabs(st.ffn_share - shares[k]) < 0.03 && st.act_device > 0, "dense: placed %.3f, wanted %.2f", st.ffn_share, shares[k]);
        CHECKF(d <= tol_for(2e-3) && agree == NP + ND && comp == c_dense, "dense share %.2f: logits differ by %g", shares[k], d);
    }
    run_mode = HEARTH_FFN_THRESHOLD;
    free(thr), free(pred), free(got);
    hearth_model_free(m);
    char sp[300];
    snprintf(sp, sizeof sp, "%s.stats.gguf", path), remove(sp);
    snprintf(sp, sizeof sp, "%s.stats.gguf", ppath), remove(sp);
    remove(path), remove(ppath), remove(idx);
}

int main(void) {
    for (int i = 0; i < NP; i++) prompt[i] = (int32_t)((i * 37 + 11) % NV);
    for (int i = 0; i < N_CAL; i++) cal[i] = (int32_t)((i * 53 + 7) % NV);
    if (hr_test_gpu_env(&dev, &dev_over)) return 77;
    /* the split sums the down projection cold, then hot: float rounding, through logits
     * that reach 15 here (measured 6.4e-4; bible-drelu's split test allows 5e-3 at that size) */
    tol_cuda = 1e-2;
    check_file("thr-f32.gguf", HR_F32, 2e-3);
    /* Q8_0 rounds activations to 8 bits before each product: a flip in that rounding moves
     * a logit by a few hundredths (test_hybrid_model), though none did here (measured 0) */
    tol_cuda = 5e-2;
    if (dev == HEARTH_GPU_STANDIN) check_file("thr-q8.gguf", HR_Q8_0, 2e-3); /* the emulator: F32 only, in the time the suite allows */
    tol_cuda = 1e-2;
    check_predicted();
    return TEST_END();
}
