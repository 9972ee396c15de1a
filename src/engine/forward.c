/* The dense forward pass for a batch of tokens. Every supported architecture is one
 * combination of what its table entry (arch.h) says: RMSNorm or LayerNorm (with bias),
 * separate or fused QKV (row views made at load, so nothing here), biases, per-head q/k
 * norms, RoPE or learned positions, and serial layers (pre-norm residual per block) or
 * parallel ones (Falcon); Gemma adds an embedding scale, q scaled after RoPE, post norms
 * of the block outputs and soft-capped logits (attention.c caps the scores). */
#include <string.h>
#include "context.h"
#include "formats/types.h"
#include "ffn.h"
#include "hybrid.h"
#include "moe.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/prof.h"

static void add_into(float *x, const float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] += y[i];
}

/* x += y over the batch's residual stream (timed as an element-wise op when profiling). */
static void residual_add(hearth_ctx *c, const float *y, int64_t n) {
    const hr_prof_mark pm = hr_prof_begin(c->cpu.prof);
    add_into(c->sc.x, y, n);
    hr_prof_end(c->cpu.prof, pm, HR_PROF_ELEM, 0, (uint64_t)n * 12);
}

static void add_bias(float *y, const float *b, int32_t n_tok, int64_t n) {
    if (!b) return;
    for (int32_t t = 0; t < n_tok; t++) add_into(y + t * n, b, n);
}

static void scale_rows(float *x, float s, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] *= s;
}

typedef struct {
    const hearth_ctx *c;
    float *y;
    const float *x, *w, *b;
    int32_t n;
} norm_job;

/* Tokens [n * ith / nth, n * (ith + 1) / nth) of a norm_job: each token's row on its own, so
 * the split changes no value. */
static void norm_task(void *arg, int ith, int nth) {
    const norm_job *j = arg;
    const hr_hparams *hp = &j->c->m->hp;
    const int64_t d = hp->n_embd;
    for (int32_t t = (int32_t)((int64_t)j->n * ith / nth); t < (int32_t)((int64_t)j->n * (ith + 1) / nth); t++) {
        if (hp->arch->norm == HR_NORM_LAYER) hr_layernorm(j->y + t * d, j->x + t * d, j->w, j->b, d, hp->rms_eps);
        else hr_rmsnorm(j->y + t * d, j->x + t * d, j->w, d, hp->rms_eps);
    }
}

/* Below this many elements a batch's norms stay on the caller (a decoded token's row). */
#define NORM_PAR_ELEMS 32768

static void norm_rows(const hearth_ctx *c, float *y, const float *x, const float *w, const float *b, int32_t n) {
    const int64_t d = c->m->hp.n_embd;
    const hr_prof_mark pm = hr_prof_begin(c->cpu.prof);
    norm_job j = {.c = c, .y = y, .x = x, .w = w, .b = b, .n = n};
    if ((int64_t)n * d >= NORM_PAR_ELEMS && n > 1) hr_pool_run(c->cpu.pool, norm_task, &j);
    else norm_task(&j, 0, 1);
    hr_prof_end(c->cpu.prof, pm, HR_PROF_NORM, 0, (uint64_t)(2 * n + 1) * (uint64_t)d * 4);
}

/* RMSNorm of each of n_heads consecutive heads with one weight vector {head_dim} (Qwen3's
 * q and k norms, applied before RoPE). */
static void head_norms(const hearth_ctx *c, float *x, const float *w, int64_t n_heads) {
    const hr_hparams *hp = &c->m->hp;
    const hr_prof_mark pm = hr_prof_begin(c->cpu.prof);
    for (int64_t h = 0; h < n_heads; h++) hr_rmsnorm(x + h * hp->head_dim, x + h * hp->head_dim, w, hp->head_dim, hp->rms_eps);
    hr_prof_end(c->cpu.prof, pm, HR_PROF_NORM, 0, (uint64_t)(2 * n_heads + 1) * (uint64_t)hp->head_dim * 4);
}

/* What a layer's step runs on the device besides the host's work. */
typedef struct layer_dev {
    bool attn;      /* attention and its KV cache */
    hr_ffn_dev ffn; /* the FFN's share */
} layer_dev;

