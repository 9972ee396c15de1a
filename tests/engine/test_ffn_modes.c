/* FFN modes: exact == dense for ReLU-family models; predicted with threshold -inf ==
 * dense; hand-built predictors whose decisions are known; thresholds per model (two in
 * one process), from the environment and from parameters; batched == decoded. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "formats/types.h"
#include "hearth.h"
#include "eval_logits.h"
#include "rewrite.h"
#include "synth/synth.h"
#include "testutil.h"

#define N_TOK 10
#define N_EMBD 128
#define N_FF 256

static int32_t toks[N_TOK];

static void synth(const char *path, uint32_t type, hr_synth_act act, bool pwri) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.type = type, p.act = act, p.powerinfer = pwri, p.pred_rank = hr_type_block_elems(type) > 32 ? 256 : 32;
    /* Rows hold whole super-blocks for the K-quants and IQ4_XS (256), else the smaller shape. */
    p.n_embd = hr_type_block_elems(type) > 32 ? 256 : N_EMBD;
    p.n_head = 4, p.n_head_kv = 2, p.n_ff = N_FF, p.n_vocab = 300, p.n_layer = 2, p.seed = 11;
    hr_err e;
    if (hr_synth_write(&p, path, &e)) fprintf(stderr, "synth: %s\n", e.msg), exit(1);
}

static hearth_model *load(const char *path, bool thr_set, float thr) {
    hearth_model_params mp = hearth_model_default_params();
    mp.has_sparse_threshold = thr_set, mp.sparse_threshold = thr;
    hr_err e;
    hearth_model *m = hearth_model_load(path, &mp, &e);
    if (!m) fprintf(stderr, "load %s: %s\n", path, e.msg);
    return m;
}

/* Logits of all N_TOK tokens (batched when batch > 1, else one by one) into out. */
static int run(hearth_model *m, hearth_ffn_mode mode, int batch, float *out, hearth_ffn_stats *stats0) {
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = 32, cp.n_threads = 2, cp.n_batch = batch, cp.ffn_mode = mode, cp.kv_k = cp.kv_v = HEARTH_KV_F32;
    cp.ffn_stats = stats0 != NULL, cp.gpu = HEARTH_GPU_OFF; /* the CPU's FFN modes (auto would take a GPU) */
    return eval_logits(m, &cp, toks, N_TOK, out, stats0);
}

