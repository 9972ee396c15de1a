/* FFN mode threshold split between a device and the CPU (hybrid_ffn_thr.c), on the stand-in
 * (or, with HEARTH_TEST_GPU=cuda, the CUDA backend: the emulator in a -DHEARTH_CUDA_EMU=ON
 * build) against CPU-only threshold mode: a prompt batch's logits and greedy decodes at
 * budgets putting 0%, about 25% and 100% of the FFN's neurons on the device, on a dense
 * SwiGLU file that `hearth calibrate --target-sparsity` would write (F32 and Q8_0). On the
 * stand-in the device's threshold test is the host's on the same gate values, so the
 * neurons computed equal CPU-only mode's exactly and the logits differ only by the split's
 * summation order; on CUDA the gate sums in another order (tolerance 1e-2, computed counts
 * within 0.5%). The hot set comes from the statistics beside the model (index made and
 * written, then read back unchanged); a budget below the scratch is refused. */
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
static int run(hearth_model *m, hearth_gpu_mode gpu, double budget, const char *idx, float *out, hearth_gpu_status *st,
               uint64_t *computed, hr_err *e) {
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = 32, cp.n_threads = 2, cp.n_batch = 16, cp.ffn_mode = HEARTH_FFN_THRESHOLD;
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
    hr_gpu_plan_in in = {.m = m, .n_ctx = 32, .n_seq = 1, .n_batch = 16, .budget = 1ull << 34, .mode = HEARTH_FFN_THRESHOLD};
    CHECKF(!hr_gpu_plan_make(&in, &p, &e), "%s", e.msg);
    const uint64_t dense = p.total, ffn = p.ffn_bytes, slack = (uint64_t)m->hp.n_layer * 3 * (HR_DEV_ALIGN - 1);
    CHECKF(p.hot_ok, "threshold file: the plan takes no hot neurons");
    hr_gpu_plan_free(&p);
    return (double)(dense + dev_over + (share > 0 ? slack + (uint64_t)(share * (double)ffn) : 0) + 64) / GIB;
}

/* A SwiGLU file with thresholds at 40% sparsity and ffn_down_t, and its statistics. */
static hearth_model *thr_model(const char *dense, const char *path, uint32_t type) {
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
    hearth_model *m = thr_model(dense, hr_test_tmp(path, sizeof path, name), type);
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
    return TEST_END();
}
