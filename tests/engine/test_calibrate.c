/* Calibration on synthetic models: activation counts against the engine's exact-mode
 * counters and a naive recomputation; ReLU-family only; the written PowerInfer file
 * (transposed down matrix, copied metadata, predictors) loads and its predicted mode
 * recalls the truly active neurons and stays close to dense. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "formats/gguf.h"
#include "formats/types.h"
#include "sparse/calibrate.h"
#include "synth/synth.h"
#include "testutil.h"

#define D 64
#define FF 128
#define NL 2
#define VOCAB 300
#define CTX 50

static void synth(const char *path, uint32_t type, hr_synth_act act) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.type = type, p.act = act, p.n_embd = D, p.n_head = 4, p.n_head_kv = 2, p.n_ff = FF, p.n_vocab = VOCAB, p.n_layer = NL;
    p.seed = 3;
    hr_err e;
    if (hr_synth_write(&p, path, &e)) fprintf(stderr, "synth: %s\n", e.msg), exit(1);
}

static hearth_model *load(const char *path) {
    hr_err e;
    hearth_model *m = hearth_model_load(path, NULL, &e);
    if (!m) fprintf(stderr, "load %s: %s\n", path, e.msg), exit(1);
    return m;
}

static const float *tensor_f32(const gguf_file *f, const char *fmt, int il) {
    char name[64];
    snprintf(name, sizeof name, fmt, il);
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t || t->type != HR_F32) fprintf(stderr, "no f32 tensor %s\n", name), exit(1);
    return t->data;
}

/* Per-layer fired totals from the engine's exact mode counters, same chunks. */
static void exact_totals(hearth_model *m, const int32_t *toks, int n, uint64_t *fired) {
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = CTX, cp.n_batch = CTX, cp.n_threads = 2, cp.ffn_mode = HEARTH_FFN_EXACT, cp.ffn_stats = true;
    cp.kv_k = cp.kv_v = HEARTH_KV_F32, cp.gpu = HEARTH_GPU_OFF; /* the CPU's counters, as calibration's */
    hr_err e;
    hearth_ctx *c = hearth_ctx_new(m, &cp, &e);
    CHECKF(c != NULL, "%s", e.msg);
    for (int done = 0; c && done < n; done += CTX) CHECK(hearth_eval(c, toks + done, n - done < CTX ? n - done : CTX, 0, false, &e) == 0);
    for (int l = 0; c && l < NL; l++) {
        hearth_ffn_stats s;
        hearth_ctx_ffn_stats(c, l, &s);
        fired[l] = s.fired;
    }
    hearth_ctx_free(c);
}

