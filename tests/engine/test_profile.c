/* The operation profile (hearth_ctx_profile): turning it on changes no logit, and its counts
 * match what the model's shape says one decode step dispatches: norms 2 per layer + 1,
 * attention and RoPE once per layer, the dense products and their bytes (rows x row size +
 * activations, from the shape here), one sparse axpy per layer in predicted mode, the router
 * in MoE layers; the rows' times add up to the forward calls' wall time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "formats/types.h"
#include "hearth.h"
#include "synth/synth.h"
#include "testutil.h"

#define N_PROMPT 5
#define N_DEC 4

typedef struct {
    uint64_t calls, bytes;
    double s;
} sum;

/* Sum of the rows of op (any type). */
static sum op_sum(const hearth_profile *p, const char *op) {
    sum r = {0, 0, 0};
    for (int32_t i = 0; i < p->n_rows; i++)
        if (!strcmp(p->rows[i].op, op)) r.calls += p->rows[i].calls, r.bytes += p->rows[i].bytes, r.s += p->rows[i].seconds;
    return r;
}

static hearth_ctx *new_ctx(hearth_model *m, hearth_ffn_mode mode) {
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = 32, cp.n_threads = 2, cp.ffn_mode = mode, cp.gpu = HEARTH_GPU_OFF;
    hr_err e;
    hearth_ctx *c = hearth_ctx_new(m, &cp, &e);
    if (!c) fprintf(stderr, "ctx: %s\n", e.msg);
    return c;
}

/* Prompt then N_DEC greedy decodes; logits of every decode into lg[N_DEC][nv]. With prof,
 * profiling restarts after the prompt, so *prof holds the decodes alone. */
static int run(hearth_model *m, hearth_ffn_mode mode, float *lg, int nv, hearth_profile *prof) {
    hearth_ctx *c = new_ctx(m, mode);
    if (!c) return -1;
    hr_err e;
    int32_t toks[N_PROMPT] = {3, 17, 42, 7, 99};
    int rc = (prof && hearth_ctx_profile(c, true, &e)) || hearth_eval(c, toks, N_PROMPT, 0, false, &e);
    if (!rc && prof) rc = hearth_ctx_profile(c, true, &e);
    for (int i = 0; !rc && i < N_DEC; i++) {
        const float *l = hearth_logits(c, -1);
        int32_t t = 0;
        for (int k = 1; k < nv; k++) t = l[k] > l[t] ? k : t;
        rc = hearth_eval(c, &t, 1, N_PROMPT + i, false, &e);
        if (!rc) memcpy(lg + (size_t)i * (size_t)nv, hearth_logits(c, -1), sizeof(float) * (size_t)nv);
    }
    if (!rc && prof) rc = hearth_ctx_profile_read(c, prof);
    if (!rc && !prof) CHECKF(hearth_ctx_profile_read(c, NULL) == -1, "a context without a profile has one");
    if (rc) fprintf(stderr, "run: %s\n", e.msg);
    hearth_ctx_free(c);
    return rc;
}

/* Bytes of one dense single-token product: the rows and the activations in and out. */
static uint64_t mv_bytes(uint32_t type, uint64_t n_in, uint64_t n_out) { return n_out * hr_row_bytes(type, n_in) + (n_in + n_out) * 4; }

static void check_common(const hearth_profile *p, const hr_synth_params *s, const char *what) {
    const uint64_t L = s->n_layer, F = N_DEC;
    CHECKF(p->tokens == N_DEC && p->forwards == N_DEC, "%s: %llu tokens %llu forwards", what, (unsigned long long)p->tokens,
           (unsigned long long)p->forwards);
    CHECKF(op_sum(p, "norm").calls == F * (2 * L + 1), "%s: norm calls %llu", what, (unsigned long long)op_sum(p, "norm").calls);
    CHECKF(op_sum(p, "attention").calls == F * L, "%s: attention calls", what);
    CHECKF(op_sum(p, "rope").calls == F * L, "%s: rope calls", what);
    CHECKF(op_sum(p, "gemm").calls == 0, "%s: gemm in a decode", what);
    /* attention reads, per layer, the cached rows 0..pos (K and V, F16) plus the new row, q in and out */
    uint64_t att = 0;
    const uint64_t kvd = (uint64_t)s->n_head_kv * (s->n_embd / s->n_head);
    for (uint64_t i = 0; i < F; i++) att += L * ((N_PROMPT + i + 2) * kvd * 4 + (uint64_t)s->n_embd * 8);
    CHECKF(op_sum(p, "attention").bytes == att, "%s: attention bytes %llu want %llu", what,
           (unsigned long long)op_sum(p, "attention").bytes, (unsigned long long)att);
    double rows = 0, other = -1;
    for (int32_t i = 0; i < p->n_rows; i++) {
        const hearth_profile_row *r = &p->rows[i];
        CHECKF(r->seconds >= 0 && isfinite(r->seconds), "%s: row %s seconds %g", what, r->op, r->seconds);
        rows += r->seconds;
        if (!strcmp(r->op, "other")) other = r->seconds;
    }
    CHECKF(fabs(rows - p->total_s) <= 1e-6 + 1e-9 * p->total_s, "%s: rows %.9f s, forwards %.9f s", what, rows, p->total_s);
    /* timed operations must cover the forward pass: "other" is embedding and bookkeeping */
    CHECKF(other >= 0 && other < 0.5 * p->total_s, "%s: other %.6f of %.6f s", what, other, p->total_s);
}

