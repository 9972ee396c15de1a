/* Context lifetime, KV cache allocation and the public eval entry point. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "context.h"
#include "formats/types.h"
#include "hybrid.h"
#include "moe.h"
#include "backends/cpu/prof.h"

hearth_ctx_params hearth_ctx_default_params(void) {
    return (hearth_ctx_params){.n_ctx = 0, .n_threads = 0, .n_batch = 512, .kv_k = HEARTH_KV_F16, .kv_v = HEARTH_KV_F16};
}

static void *alloc_f(hearth_ctx *c, size_t bytes) {
    c->scratch_bytes += bytes;
    return calloc(1, bytes ? bytes : 1);
}

static int alloc_scratch(hearth_ctx *c, hr_err *e) {
    const hr_hparams *hp = &c->m->hp;
    size_t nb = (size_t)c->n_batch, d = (size_t)hp->n_embd, qd = (size_t)hp->n_head * hp->head_dim;
    size_t kvd = (size_t)hp->n_head_kv * hp->head_dim, ff = (size_t)hp->n_ff, nt = (size_t)hr_pool_threads(c->cpu.pool);
    /* a prepared q row (F32 at most) or its re-laid form for the score tiles, whichever is longer */
    const size_t qx = hr_rows_dot_xbytes(c->cpu.k, HR_F16, hp->head_dim), qa = hr_act_bytes(HR_F32, hp->head_dim);
    c->sc.qprep_stride = ((qx > qa ? qx : qa) + 63) & ~(size_t)63;
    c->sc.x = alloc_f(c, nb * d * 4), c->sc.xn = alloc_f(c, nb * d * 4), c->sc.tmp = alloc_f(c, nb * d * 4);
    c->sc.xb = hp->arch->parallel ? alloc_f(c, nb * d * 4) : NULL;
    c->sc.q = alloc_f(c, nb * qd * 4), c->sc.att = alloc_f(c, nb * qd * 4);
    c->sc.k = alloc_f(c, nb * kvd * 4), c->sc.v = alloc_f(c, nb * kvd * 4);
    c->sc.g = alloc_f(c, nb * ff * 4), c->sc.u = alloc_f(c, nb * ff * 4), c->sc.h = alloc_f(c, nb * ff * 4);
    c->sc.scores = alloc_f(c, nt * 4 * (size_t)c->n_ctx * 4); /* attention.c's groups of 4 queries */
    c->sc.qprep = alloc_f(c, nt * 8 * c->sc.qprep_stride); /* 4 prepared rows, then 4 re-laid */
    c->sc.tok_pos = alloc_f(c, nb * 4), c->sc.tok_seq = alloc_f(c, nb * 4), c->sc.tok_want = alloc_f(c, nb);
    if (!c->sc.tok_pos || !c->sc.tok_seq || !c->sc.tok_want) return hr_errf(e, "out of memory allocating token arrays");
    if (!c->sc.x || !c->sc.xn || !c->sc.tmp || (hp->arch->parallel && !c->sc.xb) || !c->sc.q || !c->sc.att || !c->sc.k || !c->sc.v || !c->sc.g || !c->sc.u || !c->sc.h || !c->sc.scores || !c->sc.qprep)
        return hr_errf(e, "out of memory allocating %llu bytes of scratch", (unsigned long long)c->scratch_bytes);
    return 0;
}

static int64_t max_pred_rank(const hearth_model *m) {
    int64_t r = 1;
    for (int il = 0; il < m->hp.n_layer; il++)
        if (m->layers[il].ffn.fc1.n_out > r) r = m->layers[il].ffn.fc1.n_out;
    return r;
}