static void counts(void) {
    char path[256];
    hr_test_tmp(path, sizeof path, "reglu.gguf");
    synth(path, HR_F32, HR_SYNTH_REGLU);
    hearth_model *m = load(path);
    enum { N = 200 };
    int32_t toks[N];
    hr_rng r = {5};
    for (int i = 0; i < N; i++) toks[i] = (int32_t)(hr_rng_next(&r) % VOCAB);
    hr_collect_opts o = {.n_ctx = CTX, .n_threads = 2, .max_pairs = N, .bos = -1};
    hr_stats s;
    hr_pairs pairs;
    hr_err e;
    CHECKF(hr_calib_collect(m, toks, N, &o, &s, &pairs, &e) == 0, "%s", e.msg);
    CHECK(s.n_tokens == N && pairs.n == N && s.n_layer == NL && s.n_ff == FF);
    uint64_t fired[NL] = {0};
    exact_totals(m, toks, N, fired);
    gguf_file f;
    CHECK(gguf_open(&f, path, &e) == 0);
    for (int l = 0; l < NL; l++) {
        uint64_t sum = 0;
        for (int j = 0; j < FF; j++) sum += s.counts[l * FF + j];
        CHECKF(sum == fired[l], "layer %d: calibrate counted %llu, exact mode %llu", l, (unsigned long long)sum, (unsigned long long)fired[l]);
        CHECK(sum > N * FF / 5 && sum < N * FF * 4 / 5); /* a ReGLU of random weights fires about half */
        /* naive: act_j = relu(gate_j . xn) * (up_j . xn), xn = rmsnorm(p) * w, from the file's weights */
        const float *G = tensor_f32(&f, "blk.%d.ffn_gate.weight", l), *U = tensor_f32(&f, "blk.%d.ffn_up.weight", l);
        const float *w = tensor_f32(&f, "blk.%d.ffn_norm.weight", l);
        uint32_t naive[FF] = {0};
        int mask_diff = 0;
        for (int t = 0; t < N; t++) {
            const float *p = pairs.p + ((size_t)l * pairs.cap + t) * D;
            const uint8_t *mk = pairs.mask + ((size_t)l * pairs.cap + t) * pairs.mask_bytes;
            double ss = 0, xn[D];
            for (int i = 0; i < D; i++) ss += (double)p[i] * p[i];
            double inv = 1.0 / sqrt(ss / D + 1e-5);
            for (int i = 0; i < D; i++) xn[i] = p[i] * inv * w[i];
            for (int j = 0; j < FF; j++) {
                double g = 0, u = 0;
                for (int i = 0; i < D; i++) g += G[j * D + i] * xn[i], u += U[j * D + i] * xn[i];
                bool on = g > 0 && u != 0;
                naive[j] += on;
                mask_diff += on != hr_pair_bit(mk, j);
            }
        }
        int count_diff = 0;
        for (int j = 0; j < FF; j++) count_diff += abs((int)naive[j] - (int)s.counts[l * FF + j]);
        /* float vs double sums may flip a value within rounding of zero, nothing more */
        CHECKF(count_diff <= 2 && mask_diff <= 2, "layer %d: %d count and %d mask differences", l, count_diff, mask_diff);
    }
    gguf_close(&f);
    /* pairs spread over the text when capped */
    hr_stats s2;
    hr_pairs p2;
    o.max_pairs = 30;
    CHECKF(hr_calib_collect(m, toks, N, &o, &s2, &p2, &e) == 0, "%s", e.msg);
    CHECK(p2.n == 29 && !memcmp(p2.p + D, pairs.p + 7 * D, sizeof(float) * D) && !memcmp(s2.counts, s.counts, sizeof(uint32_t) * NL * FF));
    hr_stats_free(&s2), hr_pairs_free(&p2);
    hr_stats_free(&s), hr_pairs_free(&pairs);
    hearth_model_free(m);
    remove(path);
}

static void refuses_swiglu(void) {
    char path[256];
    hr_test_tmp(path, sizeof path, "swiglu.gguf");
    synth(path, HR_F32, HR_SYNTH_SWIGLU);
    hearth_model *m = load(path);
    int32_t toks[4] = {1, 2, 3, 4};
    hr_collect_opts o = {.n_ctx = CTX, .n_threads = 1, .max_pairs = 4, .bos = -1};
    hr_stats s;
    hr_pairs p;
    hr_err e = {{0}};
    CHECK(hr_calib_collect(m, toks, 4, &o, &s, &p, &e) < 0 && strstr(e.msg, "ReLU-family") && strstr(e.msg, "swiglu"));
    CHECK(s.counts == NULL && p.p == NULL);
    hearth_model_free(m);
    remove(path);
}

