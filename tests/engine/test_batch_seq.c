/* Multi-sequence batches: each sequence's logits are bit-identical to the same sequence
 * evaluated alone (prompt as one batch, then one token at a time), whatever else shares
 * the batch — for every weight type, dense and PowerInfer files in every FFN mode, and
 * the shipped model. Also: positions may rewind, and bad batches are refused. */
#include <stdlib.h>
#include <string.h>
#include "formats/types.h"
#include "hearth.h"
#include "synth/synth.h"
#include "testutil.h"

#define N_SEQ 3
#define N_STEPS 12 /* tokens per sequence */

typedef struct {
    int32_t tok[N_SEQ][N_STEPS];
    int32_t prompt[N_SEQ]; /* prompt lengths: evaluated as one batch when alone */
} script;

static void make_script(script *s, int32_t n_vocab, uint64_t seed) {
    hr_rng r = {seed};
    for (int q = 0; q < N_SEQ; q++)
        for (int i = 0; i < N_STEPS; i++) s->tok[q][i] = (int32_t)(hr_rng_next(&r) % (uint64_t)n_vocab);
    s->prompt[0] = 5, s->prompt[1] = 1, s->prompt[2] = 8;
}

static hearth_ctx *new_ctx(hearth_model *m, int n_seq, hearth_ffn_mode mode, hearth_kv_type kv) {
    hearth_ctx_params p = hearth_ctx_default_params();
    p.n_ctx = 32, p.n_threads = 2, p.n_batch = 16, p.n_seq = n_seq, p.ffn_mode = mode, p.kv_k = p.kv_v = kv;
    p.gpu = HEARTH_GPU_OFF; /* bit-identity of the CPU path (the default, auto, would take a GPU) */
    hr_err e;
    hearth_ctx *c = hearth_ctx_new(m, &p, &e);
    if (!c) fprintf(stderr, "ctx: %s\n", e.msg);
    return c;
}

/* Reference: sequence q alone, logits of every step into ref[q][step]. */
static int run_alone(hearth_model *m, const script *s, int q, hearth_ffn_mode mode, hearth_kv_type kv, float *ref, int nv) {
    hearth_ctx *c = new_ctx(m, 1, mode, kv);
    hr_err e;
    int rc = !c || hearth_eval(c, s->tok[q], s->prompt[q], 0, true, &e);
    for (int i = 0; !rc && i < s->prompt[q]; i++) memcpy(ref + i * nv, hearth_logits(c, i), sizeof(float) * (size_t)nv);
    for (int i = s->prompt[q]; !rc && i < N_STEPS; i++) {
        rc = hearth_eval(c, &s->tok[q][i], 1, i, false, &e);
        if (!rc) memcpy(ref + i * nv, hearth_logits(c, 0), sizeof(float) * (size_t)nv);
    }
    if (rc && c) fprintf(stderr, "alone: %s\n", e.msg);
    hearth_ctx_free(c);
    return rc;
}

/* All sequences in one context, interleaved: each round takes a varying number of the
 * next tokens of each sequence (sequence 1 lags, so prompts meet decodes). */
static int run_mixed(hearth_model *m, const script *s, hearth_ffn_mode mode, hearth_kv_type kv, const float *ref, int nv,
                     const char *what) {
    hearth_ctx *c = new_ctx(m, N_SEQ, mode, kv);
    if (!c) return -1;
    int done[N_SEQ] = {0}, bad = 0;
    hr_err e;
    for (int round = 0; round < 3 * N_STEPS; round++) {
        int32_t tok[N_SEQ * N_STEPS], pos[N_SEQ * N_STEPS], seq[N_SEQ * N_STEPS], n = 0;
        bool want[N_SEQ * N_STEPS];
        for (int q = 0; q < N_SEQ; q++) {
            int take = (round + q) % 3 == 0 ? 0 : 1 + (round * 7 + q) % 3;
            if (round == 0) take = s->prompt[q];
            for (int k = 0; k < take && done[q] < N_STEPS; k++, done[q]++)
                tok[n] = s->tok[q][done[q]], pos[n] = done[q], seq[n] = q, want[n] = true, n++;
        }
        if (!n) continue;
        hearth_batch b = {.n = n, .tokens = tok, .pos = pos, .seq = seq, .logits = want};
        if (hearth_eval_batch(c, &b, &e)) {
            fprintf(stderr, "%s: %s\n", what, e.msg);
            hearth_ctx_free(c);
            return -1;
        }
        for (int k = 0; k < n; k++) {
            const float *want_l = ref + ((size_t)seq[k] * N_STEPS + (size_t)pos[k]) * (size_t)nv;
            if (memcmp(hearth_logits(c, k), want_l, sizeof(float) * (size_t)nv)) bad++;
        }
    }
    hearth_ctx_free(c);
    CHECKF(bad == 0, "%s: %d of %d logit rows differ from the sequence evaluated alone", what, bad, N_SEQ * N_STEPS);
    return 0;
}

