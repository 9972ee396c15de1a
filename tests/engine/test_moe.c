/* Mixture-of-experts FFN: one layer against a float64 reference written from the definition
 * (router, gating, top-k, renormalised weights, each chosen expert's gated FFN from
 * dequantized rows), batched prompts bit-identical to token-by-token decoding, and the
 * modes and device placements that must be refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "engine/gpu_plan.h"
#include "engine/moe.h"
#include "sparse/moe_calib.h"
#include "formats/types.h"
#include "hearth.h"
#include "synth/synth.h"
#include "testutil.h"

static double act(const hr_hparams *hp, double g, double u) {
    const hr_act a = hp->act;
    const double lim = hp->arch->moe_act_limit, alpha = hp->arch->moe_act_alpha;
    if (lim > 0) { /* gpt-oss: OpenAI's clamped SwiGLU */
        const double x = g < lim ? g : lim, y = u < -lim ? -lim : u > lim ? lim : u;
        return x / (1 + exp(-alpha * x)) * (y + 1);
    }
    if (a == HR_ACT_REGLU) return (g > 0 ? g : 0) * u;
    if (a == HR_ACT_DRELU) return (g > 0 ? g : 0) * (u > 0 ? u : 0);
    return g / (1 + exp(-g)) * u; /* SwiGLU */
}

/* Row r of expert x's matrix w, dequantized. */
static void row_of(const hr_mat *w, int32_t x, int64_t r, float *dst) {
    const hr_mat v = hr_moe_expert(w, x);
    hr_dequant_row(v.type, (const uint8_t *)v.data + (size_t)r * v.row_bytes, dst, v.n_in);
}

/* out[d] = the layer's MoE FFN of xn[d] in double precision; sel/wt: the reference routing. */
/* *margin: the raw router score of the last expert chosen less the best one left out. */
static void reference(const hearth_model *m, const hr_layer *L, const float *xn, double *out, int32_t *sel, double *wt,
                      double *margin) {
    const hr_hparams *hp = &m->hp;
    const int32_t ne = hp->n_expert, k = hp->n_expert_used, d = hp->n_embd, ff = hp->n_ff_exp;
    double *p = calloc((size_t)ne, sizeof *p), *h = calloc((size_t)ff, sizeof *h), *raw = calloc((size_t)ne, sizeof *raw);
    float *row = calloc((size_t)(d > ff ? d : ff), sizeof *row);
    for (int32_t x = 0; x < ne; x++) {
        hr_dequant_row(L->moe.router.type, (const uint8_t *)L->moe.router.data + (size_t)x * L->moe.router.row_bytes, row, d);
        double s = 0;
        for (int32_t j = 0; j < d; j++) s += (double)row[j] * xn[j];
        raw[x] = p[x] = s + (L->moe.router_b ? L->moe.router_b[x] : 0);
    }
    if (hp->moe_gate == HR_MOE_SOFTMAX_WEIGHT) {
        /* ranked on the raw scores; the weights come below */
    } else if (hp->moe_gate == HR_MOE_SIGMOID) {
        for (int32_t x = 0; x < ne; x++) p[x] = 1 / (1 + exp(-p[x]));
    } else {
        double mx = p[0], z = 0;
        for (int32_t x = 1; x < ne; x++) mx = p[x] > mx ? p[x] : mx;
        for (int32_t x = 0; x < ne; x++) z += (p[x] = exp(p[x] - mx));
        for (int32_t x = 0; x < ne; x++) p[x] /= z;
    }
    double wsum = 0;
    for (int32_t r = 0; r < k; r++) { /* selection by repeated maximum */
        int32_t best = -1;
        for (int32_t x = 0; x < ne; x++) {
            bool taken = false;
            for (int32_t q = 0; q < r; q++) taken |= sel[q] == x;
            if (!taken && (best < 0 || p[x] > p[best])) best = x;
        }
        sel[r] = best, wt[r] = p[best], wsum += p[best];
    }
    double out_best = -INFINITY;
    for (int32_t x = 0; x < ne; x++) {
        bool taken = false;
        for (int32_t q = 0; q < k; q++) taken |= sel[q] == x;
        if (!taken && raw[x] > out_best) out_best = raw[x];
    }
    *margin = raw[sel[k - 1]] - out_best;
    if (hp->moe_gate == HR_MOE_SOFTMAX_WEIGHT) { /* softmax over the chosen scores */
        double mx = wt[0];
        wsum = 0;
        for (int32_t r = 0; r < k; r++) mx = wt[r] > mx ? wt[r] : mx;
        for (int32_t r = 0; r < k; r++) wsum += (wt[r] = exp(wt[r] - mx));
    }
    if (hp->arch->moe_norm || hp->moe_gate == HR_MOE_SOFTMAX_WEIGHT)
        for (int32_t r = 0; r < k; r++) wt[r] /= wsum;
    memset(out, 0, sizeof(double) * (size_t)d);
    for (int32_t r = 0; r < k; r++) {
        for (int32_t i = 0; i < ff; i++) {
            double g = 0, u = 0;
            row_of(&L->moe.gate, sel[r], i, row);
            for (int32_t j = 0; j < d; j++) g += (double)row[j] * xn[j];
            row_of(&L->moe.up, sel[r], i, row);
            for (int32_t j = 0; j < d; j++) u += (double)row[j] * xn[j];
            if (L->moe.gate_b) g += L->moe.gate_b[(size_t)sel[r] * (size_t)ff + (size_t)i];
            if (L->moe.up_b) u += L->moe.up_b[(size_t)sel[r] * (size_t)ff + (size_t)i];
            h[i] = act(hp, g, u);
        }
        if (L->moe.down_t.data) { /* transposed: row i is neuron i's column of down */
            for (int32_t i = 0; i < ff; i++) {
                row_of(&L->moe.down_t, sel[r], i, row);
                for (int32_t j = 0; j < d; j++) out[j] += wt[r] * (double)row[j] * h[i];
            }
            continue;
        }
        for (int32_t j = 0; j < d; j++) {
            row_of(&L->moe.down, sel[r], j, row);
            double y = L->moe.down_b ? L->moe.down_b[(size_t)sel[r] * (size_t)d + (size_t)j] : 0;
            for (int32_t i = 0; i < ff; i++) y += (double)row[i] * h[i];
            out[j] += wt[r] * y;
        }
    }
    free(p), free(h), free(row), free(raw);
}

