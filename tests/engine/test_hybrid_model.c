/* Whole-model hybrid execution on the stand-in device (or, with HEARTH_TEST_GPU=cuda, on
 * the CUDA backend: a GPU, or the CPU emulator in a -DHEARTH_CUDA_EMU=ON build; every
 * budget then adds that device's own overhead) against the CPU path: logits of a
 * prompt batch and of decoded tokens within a stated tolerance and the same greedy tokens,
 * at budgets that put 0%, about 25% and 100% of the FFN on the device, on synthetic
 * PowerInfer files, the bundled bible-drelu model, two sequences in one batch, and layer
 * offload (-ngl) of a dense and of a PowerInfer file. Budgets: too small (an error with the
 * numbers), and a sweep in which every context fits the stand-in's capacity (its reserve
 * would fail otherwise). Throughout, the host KV cache holds only the layers whose attention
 * stays on the CPU (hearth_ctx_kv_bytes: the CPU path's less their share), and a sequence
 * rewritten from a middle position reads the right cells on both sides. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
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

static int32_t prompt[NP];
/* The device under test and its overhead beyond the arena, set once in main. */
static hearth_gpu_mode dev = HEARTH_GPU_STANDIN;
static uint64_t dev_over = HR_STANDIN_OVERHEAD;
#define OVER_GIB ((double)dev_over / GIB)

/* Tolerances are the stand-in's, which sums like the CPU. The CUDA kernels sum in other
 * orders (test_cuda_ops holds each operation to 1e-5 of its terms), and an attention
 * probability can then round to the neighbouring F16 value; through a few layers that
 * reaches about 4e-3 on these models, so a CUDA device gets 1e-2 (greedy tokens must
 * still agree). */
static double tol_for(double standin) { return dev == HEARTH_GPU_CUDA && standin < 1e-2 ? 1e-2 : standin; }

typedef struct {
    hearth_gpu_mode gpu;
    double budget_gib;
    int ngl;
    const char *idx_path;
    int n_seq;
    bool reset;
} setup;

static hearth_ctx *ctx(hearth_model *m, const setup *s, hearth_ffn_mode mode, hr_err *e) {
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = 32, cp.n_threads = 2, cp.n_batch = 16, cp.ffn_mode = mode, cp.n_seq = s->n_seq;
    cp.gpu = s->gpu, cp.vram_budget_gib = s->budget_gib, cp.n_gpu_layers = s->ngl, cp.gpu_index_path = s->idx_path;
    cp.reset_gpu_index = s->reset;
    return hearth_ctx_new(m, &cp, e);
}