/* out = Wo · attention(in) (+ bo) for the tokens of f; in may equal out. */
static int attention(hearth_ctx *c, const hr_layer *L, int il, const float *in, const hr_fwd *f, const layer_dev *ld, float *out,
                     hr_err *e) {
    const hr_hparams *hp = &c->m->hp;
    const int32_t n = f->n;
    const int64_t qd = (int64_t)hp->n_head * hp->head_dim, kvd = (int64_t)hp->n_head_kv * hp->head_dim;
    if (ld->attn) return hr_hybrid_attention(c, L, il, in, f, out, e);
    if (hr_matmul(&c->cpu, &L->wq, in, n, c->sc.q, e) || hr_matmul(&c->cpu, &L->wk, in, n, c->sc.k, e) ||
        hr_matmul(&c->cpu, &L->wv, in, n, c->sc.v, e))
        return -1;
    add_bias(c->sc.q, L->bq, n, qd), add_bias(c->sc.k, L->bk, n, kvd), add_bias(c->sc.v, L->bv, n, kvd);
    if (L->q_norm) head_norms(c, c->sc.q, L->q_norm, (int64_t)n * hp->n_head);
    if (L->k_norm) head_norms(c, c->sc.k, L->k_norm, (int64_t)n * hp->n_head_kv);
    if (L->use_rope) {
        const hr_prof_mark pm = hr_prof_begin(c->cpu.prof);
        const float *ff = hr_rope_factors(c->m, c->n_ctx); /* Llama-3.1 / LongRoPE factors, or NULL */
        float cs[2048]; /* a token's cos/sin pairs, for its q and k (n_rot <= 1024, checked at load) */
        for (int32_t t = 0; t < n; t++) {
            hr_rope_cs(cs, hp->n_rot, f->pos[t], L->rope_base, L->rope_freq_scale, ff, &hp->rope_yarn);
            hr_rope_apply(c->sc.q + t * qd, hp->n_head, hp->head_dim, hp->n_rot, hp->rope_neox, cs);
            hr_rope_apply(c->sc.k + t * kvd, hp->n_head_kv, hp->head_dim, hp->n_rot, hp->rope_neox, cs);
        }
        hr_prof_end(c->cpu.prof, pm, HR_PROF_ROPE, 0, (uint64_t)n * (uint64_t)(qd + kvd) * 8);
    }
    if (hp->q_scale != 1.0f) scale_rows(c->sc.q, hp->q_scale, (int64_t)n * qd);
    hr_attention(c, il, f);
    if (hr_matmul(&c->cpu, &L->wo, c->sc.att, n, out, e)) return -1;
    add_bias(out, L->bo, n, hp->n_embd);
    return 0;
}

/* x += attention(norm(x)); x += ffn(ffn_norm(x)); Gemma's post norms of each output
 * before its add. */
static int serial_layer(hearth_ctx *c, const hr_layer *L, int il, const hr_fwd *f, const layer_dev *ld, hr_err *e) {
    const hr_hparams *hp = &c->m->hp;
    const int32_t n = f->n;
    const int64_t nd = (int64_t)n * hp->n_embd;
    if (hr_moe_route_early(c, L, c->sc.x, n, e)) return -1; /* routers that read the layer input */
    norm_rows(c, c->sc.xn, c->sc.x, L->attn_norm, L->attn_norm_b, n);
    if (attention(c, L, il, c->sc.xn, f, ld, c->sc.tmp, e)) return -1;
    if (L->attn_post_norm) norm_rows(c, c->sc.tmp, c->sc.tmp, L->attn_post_norm, NULL, n);
    residual_add(c, c->sc.tmp, nd);
    norm_rows(c, c->sc.xn, c->sc.x, L->ffn_norm, L->ffn_norm_b, n);
    if (L->moe.router.data ? hr_moe_ffn(c, L, il, c->sc.xn, n, c->sc.tmp, e)
                           : hr_ffn_dev_run(c, L, il, c->sc.x, c->sc.xn, n, &ld->ffn, c->sc.tmp, e))
        return -1;
    if (L->ffn_post_norm) norm_rows(c, c->sc.tmp, c->sc.tmp, L->ffn_post_norm, NULL, n);
    residual_add(c, c->sc.tmp, nd);
    return 0;
}

/* Falcon: x += ffn(attn_norm(x)) + attention(attn_norm_2(x) or attn_norm(x)); the
 * predictor sees the layer input x. Summed in llama.cpp's order: (ffn + attn) + x. */