static hearth_model *make_ff(const char *arch, uint32_t type, uint32_t ne, uint32_t k, bool sigmoid, int act, uint32_t n_ff,
                             const char *tag) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.arch = arch, p.type = type, p.n_embd = 64, p.n_head = 4, p.n_head_kv = 2, p.n_ff = n_ff, p.n_vocab = 300;
    p.n_expert = ne, p.n_expert_used = k, p.moe_sigmoid = sigmoid, p.seed = 7;
    p.act = act >= 0 ? (hr_synth_act)act : hr_synth_default_act(arch, false);
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

static hearth_model *make_act(const char *arch, uint32_t type, uint32_t ne, uint32_t k, bool sigmoid, int act, const char *tag) {
    return make_ff(arch, type, ne, k, sigmoid, act, 96, tag);
}

static hearth_model *make(const char *arch, uint32_t type, uint32_t ne, uint32_t k, bool sigmoid, const char *tag) {
    return make_act(arch, type, ne, k, sigmoid, -1, tag);
}

/* gpt-oss with F32 weights and experts of expert_type, a window of 8 (crossed by the
 * 24-token prompts) on the even layers: checks the layout the loader made of it. */
static hearth_model *make_gptoss(uint32_t expert_type, uint32_t ne, uint32_t k, const char *tag) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.arch = "gpt-oss", p.type = HR_F32, p.n_embd = 64, p.n_head = 4, p.n_head_kv = 2, p.n_ff = 96, p.n_vocab = 300;
    p.n_layer = 3, p.n_expert = ne, p.n_expert_used = k, p.seed = 9, p.n_swa = 8;
    p.has_expert_type = true, p.expert_type = expert_type;
    char path[256];
    hr_err e = {{0}};
    if (hr_synth_write(&p, hr_test_tmp(path, sizeof path, tag), &e)) {
        CHECKF(0, "synth %s: %s", tag, e.msg);
        return NULL;
    }
    hearth_model *m = hearth_model_load(path, NULL, &e);
    CHECKF(m, "load %s: %s", tag, e.msg);
    remove(path);
    if (!m) return NULL;
    const hr_layer *L0 = &m->layers[0], *L1 = &m->layers[1];
    CHECKF(m->hp.n_swa == 8 && L0->swa && !L1->swa && m->layers[2].swa, "%s: window %d, layers slide %d %d %d", tag,
           m->hp.n_swa, L0->swa, L1->swa, m->layers[2].swa);
    CHECKF(L0->sinks && L1->sinks && L0->bq && L0->bk && L0->bv && L0->bo && L0->ffn_norm, "%s: sinks, biases, ffn norm", tag);
    CHECKF(L1->moe.router_b && L1->moe.gate_b && L1->moe.up_b && L1->moe.down_b && L1->moe.gate.type == expert_type &&
               m->hp.moe_gate == HR_MOE_SOFTMAX_WEIGHT,
           "%s: expert biases, type %u, gating %d", tag, L1->moe.gate.type, (int)m->hp.moe_gate);
    return m;
}

/* Layer 1's MoE FFN of n random normed-looking inputs against the reference, token by token
 * and as one batch, in FFN mode mode. */
