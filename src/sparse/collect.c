/* Activation counting and (p, active set) pair collection through the dense forward
 * pass's FFN observer hook. */
#include <stdlib.h>
#include <string.h>
#include "calibrate.h"
#include "engine/model.h"

typedef struct {
    hr_stats *stats;
    hr_pairs *pairs;
    int64_t *seen;      /* [n_layer] tokens already observed in each layer */
    int64_t stride;     /* keep the pair of every stride-th token */
} collector;

void hr_pairs_record(hr_pairs *pp, uint32_t *cnt, int64_t *seen, int64_t stride, int32_t il, int32_t n_tok, const float *p,
                     const float *act, const float *thr) {
    const int64_t ff = pp->n_ff, d = pp->n_embd;
    for (int32_t t = 0; t < n_tok; t++) {
        const float *a = act + (int64_t)t * ff;
        int64_t g = seen[il] + t, slot = g / stride;
        bool keep = g % stride == 0 && slot < pp->cap;
        uint8_t *mk = keep ? pp->mask + ((size_t)il * pp->cap + (size_t)slot) * pp->mask_bytes : NULL;
        if (mk) memset(mk, 0, pp->mask_bytes);
        for (int64_t j = 0; j < ff; j++)
            if (thr ? a[j] > *thr : a[j] != 0.0f) {
                cnt[j]++;
                if (mk) mk[j >> 3] |= (uint8_t)(1u << (j & 7));
            }
        if (keep) {
            memcpy(pp->p + ((size_t)il * pp->cap + (size_t)slot) * d, p + t * d, sizeof(float) * (size_t)d);
            if (il == 0 && slot + 1 > pp->n) pp->n = slot + 1;
        }
    }
    seen[il] += n_tok;
}

static void observe(void *ud, int32_t il, int32_t n_tok, const float *p, const float *act) {
    collector *c = ud;
    uint32_t *cnt = c->stats->counts + (size_t)il * (size_t)c->pairs->n_ff;
    hr_pairs_record(c->pairs, cnt, c->seen, c->stride, il, n_tok, p, act, NULL);
}

void hr_pairs_free(hr_pairs *p) {
    if (!p) return;
    free(p->p), free(p->mask);
    memset(p, 0, sizeof *p);
}

int hr_pairs_init(hr_pairs *p, int32_t n_layer, int32_t d, int32_t ff, int64_t cap, hr_err *e) {
    memset(p, 0, sizeof *p);
    p->n_layer = n_layer, p->n_embd = d, p->n_ff = ff, p->cap = cap;
    p->mask_bytes = ((size_t)ff + 7) / 8;
    p->p = malloc(sizeof(float) * (size_t)n_layer * (size_t)cap * (size_t)d + 1);
    p->mask = malloc((size_t)n_layer * (size_t)cap * p->mask_bytes + 1);
    if (!p->p || !p->mask) {
        hr_pairs_free(p);
        return hr_errf(e, "out of memory for %lld calibration pairs per layer (lower --tokens)", (long long)cap);
    }
    return 0;
}

int hr_calib_eval_chunks(hearth_ctx *ctx, const int32_t *tokens, int64_t n_tokens, const hr_collect_opts *o,
                         const char *what, uint64_t *n_evaluated, hr_err *e) {
    const int32_t nc = hearth_ctx_n_ctx(ctx), lead = o->bos >= 0 && nc > 1 ? 1 : 0;
    int32_t *buf = malloc(sizeof(int32_t) * (size_t)nc);
    int r = buf ? 0 : hr_errf(e, "out of memory");
    for (int64_t done = 0; done < n_tokens && !r;) {
        int32_t n = n_tokens - done < nc - lead ? (int32_t)(n_tokens - done) : nc - lead;
        if (lead) buf[0] = o->bos;
        memcpy(buf + lead, tokens + done, sizeof(int32_t) * (size_t)n);
        r = hearth_eval(ctx, buf, n + lead, 0, false, e);
        if (n_evaluated) *n_evaluated += (uint64_t)(n + lead);
        done += n;
        if (o->progress) o->progress(o->progress_ud, what, (double)done / (double)n_tokens);
    }
    free(buf);
    return r;
}

static int run_chunks(hearth_model *m, const int32_t *tokens, int64_t n_tokens, const hr_collect_opts *o, collector *col, hr_err *e) {
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = o->n_ctx, cp.n_batch = o->n_ctx, cp.n_threads = o->n_threads;
    cp.ffn_mode = HEARTH_FFN_DENSE;
    cp.kv_k = cp.kv_v = HEARTH_KV_F32; /* the F16 cache's conversions would dominate small models */
    cp.ffn_observer = observe, cp.ffn_observer_ud = col;
    hearth_ctx *ctx = hearth_ctx_new(m, &cp, e);
    if (!ctx) return -1;
    int r = hr_calib_eval_chunks(ctx, tokens, n_tokens, o, "counting", &col->stats->n_tokens, e);
    hearth_ctx_free(ctx);
    return r;
}

int hr_calib_collect(hearth_model *m, const int32_t *tokens, int64_t n_tokens, const hr_collect_opts *o,
                     hr_stats *stats, hr_pairs *pairs, hr_err *e) {
    const hr_hparams *hp = &m->hp;
    memset(stats, 0, sizeof *stats);
    memset(pairs, 0, sizeof *pairs);
    if (!hr_act_relu_family(hp->act))
        return hr_errf(e, "calibration needs a ReLU-family FFN (reglu, drelu, relu) whose inactive neurons are exactly zero; this model's FFN is %s",
                       hr_act_name(hp->act));
    if (n_tokens < 1) return hr_errf(e, "no tokens to calibrate on");
    if (o->max_pairs < 1) return hr_errf(e, "at least one calibration pair is needed (--tokens)");
    int64_t cap = o->max_pairs < n_tokens ? o->max_pairs : n_tokens;
    collector col = {stats, pairs, calloc((size_t)hp->n_layer, sizeof(int64_t)), (n_tokens + cap - 1) / cap};
    int r = !col.seen ? hr_errf(e, "out of memory") : 0;
    if (!r) r = hr_stats_init(stats, hp->n_layer, hp->n_ff, e);
    if (!r) r = hr_pairs_init(pairs, hp->n_layer, hp->n_embd, hp->n_ff, cap, e);
    if (!r) r = run_chunks(m, tokens, n_tokens, o, &col, e);
    free(col.seen);
    if (r) {
        hr_stats_free(stats);
        hr_pairs_free(pairs);
    }
    return r;
}