static int32_t argmax(const float *x, int n) {
    int32_t b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* Logits of the prompt (all rows) and of ND greedy decodes into out [(NP + ND)][n_vocab];
 * the GPU status and the host KV cache's bytes when asked for. */
static int run(hearth_model *m, const setup *s, hearth_ffn_mode mode, float *out, hearth_gpu_status *st, uint64_t *kv) {
    hr_err e = {{0}};
    hearth_ctx *c = ctx(m, s, mode, &e);
    if (!c) return fprintf(stderr, "ctx: %s\n", e.msg), -1;
    const int nv = hearth_model_get_info(m)->n_vocab;
    int rc = hearth_eval(c, prompt, NP, 0, true, &e);
    for (int t = 0; !rc && t < NP; t++) memcpy(out + t * nv, hearth_logits(c, t), sizeof(float) * (size_t)nv);
    for (int i = 0; !rc && i < ND; i++) {
        int32_t tok = argmax(out + (NP - 1 + i) * nv, nv);
        rc = hearth_eval(c, &tok, 1, NP + i, false, &e);
        if (!rc) memcpy(out + (NP + i) * nv, hearth_logits(c, -1), sizeof(float) * (size_t)nv);
    }
    if (rc) fprintf(stderr, "eval: %s\n", e.msg);
    if (st) hearth_ctx_gpu_status(c, st);
    if (kv) *kv = hearth_ctx_kv_bytes(c);
    hearth_ctx_free(c);
    return rc;
}

/* Max abs difference and greedy agreement of two runs. */
static double compare(const float *a, const float *b, int nv, int *agree) {
    double d = 0;
    *agree = 0;
    for (int r = 0; r < NP + ND; r++) {
        for (int i = 0; i < nv; i++) d = fmax(d, fabs((double)a[r * nv + i] - b[r * nv + i]));
        *agree += argmax(a + r * nv, nv) == argmax(b + r * nv, nv);
    }
    return d;
}

/* Arena bytes of everything but neurons, and all neuron bytes: from a plan with a large budget. */
static void sizes(hearth_model *m, hearth_ffn_mode mode, uint64_t *dense, uint64_t *ffn) {
    hr_gpu_plan p;
    hr_err e = {{0}};
    hr_gpu_plan_in in = {m, 32, 1, 16, 1ull << 34, mode, 0, NULL, 0, NULL, 0, NULL};
    CHECKF(!hr_gpu_plan_make(&in, &p, &e), "%s", e.msg);
    *dense = p.total, *ffn = p.ffn_bytes;
    hr_gpu_plan_free(&p);
}

/* The --vram-budget giving share of the FFN bytes to hot neurons. */
static double budget_for(hearth_model *m, hearth_ffn_mode mode, double share) {
    uint64_t dense, ffn;
    sizes(m, mode, &dense, &ffn);
    const uint64_t slack = (uint64_t)m->hp.n_layer * 3 * (HR_DEV_ALIGN - 1);
    return (double)(dense + dev_over + (share > 0 ? slack + (uint64_t)(share * (double)ffn) : 0) + 64) / GIB;
}

/* The host KV cache holds exactly the layers whose attention stayed on the CPU: the CPU
 * path's bytes less the offloaded layers' share. */
static void check_kv(const hearth_model *m, uint64_t kv_cpu, uint64_t kv, int32_t layers_attn, const char *what) {
    const uint64_t nl = (uint64_t)m->hp.n_layer, want = kv_cpu / nl * (nl - (uint64_t)layers_attn);
    CHECKF(kv_cpu > 0 && kv_cpu % nl == 0 && kv == want,
           "%s: host KV cache of %llu bytes, want %llu (CPU %llu, %d of %llu layers' attention on the device)", what,
           (unsigned long long)kv, (unsigned long long)want, (unsigned long long)kv_cpu, layers_attn, (unsigned long long)nl);
}

static void check_shares(hearth_model *m, hearth_ffn_mode mode, const char *idx_path, double tol, const char *what) {
    const int nv = m->hp.n_vocab;
    float *ref = malloc(sizeof(float) * (NP + ND) * (size_t)nv), *got = malloc(sizeof(float) * (NP + ND) * (size_t)nv);
    setup cpu = {HEARTH_GPU_OFF, 0, 0, NULL, 1, false};
    uint64_t kv_cpu = 0, kv = 0;
    CHECK(!run(m, &cpu, mode, ref, NULL, &kv_cpu));
    const double shares[] = {0.0, 0.25, 1.0};
    for (int k = 0; k < 3; k++) {
        setup sd = {dev, budget_for(m, mode, shares[k]), 0, idx_path, 1, false};
        hearth_gpu_status st;
        if (run(m, &sd, mode, got, &st, &kv)) {
            CHECKF(0, "%s share %.2f: run failed", what, shares[k]);
            continue;
        }
        int agree;
        double d = compare(ref, got, nv, &agree);
        printf("%-26s share %.2f (placed %.3f, %d attention layers, output %d): max |diff| %.3g, greedy %d/%d, device "
               "served %.3f of %llu activations\n",
               what, shares[k], st.ffn_share, st.layers_attn, st.output_on_device, d, agree, NP + ND,
               st.act_total ? (double)st.act_device / st.act_total : 0.0, (unsigned long long)st.act_total);
        CHECKF(d <= tol_for(tol) && agree == NP + ND, "%s share %.2f: logits differ by %g (tolerance %g), greedy %d/%d",
               what, shares[k], d, tol_for(tol), agree, NP + ND);
        CHECK(st.active && st.layers_attn == m->hp.n_layer && st.output_on_device);
        check_kv(m, kv_cpu, kv, st.layers_attn, what);
        CHECKF(fabs(st.ffn_share - shares[k]) < 0.03, "%s: placed %.3f of the FFN, wanted %.2f", what, st.ffn_share, shares[k]);
        if (k) CHECK(st.act_total > 0 && st.ffn_splits > 0);
        if (k == 0) CHECK(st.act_device == 0 && st.hot_neurons == 0); /* and no split: nothing hot */
        if (k == 2) CHECK(st.act_device == st.act_total && st.hot_neurons == (int64_t)m->hp.n_layer * m->hp.n_ff);
        if (k == 1) CHECK(st.act_device > 0 && st.act_device < st.act_total);
        CHECK(st.used == st.used_fixed + st.used_kv + st.used_scratch + st.used_neurons && st.used + dev_over <= st.budget);
        if (mode == HEARTH_FFN_PREDICTED && !m->hp.arch->parallel && m->hp.arch->norm == HR_NORM_RMS) {
            /* attention and predictor share a wait (their norms are on the device), the FFN
             * split at most one more, the logits one: separately it was up to three a layer */
            const uint64_t most = (uint64_t)(1 + ND) * (2 * (uint64_t)m->hp.n_layer + 1);
            CHECKF(st.syncs <= most && st.syncs >= (uint64_t)(1 + ND) * ((uint64_t)m->hp.n_layer + 1),
                   "%s share %.2f: %llu waits for the device, want at most %llu", what, shares[k],
                   (unsigned long long)st.syncs, (unsigned long long)most);
        }
    }
    free(ref), free(got);
}

static hearth_model *synth_arch(const char *path, const char * arch, uint32_t type, hr_synth_act act, bool pwri, int n_layer) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.arch = arch, p.type = type, p.act = act, p.powerinfer = pwri, p.pred_rank = 32;
    p.n_embd = 128, p.n_head = 4, p.n_head_kv = 2, p.n_ff = 256, p.n_vocab = 300, p.n_layer = (uint32_t)n_layer, p.seed = 7;
    hr_err e = {{0}};
    if (hr_synth_write(&p, path, &e)) return fprintf(stderr, "synth: %s\n", e.msg), NULL;
    hearth_model *m = hearth_model_load(path, NULL, &e);
    if (!m) fprintf(stderr, "load: %s\n", e.msg);
    return m;
}

