/* Per-layer allocation of threshold sparsity (TEAL's greedy search, applied across layers):
 * layers differ in how much skipping their small activations hurts, so at one average
 * sparsity the model does better when sensitive layers skip less and robust ones more. The
 * measure is the model's own output: mean KL(dense || thresholded) of the next-token
 * distributions over a prefix of the calibration text, so errors are weighed by what they
 * do to the logits after every later layer, not by a layer's local change. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "calibrate.h"
#include "engine/model.h"
#include "thr_internal.h"

#define DEFAULT_EVAL_TOKENS 512
#define DEFAULT_STEP 0.05

typedef struct {
    hearth_ctx *ctx;
    const int32_t *tokens;
    int64_t n_tokens;  /* the scored prefix */
    int32_t bos, n_vocab;
    float *ref;        /* [positions][n_vocab]: dense log-probabilities */
    double *lp;        /* [n_vocab] scratch */
    int64_t n_pos;
} kl_eval;

/* log-softmax of z into out (double: the KL of nearby distributions is a small difference). */
static void log_softmax(const float *z, int32_t n, double *out) {
    double mx = z[0], sum = 0;
    for (int32_t i = 1; i < n; i++) mx = z[i] > mx ? z[i] : mx;
    for (int32_t i = 0; i < n; i++) sum += exp((double)z[i] - mx);
    const double lse = mx + log(sum);
    for (int32_t i = 0; i < n; i++) out[i] = (double)z[i] - lse;
}

/* One position: store the dense log-probabilities (ref mode) or return KL(ref || these). */
static double score_pos(kl_eval *k, const float *z, int64_t pos, bool ref) {
    log_softmax(z, k->n_vocab, k->lp);
    float *r = k->ref + (size_t)pos * (size_t)k->n_vocab;
    if (ref) {
        for (int32_t i = 0; i < k->n_vocab; i++) r[i] = (float)k->lp[i];
        return 0;
    }
    double kl = 0;
    for (int32_t i = 0; i < k->n_vocab; i++) kl += exp((double)r[i]) * ((double)r[i] - k->lp[i]);
    return kl;
}

/* Evaluates the scored prefix in chunks of the context's size (each from an empty cache,
 * BOS first, as the histogram pass) and gives the mean KL over every position. */
static int eval_kl(kl_eval *k, bool ref, double *kl, hr_err *e) {
    const int32_t nc = hearth_ctx_n_ctx(k->ctx), lead = k->bos >= 0 && nc > 1 ? 1 : 0;
    int32_t *buf = malloc(sizeof(int32_t) * (size_t)nc);
    if (!buf) return hr_errf(e, "out of memory");
    double sum = 0;
    int64_t pos = 0;
    int r = 0;
    for (int64_t done = 0; done < k->n_tokens && !r;) {
        int32_t n = k->n_tokens - done < nc - lead ? (int32_t)(k->n_tokens - done) : nc - lead;
        if (lead) buf[0] = k->bos;
        memcpy(buf + lead, k->tokens + done, sizeof(int32_t) * (size_t)n);
        r = hearth_eval(k->ctx, buf, n + lead, 0, true, e);
        for (int32_t i = 0; !r && i < n + lead; i++) sum += score_pos(k, hearth_logits(k->ctx, i), pos++, ref);
        done += n;
    }
    free(buf);
    k->n_pos = pos;
    *kl = pos ? sum / (double)pos : 0;
    return r;
}

/* The candidate to try or take next: the feasible layer with the smallest known marginal
 * (unmeasured ones first, as -inf); -1 when every layer is at its cap. */
static int32_t next_layer(const int32_t *lev, const double *delta, int32_t nl, double d) {
    int32_t best = -1;
    for (int32_t l = 0; l < nl; l++)
        if ((lev[l] + 1) * d < 1 - 1e-9 && (best < 0 || delta[l] < delta[best])) best = l; /* never skip all */
    return best;
}

/* Greedy over integer step counts per layer, with lazy evaluation: a layer's marginal KL
 * (the increase its next step causes) is remeasured only when it is the smallest known, and
 * taken only when measured at the current configuration. The stale values stand in as lower
 * bounds; the result is the full greedy's whenever raising a layer never lowers another's
 * marginal (errors compound rather than cancel), at about one evaluation per step instead of
 * n_layer. thr is the array the FFN reads. */
