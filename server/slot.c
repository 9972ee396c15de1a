/* Per-slot generation: sample, log-probabilities, detokenize, hold back stop texts. */
#include "slot.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "grammar/grammar.h"

void hr_slot_init(hr_slot *sl, const hearth_model *m) {
    memset(sl, 0, sizeof *sl);
    sl->m = m;
    sl->n_vocab = hearth_model_get_info(m)->n_vocab;
    sl->row = -1;
}

int hr_slot_start(hr_slot *sl, hr_job *j, hr_err *e) {
    if (j->grammar) {
        if (!sl->masked && !(sl->masked = malloc((size_t)sl->n_vocab * sizeof *sl->masked))) return hr_errf(e, "out of memory");
        if (!(sl->gs = hr_grammar_sampler_new(j->grammar, hearth_model_tokenizer(sl->m), e))) return -1;
    }
    if (!(sl->smp = hr_sampler_new(&j->sp, sl->n_vocab, e))) {
        if (sl->gs) hr_grammar_sampler_free(sl->gs);
        sl->gs = NULL;
        return -1;
    }
    for (int32_t i = 0; i < j->n_prompt; i++) hr_sampler_accept(sl->smp, j->prompt[i]);
    sl->job = j;
    sl->n_fed = sl->n_past = sl->n_gen = 0;
    sl->next_tok = -1, sl->row = -1;
    memset(&sl->dt, 0, sizeof sl->dt);
    sl->st.stops = j->stops, sl->st.n_stops = j->n_stops, sl->st.len = 0;
    sl->n_lps = 0;
    return 0;
}

/* log-softmax of the raw logits: the model's own distribution, before sampling settings. */
static void logprobs(const float *lg, int32_t n_vocab, int32_t tok, int32_t n_top, hr_tok_lp *out) {
    float mx = lg[0];
    for (int32_t i = 1; i < n_vocab; i++) mx = lg[i] > mx ? lg[i] : mx;
    double sum = 0;
    for (int32_t i = 0; i < n_vocab; i++) sum += exp((double)lg[i] - mx);
    float lse = mx + (float)log(sum);
    out->id = tok, out->lp = lg[tok] - lse, out->n_top = 0;
    if (n_top > n_vocab) n_top = n_vocab;
    if (n_top <= 0) return;
    /* Insertion into a short sorted list: n_top <= 20. */
    for (int32_t i = 0; i < n_vocab; i++) {
        int32_t k = out->n_top;
        if (k == n_top && lg[i] <= lg[out->top_id[k - 1]]) continue;
        if (k == n_top) k--;
        while (k > 0 && lg[out->top_id[k - 1]] < lg[i]) {
            out->top_id[k] = out->top_id[k - 1];
            k--;
        }
        out->top_id[k] = i;
        if (out->n_top < n_top) out->n_top++;
    }
    for (int32_t k = 0; k < out->n_top; k++) out->top_lp[k] = lg[out->top_id[k]] - lse;
}

static int keep_lp(hr_slot *sl, const float *lg, int32_t tok) {
    if (sl->n_lps == sl->cap_lps) {
        int32_t cap = sl->cap_lps ? 2 * sl->cap_lps : 8;
        hr_tok_lp *p = realloc(sl->lps, (size_t)cap * sizeof *p);
        if (!p) return -1;
        sl->lps = p, sl->cap_lps = cap;
    }
    logprobs(lg, sl->n_vocab, tok, sl->job->n_logprobs, &sl->lps[sl->n_lps++]);
    return 0;
}

/* Sends buf[0..n) with the pending log-probabilities. */
static int emit(hr_slot *sl, size_t n) {
    if (!n && !sl->n_lps) return 0;
    if (hr_job_push(sl->job, sl->st.buf ? sl->st.buf : "", n, sl->lps, sl->n_lps)) return -1;
    hr_stop_consume(&sl->st, n);
    sl->n_lps = 0;
    return 0;
}

/* Feeds text through the stop matcher and sends what is safe. *hit: a stop was found.
 * final: generation ends here, so nothing needs holding back. */
