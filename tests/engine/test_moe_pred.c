/* Predictors inside experts (--ffn predicted on mixtures of experts; src/sparse/moe_pred.c):
 * predictors that mark every neuron give exact mode's logits bit for bit and read exactly
 * the predictors' bytes more; predictors trained by calibration on a SmallThinker-shaped
 * synthetic model whose expert gates have low rank keep the recall they were trained for on
 * other tokens and read fewer gate bytes; batched equals token by token; misshapen predictor
 * tensors, and predictors on SwiGLU experts, are refused at load. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/moe.h"
#include "formats/types.h"
#include "hearth.h"
#include "sparse/moe_calib.h"
#include "sparse/moe_pred.h"
#include "synth/synth.h"
#include "testutil.h"

enum { NP = 24, NL = 2 };

static hearth_model *make_arch(const char *arch, uint32_t type, uint32_t ne, uint32_t k, uint32_t gate_rank, const char *tag) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.arch = arch, p.type = type, p.n_embd = 64, p.n_head = 4, p.n_head_kv = 2, p.n_ff = 96, p.n_vocab = 300;
    p.n_layer = NL, p.n_expert = ne, p.n_expert_used = k, p.seed = 11, p.expert_gate_rank = gate_rank;
    p.act = hr_synth_default_act(arch, false);
    char path[256];
    hr_err e = {{0}};
    if (hr_synth_write(&p, hr_test_tmp(path, sizeof path, tag), &e)) {
        CHECKF(0, "synth %s: %s", tag, e.msg);
        return NULL;
    }
    hearth_model *m = hearth_model_load(path, NULL, &e);
    CHECKF(m, "load %s: %s", tag, e.msg);
    remove(path);
    return m;
}

static hearth_model *make(uint32_t type, uint32_t ne, uint32_t k, uint32_t gate_rank, const char *tag) {
    return make_arch("smallthinker", type, ne, k, gate_rank, tag);
}

/* m written with transposed expert down matrices and preds (NULL: none), then loaded. */
static hearth_model *with_preds(const hearth_model *m, const hr_moe_pred *preds, const char *tag, hr_err *e) {
    char path[256];
    if (hr_write_moe_sparse(m, preds, false, hr_test_tmp(path, sizeof path, tag), e)) return NULL;
    hearth_model *t = hearth_model_load(path, NULL, e);
    remove(path);
    return t;
}

/* Logits of NP tokens from seed in mode, one batch or token by token; counters after. */
static int run(hearth_model *m, hearth_ffn_mode mode, bool batch, uint32_t seed, float *out, hearth_ffn_stats *fs, hearth_moe_stats *ms,
               hearth_ctx **keep) {
    int32_t toks[NP];
    for (int i = 0; i < NP; i++) toks[i] = (int32_t)((i * 53 + seed * 17 + 5) % 300);
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = 64, cp.n_threads = 2, cp.gpu = HEARTH_GPU_OFF, cp.kv_k = cp.kv_v = HEARTH_KV_F32, cp.ffn_mode = mode, cp.ffn_stats = true;
    hr_err e = {{0}};
    hearth_ctx *c = hearth_ctx_new(m, &cp, &e);
    if (!c) return fprintf(stderr, "ctx (%s): %s\n", hearth_ffn_mode_name(mode), e.msg), -1;
    const int32_t nv = hearth_model_get_info(m)->n_vocab;
    int rc = 0;
    if (batch) rc = hearth_eval(c, toks, NP, 0, true, &e);
    for (int i = 0; !rc && i < NP; i++) {
        if (!batch) rc = hearth_eval(c, &toks[i], 1, i, false, &e);
        if (!rc) memcpy(out + (size_t)i * nv, hearth_logits(c, batch ? i : -1), sizeof(float) * (size_t)nv);
    }
    if (rc) fprintf(stderr, "eval: %s\n", e.msg);
    for (int il = 0; il < NL; il++) hearth_ctx_ffn_stats(c, il, &fs[il]);
    hearth_ctx_moe_stats(c, ms);
    if (keep) *keep = c;
    else hearth_ctx_free(c);
    return rc;
}

