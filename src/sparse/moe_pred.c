/* Predictors inside experts (moe_pred.h): the pair collector, per-expert training with the
 * dense trainer, the keep-or-skip decision by bytes, and the file tensors. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/cpu/pool.h"
#include "engine/model.h"
#include "engine/moe.h"
#include "formats/types.h"
#include "moe_pred.h"
#include "pred_internal.h"

int hr_moe_pairs_init(hr_moe_pairs *p, const hearth_model *m, int64_t cap, uint64_t seed, hr_err *e) {
    const hr_hparams *hp = &m->hp;
    memset(p, 0, sizeof *p);
    if (cap < 1) return hr_errf(e, "no pairs to keep per expert");
    *p = (hr_moe_pairs){hp->n_layer, hp->n_expert, hp->n_embd, hp->n_ff_exp, cap, ((size_t)hp->n_ff_exp + 7) / 8, NULL, seed ? seed : 0x5eed, false};
    if (!(p->set = calloc((size_t)hp->n_layer * (size_t)hp->n_expert, sizeof *p->set))) return hr_errf(e, "out of memory");
    return 0;
}

void hr_moe_pairs_free(hr_moe_pairs *p) {
    for (size_t i = 0; p->set && i < (size_t)p->n_layer * (size_t)p->n_expert; i++) free(p->set[i].p), free(p->set[i].mask);
    free(p->set);
    memset(p, 0, sizeof *p);
}

/* Room for one more pair in s (doubling up to the cap): false when out of memory. */
static bool grow(hr_moe_pairs *p, hr_moe_pair_set *s) {
    if (s->n < s->alloc) return true;
    int64_t na = s->alloc ? 2 * s->alloc : 64;
    if (na > p->cap) na = p->cap;
    float *np = realloc(s->p, sizeof(float) * (size_t)na * (size_t)p->n_embd);
    if (np) s->p = np;
    uint8_t *nm = np ? realloc(s->mask, (size_t)na * p->mask_bytes) : NULL;
    if (nm) s->mask = nm;
    if (!np || !nm) return false;
    s->alloc = na;
    return true;
}

/* Reservoir sampling: every routing of the expert is kept with the same chance cap / seen,
 * so the pairs spread over the whole text whatever its length. */
void hr_moe_pairs_observe(void *ud, int il, int32_t x, int32_t cnt, const float *xin, const float *act) {
    hr_moe_pairs *p = ud;
    if (p->oom || il < 0 || il >= p->n_layer || x < 0 || x >= p->n_expert) return;
    hr_moe_pair_set *s = &p->set[(size_t)il * (size_t)p->n_expert + (size_t)x];
    const size_t d = (size_t)p->n_embd, ff = (size_t)p->n_ff;
    for (int32_t i = 0; i < cnt; i++) {
        int64_t slot = -1;
        s->seen++;
        if (s->n < p->cap) {
            if (!grow(p, s)) {
                p->oom = true;
                return;
            }
            slot = s->n++;
        } else {
            const uint64_t j = hr_pred_rand(&p->rng) % s->seen;
            if (j < (uint64_t)p->cap) slot = (int64_t)j;
        }
        if (slot < 0) continue;
        memcpy(s->p + (size_t)slot * d, xin + (size_t)i * d, d * sizeof(float));
        uint8_t *mk = s->mask + (size_t)slot * p->mask_bytes;
        memset(mk, 0, p->mask_bytes);
        for (size_t j = 0; j < ff; j++)
            if (act[(size_t)i * ff + j] != 0.0f) mk[j >> 3] |= (uint8_t)(1u << (j & 7));
    }
}

/* Expert x's gate rows [n_ff][n_embd], dequantized: the predictor's input is the expert's
 * input (already normalised), so the gate itself decides which neurons fire. */
static float *expert_gate(const hearth_model *m, int il, int32_t x, hr_err *e) {
    const hr_mat g = hr_moe_expert(&m->layers[il].moe.gate, x);
    float *G = malloc(sizeof(float) * (size_t)(g.n_in * g.n_out));
    if (!G) {
        hr_errf(e, "out of memory for expert %d's gate", x);
        return NULL;
    }
    for (int64_t j = 0; j < g.n_out; j++) hr_dequant_row(g.type, (const uint8_t *)g.data + (size_t)j * g.row_bytes, G + j * g.n_in, g.n_in);
    return G;
}