static hearth_model *synth(const char *path, uint32_t type, hr_synth_act act, bool pwri, int n_layer) {
    return synth_arch(path, "llama", type, act, pwri, n_layer);
}

static void test_synthetic(void) {
    char path[256], idx[300];
    hearth_model *m = synth(hr_test_tmp(path, sizeof path, "hy.gguf"), HR_F32, HR_SYNTH_REGLU, true, 2);
    snprintf(idx, sizeof idx, "%s.generated.gpuidx", path);
    if (m) {
        check_shares(m, HEARTH_FFN_PREDICTED, idx, 1e-4, "synthetic f32 predicted");
        check_shares(m, HEARTH_FFN_DENSE, idx, 1e-4, "synthetic f32 dense");
    }
    hearth_model_free(m);
    remove(path), remove(idx);
    /* Hearth's linear predictor form: scores of gate and up from the device, no ReLU, masks
     * on the host */
    hr_synth_params lp;
    hr_synth_defaults(&lp);
    lp.type = HR_F32, lp.act = HR_SYNTH_DRELU, lp.powerinfer = true, lp.pred_linear = true, lp.pred_rank = 32;
    lp.n_embd = 128, lp.n_head = 4, lp.n_head_kv = 2, lp.n_ff = 256, lp.n_vocab = 300, lp.n_layer = 2, lp.seed = 7;
    hr_err le = {{0}};
    m = hr_synth_write(&lp, hr_test_tmp(path, sizeof path, "hylin.gguf"), &le) ? NULL : hearth_model_load(path, NULL, &le);
    CHECKF(m && m->layers[0].ffn.pred_m == 2, "linear predictor model: %s", le.msg);
    if (m) check_shares(m, HEARTH_FFN_PREDICTED, NULL, 1e-4, "synthetic f32 drelu, linear predictor");
    hearth_model_free(m);
    remove(path);
    /* Q8_0 activations are rounded to 8 bits before every product: a rounding flip moves a
     * logit by up to a few hundredths (as between the CPU's own FFN modes) */
    m = synth(hr_test_tmp(path, sizeof path, "hy8.gguf"), HR_Q8_0, HR_SYNTH_DRELU, true, 3);
    if (m) check_shares(m, HEARTH_FFN_PREDICTED, NULL, 5e-2, "synthetic q8_0 drelu");
    hearth_model_free(m);
    remove(path);
    /* Falcon: no gate (ReLU on up), fused QKV rows, parallel attention and FFN, LayerNorm */
    m = synth_arch(hr_test_tmp(path, sizeof path, "hyf.gguf"), "falcon", HR_F32, HR_SYNTH_RELU, true, 2);
    if (m) check_shares(m, HEARTH_FFN_PREDICTED, NULL, 5e-4, "synthetic falcon relu"); /* summation order only, as above */
    hearth_model_free(m);
    remove(path);
}