/* Predictors of rank 4 with zero weights: every score is 0, at the threshold, so every
 * neuron is predicted (experts 1 and up only; expert 0 keeps none and runs exact). */
static void check_all_marked(hearth_model *m, const char *tag) {
    const hr_hparams *hp = &m->hp;
    const size_t n = (size_t)hp->n_layer * (size_t)hp->n_expert;
    hr_moe_pred *preds = calloc(n, sizeof *preds);
    const int32_t r = 4;
    int64_t pred_bytes_per_routing = 0;
    for (size_t i = 0; preds && i < n; i++) {
        if (i % (size_t)hp->n_expert == 0) continue;
        preds[i].p = (hr_predictor){hp->n_embd, hp->n_ff_exp, r, calloc((size_t)(r * hp->n_embd), 4), calloc((size_t)(r * hp->n_ff_exp), 4), 1, 1, 1, 1, 0, NULL, false};
        pred_bytes_per_routing = (int64_t)r * (hp->n_embd + hp->n_ff_exp) * 4;
    }
    hr_err e = {{0}};
    hearth_model *t = preds ? with_preds(m, preds, tag, &e) : NULL;
    hearth_model *x = t ? with_preds(m, NULL, tag, &e) : NULL; /* the same file without predictors */
    CHECKF(t && x, "%s: %s", tag, e.msg);
    const int32_t nv = hearth_model_get_info(m)->n_vocab;
    const size_t nlog = (size_t)NP * (size_t)nv;
    float *a = malloc(4 * nlog), *b = malloc(4 * nlog), *c = malloc(4 * nlog);
    hearth_ffn_stats fa[NL], fb[NL], fc[NL];
    hearth_moe_stats ma, mb, mc;
    hearth_ctx *cx = NULL;
    if (t && x && a && b && c && !run(x, HEARTH_FFN_EXACT, false, 1, a, fa, &ma, NULL) && !run(t, HEARTH_FFN_PREDICTED, false, 1, b, fb, &mb, &cx) &&
        !run(t, HEARTH_FFN_PREDICTED, true, 1, c, fc, &mc, NULL)) {
        CHECKF(!memcmp(a, b, 4 * nlog), "%s: predicted with all-marking predictors differs from exact", tag);
        CHECKF(!memcmp(b, c, 4 * nlog), "%s: predicted batch differs from token by token", tag);
        /* predicted mode reads every gate row too, plus the predictor of each routing to experts 1.. */
        uint64_t routed[64] = {0}, with_pred = 0, pr[64], fi[64], bo[64], routed_sum = 0;
        for (int il = 0; il < NL; il++) {
            CHECK(hearth_ctx_moe_routed(cx, il, routed) == 0 && hearth_ctx_moe_pred_stats(cx, il, pr, fi, bo) == 0);
            for (int32_t q = 1; q < hp->n_expert; q++) {
                with_pred += routed[q], routed_sum += pr[q];
                CHECKF(pr[q] == routed[q] * (uint64_t)hp->n_ff_exp && bo[q] == fi[q], "%s layer %d expert %d: %llu predicted of %llu routings, %llu of %llu firing",
                       tag, il, q, (unsigned long long)pr[q], (unsigned long long)routed[q], (unsigned long long)bo[q], (unsigned long long)fi[q]);
            }
            CHECKF(fb[il].fired == fa[il].fired && fb[il].fired_computed == fb[il].fired, "%s layer %d: fired %llu exact, %llu predicted (%llu predicted)",
                   tag, il, (unsigned long long)fa[il].fired, (unsigned long long)fb[il].fired, (unsigned long long)fb[il].fired_computed);
        }
        (void)routed_sum;
        const uint64_t want = ma.decode_read_bytes + with_pred * (uint64_t)pred_bytes_per_routing;
        CHECKF(mb.decode_read_bytes == want, "%s: predicted read %llu bytes, exact %llu + predictors %llu", tag, (unsigned long long)mb.decode_read_bytes,
               (unsigned long long)ma.decode_read_bytes, (unsigned long long)(with_pred * (uint64_t)pred_bytes_per_routing));
    } else CHECKF(0, "%s: runs failed", tag);
    hearth_ctx_free(cx);
    free(a), free(b), free(c);
    hearth_model_free(t), hearth_model_free(x);
    hr_moe_preds_free(preds, preds ? n : 0);
    free(preds);
}

