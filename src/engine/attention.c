/* Causal grouped-query attention over the KV cache, heads split across threads.
 * With an F16 cache, llama.cpp rounds q to F16 for K·q and the probabilities to
 * F16 for V·p; doing the same keeps logits close to it. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "context.h"
#include "formats/types.h"
#include "backends/cpu/attn_v.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/prof.h"
#include "backends/cpu/vmath.h"

/* A prompt's queries go in groups of GRP consecutive tokens of one sequence: their scores
 * against a head's cached rows come from one pass of the prompt tile (each value vec_dot's,
 * so a token's scores do not depend on its group), reading each K row once per group. */
enum { GRP = HR_WSUM_GRP }; /* the value sum's group (attn_v.h) */

typedef struct {
    hearth_ctx *c;
    int il;
    const hr_fwd *f;
} attn_job;

/* Token t's first visible position: a sliding-window layer sees the last n_swa positions
 * (llama.cpp's standard window: p masked when pos - p >= n_swa), the others every one. */
static int32_t first_pos(const attn_job *j, int32_t t) {
    const hr_hparams *hp = &j->c->m->hp;
    const int32_t pos = j->f->pos[t];
    return j->c->m->layers[j->il].swa && pos >= hp->n_swa ? pos - hp->n_swa + 1 : 0;
}

static int32_t kv_head(const hr_hparams *hp, int32_t h) { return h / (hp->n_head / hp->n_head_kv); }

/* Token t's raw scores s[0..n_kv) over positions p0.. of head h become its probabilities. */
static void probs(const attn_job *j, int32_t t, int32_t h, int32_t p0, float *s) {
    hearth_ctx *c = j->c;
    const hr_hparams *hp = &c->m->hp;
    const int32_t n_kv = j->f->pos[t] + 1 - p0;
    /* llama.cpp caps the raw scores, then the softmax applies its scale (1 where q was scaled). */
    if (hp->attn_softcap > 0) hr_softcap(s, n_kv, hp->attn_softcap);
    /* gpt-oss: the head's sink logit takes its share of the denominator (llama.cpp adds it
     * after the scale, unscaled). */
    const float *sinks = c->m->layers[j->il].sinks;
    if (sinks) hr_softmax_sink(s, n_kv, hp->attn_scale, sinks[h]);
    else hr_softmax(s, n_kv, hp->attn_scale);
    if (c->kv.v_elem == 2) hr_vround_f16(s, n_kv);
}

/* Tokens [t0, t0 + nt) of one sequence, head h, probabilities s[i] over positions p0[i]..:
 * their output rows. A full group that starts at one position (no sliding window between
 * them; then s[i] are n_ctx apart) reads each value row once for all of its tokens. */
static void weigh(const attn_job *j, int32_t t0, int32_t nt, int32_t h, const int32_t *p0, float *const *s) {
    hearth_ctx *c = j->c;
    const hr_hparams *hp = &c->m->hp;
    const int32_t hd = hp->head_dim;
    const int f16 = c->kv.v_elem == 2;
    const size_t vs = (size_t)hd * c->kv.v_elem, os = (size_t)hp->n_head * hd;
    float *out = c->sc.att + ((int64_t)t0 * hp->n_head + h) * hd;
    bool joint = nt == HR_WSUM_GRP;
    for (int32_t i = 1; joint && i < nt; i++) joint = p0[i] == p0[0];
    if (joint) {
        int32_t n[HR_WSUM_GRP];
        for (int32_t i = 0; i < nt; i++) n[i] = j->f->pos[t0 + i] + 1 - p0[0];
        const size_t first = hr_kv_cell(c, j->f->seq[t0], j->il, kv_head(hp, h), p0[0]);
        c->cpu.k->attn_wsum_grp(out, os, s[0], (size_t)c->n_ctx, c->kv.v_cache + first * c->kv.v_elem, vs, n, hd, f16);
        return;
    }
    for (int32_t i = 0; i < nt; i++) {
        const size_t first = hr_kv_cell(c, j->f->seq[t0 + i], j->il, kv_head(hp, h), p0[i]);
        c->cpu.k->attn_wsum(out + i * os, s[i], c->kv.v_cache + first * c->kv.v_elem, vs,
                            j->f->pos[t0 + i] + 1 - p0[i], hd, f16);
    }
}

/* Head h for tokens [t0, t0 + nt) of one sequence: scores of all of them over the rows any
 * of them sees, one pass; each token then takes its own range. s: [GRP][n_ctx]. */
