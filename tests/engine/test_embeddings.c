/* Embeddings mode (hearth_ctx_set_embeddings): the hidden state of each wanted token is the
 * vector the output matrix turns into that token's logits. Checked directly: the output
 * matrix, read from the file and multiplied in double precision with the hidden state,
 * must give the logits a normal eval computes; sequences in one batch must get the states
 * they get alone; no logits exist in the mode, and logits come back when it is off. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "formats/gguf.h"
#include "formats/types.h"
#include "hearth.h"
#include "synth/synth.h"
#include "testutil.h"

#define N_TOK 7

static hearth_ctx *new_ctx(hearth_model *m, int n_seq) {
    hearth_ctx_params p = hearth_ctx_default_params();
    p.n_ctx = 32, p.n_threads = 2, p.n_batch = 4, p.n_seq = n_seq; /* n_batch < N_TOK: split evals */
    p.gpu = HEARTH_GPU_OFF;
    hr_err e;
    hearth_ctx *c = hearth_ctx_new(m, &p, &e);
    if (!c) fprintf(stderr, "ctx: %s\n", e.msg);
    return c;
}

/* out[t][n_vocab] = W · h_t in double, W the file's output matrix (dequantized rows). */
static int project(const char *path, const float *h, int n_tok, int32_t n_embd, int32_t n_vocab, double *out) {
    gguf_file f;
    hr_err e;
    if (gguf_open(&f, path, &e)) return -1;
    const gguf_tensor *w = gguf_find_tensor(&f, "output.weight");
    if (!w) w = gguf_find_tensor(&f, "token_embd.weight");
    float *row = malloc(sizeof(float) * (size_t)n_embd);
    int rc = !w || !row || w->ne[0] != (uint64_t)n_embd || w->ne[1] != (uint64_t)n_vocab ? -1 : 0;
    size_t row_bytes = rc ? 0 : (size_t)w->nbytes / (size_t)n_vocab;
    for (int32_t v = 0; !rc && v < n_vocab; v++) {
        hr_dequant_row(w->type, (const uint8_t *)w->data + (size_t)v * row_bytes, row, n_embd);
        for (int t = 0; t < n_tok; t++) {
            double s = 0;
            for (int32_t i = 0; i < n_embd; i++) s += (double)row[i] * h[(size_t)t * n_embd + i];
            out[(size_t)t * n_vocab + v] = s;
        }
    }
    free(row);
    gguf_close(&f);
    return rc;
}