/* Expert predictors trained on 1 thread are bit-identical to those trained on 2 (preds):
 * experts train in parallel, each on its own single-threaded CPU. */
static void check_threads(const hearth_model *m, const hr_moe_pairs *pairs, const hr_moe_pred_opts *po, const hr_moe_pred *preds, size_t n,
                          const char *tag) {
    hr_moe_pred *one = calloc(n, sizeof *one);
    hr_cpu cpu;
    hr_err e = {{0}};
    int rc = !one || hr_cpu_init(&cpu, 1, &e) ? -1 : 0;
    if (!rc) rc = hr_moe_train_preds(&cpu, m, pairs, po, one, &e), hr_cpu_free(&cpu);
    CHECKF(!rc, "%s: training on 1 thread: %s", tag, e.msg);
    size_t same = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        const hr_predictor *a = &preds[i].p, *b = &one[i].p;
        same += a->r == b->r && !!a->fc1 == !!b->fc1 &&
                (!a->fc1 || (!memcmp(a->fc1, b->fc1, sizeof(float) * (size_t)a->r * (size_t)a->n_embd) &&
                             !memcmp(a->fc2, b->fc2, sizeof(float) * (size_t)a->r * (size_t)a->n_ff)));
    }
    CHECKF(rc || same == n, "%s: %zu of %zu experts' predictors equal on 1 and 2 threads", tag, same, n);
    hr_moe_preds_free(one, one ? n : 0);
    free(one);
}

/* Calibration on one token sequence, predictors trained for recall 0.99, then predicted mode
 * on other tokens: layer 0 (routed from the embeddings alone, the same in both modes) fires
 * exactly the neurons exact mode fires, and at least 95% of them are predicted; fewer expert
 * bytes are read than in exact mode; batched equals token by token. */