static void attend(const attn_job *j, int32_t t0, int32_t nt, int32_t h, float *s, uint8_t *qp) {
    hearth_ctx *c = j->c;
    const hr_hparams *hp = &c->m->hp;
    const int32_t hd = hp->head_dim;
    const uint32_t kt = c->kv.k_elem == 2 ? HR_F16 : HR_F32;
    const size_t qs = c->sc.qprep_stride;
    int32_t p0[GRP], lo = INT32_MAX, hi = 0;
    for (int32_t i = 0; i < nt; i++) {
        const int32_t t = t0 + i;
        p0[i] = first_pos(j, t);
        lo = p0[i] < lo ? p0[i] : lo, hi = j->f->pos[t] + 1 > hi ? j->f->pos[t] + 1 : hi;
        c->cpu.k->act_prep[kt](c->sc.q + ((int64_t)t * hp->n_head + h) * hd, qp + i * qs, hd);
    }
    const size_t first = hr_kv_cell(c, j->f->seq[t0], j->il, kv_head(hp, h), lo);
    hr_rows_dot(c->cpu.k, kt, hd, c->kv.k_cache + first * c->kv.k_elem, (size_t)hd * c->kv.k_elem, hi - lo, qp, qs, nt,
                s, (size_t)c->n_ctx, qp + GRP * qs);
    float *si[GRP];
    for (int32_t i = 0; i < nt; i++) {
        si[i] = s + (size_t)i * c->n_ctx + (p0[i] - lo);
        probs(j, t0 + i, h, p0[i], si[i]);
    }
    weigh(j, t0, nt, h, p0, si);
}

/* Group g's tokens share one pass when all GRP are of one sequence; else one token each. */
static void attend_group(const attn_job *j, int32_t g, int32_t h, float *s, uint8_t *qp) {
    const int32_t t0 = g * GRP, n = j->f->n - t0 < GRP ? j->f->n - t0 : GRP;
    bool one_seq = n == GRP;
    for (int32_t i = 1; one_seq && i < n; i++) one_seq = j->f->seq[t0 + i] == j->f->seq[t0];
    if (one_seq) attend(j, t0, n, h, s, qp);
    else
        for (int32_t i = 0; i < n; i++) attend(j, t0 + i, 1, h, s, qp);
}

/* Items [i0, i1), head-major: a causal prompt's later groups see more rows, so a split by
 * token gave the last thread most of the work; by head each thread's share holds every group
 * of its heads, and a head's rows stay in cache from one group to the next. */
static void attn_range(void *arg, int64_t i0, int64_t i1, int slot) {
    const attn_job *j = arg;
    hearth_ctx *c = j->c;
    const int32_t n_grp = (j->f->n + GRP - 1) / GRP;
    float *s = c->sc.scores + (size_t)slot * GRP * c->n_ctx;
    uint8_t *qp = c->sc.qprep + (size_t)slot * 2 * GRP * c->sc.qprep_stride;
    for (int64_t i = i0; i < i1; i++) attend_group(j, (int32_t)(i % n_grp), (int32_t)(i / n_grp), s, qp);
}

/* Stores this batch's k and v rows at their cells, converting to the cache type. */
static void store_kv(hearth_ctx *c, int il, const hr_fwd *f) {
    const hr_hparams *hp = &c->m->hp;
    const int32_t hd = hp->head_dim;
    const int64_t kvd = (int64_t)hp->n_head_kv * hd;
    for (int32_t t = 0; t < f->n; t++)
        for (int32_t h = 0; h < hp->n_head_kv; h++) {
            const size_t base = hr_kv_cell(c, f->seq[t], il, h, f->pos[t]);
            const float *k = c->sc.k + t * kvd + (int64_t)h * hd, *v = c->sc.v + t * kvd + (int64_t)h * hd;
            if (c->kv.k_elem == 2) hr_vto_f16((uint16_t *)c->kv.k_cache + base, k, hd);
            else memcpy((float *)c->kv.k_cache + base, k, sizeof(float) * (size_t)hd);
            if (c->kv.v_elem == 2) hr_vto_f16((uint16_t *)c->kv.v_cache + base, v, hd);
            else memcpy((float *)c->kv.v_cache + base, v, sizeof(float) * (size_t)hd);
        }
}

/* Bytes one call moves: the new K/V rows, every cached row each token reads, q in and out. */
static uint64_t attn_bytes(const hearth_ctx *c, const hr_fwd *f) {
    const hr_hparams *hp = &c->m->hp;
    const uint64_t kvd = (uint64_t)hp->n_head_kv * (uint64_t)hp->head_dim, el = c->kv.k_elem + c->kv.v_elem;
    uint64_t rows = 0;
    for (int32_t t = 0; t < f->n; t++) rows += (uint64_t)f->pos[t] + 1;
    return (rows + (uint64_t)f->n) * kvd * el + (uint64_t)f->n * (uint64_t)hp->n_head * (uint64_t)hp->head_dim * 8;
}

void hr_attention(hearth_ctx *c, int il, const hr_fwd *f) {
    const hr_prof_mark pm = hr_prof_begin(c->cpu.prof);
    store_kv(c, il, f);
    attn_job j = {c, il, f};
    const int64_t items = (int64_t)((f->n + GRP - 1) / GRP) * c->m->hp.n_head;
    hr_pool_run_ranges(c->cpu.pool, attn_range, &j, items, 1);
    if (c->cpu.prof) hr_prof_end(c->cpu.prof, pm, HR_PROF_ATTN, 0, attn_bytes(c, f));
}