static int greedy(kl_eval *k, const uint64_t *hist, int32_t nl, double target, hr_thr_alloc *a, float *thr,
                  const hr_collect_opts *o, hr_err *e) {
    const size_t nb = hr_thr_n_bins();
    const double step0 = a->step > 0 ? a->step : DEFAULT_STEP;
    /* the step is adjusted so that the steps sum to exactly nl * target */
    const long n_steps = lround(nl * target / step0);
    const double d = n_steps ? nl * target / (double)n_steps : 0;
    int32_t *lev = calloc((size_t)nl, sizeof *lev);
    long *at = malloc(sizeof(long) * (size_t)nl); /* step at which delta[l] was measured */
    double *delta = malloc(sizeof(double) * (size_t)nl), cur = 0; /* cur: KL of the current configuration */
    int r = lev && at && delta ? 0 : hr_errf(e, "out of memory");
    for (int32_t l = 0; !r && l < nl; l++) thr[l] = 0, at[l] = -1, delta[l] = -INFINITY;
    for (long s = 0; s < n_steps && !r;) {
        const int32_t l = next_layer(lev, delta, nl, d);
        if (l < 0) {
            r = hr_errf(e, "target sparsity %g cannot be allocated in steps of %g with every layer below 1; use a smaller --allocate-step",
                        target, d);
            break;
        }
        if (at[l] == s) { /* fresh: take it */
            cur += delta[l], lev[l]++, s++;
            thr[l] = hr_thr_pick(hist + (size_t)l * nb, lev[l] * d);
            if (o->progress) o->progress(o->progress_ud, "allocating", (double)s / (double)n_steps);
            continue;
        }
        const float keep = thr[l];
        double kl;
        thr[l] = hr_thr_pick(hist + (size_t)l * nb, (lev[l] + 1) * d);
        r = eval_kl(k, false, &kl, e);
        thr[l] = keep, a->n_evals++;
        delta[l] = kl - cur, at[l] = s;
    }
    for (int32_t l = 0; !r && l < nl; l++) a->share[l] = (float)(lev[l] * d);
    a->kl_alloc = cur;
    free(lev), free(at), free(delta);
    return r;
}

static int search(hearth_model *m, const int32_t *tokens, int64_t n_tokens, const hr_collect_opts *o, double target,
                  const uint64_t *hist, hr_thr_alloc *a, float *thr, hr_err *e) {
    const int32_t nl = m->hp.n_layer, ne = a->eval_tokens > 0 ? a->eval_tokens : DEFAULT_EVAL_TOKENS;
    const size_t nb = hr_thr_n_bins();
    kl_eval k = {NULL, tokens, n_tokens < ne ? n_tokens : ne, o->bos, m->hp.n_vocab, NULL, NULL, 0};
    const int32_t lead = o->bos >= 0 ? 1 : 0;
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = (int32_t)(k.n_tokens + lead < o->n_ctx ? k.n_tokens + lead : o->n_ctx), cp.n_batch = cp.n_ctx;
    cp.n_threads = o->n_threads, cp.gpu = HEARTH_GPU_OFF, cp.kv_k = cp.kv_v = HEARTH_KV_F32;
    cp.ffn_mode = HEARTH_FFN_THRESHOLD;
    for (int32_t l = 0; l < nl; l++) thr[l] = 0; /* threshold 0 first: the dense reference */
    k.ctx = hearth_ctx_new(m, &cp, e);
    int r = k.ctx ? 0 : -1;
    /* positions eval_kl visits: the prefix, plus one BOS per chunk of the context's size */
    const int64_t nc = k.ctx ? hearth_ctx_n_ctx(k.ctx) : 2, chunk = nc - (lead && nc > 1 ? 1 : 0);
    const int64_t n_pos = k.n_tokens + (lead && nc > 1 ? (k.n_tokens + chunk - 1) / chunk : 0);
    k.ref = malloc(sizeof(float) * (size_t)n_pos * (size_t)k.n_vocab);
    k.lp = malloc(sizeof(double) * (size_t)k.n_vocab);
    float *uni = malloc(sizeof(float) * (size_t)nl);
    if (!r && !(k.ref && k.lp && uni)) r = hr_errf(e, "out of memory");
    if (!r) r = eval_kl(&k, true, &a->kl_uniform, e);
    for (int32_t l = 0; !r && l < nl; l++) thr[l] = uni[l] = hr_thr_pick(hist + (size_t)l * nb, target);
    if (!r) r = eval_kl(&k, false, &a->kl_uniform, e);
    if (!r) r = greedy(&k, hist, nl, target, a, thr, o, e);
    a->n_scored = (int32_t)k.n_pos, a->kept_uniform = !r && a->kl_uniform < a->kl_alloc;
    for (int32_t l = 0; a->kept_uniform && l < nl; l++) thr[l] = uni[l], a->share[l] = (float)target;
    if (a->kept_uniform) a->kl_alloc = a->kl_uniform;
    hearth_ctx_free(k.ctx);
    free(k.ref), free(k.lp), free(uni);
    return r;
}

int hr_calib_thresholds_alloc(hearth_model *m, const int32_t *tokens, int64_t n_tokens, const hr_collect_opts *o,
                              double target, hr_thr_alloc *a, float *thr, hr_err *e) {
    uint64_t *hist;
    a->kl_uniform = a->kl_alloc = 0, a->n_scored = 0, a->n_evals = 0, a->kept_uniform = false;
    if (!(a->step >= 0 && a->step < 1)) return hr_errf(e, "allocation step %g is outside (0, 1)", a->step);
    if (hr_thr_histograms(m, tokens, n_tokens, o, target, &hist, e)) return -1;
    /* The FFN reads the model's thresholds at every evaluation, so the search moves them in
     * place (one context, no reloads) and puts the model's own back afterwards. */
    float *own = m->ffn_thr;
    m->ffn_thr = thr;
    int r = search(m, tokens, n_tokens, o, target, hist, a, thr, e);
    m->ffn_thr = own;
    free(hist);
    return r;
}