static void check_layer_mode(hearth_model *m, const char *tag, double tol, hearth_ffn_mode mode) {
    const hr_hparams *hp = &m->hp;
    const int32_t n = 9, d = hp->n_embd, k = hp->n_expert_used;
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = 64, cp.n_threads = 2, cp.gpu = HEARTH_GPU_OFF, cp.ffn_mode = mode;
    hr_err e = {{0}};
    hearth_ctx *c = hearth_ctx_new(m, &cp, &e);
    CHECKF(c, "%s: %s", tag, e.msg);
    if (!c) return;
    float *xn = malloc(sizeof(float) * (size_t)(n * d)), *yb = malloc(sizeof(float) * (size_t)(n * d));
    float *y1 = malloc(sizeof(float) * (size_t)d);
    double *ref = malloc(sizeof(double) * (size_t)d), wt[16];
    int32_t sel[16];
    uint64_t s = 12345;
    for (int32_t i = 0; i < n * d; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        xn[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 3.4 - 1.7);
    }
    const hr_layer *L = &m->layers[1];
    CHECK(hr_moe_ffn(c, L, 1, xn, n, yb, &e) == 0);
    const float batch_margin = hearth_ctx_moe_margin(c);
    double worst = 0, min_margin = INFINITY;
    for (int32_t t = 0; t < n; t++) {
        CHECK(hr_moe_ffn(c, L, 1, xn + t * d, 1, y1, &e) == 0);
        double margin;
        reference(m, L, xn + t * d, ref, sel, wt, &margin);
        const float hm = hearth_ctx_moe_margin(c);
        CHECKF(margin > 0 && fabs(hm - margin) <= 1e-4 * (1 + margin), "%s token %d: router margin %g, reference %g", tag, t,
               hm, margin);
        min_margin = fmin(min_margin, margin);
        const int32_t *hs = hr_moe_last_experts(c);
        const float *hw = hr_moe_last_weights(c);
        double scale = 1e-3, wsum = 0;
        for (int32_t r = 0; r < k; r++) {
            CHECKF(hs[r] == sel[r], "%s token %d rank %d: expert %d, reference %d", tag, t, r, hs[r], sel[r]);
            CHECKF(fabs(hw[r] - wt[r]) < 1e-5, "%s token %d rank %d: weight %g, reference %g", tag, t, r, hw[r], wt[r]);
            wsum += hw[r];
        }
        CHECKF(fabs(wsum - 1) < 1e-5, "%s token %d: weights sum to %g", tag, t, wsum);
        for (int32_t j = 0; j < d; j++) scale = fmax(scale, fabs(ref[j]));
        for (int32_t j = 0; j < d; j++) worst = fmax(worst, fabs(y1[j] - ref[j]) / scale);
        /* batch independence: the token computed alone equals its row of the batch bit for bit */
        CHECKF(!memcmp(y1, yb + t * d, sizeof(float) * (size_t)d), "%s token %d: batched output differs from alone", tag, t);
    }
    CHECKF(worst <= tol, "%s: max error %.3g of the output scale, tolerance %.3g", tag, worst, tol);
    CHECKF(fabs(batch_margin - min_margin) <= 1e-4 * (1 + min_margin), "%s: batch's router margin %g, smallest of its tokens %g",
           tag, batch_margin, min_margin);
    CHECKF(isinf(hearth_ctx_moe_margin(c)), "%s: the router margin was not reset by reading it", tag);
    fprintf(stderr, "%s (%s): max error vs float64 reference %.2e of scale (tol %.0e)\n", tag, hearth_ffn_mode_name(mode), worst, tol);
    free(xn), free(yb), free(y1), free(ref);
    hearth_ctx_free(c);
}

static void check_layer(hearth_model *m, const char *tag, double tol) { check_layer_mode(m, tag, tol, HEARTH_FFN_DENSE); }

/* A prompt evaluated as one batch (all logits) equals it evaluated token by token. */
static void check_batch_vs_decode(hearth_model *m, const char *tag) {
    enum { N = 24 };
    int32_t toks[N];
    for (int i = 0; i < N; i++) toks[i] = (int32_t)((i * 37 + 11) % 300);
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = 64, cp.n_threads = 2, cp.gpu = HEARTH_GPU_OFF, cp.kv_k = HEARTH_KV_F32, cp.kv_v = HEARTH_KV_F32;
    hr_err e = {{0}};
    hearth_ctx *a = hearth_ctx_new(m, &cp, &e), *b = hearth_ctx_new(m, &cp, &e);
    CHECKF(a && b, "%s: %s", tag, e.msg);
    const int32_t nv = hearth_model_get_info(m)->n_vocab;
    if (a && b && !hearth_eval(a, toks, N, 0, true, &e)) {
        int bad = 0;
        for (int i = 0; i < N; i++) {
            CHECK(hearth_eval(b, &toks[i], 1, i, false, &e) == 0);
            bad += memcmp(hearth_logits(a, i), hearth_logits(b, -1), sizeof(float) * (size_t)nv) != 0;
        }
        CHECKF(!bad, "%s: %d of %d positions differ between the batch and token-by-token decoding", tag, bad, N);
        hearth_moe_stats st;
        CHECK(hearth_ctx_moe_stats(b, &st) == 0);
        /* decode reads exactly k experts per layer */
        CHECK(st.decode_tokens == N && st.decode_read_bytes == (uint64_t)N * (uint64_t)m->hp.n_layer *
                                                                  (uint64_t)m->hp.n_expert_used * hr_moe_expert_bytes(&m->layers[0].moe));
        CHECK(st.expert_bytes == (uint64_t)m->hp.n_layer * (uint64_t)m->hp.n_expert * hr_moe_expert_bytes(&m->layers[0].moe));
    } else CHECKF(0, "%s: %s", tag, e.msg);
    hearth_ctx_free(a), hearth_ctx_free(b);
}