static double maxdiff(const float *a, const float *b, int n) {
    double d = 0;
    for (int i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

#define NL (N_TOK * 300)

/* exact == dense and predicted(-inf) == dense on PowerInfer files of each type; exact
 * == dense on dense files of each ReLU-family activation. Same weights, different
 * summation order only: float noise (1e-5) unless a Q8_0 activation rounding flips (5e-2). */
static void check_modes(uint32_t type, hr_synth_act act, bool pwri) {
    char path[256];
    synth(hr_test_tmp(path, sizeof path, "modes.gguf"), type, act, pwri);
    hearth_model *m = load(path, true, -1e30f);
    float *dense = malloc(sizeof(float) * NL), *other = malloc(sizeof(float) * NL);
    double tol = type == HR_F32 ? 1e-4 : 5e-2;
    CHECK(m && !run(m, HEARTH_FFN_DENSE, 16, dense, NULL));
    hearth_ffn_stats se;
    CHECK(!run(m, HEARTH_FFN_EXACT, 16, other, &se));
    /* Exact mode computes the neurons whose gate fires; for dReLU some of those still
     * have up <= 0, so it computes a superset of the firing ones. Recall is always 100%. */
    bool same = act == HR_SYNTH_DRELU ? se.computed >= se.fired : se.computed == se.fired;
    CHECKF(same && se.fired_computed == se.fired && se.computed < (uint64_t)N_TOK * N_FF && se.fired > 0,
           "exact mode computed %llu of %d neurons, %llu fired", (unsigned long long)se.computed, N_TOK * N_FF,
           (unsigned long long)se.fired);
    double d1 = maxdiff(dense, other, NL);
    CHECKF(d1 <= tol, "%s %s%s: exact differs from dense by %g", hr_type_name(type), hr_synth_act_name(act), pwri ? " pwri" : "", d1);
    CHECK(!run(m, HEARTH_FFN_EXACT, 1, other, NULL));
    double d2 = maxdiff(dense, other, NL);
    CHECKF(d2 <= tol, "exact decoded differs from dense by %g", d2);
    if (pwri) {
        hearth_ffn_stats s;
        CHECK(!run(m, HEARTH_FFN_PREDICTED, 16, other, &s));
        double d3 = maxdiff(dense, other, NL);
        CHECKF(d3 <= tol, "predicted(-inf) differs from dense by %g", d3);
        CHECKF(s.computed == (uint64_t)N_TOK * N_FF, "threshold -inf computed %llu neurons", (unsigned long long)s.computed);
    }
    printf("%-5s %-6s %-5s exact-dense %.3g decoded %.3g\n", hr_type_name(type), hr_synth_act_name(act), pwri ? "pwri" : "dense", d1, d2);
    hearth_model_free(m);
    free(dense), free(other);
    remove(path);
}

/* Hand-built predictor: fc1 rows w and -w give h = (relu(w.x), relu(-w.x)), so
 * |w.x| > 0 in one of them; fc2 row j = (+1, +1) for neurons in S, (-1, -1) otherwise.
 * Scores are +|w.x| on S and -|w.x| elsewhere: at threshold 0 exactly S is computed.
 * The twin file has every neuron outside S zeroed (gate and down_t rows), so its dense
 * output must equal the original's predicted output. */
typedef struct { bool zero_outside; } hand;
static bool in_s(int j) { return (j * 7919) % 5 < 2; } /* 40% of neurons */

static void hand_fn(void *ud, const char *name, const gguf_tensor *t, void *data) {
    const hand *h = ud;
    float *w = data;
    if (strstr(name, "fc1.weight")) {
        int64_t n = (int64_t)t->ne[0], r = (int64_t)t->ne[1];
        memset(w, 0, sizeof(float) * (size_t)(n * r));
        for (int64_t i = 0; i < n; i++) w[i] = sinf((float)i), w[n + i] = -sinf((float)i);
    } else if (strstr(name, "fc2.weight")) {
        int64_t r = (int64_t)t->ne[0];
        for (int64_t j = 0; j < (int64_t)t->ne[1]; j++)
            for (int64_t k = 0; k < r; k++) w[j * r + k] = k < 2 ? (in_s((int)j) ? 1.0f : -1.0f) : 0.0f;
    } else if (h->zero_outside && (strstr(name, "ffn_gate.weight") || strstr(name, "ffn_down_t.weight"))) {
        int64_t n = (int64_t)t->ne[0];
        for (int64_t j = 0; j < (int64_t)t->ne[1]; j++)
            if (!in_s((int)j)) memset(w + j * n, 0, sizeof(float) * (size_t)n);
    }
}

/* A hand-built predictor file (a) against its zeroed twin (b, run dense): predicted equals
 * the twin, computes exactly n_s neurons per token, differs from a's dense output, and
 * batched equals decoded. */
static void check_hand_pair(const char *a, const char *b, bool thr_set, int n_s, const char *what) {
    hearth_model *ma = load(a, thr_set, 0.0f), *mb = load(b, false, 0);
    float *pa = malloc(sizeof(float) * NL), *db = malloc(sizeof(float) * NL), *da = malloc(sizeof(float) * NL);
    hearth_ffn_stats s;
    CHECK(ma && mb && !run(ma, HEARTH_FFN_PREDICTED, 16, pa, &s) && !run(mb, HEARTH_FFN_DENSE, 16, db, NULL));
    CHECKF(maxdiff(pa, db, NL) <= 1e-4, "%s: predicted output differs from the zeroed twin by %g", what, maxdiff(pa, db, NL));
    CHECKF(s.computed == (uint64_t)N_TOK * n_s, "%s: computed %llu neurons, expected %d per token", what,
           (unsigned long long)s.computed, n_s);
    CHECK(s.fired_computed <= s.fired && s.fired > 0);
    /* And it is not trivially so: dense on the original differs. */
    CHECK(!run(ma, HEARTH_FFN_DENSE, 16, da, NULL));
    CHECKF(maxdiff(da, pa, NL) > 1e-2, "%s: predicted output equals dense: the predictor skipped nothing", what);
    /* Batched prompt == token-by-token in predicted mode. */
    CHECK(!run(ma, HEARTH_FFN_PREDICTED, 1, da, NULL));
    CHECKF(maxdiff(da, pa, NL) <= 1e-4, "%s: decoded differs from batched by %g", what, maxdiff(da, pa, NL));
    hearth_model_free(ma), hearth_model_free(mb);
    free(pa), free(db), free(da);
}

static void check_hand_predictor(void) {
    char base[256], a[256], b[256];
    synth(hr_test_tmp(base, sizeof base, "hand.gguf"), HR_F32, HR_SYNTH_REGLU, true);
    hand ha = {false}, hb = {true};
    CHECK(!rewrite_tensors(base, hr_test_tmp(a, sizeof a, "hand-a.gguf"), hand_fn, &ha));
    CHECK(!rewrite_tensors(base, hr_test_tmp(b, sizeof b, "hand-b.gguf"), hand_fn, &hb));
    int n_s = 0;
    for (int j = 0; j < N_FF; j++) n_s += in_s(j);
    check_hand_pair(a, b, true, n_s, "hand-built predictor");
    remove(base), remove(a), remove(b);
}

/* Hand-built linear predictor (dReLU, score blocks for gate and up): fc1 and fc2 zero, so
 * every score is 0 and a neuron is predicted iff both of its biases are >= 0: +1 on S1
 * (gate block) and on S2 (up block), -1 elsewhere; exactly S1 & S2 is computed. The twin
 * file zeroes every other neuron (gate and down_t rows). */
static bool in_s1(int j) { return j % 3 != 0; }
static bool in_s2(int j) { return j % 4 != 1; }
static bool in_lin(int j) { return in_s1(j) && in_s2(j); }

static void lin_fn(void *ud, const char *name, const gguf_tensor *t, void *data) {
    const hand *h = ud;
    float *w = data;
    const int64_t n = (int64_t)t->ne[0];
    if (strstr(name, "fc1.weight") || strstr(name, "fc2.weight")) {
        memset(w, 0, sizeof(float) * (size_t)(n * (int64_t)t->ne[1]));
    } else if (strstr(name, "fc2.bias")) {
        for (int64_t j = 0; j < n; j++) w[j] = (j < N_FF ? in_s1((int)j) : in_s2((int)(j - N_FF))) ? 1.0f : -1.0f;
    } else if (h->zero_outside && (strstr(name, "ffn_gate.weight") || strstr(name, "ffn_down_t.weight"))) {
        for (int64_t j = 0; j < (int64_t)t->ne[1]; j++)
            if (!in_lin((int)j)) memset(w + j * n, 0, sizeof(float) * (size_t)n);
    }
}

static void check_hand_linear(void) {
    char base[256], a[256], b[256];
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.type = HR_F32, p.act = HR_SYNTH_DRELU, p.powerinfer = true, p.pred_linear = true, p.pred_rank = 32;
    p.n_embd = N_EMBD, p.n_head = 4, p.n_head_kv = 2, p.n_ff = N_FF, p.n_vocab = 300, p.n_layer = 2, p.seed = 11;
    hr_err e;
    CHECKF(hr_synth_write(&p, hr_test_tmp(base, sizeof base, "lin.gguf"), &e) == 0, "%s", e.msg);
    hand ha = {false}, hb = {true};
    CHECK(!rewrite_tensors(base, hr_test_tmp(a, sizeof a, "lin-a.gguf"), lin_fn, &ha));
    CHECK(!rewrite_tensors(base, hr_test_tmp(b, sizeof b, "lin-b.gguf"), lin_fn, &hb));
    int n_s = 0;
    for (int j = 0; j < N_FF; j++) n_s += in_lin(j);
    check_hand_pair(a, b, false, n_s, "linear predictor");
    remove(base), remove(a), remove(b);
}

/* Two models in one process with different thresholds; environment and parameter precedence. */
static void check_thresholds(void) {
    char path[256];
    synth(hr_test_tmp(path, sizeof path, "thr.gguf"), HR_F32, HR_SYNTH_REGLU, true);
    hearth_model *all = load(path, true, -1e30f), *none = load(path, true, 1e30f);
    hearth_ffn_stats sa, sn;
    float *la = malloc(sizeof(float) * NL), *ln = malloc(sizeof(float) * NL);
    CHECK(all && none && !run(all, HEARTH_FFN_PREDICTED, 16, la, &sa) && !run(none, HEARTH_FFN_PREDICTED, 16, ln, &sn));
    CHECK(sa.computed == (uint64_t)N_TOK * N_FF && sn.computed == 0);
    CHECK(maxdiff(la, ln, NL) > 1e-3);
    setenv("LLAMA_SPARSE_PRED_THRESHOLD", "2.5", 1);
    hearth_model *env = load(path, false, 0), *param = load(path, true, -1.0f);
    CHECK(env && fabsf(hearth_model_sparse_threshold(env) - 2.5f) < 1e-6f);
    CHECK(param && hearth_model_sparse_threshold(param) == -1.0f);
    setenv("LLAMA_SPARSE_PRED_THRESHOLD", "abc", 1);
    hr_err e = {{0}};
    CHECK(hearth_model_load(path, NULL, &e) == NULL && strstr(e.msg, "LLAMA_SPARSE_PRED_THRESHOLD"));
    unsetenv("LLAMA_SPARSE_PRED_THRESHOLD");
    hearth_model *def = load(path, false, 0);
    CHECK(def && hearth_model_sparse_threshold(def) == 0.0f);
    hearth_model_free(all), hearth_model_free(none), hearth_model_free(env), hearth_model_free(param), hearth_model_free(def);
    free(la), free(ln);
    remove(path);
}

static void check_mode_errors(void) {
    char dense[256], pw[256];
    synth(hr_test_tmp(dense, sizeof dense, "swi.gguf"), HR_F32, HR_SYNTH_SWIGLU, false);
    synth(hr_test_tmp(pw, sizeof pw, "pw.gguf"), HR_F32, HR_SYNTH_REGLU, true);
    hearth_model *m = load(dense, false, 0), *p = load(pw, false, 0);
    hr_err e = {{0}};
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = 16, cp.ffn_mode = HEARTH_FFN_PREDICTED, cp.gpu = HEARTH_GPU_OFF;
    CHECK(hearth_ctx_new(m, &cp, &e) == NULL && strstr(e.msg, "predictors"));
    cp.ffn_mode = HEARTH_FFN_EXACT;
    CHECK(hearth_ctx_new(m, &cp, &e) == NULL && strstr(e.msg, "ReLU-family"));
    cp.ffn_mode = HEARTH_FFN_AUTO;
    hearth_ctx *c = hearth_ctx_new(p, &cp, &e), *d = hearth_ctx_new(m, &cp, &e);
    CHECK(c && hearth_ctx_ffn_mode(c) == HEARTH_FFN_PREDICTED);
    CHECK(d && hearth_ctx_ffn_mode(d) == HEARTH_FFN_DENSE);
    hearth_ctx_free(c), hearth_ctx_free(d);
    hearth_model_free(m), hearth_model_free(p);
    remove(dense), remove(pw);
}

int main(void) {
    hr_rng rng = {5};
    for (int i = 0; i < N_TOK; i++) toks[i] = (int32_t)(hr_rng_next(&rng) % 300);
    const uint32_t types[] = {HR_F32,  HR_F16,  HR_BF16, HR_Q8_0, HR_Q4_0,   HR_Q4_1,   HR_Q5_0,  HR_Q5_1,
                              HR_Q2_K, HR_Q3_K, HR_Q4_K, HR_Q5_K, HR_Q6_K, HR_IQ4_NL, HR_IQ4_XS, HR_MXFP4};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) check_modes(types[i], HR_SYNTH_REGLU, true);
    check_modes(HR_F32, HR_SYNTH_REGLU, false);
    check_modes(HR_F32, HR_SYNTH_DRELU, false);
    check_modes(HR_F32, HR_SYNTH_RELU, false);
    check_modes(HR_Q8_0, HR_SYNTH_DRELU, true);
    check_hand_predictor();
    check_hand_linear();
    check_thresholds();
    check_mode_errors();
    return TEST_END();
}