static void one(hr_synth_params *s, hearth_ffn_mode mode, const char *what) {
    char path[256];
    hr_err e;
    CHECKF(hr_synth_write(s, hr_test_tmp(path, sizeof path, "profile.gguf"), &e) == 0, "synth: %s", e.msg);
    hearth_model *m = hearth_model_load(path, NULL, &e);
    CHECKF(m, "load: %s", m ? "" : e.msg);
    if (!m) return;
    const int nv = (int)s->n_vocab;
    float *a = malloc(sizeof(float) * N_DEC * (size_t)nv), *b = malloc(sizeof(float) * N_DEC * (size_t)nv);
    hearth_profile *p = calloc(1, sizeof *p);
    if (a && b && p && !run(m, mode, a, nv, NULL) && !run(m, mode, b, nv, p)) {
        CHECKF(!memcmp(a, b, sizeof(float) * N_DEC * (size_t)nv), "%s: profiling changed the logits", what);
        check_common(p, s, what);
        const uint64_t L = s->n_layer, F = N_DEC, E = s->n_embd, kvd = (uint64_t)s->n_head_kv * (E / s->n_head), FF = s->n_ff;
        const uint64_t attn_mv = mv_bytes(s->type, E, E) * 2 + mv_bytes(s->type, E, kvd) * 2;
        const uint64_t out_mv = mv_bytes(s->type, E, s->n_vocab);
        const sum mv = op_sum(p, "matvec");
        if (mode == HEARTH_FFN_DENSE && !s->n_expert) {
            const uint64_t want = F * (L * (attn_mv + 2 * mv_bytes(s->type, E, FF) + mv_bytes(s->type, FF, E)) + out_mv);
            CHECKF(mv.calls == F * (7 * L + 1), "%s: matvec calls %llu", what, (unsigned long long)mv.calls);
            CHECKF(mv.bytes == want, "%s: matvec bytes %llu want %llu", what, (unsigned long long)mv.bytes, (unsigned long long)want);
            CHECKF(mv.s > 0 && isfinite((double)mv.bytes / mv.s), "%s: matvec time", what);
        }
        if (mode == HEARTH_FFN_PREDICTED) { /* gate and up gathered, or dense when the union is large */
            CHECKF(mv.calls + op_sum(p, "gather").calls == F * (6 * L + 1), "%s: matvec+gather calls", what);
            CHECKF(op_sum(p, "axpy").calls == F * L, "%s: axpy calls %llu", what, (unsigned long long)op_sum(p, "axpy").calls);
            CHECKF(op_sum(p, "predictor").calls == F * L * 3, "%s: predictor calls (fc1, fc2, test)", what);
        }
        if (s->n_expert) CHECKF(op_sum(p, "moe_route").calls >= F * L, "%s: moe_route calls", what);
    }
    free(a), free(b), free(p);
    hearth_model_free(m);
}

int main(void) {
    hr_synth_params s;
    hr_synth_defaults(&s);
    s.type = HR_Q4_0, s.n_embd = 64, s.n_head = 4, s.n_head_kv = 2, s.n_ff = 160, s.n_vocab = 300, s.n_layer = 2, s.seed = 5;
    one(&s, HEARTH_FFN_DENSE, "q4_0 dense");
    s.type = HR_F16, s.powerinfer = true, s.act = HR_SYNTH_REGLU, s.pred_rank = 32;
    one(&s, HEARTH_FFN_PREDICTED, "f16 powerinfer predicted");
    hr_synth_defaults(&s);
    s.type = HR_Q8_0, s.n_embd = 64, s.n_head = 4, s.n_head_kv = 2, s.n_ff = 64, s.n_vocab = 300, s.n_layer = 2, s.seed = 5;
    s.n_expert = 4, s.n_expert_used = 2;
    one(&s, HEARTH_FFN_DENSE, "q8_0 moe");
    TEST_END();
}
