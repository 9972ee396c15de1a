/* Scheduling: admit queued jobs into free slots, build one batch per step, sample per slot. */
#include "scheduler.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "slot.h"

#define SHUTDOWN "the server is shutting down"

struct hr_sched {
    hearth_model *m;
    hearth_ctx *c;
    hr_metrics *mx;
    int32_t n_slots, n_batch, n_ctx, n_layer, n_ff;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    hr_job **queue; /* FIFO: queue[0] is next */
    int32_t q_len, q_cap;
    hr_job **embq;  /* embedding jobs, FIFO */
    int32_t e_len, e_cap;
    hr_slot *slots;
    int32_t rr; /* slot whose prompt goes first this step, rotated for fairness */
    bool stop, started;
    pthread_t thread;
    int32_t *b_tok, *b_pos, *b_seq;
    bool *b_lg;
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int32_t count_busy(const hr_sched *s) {
    int32_t n = 0;
    for (int32_t i = 0; i < s->n_slots; i++) n += s->slots[i].job != NULL;
    return n;
}

/* Moves queued jobs into free slots, oldest first. Called with mu held. */
static void admit(hr_sched *s) {
    for (int32_t i = 0; i < s->n_slots && s->q_len; i++) {
        if (s->slots[i].job) continue;
        hr_job *j = s->queue[0];
        memmove(s->queue, s->queue + 1, (size_t)--s->q_len * sizeof *s->queue);
        hr_err e = {{0}};
        if (hr_job_is_cancelled(j)) {
            hr_job_finish(j, NULL, 0, 499, "cancelled");
            hr_metrics_cancelled(s->mx);
            hr_job_unref(j);
            i--;
        } else if (hr_slot_start(&s->slots[i], j, &e)) {
            hr_job_finish(j, NULL, 0, 500, e.msg);
            hr_job_unref(j);
            i--;
        }
    }
}

/* Frees slots whose client went away. */
static void drop_cancelled(hr_sched *s) {
    for (int32_t i = 0; i < s->n_slots; i++) {
        hr_slot *sl = &s->slots[i];
        if (!sl->job || !hr_job_is_cancelled(sl->job)) continue;
        hr_slot_end(sl, NULL, 499, "cancelled");
        hr_metrics_cancelled(s->mx);
    }
}

/* Fills the batch: every decoding slot's one token first (so generation never waits
 * behind prompts), then prompt chunks while the batch has room. Returns its size. */
static int32_t build_batch(hr_sched *s, int32_t *n_prompt) {
    int32_t n = 0, rows = 0;
    *n_prompt = 0;
    for (int32_t i = 0; i < s->n_slots; i++) {
        hr_slot *sl = &s->slots[i];
        sl->row = -1;
        if (!sl->job || sl->n_fed < sl->job->n_prompt) continue;
        s->b_tok[n] = sl->next_tok, s->b_pos[n] = sl->n_past, s->b_seq[n] = i, s->b_lg[n] = true;
        sl->row = rows++, sl->n_past++, n++;
    }
    for (int32_t k = 0; k < s->n_slots && n < s->n_batch; k++) {
        int32_t i = (s->rr + k) % s->n_slots;
        hr_slot *sl = &s->slots[i];
        if (!sl->job || sl->n_fed >= sl->job->n_prompt || sl->row >= 0) continue;
        int32_t take = sl->job->n_prompt - sl->n_fed;
        if (take > s->n_batch - n) take = s->n_batch - n;
        for (int32_t t = 0; t < take; t++, n++) {
            s->b_tok[n] = sl->job->prompt[sl->n_fed + t], s->b_pos[n] = sl->n_past + t, s->b_seq[n] = i;
            s->b_lg[n] = false;
        }
        sl->n_fed += take, sl->n_past += take, *n_prompt += take;
        if (sl->n_fed == sl->job->n_prompt) s->b_lg[n - 1] = true, sl->row = rows++;
    }
    s->rr = (s->rr + 1) % s->n_slots;
    return n;
}

/* Share of FFN neurons computed per token over all layers so far; -1 when unknown. */
static double ffn_share(const hr_sched *s) {
    double comp = 0, tok = 0;
    for (int32_t il = 0; il < s->n_layer; il++) {
        hearth_ffn_stats st;
        if (hearth_ctx_ffn_stats(s->c, il, &st)) return -1;
        comp += (double)st.computed, tok += (double)st.tokens;
    }
    return tok > 0 && s->n_ff > 0 ? comp / (tok * s->n_ff) : -1;
}

static void step(hr_sched *s) {
    int32_t n_prompt, n = build_batch(s, &n_prompt);
    if (!n) return;
    double t0 = now_s();
    hearth_batch b = {n, s->b_tok, s->b_pos, s->b_seq, s->b_lg};
    hr_err e = {{0}};
    if (hearth_eval_batch(s->c, &b, &e)) {
        for (int32_t i = 0; i < s->n_slots; i++)
            if (s->slots[i].job) hr_slot_end(&s->slots[i], NULL, 500, e.msg);
        return;
    }
    uint64_t gen = 0;
    for (int32_t i = 0; i < s->n_slots; i++) {
        hr_slot *sl = &s->slots[i];
        if (!sl->job || sl->row < 0) continue;
        hr_slot_next(sl, hearth_logits(s->c, sl->row), s->n_ctx);
        gen++;
    }
    hr_metrics_step(s->mx, (uint64_t)n_prompt, gen, now_s() - t0, ffn_share(s));
}

/* Mean hidden state of j's tokens on sequence seq (free), into one chunk. */
static void embed_one(hr_sched *s, hr_job *j, int32_t seq) {
    const int32_t n = j->n_prompt, d = hearth_model_get_info(s->m)->n_embd;
    int32_t *pos = malloc((size_t)n * sizeof *pos), *sq = malloc((size_t)n * sizeof *sq);
    bool *want = malloc((size_t)n * sizeof *want);
    float *mean = calloc((size_t)d, sizeof *mean);
    double *acc = calloc((size_t)d, sizeof *acc);
    hr_err e = {{0}};
    int rc = !pos || !sq || !want || !mean || !acc ? hr_errf(&e, "out of memory") : 0;
    for (int32_t i = 0; !rc && i < n; i++) pos[i] = i, sq[i] = seq, want[i] = true;
    double t0 = now_s();
    if (!rc) {
        hearth_batch b = {n, j->prompt, pos, sq, want};
        hearth_ctx_set_embeddings(s->c, true);
        rc = hearth_eval_batch(s->c, &b, &e);
        hearth_ctx_set_embeddings(s->c, false);
    }
    for (int32_t i = 0; !rc && i < n; i++) {
        const float *h = hearth_embeddings(s->c, i);
        for (int32_t k = 0; k < d; k++) acc[k] += h[k];
    }
    for (int32_t k = 0; !rc && k < d; k++) mean[k] = (float)(acc[k] / n);
    if (!rc && hr_job_push(j, (const char *)mean, sizeof(float) * (size_t)d, NULL, 0)) rc = hr_errf(&e, "out of memory");
    if (!rc) hr_metrics_step(s->mx, (uint64_t)n, 0, now_s() - t0, ffn_share(s));
    hr_job_finish(j, rc ? NULL : "stop", 0, 500, rc ? e.msg : NULL);
    free(pos), free(sq), free(want), free(mean), free(acc);
}

/* Embedding jobs run whole, between steps, on any free slot's sequence. Called with mu held;
 * releases it while evaluating. */
static void run_embeds(hr_sched *s) {
    while (s->e_len && !s->stop) {
        int32_t seq = 0;
        while (seq < s->n_slots && s->slots[seq].job) seq++;
        if (seq == s->n_slots) return;
        hr_job *j = s->embq[0];
        memmove(s->embq, s->embq + 1, (size_t)--s->e_len * sizeof *s->embq);
        pthread_mutex_unlock(&s->mu);
        if (hr_job_is_cancelled(j)) hr_job_finish(j, NULL, 0, 499, "cancelled");
        else embed_one(s, j, seq);
        hr_job_unref(j);
        pthread_mutex_lock(&s->mu);
    }
}

static void *engine(void *arg) {
    hr_sched *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        drop_cancelled(s);
        run_embeds(s);
        admit(s);
        int32_t busy = count_busy(s);
        hr_metrics_load(s->mx, busy, s->q_len + s->e_len);
        if (s->stop) break;
        if (!busy) {
            hr_metrics_idle(s->mx);
            pthread_cond_wait(&s->cv, &s->mu);
            continue;
        }
        pthread_mutex_unlock(&s->mu);
        step(s);
        pthread_mutex_lock(&s->mu);
    }
    for (int32_t i = 0; i < s->n_slots; i++)
        if (s->slots[i].job) hr_slot_end(&s->slots[i], NULL, 503, SHUTDOWN);
    for (int32_t i = 0; i < s->q_len; i++) {
        hr_job_finish(s->queue[i], NULL, 0, 503, SHUTDOWN);
        hr_job_unref(s->queue[i]);
    }
    s->q_len = 0;
    for (int32_t i = 0; i < s->e_len; i++) {
        hr_job_finish(s->embq[i], NULL, 0, 503, SHUTDOWN);
        hr_job_unref(s->embq[i]);
    }
    s->e_len = 0;
    hr_metrics_load(s->mx, 0, 0);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

hr_sched *hr_sched_new(hearth_model *m, hearth_ctx *c, int32_t n_batch, hr_metrics *mx, hr_err *e) {
    hr_sched *s = calloc(1, sizeof *s);
    if (!s) { hr_errf(e, "out of memory"); return NULL; }
    const hearth_model_info *in = hearth_model_get_info(m);
    s->m = m, s->c = c, s->mx = mx;
    s->n_slots = hearth_ctx_n_seq(c);
    s->n_ctx = hearth_ctx_n_ctx(c);
    s->n_layer = in->n_layer, s->n_ff = in->n_ff;
    hearth_moe_stats ms; /* mixtures of experts: a token's neurons are its chosen experts' */
    if (!hearth_ctx_moe_stats(s->c, &ms)) s->n_ff = ms.n_expert_used * ms.n_ff_exp;
    /* Every decoding slot needs a place in each batch. */
    s->n_batch = n_batch < s->n_slots ? s->n_slots : n_batch;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->slots = calloc((size_t)s->n_slots, sizeof *s->slots);
    s->b_tok = malloc((size_t)s->n_batch * sizeof *s->b_tok);
    s->b_pos = malloc((size_t)s->n_batch * sizeof *s->b_pos);
    s->b_seq = malloc((size_t)s->n_batch * sizeof *s->b_seq);
    s->b_lg = malloc((size_t)s->n_batch * sizeof *s->b_lg);
    if (!s->slots || !s->b_tok || !s->b_pos || !s->b_seq || !s->b_lg) {
        hr_errf(e, "out of memory");
        hr_sched_free(s);
        return NULL;
    }
    for (int32_t i = 0; i < s->n_slots; i++) hr_slot_init(&s->slots[i], m);
    if (pthread_create(&s->thread, NULL, engine, s)) {
        hr_errf(e, "cannot start the engine thread");
        hr_sched_free(s);
        return NULL;
    }
    s->started = true;
    return s;
}

int32_t hr_sched_n_slots(const hr_sched *s) { return s->n_slots; }

int hr_sched_submit(hr_sched *s, hr_job *j) {
    pthread_mutex_lock(&s->mu);
    if (!s->stop && s->q_len == s->q_cap) {
        int32_t cap = s->q_cap ? 2 * s->q_cap : 16;
        hr_job **q = realloc(s->queue, (size_t)cap * sizeof *q);
        if (q) s->queue = q, s->q_cap = cap;
    }
    int rc = -1;
    if (!s->stop && s->q_len < s->q_cap) {
        hr_job_ref(j);
        s->queue[s->q_len++] = j;
        pthread_cond_signal(&s->cv);
        rc = 0;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int hr_sched_submit_embed(hr_sched *s, hr_job *j) {
    pthread_mutex_lock(&s->mu);
    if (!s->stop && s->e_len == s->e_cap) {
        int32_t cap = s->e_cap ? 2 * s->e_cap : 16;
        hr_job **q = realloc(s->embq, (size_t)cap * sizeof *q);
        if (q) s->embq = q, s->e_cap = cap;
    }
    int rc = -1;
    if (!s->stop && s->e_len < s->e_cap) {
        hr_job_ref(j);
        s->embq[s->e_len++] = j;
        pthread_cond_signal(&s->cv);
        rc = 0;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void hr_sched_cancel(hr_sched *s, hr_job *j) {
    pthread_mutex_lock(&s->mu);
    int32_t i = 0;
    while (i < s->q_len && s->queue[i] != j) i++;
    if (i < s->q_len) {
        memmove(s->queue + i, s->queue + i + 1, (size_t)(s->q_len - i - 1) * sizeof *s->queue);
        s->q_len--;
        hr_job_finish(j, NULL, 0, 499, "cancelled");
        hr_metrics_cancelled(s->mx);
        hr_job_unref(j);
    } else {
        hr_job_cancel(j);
    }
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void hr_sched_stop(hr_sched *s) {
    if (!s || !s->started) return;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    s->started = false;
}

void hr_sched_free(hr_sched *s) {
    if (!s) return;
    hr_sched_stop(s);
    for (int32_t i = 0; s->slots && i < s->n_slots; i++) hr_slot_free(&s->slots[i]);
    free(s->slots);
    free(s->queue);
    free(s->embq);
    free(s->b_tok), free(s->b_pos), free(s->b_seq), free(s->b_lg);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