/* Sparse FFN modes and device layers are refused with one clear message. */
static void check_refusals(hearth_model *m) {
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = 64, cp.gpu = HEARTH_GPU_OFF, cp.ffn_mode = HEARTH_FFN_EXACT;
    hr_err e = {{0}};
    hearth_ctx *c = hearth_ctx_new(m, &cp, &e);
    /* SwiGLU experts have no zero activations to skip */
    CHECKF(!c && strstr(e.msg, "mixture-of-experts") && strstr(e.msg, "exact") && strstr(e.msg, "swiglu"),
           "exact mode on SwiGLU MoE: %s", c ? "(accepted)" : e.msg);
    hearth_ctx_free(c);
    cp.ffn_mode = HEARTH_FFN_PREDICTED;
    c = hearth_ctx_new(m, &cp, &e);
    CHECKF(!c && strstr(e.msg, "mixture-of-experts") && strstr(e.msg, "predicted"), "predicted mode on MoE: %s",
           c ? "(accepted)" : e.msg);
    hearth_ctx_free(c);
    /* -ngl 1: layer 0's attention and all its experts (gpt-oss's biased, clamped ones too),
     * nothing of the other layers; attention the device lacks (gpt-oss's sinks and window) is
     * refused */
    hr_gpu_plan_in in = {.m = m, .n_ctx = 64, .n_seq = 1, .n_batch = 32, .budget = 1ull << 30, .mode = HEARTH_FFN_DENSE,
                         .n_gpu_layers = 1};
    const hr_layer *L0 = &m->layers[0];
    const bool attn_dev = !L0->swa && !L0->attn_scaled && !L0->sinks;
    const int32_t exp_dev = m->hp.n_expert;
    hr_gpu_plan p;
    int rc = hr_gpu_plan_make(&in, &p, &e);
    if (attn_dev) {
        bool only0 = true;
        for (int il = 1; !rc && il < m->hp.n_layer; il++) only0 &= p.layers[il].n_exp == 0 && !p.layers[il].attn;
        CHECKF(!rc && p.n_attn == 1 && p.n_whole == 0 && p.layers[0].n_exp == exp_dev && only0, "-ngl 1 on MoE: %s",
               rc ? e.msg : "other placement");
    } else CHECKF(rc && strstr(e.msg, "-ngl 0"), "-ngl 1 on MoE: %s", rc ? e.msg : "(accepted)");
    hr_gpu_plan_free(&p);
    in.n_gpu_layers = 0; /* automatic placement: attention and experts where the device computes them */
    rc = hr_gpu_plan_make(&in, &p, &e);
    CHECKF(!rc && p.n_attn == (attn_dev ? m->hp.n_layer : 0) && p.n_whole == 0 && p.n_exp_total == exp_dev * m->hp.n_layer,
           "auto plan on MoE: %s", rc ? e.msg : "other placement");
    hr_gpu_plan_free(&p);
}

/* Logits of a 24-token prompt in mode, as one batch (batch) or token by token, into out
 * [24][n_vocab]; ffn (per layer) and moe counters after it. */
enum { NP = 24 };
static int run_prompt(hearth_model *m, hearth_ffn_mode mode, bool batch, bool stats, float *out, hearth_ffn_stats *ffn,
                      hearth_moe_stats *ms, uint64_t *routed0) {
    int32_t toks[NP];
    for (int i = 0; i < NP; i++) toks[i] = (int32_t)((i * 53 + 5) % 300);
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = 64, cp.n_threads = 2, cp.gpu = HEARTH_GPU_OFF, cp.kv_k = cp.kv_v = HEARTH_KV_F32, cp.ffn_mode = mode;
    cp.ffn_stats = stats;
    hr_err e = {{0}};
    hearth_ctx *c = hearth_ctx_new(m, &cp, &e);
    if (!c) return fprintf(stderr, "ctx (%s): %s\n", hearth_ffn_mode_name(mode), e.msg), -1;
    const int32_t nv = hearth_model_get_info(m)->n_vocab;
    int rc = 0;
    if (batch) {
        rc = hearth_eval(c, toks, NP, 0, true, &e);
        for (int i = 0; !rc && i < NP; i++) memcpy(out + (size_t)i * nv, hearth_logits(c, i), sizeof(float) * (size_t)nv);
    } else {
        for (int i = 0; !rc && i < NP; i++) {
            rc = hearth_eval(c, &toks[i], 1, i, false, &e);
            if (!rc) memcpy(out + (size_t)i * nv, hearth_logits(c, -1), sizeof(float) * (size_t)nv);
        }
    }
    if (rc) fprintf(stderr, "eval: %s\n", e.msg);
    for (int il = 0; il < m->hp.n_layer; il++) hearth_ctx_ffn_stats(c, il, &ffn[il]);
    hearth_ctx_moe_stats(c, ms);
    if (routed0 && hearth_ctx_moe_routed(c, 0, routed0)) rc = -1;
    hearth_ctx_free(c);
    return rc;
}