/* The bundled model, with its statistics: the index is generated from them, written next
 * to (a link to) the model, and read back by the next context with the same budget. */
static void test_bible(void) {
    const char *src = getenv("HEARTH_SRC");
    char model[512], stats[512], dir[256], lm[600], ls[600], idx[700];
    snprintf(model, sizeof model, "%s/models/bible-drelu.powerinfer.gguf", src ? src : ".");
    snprintf(stats, sizeof stats, "%s/models/bible-drelu.powerinfer.stats.gguf", src ? src : ".");
    hr_test_tmp(dir, sizeof dir, "bible");
    snprintf(lm, sizeof lm, "%s.gguf", dir), snprintf(ls, sizeof ls, "%s.stats.gguf", dir);
    snprintf(idx, sizeof idx, "%s.generated.gpuidx", lm);
    if (access(model, R_OK) || symlink(model, lm) || symlink(stats, ls)) {
        CHECKF(0, "cannot link %s", model);
        return;
    }
    hr_err e = {{0}};
    hearth_model *m = hearth_model_load(lm, NULL, &e);
    CHECKF(m != NULL, "%s", e.msg);
    if (m) {
        for (int i = 0; i < NP; i++) prompt[i] = (int32_t)((i * 131 + 7) % m->hp.n_vocab);
        /* logits of this model reach about 15: 5e-3 is float noise of the summation order */
        check_shares(m, HEARTH_FFN_PREDICTED, idx, 5e-3, "bible-drelu predicted");
        /* same budget again: the index written by the last context is reused */
        hearth_gpu_status st;
        setup sd = {dev, budget_for(m, HEARTH_FFN_PREDICTED, 1.0), 0, idx, 1, false};
        hearth_ctx *c = ctx(m, &sd, HEARTH_FFN_PREDICTED, &e);
        CHECKF(c && !hearth_ctx_gpu_status(c, &st) && strstr(st.note, "GPU index read from"), "%s", st.note);
        CHECKF(st.act_share > 0.999, "activation share %g with every neuron hot", st.act_share);
        hearth_ctx_free(c);
        sd.budget_gib = budget_for(m, HEARTH_FFN_PREDICTED, 0.25);
        c = ctx(m, &sd, HEARTH_FFN_PREDICTED, &e);
        CHECKF(c && !hearth_ctx_gpu_status(c, &st) && strstr(st.note, "made from statistics, written"), "%s", st.note);
        /* hot neurons chosen by activation counts serve more than their byte share */
        CHECKF(st.act_share > st.ffn_share, "hot neurons serve %.3f of activations for %.3f of the bytes", st.act_share, st.ffn_share);
        hearth_ctx_free(c);
        /* an index that cannot be written is kept in memory; a broken one is an error */
        remove(idx);
        CHECK(!mkdir(idx, 0700));
        sd.reset = true;
        c = ctx(m, &sd, HEARTH_FFN_PREDICTED, &e);
        CHECKF(c && !hearth_ctx_gpu_status(c, &st) && strstr(st.note, "kept in memory") && st.hot_neurons > 0, "%s", c ? st.note : e.msg);
        hearth_ctx_free(c);
        rmdir(idx);
        FILE *f = fopen(idx, "w");
        if (f) fputs("not an index", f), fclose(f);
        sd.reset = false;
        CHECK(ctx(m, &sd, HEARTH_FFN_PREDICTED, &e) == NULL && strstr(e.msg, "GPU index"));
    }
    hearth_model_free(m);
    remove(lm), remove(ls), remove(idx);
}

/* Two sequences in one batch: each token's logits equal the CPU path's, and (as on the CPU)
 * do not depend on what else is in the batch; also with one layer's attention on the device
 * and the other's on the host, whose cache then holds that one layer per sequence. */