static void check_trained(hearth_model *m, const char *tag) {
    const int64_t n_cal = 1200;
    int32_t *toks = malloc(sizeof(int32_t) * (size_t)n_cal);
    uint64_t s = 99;
    for (int64_t i = 0; toks && i < n_cal; i++) s = s * 6364136223846793005ull + 1442695040888963407ull, toks[i] = (int32_t)((s >> 33) % 300);
    hr_collect_opts co = {200, 2, 0, -1, NULL, NULL};
    hr_moe_pairs pairs = {0};
    hr_stats st;
    hr_err e = {{0}};
    const size_t n = (size_t)m->hp.n_layer * (size_t)m->hp.n_expert;
    hr_moe_pred *preds = calloc(n, sizeof *preds);
    hr_cpu cpu;
    int rc = !toks || !preds || hr_cpu_init(&cpu, 2, &e) ? -1 : 0;
    if (!rc) rc = hr_moe_pairs_init(&pairs, m, 2048, 1, &e) || hr_calib_moe(m, toks, n_cal, &co, &st, &pairs, &e);
    const hr_moe_pred_opts po = {0.99, 16, 3, false, 1, NULL, NULL};
    if (!rc) rc = hr_moe_train_preds(&cpu, m, &pairs, &po, preds, &e);
    int32_t kept = 0;
    for (size_t i = 0; !rc && i < n; i++) kept += preds[i].p.fc1 != NULL;
    CHECKF(!rc && kept == (int32_t)n, "%s: training: %s (%d of %zu experts kept a predictor; first reason: %s)", tag, rc ? e.msg : "ok", kept, n,
           preds ? preds[0].why : "");
    if (!rc) check_threads(m, &pairs, &po, preds, n, tag);
    hearth_model *t = !rc ? with_preds(m, preds, tag, &e) : NULL;
    CHECKF(rc || t, "%s: %s", tag, e.msg);
    const int32_t nv = hearth_model_get_info(m)->n_vocab;
    const size_t nlog = (size_t)NP * (size_t)nv;
    float *a = malloc(4 * nlog), *b = malloc(4 * nlog), *c = malloc(4 * nlog);
    hearth_ffn_stats fa[NL], fb[NL], fc[NL];
    hearth_moe_stats ma, mb, mc;
    if (t && a && b && c && !run(t, HEARTH_FFN_EXACT, false, 5, a, fa, &ma, NULL) && !run(t, HEARTH_FFN_PREDICTED, false, 5, b, fb, &mb, NULL) &&
        !run(t, HEARTH_FFN_PREDICTED, true, 5, c, fc, &mc, NULL)) {
        CHECKF(!memcmp(b, c, 4 * nlog), "%s: predicted batch differs from token by token", tag);
        const double rec = (double)fb[0].fired_computed / (double)fb[0].fired;
        CHECKF(fb[0].fired == fa[0].fired && rec >= 0.95, "%s layer 0: fired %llu exact, %llu predicted; recall %.4f", tag,
               (unsigned long long)fa[0].fired, (unsigned long long)fb[0].fired, rec);
        CHECKF(mb.decode_read_bytes < ma.decode_read_bytes, "%s: predicted read %llu expert bytes, exact %llu", tag,
               (unsigned long long)mb.decode_read_bytes, (unsigned long long)ma.decode_read_bytes);
        fprintf(stderr, "%s: layer 0 recall %.2f%%, %.1f%% of neurons predicted, %.1f%% fired; expert bytes %.1f%% of exact's\n", tag, 100 * rec,
                100.0 * (double)fb[0].computed / (double)(fb[0].tokens * (uint64_t)(m->hp.n_expert_used * m->hp.n_ff_exp)),
                100.0 * (double)fb[0].fired / (double)(fb[0].tokens * (uint64_t)(m->hp.n_expert_used * m->hp.n_ff_exp)),
                100.0 * (double)mb.decode_read_bytes / (double)ma.decode_read_bytes);
    } else CHECKF(0, "%s: runs failed", tag);
    free(a), free(b), free(c);
    hearth_model_free(t);
    if (!rc) hr_stats_free(&st);
    hr_moe_pairs_free(&pairs);
    hr_cpu_free(&cpu);
    hr_moe_preds_free(preds, preds ? n : 0);
    free(preds), free(toks);
}

/* Predictor tensors on SwiGLU experts (nothing exactly zero to skip) are refused. */
static void check_swiglu(hearth_model *m) {
    const size_t n = (size_t)m->hp.n_layer * (size_t)m->hp.n_expert;
    hr_moe_pred *preds = calloc(n, sizeof *preds);
    if (preds) preds[1].p = (hr_predictor){m->hp.n_embd, m->hp.n_ff_exp, 4, calloc((size_t)(4 * m->hp.n_embd), 4), calloc((size_t)(4 * m->hp.n_ff_exp), 4), 1, 1, 1, 1, 0, NULL, false};
    hr_err e = {{0}};
    hearth_model *t = preds ? with_preds(m, preds, "moe-pred-swiglu.gguf", &e) : NULL;
    CHECKF(!t && strstr(e.msg, "expert predictors") && strstr(e.msg, "swiglu"), "predictors on SwiGLU experts: %s", t ? "(loaded)" : e.msg);
    hearth_model_free(t);
    hr_moe_preds_free(preds, preds ? n : 0);
    free(preds);
}