/* Writes a PowerInfer file calibrated on n tokens; fills preds. */
static void calibrate_file(hearth_model *m, const int32_t *toks, int n, const char *out, hr_predictor *preds) {
    hr_collect_opts o = {.n_ctx = CTX, .n_threads = 2, .max_pairs = n, .bos = -1};
    hr_stats s;
    hr_pairs pairs;
    hr_err e;
    CHECKF(hr_calib_collect(m, toks, n, &o, &s, &pairs, &e) == 0, "%s", e.msg);
    hr_cpu cpu;
    CHECK(hr_cpu_init(&cpu, 2, &e) == 0);
    /* neurons weighted as in a model whose FFN dwarfs the predictor, so that a precise
     * (full-rank) predictor wins the rank search */
    hr_pred_opts po = {.recall = 0.99, .max_rank = 256, .epochs = 4, .f16 = true, .ffn_neuron_bytes = 100 * hr_calib_neuron_bytes(m), .seed = 9};
    for (int l = 0; l < NL; l++) {
        float *G = hr_calib_decider(m, l, &e);
        CHECK(G != NULL);
        CHECKF(hr_predictor_train(&cpu, pairs.p + (size_t)l * pairs.cap * D, pairs.mask + (size_t)l * pairs.cap * pairs.mask_bytes,
                                  pairs.n, D, FF, G, &po, &preds[l], &e) == 0, "%s", e.msg);
        CHECKF(preds[l].recall >= 0.97, "layer %d: held-out recall %.4f", l, preds[l].recall);
        free(G);
    }
    hr_cpu_free(&cpu);
    CHECKF(hr_write_powerinfer(m, preds, true, out, &e) == 0, "%s", e.msg);
    hr_stats_free(&s), hr_pairs_free(&pairs);
}

static void check_file(const char *in, const char *out, const hr_predictor *preds) {
    gguf_file a, b;
    hr_err e;
    CHECK(gguf_open(&a, in, &e) == 0);
    CHECKF(gguf_open(&b, out, &e) == 0, "%s", e.msg);
    CHECK(b.sparse && !a.sparse && b.n_kv == a.n_kv);
    for (uint64_t i = 0; i < a.n_kv; i++) {
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)a.kv[i].key.len, a.kv[i].key.ptr);
        const gguf_kv *kb = gguf_find_kv(&b, key);
        CHECKF(kb && kb->val.type == a.kv[i].val.type, "key %s", key);
    }
    for (int l = 0; l < NL; l++) {
        char n1[64], n2[64];
        snprintf(n1, sizeof n1, "blk.%d.ffn_down.weight", l), snprintf(n2, sizeof n2, "blk.%d.ffn_down_t.weight", l);
        const gguf_tensor *dn = gguf_find_tensor(&a, n1), *dt = gguf_find_tensor(&b, n2);
        CHECK(dn && dt && !gguf_find_tensor(&b, n1) && dt->type == HR_F16 && dt->ne[0] == D && dt->ne[1] == FF);
        const uint16_t *x = dn->data, *y = dt->data; /* F16 -> F32 -> F16 is exact: the transpose must be too */
        int bad = 0;
        for (int i = 0; i < D; i++)
            for (int j = 0; j < FF; j++) bad += x[i * FF + j] != y[j * D + i];
        CHECKF(bad == 0, "layer %d: %d elements of ffn_down_t are not ffn_down's transpose", l, bad);
        snprintf(n1, sizeof n1, "blk.%d.fc1.weight", l), snprintf(n2, sizeof n2, "blk.%d.fc2.weight", l);
        const gguf_tensor *f1 = gguf_find_tensor(&b, n1), *f2 = gguf_find_tensor(&b, n2);
        CHECK(f1 && f2 && f1->type == HR_F16 && f1->ne[0] == D && f1->ne[1] == (uint64_t)preds[l].r && f2->ne[0] == (uint64_t)preds[l].r && f2->ne[1] == FF);
        CHECK(f2 && hr_f16_to_f32(((const uint16_t *)f2->data)[3]) == hr_f16_to_f32(hr_f32_to_f16(preds[l].fc2[3])));
    }
    gguf_close(&a), gguf_close(&b);
}

/* Logits of n tokens in one batch; per-layer stats into st. */
static void run(hearth_model *m, hearth_ffn_mode mode, const int32_t *toks, int n, float *out, hearth_ffn_stats *st) {
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = 64, cp.n_threads = 2, cp.ffn_mode = mode, cp.ffn_stats = true, cp.kv_k = cp.kv_v = HEARTH_KV_F32;
    cp.gpu = HEARTH_GPU_OFF; /* the CPU path (the default, auto, would take a GPU) */
    hr_err e;
    hearth_ctx *c = hearth_ctx_new(m, &cp, &e);
    CHECKF(c != NULL, "%s", e.msg);
    if (!c) return;
    CHECK(hearth_ctx_ffn_mode(c) == mode);
    CHECKF(hearth_eval(c, toks, n, 0, true, &e) == 0, "%s", e.msg);
    for (int t = 0; t < n; t++) memcpy(out + t * VOCAB, hearth_logits(c, t), sizeof(float) * VOCAB);
    for (int l = 0; st && l < NL; l++) hearth_ctx_ffn_stats(c, l, &st[l]);
    hearth_ctx_free(c);
}