static void test_two_sequences(void) {
    char path[256];
    hearth_model *m = synth(hr_test_tmp(path, sizeof path, "seq.gguf"), HR_F32, HR_SYNTH_REGLU, true, 2);
    if (!m) return;
    const int nv = m->hp.n_vocab, n = 8;
    int32_t toks[8], pos[8], seq[8];
    bool want[8];
    for (int i = 0; i < n; i++) toks[i] = (i * 37 + 5) % nv, seq[i] = i % 2, pos[i] = i / 2, want[i] = true;
    hearth_batch b = {n, toks, pos, seq, want};
    float *l[3];
    setup s[3] = {{HEARTH_GPU_OFF, 0, 0, NULL, 2, false},
                  {dev, budget_for(m, HEARTH_FFN_PREDICTED, 0.25), 0, NULL, 2, false},
                  {dev, OVER_GIB + 0.05, 1, NULL, 2, false}};
    uint64_t kv[3] = {0};
    int32_t layers_attn[3] = {0};
    for (int k = 0; k < 3; k++) {
        hr_err e = {{0}};
        hearth_gpu_status st = {0};
        l[k] = malloc(sizeof(float) * (size_t)(n * nv));
        hearth_ctx *c = ctx(m, &s[k], HEARTH_FFN_PREDICTED, &e);
        CHECKF(c && !hearth_eval_batch(c, &b, &e), "%s", e.msg);
        for (int i = 0; c && i < n; i++) memcpy(l[k] + i * nv, hearth_logits(c, i), sizeof(float) * (size_t)nv);
        if (c) kv[k] = hearth_ctx_kv_bytes(c), hearth_ctx_gpu_status(c, &st), layers_attn[k] = st.layers_attn;
        hearth_ctx_free(c);
    }
    for (int k = 1; k < 3; k++) {
        double d = 0;
        for (int i = 0; i < n * nv; i++) d = fmax(d, fabs((double)l[0][i] - l[k][i]));
        CHECKF(d <= tol_for(1e-4), "two sequences, attention of %d layers on the device: differs from the CPU by %g", layers_attn[k], d);
        check_kv(m, kv[0], kv[k], layers_attn[k], "two sequences");
    }
    CHECK(layers_attn[1] == 2 && layers_attn[2] == 1);
    /* sequence 0 alone through the hybrid path: bit-identical to its rows of the shared batch */
    int32_t t0[4], p0[4];
    for (int i = 0; i < 4; i++) t0[i] = toks[2 * i], p0[i] = i;
    hearth_batch b0 = {4, t0, p0, NULL, want};
    hr_err e = {{0}};
    hearth_ctx *c = ctx(m, &s[1], HEARTH_FFN_PREDICTED, &e);
    CHECKF(c && !hearth_eval_batch(c, &b0, &e), "%s", e.msg);
    int same = 0;
    for (int i = 0; c && i < 4; i++) same += !memcmp(hearth_logits(c, i), l[1] + 2 * i * nv, sizeof(float) * (size_t)nv);
    CHECKF(same == 4, "hybrid: %d of 4 tokens of a sequence decoded alone equal the shared batch's", same);
    hearth_ctx_free(c);
    free(l[0]), free(l[1]), free(l[2]);
    hearth_model_free(m);
    remove(path);
}

/* Chat's prefix reuse and a server slot's next request re-evaluate a sequence from some
 * position on, over what the caches held: nothing is cleared or copied, on either side.
 * With layer 0's cache on the device and layer 1's on the host, a sequence rewritten from
 * position 4 gives the logits of a fresh context that saw only the new tokens. */