/* --ffn exact inside ReLU-family experts: the same logits as dense (up to the rounding
 * test_ffn_modes allows dense layers: float noise, or a Q8_0 activation rounding flip),
 * batched bit-identical to decoded, fewer neurons computed than dense, every firing neuron
 * computed, fewer expert bytes read; the per-layer routing counts add up. */
static void check_exact(hearth_model *m, const char *tag, double tol) {
    const hr_hparams *hp = &m->hp;
    const int32_t nv = hearth_model_get_info(m)->n_vocab, nl = hp->n_layer;
    const size_t nlog = (size_t)NP * (size_t)nv;
    float *dense = malloc(sizeof(float) * nlog), *ex = malloc(sizeof(float) * nlog), *exd = malloc(sizeof(float) * nlog);
    float *dd = malloc(sizeof(float) * nlog);
    hearth_ffn_stats fd[8], fe[8], fx[8], fdd[8];
    hearth_moe_stats md, me, mx, mdd;
    uint64_t routed[64] = {0};
    CHECK(nl <= 8 && hp->n_expert <= 64);
    if (!dense || !ex || !exd || !dd || nl > 8 || hp->n_expert > 64 || run_prompt(m, HEARTH_FFN_DENSE, true, true, dense, fd, &md, NULL) ||
        run_prompt(m, HEARTH_FFN_EXACT, true, true, ex, fe, &me, routed) ||
        run_prompt(m, HEARTH_FFN_EXACT, false, false, exd, fx, &mx, NULL) ||
        run_prompt(m, HEARTH_FFN_DENSE, false, false, dd, fdd, &mdd, NULL)) {
        CHECKF(0, "%s: exact-mode runs failed", tag);
        free(dense), free(ex), free(exd), free(dd);
        return;
    }
    double diff = 0;
    for (size_t i = 0; i < nlog; i++) diff = fmax(diff, fabs((double)dense[i] - ex[i]));
    CHECKF(diff <= tol, "%s: exact differs from dense by %g (tolerance %g)", tag, diff, tol);
    double diff1 = 0;
    for (size_t i = 0; i < nlog; i++) diff1 = fmax(diff1, fabs((double)dd[i] - exd[i]));
    CHECKF(diff1 <= tol, "%s: exact decoded differs from dense decoded by %g (tolerance %g)", tag, diff1, tol);
    int bad = 0;
    for (int i = 0; i < NP; i++) bad += memcmp(ex + (size_t)i * nv, exd + (size_t)i * nv, sizeof(float) * (size_t)nv) != 0;
    CHECKF(!bad, "%s exact: %d of %d positions differ between the batch and token-by-token decoding", tag, bad, NP);
    const uint64_t slots = (uint64_t)NP * (uint64_t)hp->n_expert_used * (uint64_t)hp->n_ff_exp;
    CHECK(me.n_ff_exp == hp->n_ff_exp && me.router_bytes > 0);
    uint64_t ce = 0, fired = 0, rsum = 0;
    for (int il = 0; il < nl; il++) {
        CHECKF(fd[il].tokens == NP && fd[il].computed == slots, "%s layer %d dense: %llu tokens, %llu neurons computed of %llu",
               tag, il, (unsigned long long)fd[il].tokens, (unsigned long long)fd[il].computed, (unsigned long long)slots);
        /* ReGLU: exact computes exactly the firing neurons; dReLU: those whose gate fires, a superset */
        bool same = hp->act == HR_ACT_DRELU ? fe[il].computed >= fe[il].fired : fe[il].computed == fe[il].fired;
        CHECKF(same && fe[il].fired_computed == fe[il].fired && fe[il].fired > 0 && fe[il].computed < slots,
               "%s layer %d exact: computed %llu of %llu neurons, %llu fired, %llu of them computed", tag, il,
               (unsigned long long)fe[il].computed, (unsigned long long)slots, (unsigned long long)fe[il].fired,
               (unsigned long long)fe[il].fired_computed);
        /* the same neurons fire in dense mode, and decoding (its runs without --stats, where
         * the counts come another way) computes the same ones; dense decoding all of them */
        CHECKF(fd[il].fired == fe[il].fired && fx[il].computed == fe[il].computed, "%s layer %d: fired dense %llu exact %llu; computed batch %llu decoded %llu",
               tag, il, (unsigned long long)fd[il].fired, (unsigned long long)fe[il].fired,
               (unsigned long long)fe[il].computed, (unsigned long long)fx[il].computed);
        CHECKF(fdd[il].computed == slots, "%s layer %d: dense decoding computed %llu of %llu neurons", tag, il,
               (unsigned long long)fdd[il].computed, (unsigned long long)slots);
        ce += fe[il].computed, fired += fe[il].fired;
    }
    for (int32_t x = 0; x < hp->n_expert; x++) rsum += routed[x];
    CHECKF(rsum == (uint64_t)NP * (uint64_t)hp->n_expert_used, "%s: layer 0 routed %llu token-experts, expected %d", tag,
           (unsigned long long)rsum, NP * hp->n_expert_used);
    /* decode: dense reads k whole experts per layer, exact fewer up rows; a batch's union may
     * cover most of an expert, then it reads all of it */
    CHECKF(mx.decode_tokens == NP && mdd.decode_tokens == NP && mx.decode_read_bytes < mdd.decode_read_bytes &&
           me.read_bytes <= md.read_bytes,
           "%s: expert bytes read decoding dense %llu, exact %llu; batch dense %llu, exact %llu", tag,
           (unsigned long long)mdd.decode_read_bytes, (unsigned long long)mx.decode_read_bytes,
           (unsigned long long)md.read_bytes, (unsigned long long)me.read_bytes);
    fprintf(stderr, "%s exact: max |exact - dense| %.3g, decoded %.3g (tol %.0e); %.1f%% of expert neurons computed, %.1f%% fired; expert bytes %.1f%% of dense\n",
            tag, diff, diff1, tol, 100.0 * (double)ce / ((double)slots * nl), 100.0 * (double)fired / ((double)slots * nl),
            100.0 * (double)mx.decode_read_bytes / (double)mdd.decode_read_bytes);
    free(dense), free(ex), free(exd), free(dd);
}