static void powerinfer_file(void) {
    char in[256], out[256];
    hr_test_tmp(in, sizeof in, "reglu16.gguf"), hr_test_tmp(out, sizeof out, "reglu16.pwri.gguf");
    synth(in, HR_F16, HR_SYNTH_REGLU);
    hearth_model *m = load(in);
    enum { N = 2500, T = 60 };
    int32_t *toks = malloc(sizeof(int32_t) * N), fresh[T];
    hr_rng r = {17};
    for (int i = 0; i < N; i++) toks[i] = (int32_t)(hr_rng_next(&r) % VOCAB);
    for (int i = 0; i < T; i++) fresh[i] = (int32_t)(hr_rng_next(&r) % VOCAB);
    hr_predictor preds[NL];
    calibrate_file(m, toks, N, out, preds);
    check_file(in, out, preds);
    hearth_model *pm = load(out);
    CHECK(hearth_model_has_predictors(pm) && hearth_model_sparse_threshold(pm) == 0.0f);
    float *dense = malloc(sizeof(float) * T * VOCAB), *pred = malloc(sizeof(float) * T * VOCAB);
    hearth_ffn_stats st[NL];
    run(m, HEARTH_FFN_DENSE, fresh, T, dense, NULL);
    run(pm, HEARTH_FFN_PREDICTED, fresh, T, pred, st);
    double num = 0, den = 0;
    int top_same = 0;
    for (int t = 0; t < T; t++) {
        int a = 0, b = 0;
        for (int v = 0; v < VOCAB; v++) {
            double d = pred[t * VOCAB + v] - dense[t * VOCAB + v];
            num += d * d, den += (double)dense[t * VOCAB + v] * dense[t * VOCAB + v];
            if (dense[t * VOCAB + v] > dense[t * VOCAB + a]) a = v;
            if (pred[t * VOCAB + v] > pred[t * VOCAB + b]) b = v;
        }
        top_same += a == b;
    }
    double rel = sqrt(num / den);
    for (int l = 0; l < NL; l++) {
        double rec = st[l].fired ? (double)st[l].fired_computed / (double)st[l].fired : 0;
        double frac = (double)st[l].computed / (double)(st[l].tokens * FF);
        printf("layer %d: engine recall %.4f, computed %.3f (held-out %.4f, precision %.3f, r %d)\n", l, rec, frac, preds[l].recall,
               preds[l].precision, preds[l].r);
        CHECKF(rec >= 0.97, "layer %d: predicted mode recalls %.4f of the fired neurons on fresh tokens", l, rec);
        CHECKF(frac < 0.7, "layer %d computes %.3f of the neurons", l, frac); /* and it does skip neurons */
    }
    printf("predicted vs dense: relative logit error %.4f, same top token %d/%d\n", rel, top_same, T);
    CHECKF(rel < 0.03 && top_same >= T * 9 / 10, "relative error %.4f, top-1 agreement %d/%d", rel, top_same, T);
    for (int l = 0; l < NL; l++) hr_predictor_free(&preds[l]);
    free(dense), free(pred), free(toks);
    hearth_model_free(pm), hearth_model_free(m);
    remove(in), remove(out);
}

/* ---- files PowerInfer's loader accepts (llm_load_sparse_model_tensors, llm_load_hparams) ---- */