static void test_rewind(void) {
    char path[256];
    hearth_model *m = synth(hr_test_tmp(path, sizeof path, "rew.gguf"), HR_F32, HR_SYNTH_REGLU, true, 2);
    if (!m) return;
    const int nv = m->hp.n_vocab, keep = 4;
    int32_t other[NP];
    for (int i = 0; i < NP; i++) other[i] = i < keep ? prompt[i] : (prompt[i] * 7 + 3) % nv;
    setup sd = {dev, OVER_GIB + 0.05, 1, NULL, 2, false};
    hr_err e = {{0}};
    hearth_ctx *a = ctx(m, &sd, HEARTH_FFN_PREDICTED, &e), *b = a ? ctx(m, &sd, HEARTH_FFN_PREDICTED, &e) : NULL;
    CHECKF(a && b, "%s", e.msg);
    hearth_gpu_status st = {0};
    if (a) hearth_ctx_gpu_status(a, &st);
    CHECK(st.layers_attn == 1);
    int32_t pos[NP], seq[NP];
    bool want[NP];
    for (int i = 0; i < NP; i++) pos[i] = i, seq[i] = 1, want[i] = true;
    hearth_batch fill = {NP, prompt, pos, seq, NULL}, head = {keep, other, pos, seq, NULL};
    hearth_batch tail = {NP - keep, other + keep, pos + keep, seq, want};
    int same = 0;
    if (a && b && !hearth_eval_batch(a, &fill, &e) && !hearth_eval_batch(a, &tail, &e) && !hearth_eval_batch(b, &head, &e) &&
        !hearth_eval_batch(b, &tail, &e))
        for (int i = 0; i < NP - keep; i++) same += !memcmp(hearth_logits(a, i), hearth_logits(b, i), sizeof(float) * (size_t)nv);
    CHECKF(same == NP - keep, "rewound sequence: %d of %d tokens as a fresh context's (%s)", same, NP - keep, e.msg);
    hearth_ctx_free(a), hearth_ctx_free(b);
    hearth_model_free(m);
    remove(path);
}

/* -ngl on a dense SwiGLU file: whole layers (attention, KV, FFN), run device-resident
 * (the residual stream stays on the device across them), then the output. */
static void test_layer_offload(void) {
    char path[256];
    hearth_model *m = synth(hr_test_tmp(path, sizeof path, "dense.gguf"), HR_F32, HR_SYNTH_SWIGLU, false, 3);
    if (!m) return;
    const int nv = m->hp.n_vocab;
    float *ref = malloc(sizeof(float) * (NP + ND) * (size_t)nv), *got = malloc(sizeof(float) * (NP + ND) * (size_t)nv);
    setup cpu = {HEARTH_GPU_OFF, 0, 0, NULL, 1, false};
    uint64_t kv_cpu = 0, kv = 0;
    CHECK(!run(m, &cpu, HEARTH_FFN_DENSE, ref, NULL, &kv_cpu));
    const int ngl[] = {1, 3, 4, 0};
    for (int k = 0; k < 4; k++) {
        setup sd = {dev, OVER_GIB + 0.05, ngl[k], NULL, 1, false};
        hearth_gpu_status st;
        int agree;
        CHECK(!run(m, &sd, HEARTH_FFN_DENSE, got, &st, &kv));
        double d = compare(ref, got, nv, &agree);
        const int whole = ngl[k] == 0 || ngl[k] > 3 ? 3 : ngl[k];
        check_kv(m, kv_cpu, kv, whole, "dense swiglu -ngl");
        printf("dense swiglu -ngl %d: %d whole layers, output %d: max |diff| %.3g, greedy %d/%d\n", ngl[k], st.layers_whole,
               st.output_on_device, d, agree, NP + ND);
        CHECKF(d <= tol_for(1e-4) && agree == NP + ND, "-ngl %d: logits differ by %g", ngl[k], d);
        CHECK(st.layers_whole == whole && st.layers_attn == whole && st.output_on_device == (ngl[k] != 1 && ngl[k] != 3));
        CHECK(st.layers_resident == whole); /* serial RMSNorm, dense FFN: x stays on the device across them */
        /* one wait per evaluation for x after the resident run, one more for the logits when
         * the output is on the device (layer by layer it was two per layer) */
        const uint64_t waits = (uint64_t)(1 + ND) * (st.output_on_device ? 2 : 1);
        CHECKF(st.syncs == waits && st.bytes_to_host > 0 && st.bytes_to_dev > 0, "-ngl %d: %llu waits for the device, want %llu",
               ngl[k], (unsigned long long)st.syncs, (unsigned long long)waits);
        CHECK(st.act_device * 3 == st.act_total * (uint64_t)whole && fabs(st.ffn_share - whole / 3.0) < 1e-9);
    }
    free(ref), free(got);
    hearth_model_free(m);
    remove(path);
}

/* A context that placed the attention of only some layers: logits as the CPU path's. */
static void check_partial_attn(hearth_model *m, const setup *s, const float *ref, int32_t layers_attn) {
    const int nv = m->hp.n_vocab;
    float *got = malloc(sizeof(float) * (NP + ND) * (size_t)nv);
    int agree = 0;
    CHECK(!run(m, s, HEARTH_FFN_PREDICTED, got, NULL, NULL));
    double d = compare(ref, got, nv, &agree);
    printf("attention of %d of %d layers on the device: max |diff| %.3g, greedy %d/%d\n", layers_attn, m->hp.n_layer, d,
           agree, NP + ND);
    CHECKF(d <= tol_for(1e-4) && agree == NP + ND, "attention of %d layers: logits differ by %g", layers_attn, d);
    free(got);
}

