/* The stand-in's attention: stores K and V rows in the F16 caches at (seq, layer, pos),
 * then causal grouped-query attention of each token over its own sequence, with the
 * CPU path's numerics for an F16 cache (q rounded to F16 for K.q, probabilities rounded
 * to F16 for V.p). Every cache access is checked against the arena first. */
#include <stdlib.h>
#include <string.h>
#include "backends/cpu/ops.h"
#include "formats/types.h"
#include "standin.h"
#include "standin_impl.h"

typedef struct {
    const hr_dev_attn *a;
    const float *q;
    float *out;
    const uint16_t **k_tok, **v_tok; /* (seq, layer) cache slice of each token */
    float *scores;
    uint8_t *qprep;
    size_t stride;
    const hr_kernels *k;
} attn_job;

static void attend(const attn_job *j, int32_t t, int32_t h, float *s, uint8_t *qp) {
    const hr_dev_attn *a = j->a;
    const int32_t hd = a->head_dim, kvd = a->n_head_kv * hd, kvh = h / (a->n_head / a->n_head_kv);
    const int32_t n_kv = a->pos[t] + 1;
    const uint16_t *K = j->k_tok[t] + (size_t)kvh * hd, *V = j->v_tok[t] + (size_t)kvh * hd;
    j->k->act_prep[HR_F16](j->q + ((int64_t)t * a->n_head + h) * hd, qp, hd);
    for (int32_t p = 0; p < n_kv; p++) j->k->vec_dot[HR_F16](hd, &s[p], K + (size_t)p * kvd, qp);
    hr_softmax(s, n_kv, a->scale);
    float *out = j->out + ((int64_t)t * a->n_head + h) * hd;
    memset(out, 0, sizeof(float) * (size_t)hd);
    for (int32_t p = 0; p < n_kv; p++) {
        const float w = hr_f16_to_f32(hr_f32_to_f16(s[p]));
        const uint16_t *v = V + (size_t)p * kvd;
        for (int32_t dd = 0; dd < hd; dd++) out[dd] += w * hr_f16_to_f32(v[dd]);
    }
}

static void attn_task(void *arg, int ith, int nth) {
    const attn_job *j = arg;
    const int64_t items = (int64_t)j->a->n_tok * j->a->n_head;
    const int64_t per = (items + nth - 1) / nth, i0 = per * ith, i1 = i0 + per < items ? i0 + per : items;
    float *s = j->scores + (size_t)ith * j->a->n_ctx;
    uint8_t *qp = j->qprep + (size_t)ith * j->stride;
    for (int64_t i = i0; i < i1; i++) attend(j, (int32_t)(i / j->a->n_head), (int32_t)(i % j->a->n_head), s, qp);
}

static int check_shape(const hr_dev_attn *a, hr_err *e) {
    if (a->n_tok < 1 || a->n_head < 1 || a->n_head_kv < 1 || a->n_head % a->n_head_kv || a->head_dim < 1 || a->n_ctx < 1 ||
        a->n_layer < 1 || a->layer < 0 || a->layer >= a->n_layer || !a->pos)
        return hr_errf(e, "standin: attention: bad shape (layer %d of %d, %d tokens, heads %d/%d of %d, n_ctx %d)", a->layer,
                       a->n_layer, a->n_tok, a->n_head, a->n_head_kv, a->head_dim, a->n_ctx);
    for (int32_t t = 0; t < a->n_tok; t++)
        if (a->pos[t] < 0 || a->pos[t] >= a->n_ctx || (a->seq && a->seq[t] < 0))
            return hr_errf(e, "standin: attention: token %d at position %d of sequence %d is outside the cache", t, a->pos[t],
                           a->seq ? a->seq[t] : 0);
    return 0;
}

/* Cache row (seq, layer, 0) of token t in cache base `cache`, checked up to its position. */
static const uint16_t *slice(hr_dev *d, const hr_dev_attn *a, uint64_t cache, int32_t t, const char *what, hr_err *e) {
    const uint64_t kvd = (uint64_t)a->n_head_kv * (uint64_t)a->head_dim, seq = a->seq ? (uint64_t)a->seq[t] : 0;
    const uint64_t row0 = (seq * (uint64_t)a->n_layer + (uint64_t)a->layer) * (uint64_t)a->n_ctx;
    return hr_standin_span(d, cache + row0 * kvd * 2, ((uint64_t)a->pos[t] + 1) * kvd * 2, what, e);
}

int hr_standin_attention(hr_dev *d, const hr_dev_attn *a, uint64_t Q, uint64_t K, uint64_t V, uint64_t OUT, hr_err *e) {
    if (check_shape(a, e)) return -1;
    const int64_t qd = (int64_t)a->n_head * a->head_dim, kvd = (int64_t)a->n_head_kv * a->head_dim;
    const float *q = hr_standin_span(d, Q, (uint64_t)(a->n_tok * qd) * 4, "attention Q", e);
    const float *k = q ? hr_standin_span(d, K, (uint64_t)(a->n_tok * kvd) * 4, "attention K", e) : NULL;
    const float *v = k ? hr_standin_span(d, V, (uint64_t)(a->n_tok * kvd) * 4, "attention V", e) : NULL;
    float *out = v ? hr_standin_span(d, OUT, (uint64_t)(a->n_tok * qd) * 4, "attention output", e) : NULL;
    if (!out) return -1;
    if ((Q | K | V | OUT) % 4) return hr_errf(e, "standin: attention buffers are not 4-byte aligned");
    const uint16_t **kt = malloc(sizeof(*kt) * 2 * (size_t)a->n_tok), **vt = kt + a->n_tok;
    if (!kt) return hr_errf(e, "standin: out of memory");
    int rc = 0;
    for (int32_t t = 0; t < a->n_tok && !rc; t++) {
        kt[t] = slice(d, a, a->k_cache, t, "attention K cache", e);
        vt[t] = kt[t] ? slice(d, a, a->v_cache, t, "attention V cache", e) : NULL;
        if (!vt[t]) rc = -1;
    }
    for (int32_t t = 0; t < a->n_tok && !rc; t++) { /* store this batch's rows first: later tokens see earlier ones */
        uint16_t *kr = (uint16_t *)kt[t] + (size_t)a->pos[t] * kvd, *vr = (uint16_t *)vt[t] + (size_t)a->pos[t] * kvd;
        for (int64_t i = 0; i < kvd; i++) kr[i] = hr_f32_to_f16(k[t * kvd + i]), vr[i] = hr_f32_to_f16(v[t * kvd + i]);
    }
    attn_job j = {.a = a, .q = q, .out = out, .k_tok = kt, .v_tok = vt};
    hr_cpu *cpu = NULL;
    if (!rc) rc = hr_standin_attn_scratch(d, a->n_ctx, a->head_dim, &j.scores, &j.qprep, &j.stride, &cpu, e);
    if (!rc) {
        j.k = cpu->k;
        hr_pool_run(cpu->pool, attn_task, &j);
    }
    free(kt);
    return rc;
}