static int alloc_ffn(hearth_ctx *c, hr_err *e) {
    const hr_hparams *hp = &c->m->hp;
    size_t nb = (size_t)c->n_batch, ff = (size_t)hp->n_ff;
    c->ffn.a = alloc_f(c, nb * ff * 4), c->ffn.s = alloc_f(c, nb * ff * (size_t)hr_model_pred_blocks(c->m) * 4);
    c->ffn.ph = alloc_f(c, nb * (size_t)max_pred_rank(c->m) * 4);
    c->ffn.idx = alloc_f(c, ff * 4), c->ffn.all = alloc_f(c, ff * 4), c->ffn.mask = alloc_f(c, nb * ff);
    c->ffn.stats = alloc_f(c, sizeof(hearth_ffn_stats) * (size_t)hp->n_layer);
    if (!c->ffn.a || !c->ffn.s || !c->ffn.ph || !c->ffn.idx || !c->ffn.all || !c->ffn.mask || !c->ffn.stats)
        return hr_errf(e, "out of memory allocating FFN buffers");
    for (size_t j = 0; j < ff; j++) c->ffn.all[j] = (int32_t)j;
    return 0;
}

static int resolve_ffn_mode(const hearth_model *m, hearth_ffn_mode want, hearth_ffn_mode *out, hr_err *e) {
    bool preds = hearth_model_has_predictors(m) || hr_moe_has_predictors(m), relu_family = hr_act_relu_family(m->hp.act);
    if (want == HEARTH_FFN_AUTO) want = preds ? HEARTH_FFN_PREDICTED : m->ffn_thr && !m->hp.n_expert && m->hp.has_gate ? HEARTH_FFN_THRESHOLD : HEARTH_FFN_DENSE;
    if (want == HEARTH_FFN_THRESHOLD && hr_ffn_threshold_check(m, e)) return -1;
    /* Inside experts: exact for ReLU-family experts, predicted where calibrate wrote expert predictors (moe.c). */
    if (m->hp.n_expert && want == HEARTH_FFN_EXACT && !relu_family)
        return hr_errf(e, "FFN mode 'exact' needs ReLU-family experts (reglu, drelu); this mixture-of-experts model's (%d experts) are %s: use dense",
                       m->hp.n_expert, hr_act_name(m->hp.act));
    if (m->hp.n_expert && want == HEARTH_FFN_PREDICTED && !preds)
        return hr_errf(e, "FFN mode 'predicted' needs expert predictors (blk.N.fc1_exps.E/fc2_exps.E, hearth calibrate writes them) and this mixture-of-experts model (%d experts) has none; use dense or exact",
                       m->hp.n_expert);
    if (want == HEARTH_FFN_PREDICTED && !preds)
        return hr_errf(e, "FFN mode 'predicted' needs predictors (blk.N.fc1/fc2) and this model has none; use dense or exact");
    if (want == HEARTH_FFN_EXACT && !relu_family)
        return hr_errf(e, "FFN mode 'exact' needs a ReLU-family FFN (reglu, drelu, relu); this model's is %s", hr_act_name(m->hp.act));
    if (want < HEARTH_FFN_AUTO || want > HEARTH_FFN_THRESHOLD) return hr_errf(e, "unknown FFN mode %d", (int)want);
    *out = want;
    return 0;
}

int hr_ctx_shape_resolve(const hearth_model *m, const hearth_ctx_params *d, hr_ctx_shape *s, hr_err *e) {
    if (d->n_ctx < 0 || d->n_threads < 0 || d->n_batch < 0 || d->n_threads > 512 || d->n_seq < 0 || d->n_seq > 4096)
        return hr_errf(e, "bad context parameters (n_ctx %d, threads %d, batch %d, sequences %d)", d->n_ctx, d->n_threads,
                       d->n_batch, d->n_seq);
    s->n_ctx = d->n_ctx ? d->n_ctx : (m->hp.n_ctx_train < 4096 ? m->hp.n_ctx_train : 4096);
    s->n_batch = d->n_batch ? d->n_batch : 512;
    if (s->n_batch > s->n_ctx) s->n_batch = s->n_ctx;
    s->n_seq = d->n_seq ? d->n_seq : 1;
    return resolve_ffn_mode(m, d->ffn_mode, &s->ffn_mode, e);
}