static int parallel_layer(hearth_ctx *c, const hr_layer *L, int il, const hr_fwd *f, const layer_dev *ld, hr_err *e) {
    const hr_hparams *hp = &c->m->hp;
    const int32_t n = f->n;
    const int64_t nd = (int64_t)n * hp->n_embd;
    norm_rows(c, c->sc.xn, c->sc.x, L->attn_norm, L->attn_norm_b, n);
    const float *attn_in = c->sc.xn;
    if (L->attn_norm2) {
        norm_rows(c, c->sc.xb, c->sc.x, L->attn_norm2, L->attn_norm2_b, n);
        attn_in = c->sc.xb;
    }
    if (attention(c, L, il, attn_in, f, ld, c->sc.xb, e) || hr_ffn_dev_run(c, L, il, c->sc.x, c->sc.xn, n, &ld->ffn, c->sc.tmp, e)) return -1;
    for (int64_t i = 0; i < nd; i++) c->sc.x[i] = (c->sc.tmp[i] + c->sc.xb[i]) + c->sc.x[i];
    return 0;
}

/* ---- the layer steps: one per kind of the layer plan (gpu_plan.h) ---- */

static int host_parts(hearth_ctx *c, const hr_layer *L, int il, const hr_fwd *f, const layer_dev *ld, hr_err *e) {
    return c->m->hp.arch->parallel ? parallel_layer(c, L, il, f, ld, e) : serial_layer(c, L, il, f, ld, e);
}

static int step_host(hearth_ctx *c, const hr_layer *L, int il, const hr_fwd *f, hr_err *e) {
    const layer_dev ld = {0};
    return host_parts(c, L, il, f, &ld, e);
}

static int step_attn(hearth_ctx *c, const hr_layer *L, int il, const hr_fwd *f, hr_err *e) {
    const layer_dev ld = {.attn = true};
    return host_parts(c, L, il, f, &ld, e);
}

static int step_split_ffn(hearth_ctx *c, const hr_layer *L, int il, const hr_fwd *f, hr_err *e) {
    const layer_dev ld = {.attn = hr_hybrid_has_attn(c, il), .ffn = hr_hybrid_ffn_parts(c, il)};
    return host_parts(c, L, il, f, &ld, e);
}

/* x += attention(norm(x)); x += ffn(ffn_norm(x)), the first half and the predictor in one
 * device round trip (hybrid_run.c), whose results the FFN is handed. */
static int step_attn_pred(hearth_ctx *c, const hr_layer *L, int il, const hr_fwd *f, hr_err *e) {
    hr_ffn_dev d = hr_hybrid_ffn_parts(c, il);
    if (hr_hybrid_attn_pred(c, il, f, &d.in, e) || hr_ffn_dev_run(c, L, il, c->sc.x, c->sc.xn, f->n, &d, c->sc.tmp, e)) return -1;
    add_into(c->sc.x, c->sc.tmp, (int64_t)f->n * c->m->hp.n_embd);
    return 0;
}

/* Only enqueued: x stays on the device until a host layer (or the output) needs it. */
static int step_resident(hearth_ctx *c, const hr_layer *L, int il, const hr_fwd *f, hr_err *e) {
    (void)L;
    if (!hr_hybrid_run_layer(c, il, f, e)) return 0;
    hr_err ignored;
    hr_hybrid_fetch_x(c, f->n, &ignored); /* the next batch must not find x on the device */
    return -1;
}

/* The layer on the host (attention on the device where placed); its MoE FFN shares the
 * experts with the device (moe.c asks the plan which). */
static int step_split_moe(hearth_ctx *c, const hr_layer *L, int il, const hr_fwd *f, hr_err *e) {
    const layer_dev ld = {.attn = hr_hybrid_has_attn(c, il)};
    return host_parts(c, L, il, f, &ld, e);
}

typedef int (*layer_step)(hearth_ctx *c, const hr_layer *L, int il, const hr_fwd *f, hr_err *e);
static const layer_step steps[HR_STEP_COUNT] = {
    [HR_STEP_HOST] = step_host,           [HR_STEP_ATTN] = step_attn,           [HR_STEP_ATTN_PRED] = step_attn_pred,
    [HR_STEP_RESIDENT] = step_resident,   [HR_STEP_SPLIT_FFN] = step_split_ffn, [HR_STEP_SPLIT_MOE] = step_split_moe,
};