static void check_model(const char *path, hearth_ffn_mode mode, hearth_kv_type kv, const char *what) {
    hr_err e;
    hearth_model *m = hearth_model_load(path, NULL, &e);
    CHECKF(m != NULL, "%s: %s", what, e.msg);
    if (!m) return;
    const int nv = hearth_model_get_info(m)->n_vocab;
    script s;
    make_script(&s, nv, 42);
    float *ref = malloc(sizeof(float) * (size_t)N_SEQ * N_STEPS * (size_t)nv);
    int rc = 0;
    for (int q = 0; q < N_SEQ && !rc; q++) rc = run_alone(m, &s, q, mode, kv, ref + (size_t)q * N_STEPS * nv, nv);
    CHECKF(rc == 0, "%s: reference run failed", what);
    if (!rc) CHECK(run_mixed(m, &s, mode, kv, ref, nv, what) == 0);
    free(ref);
    hearth_model_free(m);
}

static void synth_models(void) {
    const uint32_t types[] = {HR_F32,  HR_F16,  HR_BF16, HR_Q8_0, HR_Q4_0,   HR_Q4_1,   HR_Q5_0,  HR_Q5_1,
                              HR_Q2_K, HR_Q3_K, HR_Q4_K, HR_Q5_K, HR_Q6_K, HR_IQ4_NL, HR_IQ4_XS, HR_MXFP4};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        for (int pwri = 0; pwri < 2; pwri++) {
            hr_synth_params p;
            hr_synth_defaults(&p);
            /* Super-block types need rows of 256; the others keep the small shape. */
            const bool sb = hr_type_block_elems(types[i]) > 32;
            p.type = types[i], p.act = HR_SYNTH_REGLU, p.powerinfer = pwri, p.pred_rank = sb ? 256 : 32;
            p.n_embd = sb ? 256 : 64, p.n_head = 4, p.n_head_kv = 2, p.n_ff = sb ? 256 : 160, p.n_vocab = 300;
            p.n_layer = 2, p.seed = 5;
            char path[256], what[96];
            hr_err e;
            CHECKF(hr_synth_write(&p, hr_test_tmp(path, sizeof path, "batch_seq.gguf"), &e) == 0, "synth: %s", e.msg);
            const hearth_ffn_mode modes[] = {HEARTH_FFN_DENSE, HEARTH_FFN_EXACT, HEARTH_FFN_PREDICTED};
            for (int k = 0; k < (pwri ? 3 : 2); k++) {
                snprintf(what, sizeof what, "%s %s %s", hr_type_name(types[i]), pwri ? "powerinfer" : "dense",
                         hearth_ffn_mode_name(modes[k]));
                check_model(path, modes[k], k == 1 ? HEARTH_KV_F32 : HEARTH_KV_F16, what);
            }
        }
}

static void shipped_models(void) {
    const char *src = getenv("HEARTH_SRC");
    char path[1024];
    snprintf(path, sizeof path, "%s/models/bible-drelu.gguf", src ? src : "..");
    check_model(path, HEARTH_FFN_EXACT, HEARTH_KV_F16, "bible-drelu exact");
    snprintf(path, sizeof path, "%s/models/bible-drelu.powerinfer.gguf", src ? src : "..");
    check_model(path, HEARTH_FFN_PREDICTED, HEARTH_KV_F16, "bible-drelu.powerinfer predicted");
}

/* Re-evaluating a sequence from an earlier position replaces what followed; other
 * sequences keep their cache. */