static double predictor_bytes(const hr_predictor *p, bool f16) { return (double)p->r * (double)(p->n_embd + p->n_ff) * (f16 ? 2 : 4); }

/* One expert: train, then keep only where predicted mode reads fewer bytes than exact. */
static int train_expert(hr_cpu *cpu, const hearth_model *m, const hr_moe_pairs *pairs, int il, int32_t x, const hr_moe_pred_opts *o,
                        hr_moe_pred *r, hr_err *e) {
    const hr_moe_pair_set *s = &pairs->set[(size_t)il * (size_t)pairs->n_expert + (size_t)x];
    const hr_mat g = hr_moe_expert(&m->layers[il].moe.gate, x);
    memset(r, 0, sizeof *r);
    r->n_pairs = s->n, r->routed = s->seen, r->gate_bytes = (double)g.row_bytes * (double)g.n_out;
    if (s->n < HR_MOE_PRED_MIN_PAIRS) {
        snprintf(r->why, sizeof r->why, "routed %llu times, below %d: too rarely to train", (unsigned long long)s->seen, HR_MOE_PRED_MIN_PAIRS);
        return 0;
    }
    float *G = expert_gate(m, il, x, e);
    if (!G) return -1;
    hr_pred_opts po = {.recall = o->recall, .max_rank = o->max_rank, .min_rank = HR_MOE_PRED_MIN_RANK, .epochs = o->epochs, .f16 = o->f16,
                       .ffn_neuron_bytes = (double)g.row_bytes, .seed = o->seed + (uint64_t)il * 1000003u + (uint64_t)x};
    const int rc = hr_predictor_train(cpu, s->p, s->mask, s->n, pairs->n_embd, pairs->n_ff, G, &po, &r->p, e);
    free(G);
    if (rc) return hr_errctx(e, "expert %d of layer %d", x, il);
    r->pred_bytes = predictor_bytes(&r->p, o->f16) + (double)r->p.pred_frac * r->gate_bytes;
    if (r->pred_bytes >= r->gate_bytes) {
        snprintf(r->why, sizeof r->why, "would read %.0f KB a token (predictor %.0f KB + %.1f%% of the gate) against exact's %.0f KB",
                 r->pred_bytes / 1024, predictor_bytes(&r->p, o->f16) / 1024, 100.0 * r->p.pred_frac, r->gate_bytes / 1024);
        hr_predictor_free(&r->p);
    }
    return 0;
}

/* The experts are trained in parallel, one per pool thread at a time, each on its own
 * single-threaded CPU: an expert's products are too small to split well, and with every
 * expert's work (seed included) its own, the predictors are the same for any thread count. */
typedef struct train_job {
    const hearth_model *m;
    const hr_moe_pairs *pairs;
    const hr_moe_pred_opts *o;
    hr_moe_pred *out;
    hr_cpu *cpus;      /* [nth] */
    hr_err *errs;      /* [nth] */
    int64_t *failed;   /* [nth] the expert whose training failed there, or -1 */
    atomic_llong next, done;
    atomic_bool stop;
} train_job;

static void train_task(void *arg, int ith, int nth) {
    train_job *j = arg;
    const int64_t total = (int64_t)j->pairs->n_layer * j->pairs->n_expert;
    (void)nth;
    while (!atomic_load(&j->stop)) {
        const int64_t at = atomic_fetch_add(&j->next, 1);
        if (at >= total) return;
        const int il = (int)(at / j->pairs->n_expert);
        const int32_t x = (int32_t)(at % j->pairs->n_expert);
        if (train_expert(&j->cpus[ith], j->m, j->pairs, il, x, j->o, &j->out[at], &j->errs[ith])) {
            j->failed[ith] = at;
            atomic_store(&j->stop, true);
            return;
        }
        const int64_t done = atomic_fetch_add(&j->done, 1) + 1;
        if (ith == 0 && j->o->progress) j->o->progress(j->o->progress_ud, "training", (double)done / (double)total); /* one caller at a time */
    }
}