/* m's file with the experts' down matrices transposed (what hearth calibrate writes), loaded. */
static hearth_model *transposed(const hearth_model *m, const char *tag) {
    char path[256];
    hr_err e = {{0}};
    if (hr_write_moe_down_t(m, hr_test_tmp(path, sizeof path, tag), &e)) {
        CHECKF(0, "%s: %s", tag, e.msg);
        return NULL;
    }
    hearth_model *t = hearth_model_load(path, NULL, &e);
    CHECKF(t, "load %s: %s", tag, e.msg);
    remove(path);
    if (!t) return NULL;
    const hr_mat *dt = &t->layers[0].moe.down_t, *dn = &m->layers[0].moe.down;
    CHECKF(dt->data && !t->layers[0].moe.down.data && dt->type == dn->type && dt->n_in == dn->n_out && dt->n_out == dn->n_in,
           "%s: ffn_down_exps_t type %u {%lld, %lld}, ffn_down_exps type %u {%lld, %lld}", tag, dt->type, (long long)dt->n_in,
           (long long)dt->n_out, dn->type, (long long)dn->n_in, (long long)dn->n_out);
    return t;
}

/* F32 experts, m and its transposed file t: the same logits up to summation order, and in
 * exact decoding t reads the same gate and up rows but only the fired neurons' down rows
 * where m reads whole down matrices (the difference in bytes, counted independently). */
static void check_down_bytes(hearth_model *m, hearth_model *t, const char *tag) {
    const hr_hparams *hp = &m->hp;
    const int32_t nv = hearth_model_get_info(m)->n_vocab, nl = hp->n_layer;
    const size_t nlog = (size_t)NP * (size_t)nv;
    float *a = malloc(sizeof(float) * nlog), *b = malloc(sizeof(float) * nlog);
    hearth_ffn_stats fa[8], fb[8];
    hearth_moe_stats ma, mb;
    if (!a || !b || nl > 8 || run_prompt(m, HEARTH_FFN_EXACT, false, true, a, fa, &ma, NULL) ||
        run_prompt(t, HEARTH_FFN_EXACT, false, true, b, fb, &mb, NULL)) {
        CHECKF(0, "%s: runs failed", tag);
        free(a), free(b);
        return;
    }
    double diff = 0;
    for (size_t i = 0; i < nlog; i++) diff = fmax(diff, fabs((double)a[i] - b[i]));
    CHECKF(diff <= 1e-4, "%s: transposed file's logits differ by %g", tag, diff);
    uint64_t fired = 0;
    for (int il = 0; il < nl; il++) fired += fb[il].fired;
    const hr_mat *dn = &m->layers[0].moe.down, *dt = &t->layers[0].moe.down_t;
    const uint64_t whole = (uint64_t)NP * (uint64_t)nl * (uint64_t)hp->n_expert_used * (uint64_t)dn->n_out * dn->row_bytes;
    const uint64_t want = whole - fired * dt->row_bytes;
    CHECKF(ma.decode_read_bytes - mb.decode_read_bytes == want, "%s: down bytes saved %llu, expected %llu (%llu fired neurons)", tag,
           (unsigned long long)(ma.decode_read_bytes - mb.decode_read_bytes), (unsigned long long)want, (unsigned long long)fired);
    fprintf(stderr, "%s: transposed down, exact decode reads %.1f%% of the expert bytes it read before (logits within %.2g)\n", tag,
            100.0 * (double)mb.decode_read_bytes / (double)ma.decode_read_bytes, diff);
    free(a), free(b);
}