/* Host cache layers: every layer whose attention the device does not run (the device
 * keeps those layers' caches itself), so the hybrid plan must be known by now. */
static int map_kv_layers(hearth_ctx *c, hr_err *e) {
    const int32_t nl = c->m->hp.n_layer;
    c->kv.layer = malloc(sizeof(int32_t) * (size_t)(nl ? nl : 1));
    if (!c->kv.layer) return hr_errf(e, "out of memory");
    c->kv.n_layer = 0;
    for (int il = 0; il < nl; il++) c->kv.layer[il] = hr_hybrid_has_attn(c, il) ? -1 : c->kv.n_layer++;
    return 0;
}

static int alloc_kv(hearth_ctx *c, hr_err *e) {
    const hr_hparams *hp = &c->m->hp;
    if (map_kv_layers(c, e)) return -1;
    size_t cells = (size_t)c->n_seq * (size_t)c->kv.n_layer * (size_t)c->n_ctx * (size_t)hp->n_head_kv * (size_t)hp->head_dim;
    c->kv.k_elem = c->kv.k_type == HEARTH_KV_F32 ? 4 : 2;
    c->kv.v_elem = c->kv.v_type == HEARTH_KV_F32 ? 4 : 2;
    c->kv.bytes = cells * (c->kv.k_elem + c->kv.v_elem);
    if (!cells) return 0; /* every layer's cache is on the device */
    c->kv.k_cache = calloc(cells, c->kv.k_elem);
    c->kv.v_cache = calloc(cells, c->kv.v_elem);
    if (!c->kv.k_cache || !c->kv.v_cache) return hr_errf(e, "out of memory allocating a %llu-byte KV cache", (unsigned long long)c->kv.bytes);
    return 0;
}

hearth_ctx *hearth_ctx_new(hearth_model *m, const hearth_ctx_params *p, hr_err *e) {
    hearth_ctx_params d = p ? *p : hearth_ctx_default_params();
    hr_ctx_shape sh;
    if (hr_ctx_shape_resolve(m, &d, &sh, e)) return NULL;
    hearth_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        hr_errf(e, "out of memory");
        return NULL;
    }
    c->m = m;
    c->n_ctx = sh.n_ctx, c->n_batch = sh.n_batch, c->n_seq = sh.n_seq, c->ffn.mode = sh.ffn_mode;
    c->kv.k_type = d.kv_k, c->kv.v_type = d.kv_v;
    int nt = d.n_threads ? d.n_threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (nt < 1) nt = 1;
    c->ffn.stats_on = d.ffn_stats;
    c->ffn.observer = d.ffn_observer, c->ffn.observer_ud = d.ffn_observer_ud; /* calibration hook */
    /* the device first: the host KV cache leaves out the layers whose attention it runs */
    if (hr_cpu_init(&c->cpu, nt, e) || hr_hybrid_init(c, &d, e) || alloc_kv(c, e) || alloc_scratch(c, e) ||
        alloc_ffn(c, e) || hr_moe_ctx_init(c, e) || hr_sparse_reserve(&c->sparse_ws, &c->cpu, c->n_batch, m->hp.n_embd, e)) {
        hearth_ctx_free(c);
        return NULL;
    }
    return c;
}

void hearth_ctx_free(hearth_ctx *c) {
    if (!c) return;
    hr_hybrid_free(c->hy);
    hr_moe_ctx_free(c);
    hr_cpu_free(&c->cpu);
    hr_sparse_ws_free(&c->sparse_ws);
    free(c->kv.k_cache), free(c->kv.v_cache), free(c->kv.layer);
    free(c->sc.x), free(c->sc.xn), free(c->sc.xb), free(c->sc.tmp), free(c->sc.q), free(c->sc.att), free(c->sc.k), free(c->sc.v);
    free(c->sc.g), free(c->sc.u), free(c->sc.h), free(c->sc.scores), free(c->sc.qprep), free(c->logits), free(c->embd);
    free(c->sc.tok_pos), free(c->sc.tok_seq), free(c->sc.tok_want);
    free(c->ffn.a), free(c->ffn.s), free(c->ffn.ph), free(c->ffn.idx), free(c->ffn.all), free(c->ffn.mask), free(c->ffn.stats);
    free(c);
}