/* Budgets: below the scratch, above the device, a sweep that always fits (the host KV
 * cache shrinking with every layer whose attention the device takes), no CUDA. */
static void test_budgets(void) {
    char path[256];
    hearth_model *m = synth(hr_test_tmp(path, sizeof path, "bud.gguf"), HR_F32, HR_SYNTH_REGLU, true, 2);
    if (!m) return;
    hr_err e = {{0}};
    setup tiny = {dev, OVER_GIB + 1e-4, 0, NULL, 1, false};
    CHECK(ctx(m, &tiny, HEARTH_FFN_PREDICTED, &e) == NULL);
    CHECKF(strstr(e.msg, "too small") && strstr(e.msg, "needs") && strstr(e.msg, "bytes"), "%s", e.msg);
    setup ngl = {dev, budget_for(m, HEARTH_FFN_PREDICTED, 0.25), 2, NULL, 1, false};
    CHECK(ctx(m, &ngl, HEARTH_FFN_PREDICTED, &e) == NULL && strstr(e.msg, "whole layers"));
    /* every budget from the scratch upwards makes a context that fits the stand-in */
    const double lo = OVER_GIB + (budget_for(m, HEARTH_FFN_PREDICTED, 0) - OVER_GIB) * 0.3, hi = budget_for(m, HEARTH_FFN_PREDICTED, 1.1);
    float *ref = malloc(sizeof(float) * (NP + ND) * (size_t)m->hp.n_vocab);
    setup cpu = {HEARTH_GPU_OFF, 0, 0, NULL, 1, false};
    uint64_t kv_cpu = 0;
    CHECK(!run(m, &cpu, HEARTH_FFN_PREDICTED, ref, NULL, &kv_cpu));
    int made = 0, partial = 0;
    for (int k = 0; k <= 24; k++) {
        setup s = {dev, lo + (hi - lo) * k / 24, 0, NULL, 1, false};
        hearth_ctx *c = ctx(m, &s, HEARTH_FFN_PREDICTED, &e);
        if (!c) {
            CHECKF(strstr(e.msg, "too small"), "budget %g GiB: %s", s.budget_gib, e.msg);
            continue;
        }
        hearth_gpu_status st;
        hearth_ctx_gpu_status(c, &st);
        CHECK(st.active && st.used + dev_over <= (uint64_t)(s.budget_gib * GIB));
        check_kv(m, kv_cpu, hearth_ctx_kv_bytes(c), st.layers_attn, "budget sweep");
        made++;
        hearth_ctx_free(c);
        if (st.layers_attn > 0 && st.layers_attn < m->hp.n_layer && !partial++) check_partial_attn(m, &s, ref, st.layers_attn);
    }
    CHECK(made >= 15 && partial > 0);
    free(ref);
    setup off = {HEARTH_GPU_OFF, 0, 0, NULL, 1, false}, aut = {HEARTH_GPU_AUTO, 0, 0, NULL, 1, false};
    setup cuda = {HEARTH_GPU_CUDA, 0, 0, NULL, 1, false};
    hearth_ctx *c = ctx(m, &off, HEARTH_FFN_PREDICTED, &e);
    hearth_gpu_status st;
    CHECK(c && !hearth_ctx_gpu_status(c, &st) && !st.active && !st.reason[0] && c->hy == NULL);
    hearth_ctx_free(c);
    if (!hr_dev_cuda_built()) {
        c = ctx(m, &aut, HEARTH_FFN_PREDICTED, &e);
        CHECK(c && !hearth_ctx_gpu_status(c, &st) && !st.active && !st.reason[0]);
        hearth_ctx_free(c);
        CHECK(ctx(m, &cuda, HEARTH_FFN_PREDICTED, &e) == NULL && strstr(e.msg, "CUDA"));
    }
    hearth_model_free(m);
    remove(path);
}