/* Layer 1's per-neuron firing and routing counters (hr_moe_count_neurons) after one batch
 * and the same tokens alone, against a count from the float64 reference's routing and
 * gates (and ups, dReLU). */
static void check_counts(hearth_model *m, const char *tag) {
    const hr_hparams *hp = &m->hp;
    const int32_t n = 9, d = hp->n_embd, k = hp->n_expert_used, ne = hp->n_expert, ff = hp->n_ff_exp;
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = 64, cp.n_threads = 2, cp.gpu = HEARTH_GPU_OFF;
    hr_err e = {{0}};
    hearth_ctx *c = hearth_ctx_new(m, &cp, &e);
    float *xn = malloc(sizeof(float) * (size_t)(n * d)), *y = malloc(sizeof(float) * (size_t)(n * d)), *row = malloc(sizeof(float) * (size_t)d);
    uint32_t *want = calloc((size_t)(ne * ff), sizeof *want);
    uint64_t routed[64] = {0}, want_r[64] = {0};
    double ref[512], wt[16];
    int32_t sel[16];
    CHECK(c && d <= 512 && ne <= 64 && hr_moe_count_neurons(c, &e) == 0);
    if (!c || !xn || !y || !row || !want || d > 512 || ne > 64) goto done;
    uint64_t s = 777;
    for (int32_t i = 0; i < n * d; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        xn[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 3.4 - 1.7);
    }
    const hr_layer *L = &m->layers[1];
    CHECK(hr_moe_ffn(c, L, 1, xn, n, y, &e) == 0);
    for (int32_t t = 0; t < n; t++) {
        CHECK(hr_moe_ffn(c, L, 1, xn + t * d, 1, y, &e) == 0);
        double margin;
        reference(m, L, xn + t * d, ref, sel, wt, &margin);
        for (int32_t r = 0; r < k; r++) {
            want_r[sel[r]] += 2;
            for (int32_t i = 0; i < ff; i++) {
                double g = 0, u = 0;
                row_of(&L->moe.gate, sel[r], i, row);
                for (int32_t j = 0; j < d; j++) g += (double)row[j] * xn[t * d + j];
                row_of(&L->moe.up, sel[r], i, row);
                for (int32_t j = 0; j < d; j++) u += (double)row[j] * xn[t * d + j];
                want[(size_t)sel[r] * (size_t)ff + (size_t)i] += g > 0 && (hp->act != HR_ACT_DRELU || u > 0) ? 2 : 0;
            }
        }
    }
    const uint32_t *got = hr_moe_neuron_counts(c, 1);
    CHECK(got && hr_moe_neuron_counts(c, 0) && hearth_ctx_moe_routed(c, 1, routed) == 0);
    int bad = 0, bad_r = 0;
    for (int32_t i = 0; got && i < ne * ff; i++) bad += got[i] != want[i];
    for (int32_t x = 0; x < ne; x++) bad_r += routed[x] != want_r[x];
    CHECKF(!bad && !bad_r, "%s: %d of %d neuron counts and %d of %d routing counts differ from the reference", tag, bad, ne * ff, bad_r, ne);
done:
    free(xn), free(y), free(row), free(want);
    hearth_ctx_free(c);
}