static int embed(hearth_ctx *c, const hr_fwd *f, hr_err *e) {
    const hearth_model *m = c->m;
    const hr_mat *E = &m->token_embd, *P = &m->pos_embd;
    for (int32_t t = 0; t < f->n; t++)
        hr_dequant_row(E->type, (const uint8_t *)E->data + (size_t)f->tokens[t] * E->row_bytes, c->sc.x + (int64_t)t * E->n_in, E->n_in);
    if (m->hp.embd_scale != 1.0f) scale_rows(c->sc.x, m->hp.embd_scale, (int64_t)f->n * E->n_in);
    if (!P->data) return 0;
    for (int32_t t = 0; t < f->n; t++) {
        const int64_t row = (int64_t)f->pos[t] + m->hp.arch->pos_offset;
        if (row >= P->n_out)
            return hr_errf(e, "position %d is beyond the model's %lld learned positions", f->pos[t],
                           (long long)(P->n_out - m->hp.arch->pos_offset));
        float *tmp = c->sc.tmp + (int64_t)t * P->n_in;
        hr_dequant_row(P->type, (const uint8_t *)P->data + (size_t)row * P->row_bytes, tmp, P->n_in);
        add_into(c->sc.x + (int64_t)t * P->n_in, tmp, P->n_in);
    }
    return 0;
}

/* Gemma's final soft-cap of logits [r0, r1) of every row, run by each chunk of the output
 * product on the logits it has just computed (32k-256k tanh per token spread over the
 * pool instead of the caller alone); element-wise, so the chunks do not change a bit. */
typedef struct softcap_job {
    float *logits;
    int64_t n_vocab;
    int32_t rows;
    float cap;
} softcap_job;

static void softcap_rows(void *arg, int64_t r0, int64_t r1) {
    const softcap_job *s = arg;
    for (int32_t t = 0; t < s->rows; t++) hr_softcap(s->logits + t * s->n_vocab + r0, r1 - r0, s->cap);
}

/* Logits of the wanted tokens: their rows of x gathered into xn, normed, projected (and
 * soft-capped). */
static int output(hearth_ctx *c, const hr_fwd *f, hr_err *e) {
    const hearth_model *m = c->m;
    const int64_t d = m->hp.n_embd;
    int32_t rows = 0;
    for (int32_t t = 0; t < f->n; t++)
        if (f->want[t]) {
            if (rows != t) memcpy(c->sc.x + rows * d, c->sc.x + t * d, sizeof(float) * (size_t)d);
            rows++;
        }
    if (!rows) return 0;
    norm_rows(c, c->sc.xn, c->sc.x, m->output_norm, m->output_norm_b, rows);
    if (f->embd) { /* embeddings: the normed rows are the result */
        memcpy(f->embd, c->sc.xn, sizeof(float) * (size_t)(rows * d));
        return 0;
    }
    const float cap = m->hp.final_softcap;
    if (hr_hybrid_has_output(c)) {
        if (hr_hybrid_logits(c, c->sc.xn, rows, f->logits, e)) return -1;
        if (cap > 0) hr_softcap(f->logits, (int64_t)rows * m->hp.n_vocab, cap);
        return 0;
    }
    softcap_job sj = {f->logits, m->hp.n_vocab, rows, cap};
    const hr_mm_epi ep = {softcap_rows, &sj};
    return hr_matmul_ep(&c->cpu, &m->output, c->sc.xn, rows, f->logits, cap > 0 ? &ep : NULL, e);
}

int hr_forward(hearth_ctx *c, const hr_fwd *f, hr_err *e) {
    const hearth_model *m = c->m;
    const hr_hparams *hp = &m->hp;
    if (embed(c, f, e)) return -1;
    for (int il = 0; il < hp->n_layer; il++) { /* one step per layer, the kind its plan names */
        const hr_step_kind k = hr_hybrid_step(c, il);
        if ((k != HR_STEP_RESIDENT && hr_hybrid_fetch_x(c, f->n, e)) || steps[k](c, &m->layers[il], il, f, e)) return -1;
    }
    if (hr_hybrid_fetch_x(c, f->n, e)) return -1;
    return f->want ? output(c, f, e) : 0;
}
