/* Mixture-of-experts FFN: one layer against a float64 reference written from the definition
 * (router, gating, top-k, renormalised weights, each chosen expert's gated FFN from
 * dequantized rows), batched prompts bit-identical to token-by-token decoding, and the
 * modes and device placements that must be refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "engine/gpu_plan.h"
#include "engine/moe.h"
#include "formats/types.h"
#include "hearth.h"
#include "synth/synth.h"
#include "testutil.h"

static double act(hr_act a, double g, double u) {
    if (a == HR_ACT_REGLU) return (g > 0 ? g : 0) * u;
    return g / (1 + exp(-g)) * u; /* SwiGLU */
}

/* Row r of expert x's matrix w, dequantized. */
static void row_of(const hr_mat *w, int32_t x, int64_t r, float *dst) {
    const hr_mat v = hr_moe_expert(w, x);
    hr_dequant_row(v.type, (const uint8_t *)v.data + (size_t)r * v.row_bytes, dst, v.n_in);
}

/* out[d] = the layer's MoE FFN of xn[d] in double precision; sel/wt: the reference routing. */
static void reference(const hearth_model *m, const hr_layer *L, const float *xn, double *out, int32_t *sel, double *wt) {
    const hr_hparams *hp = &m->hp;
    const int32_t ne = hp->n_expert, k = hp->n_expert_used, d = hp->n_embd, ff = hp->n_ff_exp;
    double *p = calloc((size_t)ne, sizeof *p), *h = calloc((size_t)ff, sizeof *h);
    float *row = calloc((size_t)(d > ff ? d : ff), sizeof *row);
    for (int32_t x = 0; x < ne; x++) {
        hr_dequant_row(L->moe.router.type, (const uint8_t *)L->moe.router.data + (size_t)x * L->moe.router.row_bytes, row, d);
        double s = 0;
        for (int32_t j = 0; j < d; j++) s += (double)row[j] * xn[j];
        p[x] = s;
    }
    if (hp->moe_gate == HR_MOE_SIGMOID) {
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
    for (int32_t r = 0; r < k; r++) wt[r] /= wsum;
    memset(out, 0, sizeof(double) * (size_t)d);
    for (int32_t r = 0; r < k; r++) {
        for (int32_t i = 0; i < ff; i++) {
            double g = 0, u = 0;
            row_of(&L->moe.gate, sel[r], i, row);
            for (int32_t j = 0; j < d; j++) g += (double)row[j] * xn[j];
            row_of(&L->moe.up, sel[r], i, row);
            for (int32_t j = 0; j < d; j++) u += (double)row[j] * xn[j];
            h[i] = act(hp->act, g, u);
        }
        for (int32_t j = 0; j < d; j++) {
            row_of(&L->moe.down, sel[r], j, row);
            double y = 0;
            for (int32_t i = 0; i < ff; i++) y += (double)row[i] * h[i];
            out[j] += wt[r] * y;
        }
    }
    free(p), free(h), free(row);
}

static hearth_model *make(const char *arch, uint32_t type, uint32_t ne, uint32_t k, bool sigmoid, const char *tag) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.arch = arch, p.type = type, p.n_embd = 64, p.n_head = 4, p.n_head_kv = 2, p.n_ff = 96, p.n_vocab = 300;
    p.n_expert = ne, p.n_expert_used = k, p.moe_sigmoid = sigmoid, p.seed = 7;
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

/* Layer 1's MoE FFN of n random normed-looking inputs against the reference, token by token
 * and as one batch. */
static void check_layer(hearth_model *m, const char *tag, double tol) {
    const hr_hparams *hp = &m->hp;
    const int32_t n = 9, d = hp->n_embd, k = hp->n_expert_used;
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = 64, cp.n_threads = 2, cp.gpu = HEARTH_GPU_OFF;
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
    double worst = 0;
    for (int32_t t = 0; t < n; t++) {
        CHECK(hr_moe_ffn(c, L, 1, xn + t * d, 1, y1, &e) == 0);
        reference(m, L, xn + t * d, ref, sel, wt);
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
    fprintf(stderr, "%s: max error vs float64 reference %.2e of scale (tol %.0e)\n", tag, worst, tol);
    free(xn), free(yb), free(y1), free(ref);
    hearth_ctx_free(c);
}

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
    CHECKF(!c && strstr(e.msg, "mixture-of-experts") && strstr(e.msg, "exact"), "exact mode on MoE: %s", c ? "(accepted)" : e.msg);
    hearth_ctx_free(c);
    hr_gpu_plan_in in = {.m = m, .n_ctx = 64, .n_seq = 1, .n_batch = 32, .budget = 1ull << 30, .mode = HEARTH_FFN_DENSE,
                         .n_gpu_layers = 1};
    hr_gpu_plan p;
    CHECKF(hr_gpu_plan_make(&in, &p, &e) && strstr(e.msg, "mixtures of experts") && strstr(e.msg, "-ngl 0"),
           "-ngl 1 on MoE: %s", e.msg);
    hr_gpu_plan_free(&p);
    in.n_gpu_layers = 0; /* automatic placement: nothing of the MoE layers goes to the device */
    CHECKF(hr_gpu_plan_make(&in, &p, &e) == 0 && p.n_attn == 0 && p.n_whole == 0, "auto plan on MoE: %s", e.msg);
    hr_gpu_plan_free(&p);
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
    hearth_model_free(m);
    return TEST_END();
}