/* A predictor whose fc1 does not take n_embd inputs, or whose fc2 lacks a neuron, is refused
 * naming the tensor. */
static void check_bad(hearth_model *m) {
    const hr_hparams *hp = &m->hp;
    const size_t n = (size_t)hp->n_layer * (size_t)hp->n_expert;
    hr_moe_pred *preds = calloc(n, sizeof *preds);
    const int32_t r = 4;
    static const struct { int32_t d, ff; const char *want; } bad[] = {{65, 96, "blk.1.fc1_exps.2.weight"}, {64, 95, "blk.1.fc2_exps.2.weight"}};
    for (size_t i = 0; preds && i < 2; i++) {
        const size_t at = (size_t)hp->n_expert + 2; /* layer 1, expert 2 */
        hr_predictor_free(&preds[at].p);
        preds[at].p = (hr_predictor){bad[i].d, bad[i].ff, r, calloc((size_t)(r * bad[i].d), 4), calloc((size_t)(r * bad[i].ff), 4), 1, 1, 1, 1, 0, NULL, false};
        hr_err e = {{0}};
        hearth_model *t = with_preds(m, preds, "moe-pred-bad.gguf", &e);
        CHECKF(!t && strstr(e.msg, bad[i].want), "predictor {%d, %d}: %s", bad[i].d, bad[i].ff, t ? "(loaded)" : e.msg);
        hearth_model_free(t);
    }
    hr_moe_preds_free(preds, preds ? n : 0);
    free(preds);
    /* fc1 of layer 0's expert 1 without its fc2 */
    gguf_writer *w = gguf_writer_new(false);
    static float fc1[4 * 64];
    char path[256], name[128];
    for (uint64_t i = 0; w && i < m->file.n_kv; i++) gguf_w_kv_copy(w, &m->file.kv[i]);
    for (uint64_t i = 0; w && i < m->file.n_tensors; i++) {
        const gguf_tensor *t = &m->file.tensors[i];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        gguf_w_tensor(w, name, t->type, t->n_dims, t->ne, t->data, t->nbytes);
    }
    const uint64_t ne1[2] = {64, 4};
    hr_err e = {{0}};
    if (w) gguf_w_tensor(w, "blk.0.fc1_exps.1.weight", HR_F32, 2, ne1, fc1, sizeof fc1);
    CHECKF(w && m->hp.n_embd == 64 && gguf_w_write(w, hr_test_tmp(path, sizeof path, "moe-pred-half.gguf"), &e) == 0, "write: %s", e.msg);
    gguf_writer_free(w);
    hearth_model *t = hearth_model_load(path, NULL, &e);
    CHECKF(!t && strstr(e.msg, "blk.0.fc2_exps.1.weight"), "fc1 without fc2: %s", t ? "(loaded)" : e.msg);
    hearth_model_free(t);
    remove(path);
}

int main(void) {
    hearth_model *m = make(HR_F32, 6, 2, 0, "moe-pred-f32.gguf");
    if (m) check_all_marked(m, "smallthinker f32 6x2"), check_bad(m);
    hearth_model_free(m);
    m = make(HR_Q8_0, 4, 2, 0, "moe-pred-q8.gguf");
    if (m) check_all_marked(m, "smallthinker q8_0 4x2");
    hearth_model_free(m);
    m = make_arch("qwen3moe", HR_F32, 4, 2, 0, "moe-pred-qwen3moe.gguf");
    if (m) check_swiglu(m);
    hearth_model_free(m);
    m = make(HR_F32, 4, 2, 6, "moe-pred-lowrank.gguf"); /* gates of rank 6: firing predictable */
    if (m) check_trained(m, "smallthinker low-rank gates f32 4x2");
    hearth_model_free(m);
    return TEST_END();
}
