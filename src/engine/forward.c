/* The dense forward pass of LLaMA-family models for a batch of tokens. */
#include <string.h>
#include "context.h"
#include "formats/types.h"
#include "ffn.h"
#include "ops.h"

static void add_into(float *x, const float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] += y[i];
}

static int attention_block(hearth_ctx *c, const hr_layer *L, int il, int32_t n, int32_t pos, hr_err *e) {
    const hr_hparams *hp = &c->m->hp;
    const int64_t d = hp->n_embd, qd = (int64_t)hp->n_head * hp->head_dim, kvd = (int64_t)hp->n_head_kv * hp->head_dim;
    for (int32_t t = 0; t < n; t++) hr_rmsnorm(c->xn + t * d, c->x + t * d, L->attn_norm, d, hp->rms_eps);
    if (hr_matmul(&c->cpu, &L->wq, c->xn, n, c->q, e) || hr_matmul(&c->cpu, &L->wk, c->xn, n, c->k, e) ||
        hr_matmul(&c->cpu, &L->wv, c->xn, n, c->v, e))
        return -1;
    if (L->use_rope)
        for (int32_t t = 0; t < n; t++) {
            hr_rope(c->q + t * qd, hp->n_head, hp->head_dim, hp->n_rot, pos + t, hp->rope_base, hp->rope_freq_scale, hp->rope_neox);
            hr_rope(c->k + t * kvd, hp->n_head_kv, hp->head_dim, hp->n_rot, pos + t, hp->rope_base, hp->rope_freq_scale, hp->rope_neox);
        }
    hr_attention(c, il, n, pos);
    if (hr_matmul(&c->cpu, &L->wo, c->att, n, c->tmp, e)) return -1;
    add_into(c->x, c->tmp, n * d);
    return 0;
}

static int ffn_block(hearth_ctx *c, const hr_layer *L, int il, int32_t n, hr_err *e) {
    const hr_hparams *hp = &c->m->hp;
    const int64_t d = hp->n_embd;
    for (int32_t t = 0; t < n; t++) hr_rmsnorm(c->xn + t * d, c->x + t * d, L->ffn_norm, d, hp->rms_eps);
    if (hr_ffn(c, L, il, c->x, c->xn, n, c->tmp, e)) return -1;
    add_into(c->x, c->tmp, n * d);
    return 0;
}

static void embed(hearth_ctx *c, const int32_t *tokens, int32_t n) {
    const hr_mat *E = &c->m->token_embd;
    for (int32_t t = 0; t < n; t++)
        hr_dequant_row(E->type, (const uint8_t *)E->data + (size_t)tokens[t] * E->row_bytes, c->x + (int64_t)t * E->n_in, E->n_in);
}

int hr_forward(hearth_ctx *c, const int32_t *tokens, int32_t n, int32_t pos, float *logits, bool all, hr_err *e) {
    const hearth_model *m = c->m;
    const int64_t d = m->hp.n_embd;
    embed(c, tokens, n);
    for (int il = 0; il < m->hp.n_layer; il++) {
        const hr_layer *L = &m->layers[il];
        if (attention_block(c, L, il, n, pos, e) || ffn_block(c, L, il, n, e)) return -1;
    }
    if (!logits) return 0;
    const int32_t first = all ? 0 : n - 1, rows = n - first;
    for (int32_t t = 0; t < rows; t++) hr_rmsnorm(c->xn + t * d, c->x + (first + t) * d, m->output_norm, d, m->hp.rms_eps);
    return hr_matmul(&c->cpu, &m->output, c->xn, rows, logits, e);
}