static int feed(hr_slot *sl, const char *text, size_t n, bool final, bool *hit) {
    size_t ok;
    if (hr_stop_feed(&sl->st, text, n, &ok, hit)) return -1;
    if (final && !*hit) ok = sl->st.len;
    return ok || final ? emit(sl, ok) : 0;
}

/* The logits the sampler sees: under a grammar, every token it does not allow next masked.
 * NULL: the grammar allows nothing more (it is stuck or complete). */
static const float *constrained(hr_slot *sl, const float *logits) {
    if (!sl->gs) return logits;
    if (hr_grammar_sampler_done(sl->gs)) return NULL;
    memcpy(sl->masked, logits, (size_t)sl->n_vocab * sizeof *sl->masked);
    return hr_grammar_sampler_apply(sl->gs, sl->masked) > 0 ? sl->masked : NULL;
}

void hr_slot_next(hr_slot *sl, const float *logits, int32_t n_ctx) {
    hr_job *j = sl->job;
    const float *lg = constrained(sl, logits);
    if (!lg) { /* nothing is allowed: the reply ends here, as at an end-of-generation token */
        char out[8];
        bool hit = false;
        size_t k = hr_detok_flush(&sl->dt, out, sizeof out);
        if (feed(sl, out, k, true, &hit)) { hr_slot_end(sl, NULL, 500, "out of memory"); return; }
        hr_slot_end(sl, "stop", 0, NULL);
        return;
    }
    int32_t tok = hr_sampler_sample(sl->smp, lg);
    hr_sampler_accept(sl->smp, tok);
    hr_err ge = {{0}};
    if (sl->gs && !hearth_token_is_eog(sl->m, tok) && hr_grammar_sampler_accept(sl->gs, tok, &ge)) {
        hr_slot_end(sl, NULL, 500, ge.msg);
        return;
    }
    sl->n_gen++;
    if (j->n_logprobs >= 0 && keep_lp(sl, logits, tok)) { hr_slot_end(sl, NULL, 500, "out of memory"); return; }
    bool hit = false;
    if (!j->ignore_eos && hearth_token_is_eog(sl->m, tok)) {
        sl->n_gen--; /* the end marker is not part of the reply */
        char out[8];
        size_t k = hr_detok_flush(&sl->dt, out, sizeof out);
        if (feed(sl, out, k, true, &hit)) { hr_slot_end(sl, NULL, 500, "out of memory"); return; }
        hr_slot_end(sl, "stop", 0, NULL);
        return;
    }
    char piece[256], out[sizeof piece + 8];
    int len = hearth_token_piece(sl->m, tok, j->special_text, piece, sizeof piece);
    if (len > (int)sizeof piece) len = sizeof piece;
    size_t k = len > 0 ? hr_detok_push(&sl->dt, piece, (size_t)len, out, sizeof out) : 0;
    const char *finish = sl->n_gen >= j->max_tokens || sl->n_past >= n_ctx ? "length" : NULL;
    if (!finish && sl->gs && hr_grammar_sampler_done(sl->gs)) finish = "stop"; /* the grammar is complete */
    if (finish) k += hr_detok_flush(&sl->dt, out + k, sizeof out - k);
    if (feed(sl, out, k, finish != NULL, &hit)) { hr_slot_end(sl, NULL, 500, "out of memory"); return; }
    if (hit) finish = "stop";
    if (finish) hr_slot_end(sl, finish, 0, NULL);
    else sl->next_tok = tok;
}

void hr_slot_end(hr_slot *sl, const char *finish, int status, const char *err) {
    hr_job_finish(sl->job, finish, sl->n_gen, status, err);
    hr_job_unref(sl->job);
    sl->job = NULL;
    hr_sampler_free(sl->smp);
    sl->smp = NULL;
    if (sl->gs) hr_grammar_sampler_free(sl->gs);
    sl->gs = NULL;
    sl->st.len = 0;
    sl->row = -1;
}

void hr_slot_free(hr_slot *sl) {
    if (sl->job) hr_slot_end(sl, NULL, 503, "the server is shutting down");
    hr_stop_free(&sl->st);
    free(sl->lps);
    sl->lps = NULL;
    free(sl->masked);
    sl->masked = NULL;
}