/* Predictors of width 4 with fixed values: the writer's job, not training, is under test. */
static void fixed_preds(hr_predictor *p) {
    for (int l = 0; l < NL; l++) {
        p[l] = (hr_predictor){D, FF, 4, malloc(sizeof(float) * 4 * D), malloc(sizeof(float) * FF * 4), 1, 1, 0, 0, 0, NULL, false};
        for (int i = 0; i < 4 * D; i++) p[l].fc1[i] = (float)((i * 37 + l) % 11) / 5.0f - 1.0f;
        for (int i = 0; i < 4 * FF; i++) p[l].fc2[i] = (float)((i * 53 + l) % 13) / 6.0f - 1.0f;
    }
}

static bool key_is(const gguf_file *f, const char *key, const char *want) {
    const gguf_kv *kv = gguf_find_kv(f, key);
    return kv && kv->val.type == GGUF_VT_STRING && gguf_str_eq(kv->val.v.s, want);
}

/* out holds exactly the tensors PowerInfer's sparse llama/bamboo loader creates (an extra one
 * fails its CUDA load), and every key its loader requires under the arch's prefix. */
static void check_pi_layout(const char *in, const char *out, const char *arch) {
    gguf_file a, b;
    hr_err e;
    CHECK(gguf_open(&a, in, &e) == 0);
    CHECKF(gguf_open(&b, out, &e) == 0, "%s", e.msg);
    CHECKF(b.sparse && key_is(&b, "general.architecture", arch), "%s: magic or architecture", out);
    const char *req[] = {"context_length", "embedding_length", "feed_forward_length", "attention.head_count", "block_count",
                         "attention.layer_norm_rms_epsilon"};
    char key[256];
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
        snprintf(key, sizeof key, "%s.%s", arch, req[i]);
        CHECKF(gguf_find_kv(&b, key) != NULL, "%s lacks %s", out, key);
    }
    CHECK(gguf_find_kv(&b, "tokenizer.ggml.tokens") && gguf_find_kv(&b, "tokenizer.ggml.model"));
    CHECK(b.n_kv == a.n_kv); /* renamed, none lost */
    for (uint64_t i = 0; i < a.n_kv; i++) { /* each input key, renamed where the arch changed, with its value */
        const gguf_kv *ka = &a.kv[i];
        if (ka->key.len > 6 && !memcmp(ka->key.ptr, "llama.", 6)) snprintf(key, sizeof key, "%s.%.*s", arch, (int)ka->key.len - 6, ka->key.ptr + 6);
        else snprintf(key, sizeof key, "%.*s", (int)ka->key.len, ka->key.ptr);
        const gguf_kv *kb = gguf_find_kv(&b, key);
        CHECKF(kb && kb->val.type == ka->val.type, "key %s", key);
        if (kb && kb->val.type == GGUF_VT_UINT32) CHECKF(kb->val.v.u == ka->val.v.u, "key %s value", key);
    }
    const char *per[] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down_t", "fc1", "fc2"};
    uint64_t want = 3 + NL * (sizeof per / sizeof per[0]);
    CHECKF(b.n_tensors == want, "%s has %llu tensors, PowerInfer's loader creates %llu", out, (unsigned long long)b.n_tensors,
           (unsigned long long)want);
    CHECK(gguf_find_tensor(&b, "token_embd.weight") && gguf_find_tensor(&b, "output_norm.weight"));
    for (int l = 0; l < NL; l++)
        for (size_t i = 0; i < sizeof per / sizeof per[0]; i++) {
            snprintf(key, sizeof key, "blk.%d.%s.weight", l, per[i]);
            CHECKF(gguf_find_tensor(&b, key) != NULL, "%s lacks %s", out, key);
        }
    const gguf_tensor *te = gguf_find_tensor(&b, "token_embd.weight"), *o = gguf_find_tensor(&b, "output.weight");
    CHECKF(!gguf_find_tensor(&a, "output.weight") && o && te && o->type == te->type && o->ne[0] == te->ne[0] &&
               o->ne[1] == te->ne[1] && o->nbytes == te->nbytes && !memcmp(o->data, te->data, te->nbytes),
           "%s: output.weight is not a copy of the tied token_embd", out);
    gguf_close(&a), gguf_close(&b);
}