int main(void) {
    hearth_model *m = make("llama", HR_F32, 8, 3, false, "llama-moe.gguf");
    if (m) check_layer(m, "llama f32 8x3", 1e-5), check_batch_vs_decode(m, "llama f32 8x3"), check_refusals(m);
    hearth_model_free(m);
    m = make("llama", HR_Q8_0, 4, 2, false, "llama-moe-q8.gguf");
    /* Q8_0 activations: ~1% of the scale per product (llama.cpp rounds alike) */
    if (m) check_layer(m, "llama q8_0 4x2", 3e-2), check_batch_vs_decode(m, "llama q8_0 4x2");
    hearth_model_free(m);
    m = make("qwen3moe", HR_Q4_0, 4, 4, false, "qwen3moe-q4.gguf");
    if (m) check_batch_vs_decode(m, "qwen3moe q4_0 4x4");
    hearth_model_free(m);
    m = make("smallthinker", HR_F32, 6, 2, true, "st-sigmoid.gguf");
    if (m) check_layer(m, "smallthinker sigmoid f32 6x2", 1e-5), check_batch_vs_decode(m, "smallthinker sigmoid 6x2");
    if (m) check_layer_mode(m, "smallthinker sigmoid f32 6x2", 1e-5, HEARTH_FFN_EXACT), check_exact(m, "smallthinker sigmoid f32 6x2", 1e-4);
    hearth_model_free(m);
    m = make("smallthinker", HR_F32, 8, 3, false, "st-softmax.gguf");
    if (m) check_layer_mode(m, "smallthinker softmax f32 8x3", 1e-5, HEARTH_FFN_EXACT), check_exact(m, "smallthinker softmax f32 8x3", 1e-4);
    if (m) check_counts(m, "smallthinker softmax f32 8x3");
    hearth_model *t = m ? transposed(m, "st-softmax-t.gguf") : NULL;
    /* transposed down: the sparse axpy gives exact mode dense mode's bits (tolerance 0) */
    if (t) check_layer_mode(t, "smallthinker down_t f32 8x3", 1e-5, HEARTH_FFN_EXACT), check_layer(t, "smallthinker down_t f32 8x3", 1e-5);
    if (t) check_exact(t, "smallthinker down_t f32 8x3", 0), check_down_bytes(m, t, "smallthinker down_t f32 8x3");
    hearth_model_free(t);
    hearth_model_free(m);
    /* Q8_0 activations: ~1% of the scale per product, as for the dense path */
    m = make("smallthinker", HR_Q8_0, 6, 2, true, "st-sigmoid-q8.gguf");
    if (m) check_layer_mode(m, "smallthinker sigmoid q8_0 6x2", 3e-2, HEARTH_FFN_EXACT), check_exact(m, "smallthinker sigmoid q8_0 6x2", 5e-2);
    hearth_model_free(m);
    m = make("smallthinker", HR_Q8_0, 8, 3, false, "st-softmax-q8.gguf");
    if (m) check_exact(m, "smallthinker softmax q8_0 8x3", 5e-2);
    t = m ? transposed(m, "st-softmax-q8-t.gguf") : NULL; /* requantized transposed rows: against the reference of t itself */
    if (t) check_layer_mode(t, "smallthinker down_t q8_0 8x3", 3e-2, HEARTH_FFN_EXACT), check_exact(t, "smallthinker down_t q8_0 8x3", 0);
    hearth_model_free(t);
    hearth_model_free(m);
    /* gpt-oss: biased router and experts, softmax over the chosen scores, clamped SwiGLU (its
     * synthetic gate/up values reach the clamp), attention sinks and a window in the prompt. */
    m = make_gptoss(HR_F32, 8, 4, "gptoss-f32.gguf");
    if (m) check_layer(m, "gpt-oss f32 8x4", 1e-5), check_batch_vs_decode(m, "gpt-oss f32 8x4"), check_refusals(m);
    hearth_model_free(m);
    m = make_gptoss(HR_MXFP4, 4, 2, "gptoss-mxfp4.gguf");
    /* MXFP4 experts take Q8_0 activations, as in llama.cpp: ~1% of the scale per product */
    if (m) check_layer(m, "gpt-oss mxfp4 4x2", 3e-2), check_batch_vs_decode(m, "gpt-oss mxfp4 4x2");
    hearth_model_free(m);
    /* experts of 512 neurons: a 24-token prompt's waves (up to 64 rows) hold up to 30720
     * (token, neuron) pairs, so the sparse modes' element-wise steps run on the pool (moe.c's
     * HR_MOE_STEP_PAR), each token's alone on the caller; batch and decode compared bit for bit */
    m = make_ff("smallthinker", HR_F32, 8, 3, false, -1, 512, "st-wide.gguf");
    if (m) check_exact(m, "smallthinker f32 8x3 ff512", 1e-4);
    t = m ? transposed(m, "st-wide-t.gguf") : NULL;
    if (t) check_exact(t, "smallthinker down_t f32 8x3 ff512", 0);
    hearth_model_free(t);
    hearth_model_free(m);
    m = make_act("llama", HR_F32, 6, 2, false, HR_SYNTH_DRELU, "llama-drelu-moe.gguf"); /* dReLU experts */
    if (m) check_layer_mode(m, "llama drelu f32 6x2", 1e-5, HEARTH_FFN_EXACT), check_exact(m, "llama drelu f32 6x2", 1e-4);
    if (m) check_counts(m, "llama drelu f32 6x2");
    t = m ? transposed(m, "llama-drelu-moe-t.gguf") : NULL;
    if (t) check_exact(t, "llama drelu down_t f32 6x2", 0), check_down_bytes(m, t, "llama drelu down_t f32 6x2");
    hearth_model_free(t);
    hearth_model_free(m);
    return TEST_END();
}