static void rewind_seq(void) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.n_embd = 64, p.n_head = 4, p.n_head_kv = 4, p.n_ff = 128, p.n_vocab = 300, p.n_layer = 2;
    char path[256];
    hr_err e;
    CHECK(hr_synth_write(&p, hr_test_tmp(path, sizeof path, "rewind.gguf"), &e) == 0);
    hearth_model *m = hearth_model_load(path, NULL, &e);
    hearth_ctx *c = new_ctx(m, 2, HEARTH_FFN_DENSE, HEARTH_KV_F32), *ref = new_ctx(m, 1, HEARTH_FFN_DENSE, HEARTH_KV_F32);
    int32_t a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 9, 8};
    int32_t pos[4] = {0, 1, 2, 3}, s0[4] = {0, 0, 0, 0}, s1[4] = {1, 1, 1, 1};
    bool last[4] = {false, false, false, true};
    hearth_batch b0 = {4, a, pos, s0, last}, b1 = {4, a, pos, s1, last};
    CHECK(hearth_eval_batch(c, &b0, &e) == 0 && hearth_eval_batch(c, &b1, &e) == 0);
    hearth_batch rw = {2, b + 2, pos + 2, s0, last + 2}; /* seq 0 becomes 1 2 9 8 */
    CHECK(hearth_eval_batch(c, &rw, &e) == 0);
    CHECK(hearth_eval(ref, b, 4, 0, false, &e) == 0);
    CHECK(!memcmp(hearth_logits(c, 0), hearth_logits(ref, 0), 300 * sizeof(float)));
    hearth_batch again = {1, a + 3, pos + 3, s1, last + 3}; /* seq 1 still holds 1 2 3 */
    CHECK(hearth_eval_batch(c, &again, &e) == 0);
    CHECK(hearth_eval(ref, a, 4, 0, false, &e) == 0);
    CHECK(!memcmp(hearth_logits(c, 0), hearth_logits(ref, 0), 300 * sizeof(float)));
    CHECK(hearth_ctx_n_seq(c) == 2 && hearth_ctx_n_seq(ref) == 1);
    hearth_ctx_free(c), hearth_ctx_free(ref);
    hearth_model_free(m);
}

static void expect_err(hearth_ctx *c, hearth_batch b, const char *needle) {
    hr_err e = {{0}};
    CHECK(hearth_eval_batch(c, &b, &e) != 0);
    CHECKF(strstr(e.msg, needle) != NULL, "message '%s' lacks '%s'", e.msg, needle);
}

static void bad_batches(void) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.n_embd = 64, p.n_head = 4, p.n_head_kv = 4, p.n_ff = 128, p.n_vocab = 300, p.n_layer = 1;
    char path[256];
    hr_err e;
    CHECK(hr_synth_write(&p, hr_test_tmp(path, sizeof path, "badbatch.gguf"), &e) == 0);
    hearth_model *m = hearth_model_load(path, NULL, &e);
    hearth_ctx *c = new_ctx(m, 2, HEARTH_FFN_DENSE, HEARTH_KV_F16);
    int32_t t[2] = {1, 2}, badt[2] = {1, 300}, pos[2] = {0, 1}, farpos[2] = {0, 32}, seq[2] = {0, 1}, badseq[2] = {0, 2};
    expect_err(c, (hearth_batch){0, t, pos, seq, NULL}, "nothing to evaluate");
    expect_err(c, (hearth_batch){2, badt, pos, seq, NULL}, "outside the vocabulary");
    expect_err(c, (hearth_batch){2, t, farpos, seq, NULL}, "does not fit in the context of 32");
    expect_err(c, (hearth_batch){2, t, pos, badseq, NULL}, "sequence 2 at index 1 is outside [0, 2)");
    expect_err(c, (hearth_batch){2, NULL, pos, seq, NULL}, "without tokens");
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_seq = -1, cp.gpu = HEARTH_GPU_OFF;
    CHECK(hearth_ctx_new(m, &cp, &e) == NULL && strstr(e.msg, "sequences -1"));
    hearth_ctx_free(c);
    hearth_model_free(m);
}

int main(void) {
    synth_models();
    shipped_models();
    rewind_seq();
    bad_batches();
    TEST_END();
}