/* A copy of src as the writer made such files before: arch llama and output tied. */
static void write_untransformed(const char *src, const char *dst) {
    gguf_file f;
    hr_err e;
    CHECK(gguf_open(&f, src, &e) == 0);
    gguf_writer *w = gguf_writer_new(true);
    char key[256];
    for (uint64_t i = 0; i < f.n_kv; i++) {
        gguf_kv kv = f.kv[i];
        if (gguf_str_eq(kv.key, "general.architecture")) {
            gguf_w_str(w, "general.architecture", "llama");
            continue;
        }
        if (kv.key.len > 7 && !memcmp(kv.key.ptr, "bamboo.", 7)) {
            int n = snprintf(key, sizeof key, "llama.%.*s", (int)kv.key.len - 7, kv.key.ptr + 7);
            kv.key = (gguf_str){key, (uint64_t)n};
        }
        gguf_w_kv_copy(w, &kv);
    }
    for (uint64_t i = 0; i < f.n_tensors; i++) {
        const gguf_tensor *t = &f.tensors[i];
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        if (strcmp(name, "output.weight")) gguf_w_tensor(w, name, t->type, t->n_dims, t->ne, t->data, t->nbytes);
    }
    CHECKF(gguf_w_write(w, dst, &e) == 0, "%s", e.msg);
    gguf_writer_free(w);
    gguf_close(&f);
}

static void same_logits(const char *a, const char *b, const int32_t *toks, int n) {
    hearth_model *ma = load(a), *mb = load(b);
    float *la = malloc(sizeof(float) * n * VOCAB), *lb = malloc(sizeof(float) * n * VOCAB);
    const hearth_ffn_mode modes[] = {HEARTH_FFN_DENSE, HEARTH_FFN_PREDICTED};
    for (int k = 0; k < 2; k++) {
        run(ma, modes[k], toks, n, la, NULL), run(mb, modes[k], toks, n, lb, NULL);
        CHECKF(!memcmp(la, lb, sizeof(float) * n * VOCAB), "%s and %s: logits differ (mode %d)", a, b, (int)modes[k]);
    }
    free(la), free(lb);
    hearth_model_free(ma), hearth_model_free(mb);
}

static void powerinfer_loadable(void) {
    const struct { hr_synth_act act; const char *arch; } cases[] = {{HR_SYNTH_DRELU, "bamboo"}, {HR_SYNTH_REGLU, "llama"}};
    enum { T = 20 };
    int32_t toks[T];
    for (int i = 0; i < T; i++) toks[i] = (int32_t)((i * 97 + 5) % VOCAB);
    for (int c = 0; c < 2; c++) {
        char in[256], out[256], old[256];
        hr_test_tmp(in, sizeof in, "pi_in.gguf"), hr_test_tmp(out, sizeof out, "pi_out.gguf"), hr_test_tmp(old, sizeof old, "pi_old.gguf");
        hr_synth_params p;
        hr_synth_defaults(&p);
        p.type = HR_F16, p.act = cases[c].act, p.n_embd = D, p.n_head = 4, p.n_head_kv = 2, p.n_ff = FF, p.n_vocab = VOCAB;
        p.n_layer = NL, p.seed = 4, p.tied = true;
        hr_err e;
        CHECKF(hr_synth_write(&p, in, &e) == 0, "%s", e.msg);
        hearth_model *m = load(in);
        hr_predictor preds[NL];
        fixed_preds(preds);
        CHECKF(hr_write_powerinfer(m, preds, true, out, &e) == 0, "%s", e.msg);
        hearth_model_free(m);
        check_pi_layout(in, out, cases[c].arch);
        write_untransformed(out, old); /* Hearth reads the new file with the old one's meaning */
        same_logits(out, old, toks, T);
        for (int l = 0; l < NL; l++) hr_predictor_free(&preds[l]);
        remove(in), remove(out), remove(old);
    }
}

int main(void) {
    powerinfer_loadable();
    counts();
    refuses_swiglu();
    powerinfer_file();
    return TEST_END();
}