int hr_moe_train_preds(hr_cpu *cpu, const hearth_model *m, const hr_moe_pairs *pairs, const hr_moe_pred_opts *o, hr_moe_pred *out,
                       hr_err *e) {
    if (pairs->oom) return hr_errf(e, "out of memory keeping the experts' calibration pairs (try fewer --tokens)");
    const int nth = hr_pool_threads(cpu->pool);
    train_job j = {m, pairs, o, out, calloc((size_t)nth, sizeof(hr_cpu)), calloc((size_t)nth, sizeof(hr_err)), malloc(sizeof(int64_t) * (size_t)nth),
                   0, 0, false};
    int rc = !j.cpus || !j.errs || !j.failed ? hr_errf(e, "out of memory") : 0, made = 0;
    for (; !rc && made < nth; made++) rc = hr_cpu_init(&j.cpus[made], 1, e);
    if (rc && made) made--; /* the failed init left nothing to free */
    for (int i = 0; !rc && i < nth; i++) j.failed[i] = -1;
    if (!rc) hr_pool_run(cpu->pool, train_task, &j);
    int64_t first = -1;
    for (int i = 0; !rc && i < nth; i++)
        if (j.failed[i] >= 0 && (first < 0 || j.failed[i] < j.failed[first])) first = i;
    if (first >= 0) rc = -1, *e = j.errs[first];
    if (!rc && o->progress) o->progress(o->progress_ud, "training", 1.0);
    for (int i = 0; i < made; i++) hr_cpu_free(&j.cpus[i]);
    free(j.cpus), free(j.errs), free(j.failed);
    return rc;
}

void hr_moe_preds_free(hr_moe_pred *p, size_t n) {
    for (size_t i = 0; p && i < n; i++) hr_predictor_free(&p[i].p);
}

/* t values of f as F16 (or the F32 themselves) in a new buffer. */
static void *stored(const float *f, int64_t n, bool f16) {
    void *b = malloc((size_t)n * (f16 ? 2 : 4));
    if (!b) return NULL;
    if (!f16) return memcpy(b, f, (size_t)n * 4);
    for (int64_t i = 0; i < n; i++) ((uint16_t *)b)[i] = hr_f32_to_f16(f[i]);
    return b;
}

int hr_moe_preds_add(gguf_writer *w, const hearth_model *m, const hr_moe_pred *preds, bool f16, void **bufs, size_t *nb, hr_err *e) {
    const int32_t ne = m->hp.n_expert;
    for (int il = 0; il < m->hp.n_layer; il++)
        for (int32_t x = 0; x < ne; x++) {
            const hr_predictor *p = &preds[(size_t)il * (size_t)ne + (size_t)x].p;
            if (!p->fc1) continue;
            const int64_t c1 = (int64_t)p->r * p->n_embd, c2 = (int64_t)p->n_ff * p->r;
            void *b1 = stored(p->fc1, c1, f16), *b2 = b1 ? stored(p->fc2, c2, f16) : NULL;
            if (b1) bufs[(*nb)++] = b1;
            if (b2) bufs[(*nb)++] = b2;
            if (!b1 || !b2) return hr_errf(e, "out of memory");
            char n1[64], n2[64];
            snprintf(n1, sizeof n1, "blk.%d.fc1_exps.%d.weight", il, x), snprintf(n2, sizeof n2, "blk.%d.fc2_exps.%d.weight", il, x);
            const uint64_t ne1[2] = {(uint64_t)p->n_embd, (uint64_t)p->r}, ne2[2] = {(uint64_t)p->r, (uint64_t)p->n_ff};
            gguf_w_tensor(w, n1, f16 ? HR_F16 : HR_F32, 2, ne1, b1, (uint64_t)c1 * (f16 ? 2 : 4));
            gguf_w_tensor(w, n2, f16 ? HR_F16 : HR_F32, 2, ne2, b2, (uint64_t)c2 * (f16 ? 2 : 4));
        }
    return 0;
}