/* tol: relative error allowed in W·h (quantized weights: the engine's matmul quantizes h too). */
static void check_model(const char *path, double tol) {
    hr_err e;
    hearth_model_params mp = hearth_model_default_params();
    hearth_model *m = hearth_model_load(path, &mp, &e);
    CHECKF(m != NULL, "load: %s", e.msg);
    if (!m) return;
    const int32_t nv = hearth_model_get_info(m)->n_vocab, nd = hearth_model_get_info(m)->n_embd;
    int32_t tok[N_TOK];
    hr_rng r = {11};
    for (int i = 0; i < N_TOK; i++) tok[i] = (int32_t)(hr_rng_next(&r) % (uint64_t)nv);
    float *lg = malloc(sizeof(float) * (size_t)N_TOK * nv), *h = malloc(sizeof(float) * (size_t)N_TOK * nd);
    double *proj = malloc(sizeof(double) * (size_t)N_TOK * nv);
    hearth_ctx *c = new_ctx(m, 2);
    CHECK(c && lg && h && proj);
    if (!c || !lg || !h || !proj) goto out;

    /* Normal eval: every token's logits. */
    CHECKF(hearth_eval(c, tok, N_TOK, 0, true, &e) == 0, "eval: %s", e.msg);
    for (int i = 0; i < N_TOK; i++) memcpy(lg + (size_t)i * nv, hearth_logits(c, i), sizeof(float) * (size_t)nv);
    CHECK(hearth_embeddings(c, 0) == NULL);

    /* Same tokens in embeddings mode: hidden states, no logits. */
    hearth_ctx_set_embeddings(c, true);
    CHECKF(hearth_eval(c, tok, N_TOK, 0, true, &e) == 0, "eval: %s", e.msg);
    CHECK(hearth_logits(c, 0) == NULL && hearth_logits(c, -1) == NULL);
    for (int i = 0; i < N_TOK; i++) {
        const float *x = hearth_embeddings(c, i);
        CHECK(x != NULL);
        if (x) memcpy(h + (size_t)i * nd, x, sizeof(float) * (size_t)nd);
    }
    CHECK(hearth_embeddings(c, N_TOK) == NULL && hearth_embeddings(c, -1) == hearth_embeddings(c, N_TOK - 1));

    /* The direct computation: W · h equals the engine's logits. */
    CHECK(project(path, h, N_TOK, nd, nv, proj) == 0);
    double worst = 0, scale = 0;
    for (size_t i = 0; i < (size_t)N_TOK * nv; i++) {
        worst = fmax(worst, fabs(proj[i] - lg[i]));
        scale = fmax(scale, fabs((double)lg[i]));
    }
    CHECKF(worst <= tol * (scale + 1), "W·h differs from the logits by %g (logits up to %g)", worst, scale);

    /* A batch of two sequences: sequence 1's states equal those it gets alone (seq 0 above). */
    int32_t bt[2 * N_TOK], bp[2 * N_TOK], bs[2 * N_TOK];
    bool bw[2 * N_TOK];
    for (int i = 0; i < N_TOK; i++) {
        bt[2 * i] = tok[N_TOK - 1 - i], bp[2 * i] = i, bs[2 * i] = 0, bw[2 * i] = false;
        bt[2 * i + 1] = tok[i], bp[2 * i + 1] = i, bs[2 * i + 1] = 1, bw[2 * i + 1] = true;
    }
    hearth_batch b = {2 * N_TOK, bt, bp, bs, bw};
    CHECKF(hearth_eval_batch(c, &b, &e) == 0, "batch: %s", e.msg);
    float diff = 0;
    for (int i = 0; i < N_TOK; i++) {
        const float *x = hearth_embeddings(c, i);
        for (int32_t k = 0; x && k < nd; k++) diff = fmaxf(diff, fabsf(x[k] - h[(size_t)i * nd + k]));
        CHECK(x != NULL);
    }
    CHECKF(diff == 0, "batched hidden states differ from the alone ones by %g", (double)diff);

    /* Off again: logits as before. */
    hearth_ctx_set_embeddings(c, false);
    CHECKF(hearth_eval(c, tok, N_TOK, 0, true, &e) == 0, "eval: %s", e.msg);
    CHECK(hearth_embeddings(c, 0) == NULL && hearth_logits(c, N_TOK - 1) != NULL &&
          !memcmp(hearth_logits(c, N_TOK - 1), lg + (size_t)(N_TOK - 1) * nv, sizeof(float) * (size_t)nv));
out:
    hearth_ctx_free(c);
    free(lg), free(h), free(proj);
    hearth_model_free(m);
}

int main(void) {
    const uint32_t types[] = {HR_F32, HR_Q8_0};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        hr_synth_params p;
        hr_synth_defaults(&p);
        p.type = types[i], p.n_embd = 64, p.n_head = 4, p.n_head_kv = 2, p.n_ff = 96, p.n_vocab = 300, p.n_layer = 2;
        p.seed = 3 + i;
        char path[256];
        hr_err e;
        CHECKF(hr_synth_write(&p, hr_test_tmp(path, sizeof path, "embd.gguf"), &e) == 0, "synth: %s", e.msg);
        check_model(path, types[i] == HR_F32 ? 1e-4 : 3e-2);
        remove(path);
    }
    return TEST_END();
}