int32_t hearth_ctx_n_ctx(const hearth_ctx *c) { return c->n_ctx; }
const char *hearth_ctx_cpu_kernels(const hearth_ctx *c) { return c->cpu.k->name; }
hearth_ffn_mode hearth_ctx_ffn_mode(const hearth_ctx *c) { return c->ffn.mode; }

const char *hearth_ffn_mode_name(hearth_ffn_mode m) {
    static const char *const names[] = {"auto", "dense", "exact", "predicted", "threshold"};
    return m >= HEARTH_FFN_AUTO && m <= HEARTH_FFN_THRESHOLD ? names[m] : "unknown";
}

int hearth_ctx_ffn_stats(const hearth_ctx *c, int32_t il, hearth_ffn_stats *out) {
    if (il < 0 || il >= c->m->hp.n_layer) return -1;
    *out = c->ffn.stats[il];
    return 0;
}
uint64_t hearth_ctx_kv_bytes(const hearth_ctx *c) { return c->kv.bytes; }
uint64_t hearth_ctx_scratch_bytes(const hearth_ctx *c) {
    return c->scratch_bytes + (uint64_t)c->logits_cap * 4 + c->cpu.scratch_bytes;
}

static int ensure_logits(hearth_ctx *c, int64_t rows, hr_err *e) {
    int64_t need = rows * c->m->hp.n_vocab;
    if (need <= c->logits_cap) return 0;
    float *l = realloc(c->logits, (size_t)need * sizeof(float));
    if (!l) return hr_errf(e, "out of memory for %lld logits", (long long)need);
    c->logits = l;
    c->logits_cap = need;
    return 0;
}

/* Rows for the wanted tokens of the next eval: logits, or hidden states in embeddings mode. */
static int ensure_out(hearth_ctx *c, int64_t rows, hr_err *e) {
    c->n_logits = c->n_embd_rows = 0;
    if (!c->embd_mode) {
        if (ensure_logits(c, rows, e)) return -1;
        c->n_logits = rows;
        return 0;
    }
    int64_t need = rows * c->m->hp.n_embd;
    if (need > c->embd_cap) {
        float *p = realloc(c->embd, (size_t)need * sizeof(float));
        if (!p) return hr_errf(e, "out of memory for %lld hidden states", (long long)rows);
        c->embd = p, c->embd_cap = need;
    }
    c->n_embd_rows = rows;
    return 0;
}

int hearth_ctx_set_embeddings(hearth_ctx *c, bool on) {
    c->embd_mode = on;
    return 0;
}

const float *hearth_embeddings(const hearth_ctx *c, int32_t i) {
    if (i < 0) i = (int32_t)c->n_embd_rows - 1;
    if (i < 0 || i >= c->n_embd_rows) return NULL;
    return c->embd + (int64_t)i * c->m->hp.n_embd;
}

/* One forward call over tokens[0..n) whose positions, sequences and logit requests are in
 * c->sc.tok_pos / tok_seq / tok_want; the wanted logits (hidden states in embeddings mode) go
 * to rows *row.. of c->logits (c->embd). */
static int forward_chunk(hearth_ctx *c, const int32_t *tokens, int32_t n, int64_t *row, hr_err *e) {
    int32_t want = 0;
    for (int32_t t = 0; t < n; t++) want += c->sc.tok_want[t];
    hr_fwd f = {.tokens = tokens, .pos = c->sc.tok_pos, .seq = c->sc.tok_seq, .n = n,
                .want = want ? c->sc.tok_want : NULL,
                .logits = want && !c->embd_mode ? c->logits + *row * c->m->hp.n_vocab : NULL,
                .embd = want && c->embd_mode ? c->embd + *row * c->m->hp.n_embd : NULL};
    *row += want;
    const hr_prof_mark pm = hr_prof_begin(c->cpu.prof);
    const int r = hr_forward(c, &f, e);
    hr_prof_forward(c->cpu.prof, pm, n);
    return r;
}