/* -ngl on a dense Falcon file: whole FFNs without a gate. */
static void test_layer_offload_falcon(void) {
    char path[256];
    hearth_model *m = synth_arch(hr_test_tmp(path, sizeof path, "fal.gguf"), "falcon", HR_F32, HR_SYNTH_GELU, false, 2);
    if (!m) return;
    const int nv = m->hp.n_vocab;
    float *ref = malloc(sizeof(float) * (NP + ND) * (size_t)nv), *got = malloc(sizeof(float) * (NP + ND) * (size_t)nv);
    setup cpu = {HEARTH_GPU_OFF, 0, 0, NULL, 1, false}, sd = {dev, OVER_GIB + 0.05, 1, NULL, 1, false};
    hearth_gpu_status st;
    int agree;
    uint64_t kv_cpu = 0, kv = 0;
    CHECK(!run(m, &cpu, HEARTH_FFN_DENSE, ref, NULL, &kv_cpu) && !run(m, &sd, HEARTH_FFN_DENSE, got, &st, &kv));
    double d = compare(ref, got, nv, &agree);
    CHECKF(d <= tol_for(1e-4) && agree == NP + ND && st.layers_whole == 1, "falcon -ngl 1: logits differ by %g", d);
    CHECK(st.layers_resident == 0); /* parallel blocks, LayerNorm: layer by layer through the host */
    check_kv(m, kv_cpu, kv, 1, "falcon -ngl 1");
    free(ref), free(got);
    hearth_model_free(m);
    remove(path);
}

/* -ngl on a PowerInfer file: in predicted mode whole layers run the predictor and every
 * neuron on the device, layer by layer (the mask is made on the host); in dense mode they
 * run device-resident over all neuron rows. */
static void test_layer_offload_pwri(void) {
    char path[256];
    hearth_model *m = synth(hr_test_tmp(path, sizeof path, "ngl.gguf"), HR_F32, HR_SYNTH_REGLU, true, 2);
    if (!m) return;
    const int nv = m->hp.n_vocab;
    float *ref = malloc(sizeof(float) * (NP + ND) * (size_t)nv), *got = malloc(sizeof(float) * (NP + ND) * (size_t)nv);
    setup cpu = {HEARTH_GPU_OFF, 0, 0, NULL, 1, false};
    const hearth_ffn_mode modes[2] = {HEARTH_FFN_PREDICTED, HEARTH_FFN_DENSE};
    for (int mi = 0; mi < 2; mi++) {
        const bool dense = modes[mi] == HEARTH_FFN_DENSE;
        uint64_t kv_cpu = 0, kv = 0;
        CHECK(!run(m, &cpu, modes[mi], ref, NULL, &kv_cpu));
        for (int ngl = 1; ngl <= 3; ngl += 2) {
            setup sd = {dev, OVER_GIB + 0.05, ngl, NULL, 1, false};
            hearth_gpu_status st;
            int agree;
            CHECK(!run(m, &sd, modes[mi], got, &st, &kv));
            double d = compare(ref, got, nv, &agree);
            CHECKF(d <= tol_for(1e-4) && agree == NP + ND, "pwri %s -ngl %d: logits differ by %g", dense ? "dense" : "predicted",
                   ngl, d);
            const int whole = ngl > 2 ? 2 : ngl;
            check_kv(m, kv_cpu, kv, whole, "pwri -ngl");
            CHECK(st.layers_whole == whole && st.layers_pred == (dense ? 0 : whole) &&
                  st.hot_neurons == (int64_t)whole * m->hp.n_ff);
            CHECKF(st.layers_resident == (dense ? whole : 0), "pwri %s -ngl %d: %d resident layers", dense ? "dense" : "predicted",
                   ngl, st.layers_resident);
            CHECK(st.output_on_device == (ngl > 2) && st.act_device > 0 && (whole == 2) == (st.act_device == st.act_total));
            if (dense) CHECK(st.syncs == (uint64_t)(1 + ND) * (st.output_on_device ? 2 : 1));
        }
    }
    free(ref), free(got);
    hearth_model_free(m);
    remove(path);
}

int main(void) {
    for (int i = 0; i < NP; i++) prompt[i] = (int32_t)((i * 37 + 11) % 300);
    if (hr_test_gpu_env(&dev, &dev_over)) return 77;
    test_synthetic();
    test_two_sequences();
    test_rewind();
    test_layer_offload();
    test_layer_offload_pwri();
    test_layer_offload_falcon();
    test_budgets();
    test_bible();
    return TEST_END();
}