static int check_token(const hearth_ctx *c, int32_t tok, int32_t i, hr_err *e) {
    if (tok >= 0 && tok < c->m->hp.n_vocab) return 0;
    return hr_errf(e, "token id %d at index %d is outside the vocabulary [0, %d)", tok, i, c->m->hp.n_vocab);
}

static int check_batch(const hearth_ctx *c, const hearth_batch *b, int64_t *n_want, hr_err *e) {
    if (!b || b->n <= 0) return hr_errf(e, "nothing to evaluate (%d tokens)", b ? b->n : 0);
    if (!b->tokens || !b->pos) return hr_errf(e, "batch without tokens or positions");
    *n_want = 0;
    for (int32_t i = 0; i < b->n; i++) {
        const int32_t s = b->seq ? b->seq[i] : 0;
        if (check_token(c, b->tokens[i], i, e)) return -1;
        if (b->pos[i] < 0 || b->pos[i] >= c->n_ctx)
            return hr_errf(e, "position %d at index %d does not fit in the context of %d tokens", b->pos[i], i, c->n_ctx);
        if (s < 0 || s >= c->n_seq)
            return hr_errf(e, "sequence %d at index %d is outside [0, %d)", s, i, c->n_seq);
        *n_want += b->logits && b->logits[i];
    }
    return 0;
}

int hearth_eval_batch(hearth_ctx *c, const hearth_batch *b, hr_err *e) {
    int64_t n_want = 0, row = 0;
    if (check_batch(c, b, &n_want, e) || ensure_out(c, n_want, e)) return -1;
    for (int32_t done = 0; done < b->n;) {
        const int32_t chunk = b->n - done < c->n_batch ? b->n - done : c->n_batch;
        for (int32_t t = 0; t < chunk; t++) {
            c->sc.tok_pos[t] = b->pos[done + t];
            c->sc.tok_seq[t] = b->seq ? b->seq[done + t] : 0;
            c->sc.tok_want[t] = b->logits && b->logits[done + t];
        }
        if (forward_chunk(c, b->tokens + done, chunk, &row, e)) return -1;
        done += chunk;
    }
    return 0;
}

int hearth_eval(hearth_ctx *c, const int32_t *tokens, int32_t n, int32_t pos, bool all_logits, hr_err *e) {
    if (n <= 0) return hr_errf(e, "nothing to evaluate (%d tokens)", n);
    if (pos < 0 || (int64_t)pos + n > c->n_ctx)
        return hr_errf(e, "%d tokens at position %d do not fit in the context of %d tokens", n, pos, c->n_ctx);
    for (int32_t i = 0; i < n; i++)
        if (check_token(c, tokens[i], i, e)) return -1;
    if (ensure_out(c, all_logits ? n : 1, e)) return -1;
    int64_t row = 0;
    for (int32_t done = 0; done < n;) {
        const int32_t chunk = n - done < c->n_batch ? n - done : c->n_batch;
        for (int32_t t = 0; t < chunk; t++) {
            c->sc.tok_pos[t] = pos + done + t, c->sc.tok_seq[t] = 0;
            c->sc.tok_want[t] = all_logits || done + t == n - 1;
        }
        if (forward_chunk(c, tokens + done, chunk, &row, e)) return -1;
        done += chunk;
    }
    return 0;
}

const float *hearth_logits(const hearth_ctx *c, int32_t i) {
    if (i < 0) i = (int32_t)c->n_logits - 1;
    if (i < 0 || i >= c->n_logits) return NULL;
    return c->logits + (int64_t)i * c->m->hp.n_vocab;
}

int32_t hearth_ctx_n_seq(const hearth_ctx *c) { return c->n_seq; }
