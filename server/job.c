/* Output channel of a request: the engine appends, one HTTP thread reads. */
#include "job.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "grammar/grammar.h"
#include "tools.h"

hr_job *hr_job_new(void) {
    hr_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    pthread_mutex_init(&j->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    /* Timed waits measure the monotonic clock, so wall-clock jumps do not matter. */
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->cv, &ca);
    pthread_condattr_destroy(&ca);
    j->n_logprobs = -1;
    j->refs = 1;
    return j;
}

void hr_job_ref(hr_job *j) {
    pthread_mutex_lock(&j->mu);
    j->refs++;
    pthread_mutex_unlock(&j->mu);
}

void hr_job_unref(hr_job *j) {
    if (!j) return;
    pthread_mutex_lock(&j->mu);
    int left = --j->refs;
    pthread_mutex_unlock(&j->mu);
    if (left) return;
    for (int32_t i = 0; i < j->n_chunks; i++) free(j->chunks[i].text), free(j->chunks[i].lps);
    for (int32_t i = 0; i < j->n_stops; i++) free(j->stops[i]);
    free(j->stops);
    if (j->grammar) hr_grammar_free(j->grammar);
    hr_tool_spec_free(j->tools);
    free(j->chunks);
    free(j->prompt);
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

int hr_job_add_stop(hr_job *j, const char *s, size_t len) {
    if (!len) return 0; /* an empty stop text would end every reply at once */
    char **st = realloc(j->stops, (size_t)(j->n_stops + 1) * sizeof *st);
    if (!st) return -1;
    j->stops = st;
    char *c = malloc(len + 1);
    if (!c) return -1;
    memcpy(c, s, len);
    c[len] = 0;
    j->stops[j->n_stops++] = c;
    return 0;
}

int hr_job_push(hr_job *j, const char *text, size_t len, const hr_tok_lp *lps, int32_t n_lps) {
    hr_chunk c = {malloc(len + 1), len, NULL, n_lps};
    if (!c.text) return -1;
    memcpy(c.text, text, len);
    c.text[len] = 0;
    if (n_lps) {
        if (!(c.lps = malloc((size_t)n_lps * sizeof *c.lps))) { free(c.text); return -1; }
        memcpy(c.lps, lps, (size_t)n_lps * sizeof *c.lps);
    }
    pthread_mutex_lock(&j->mu);
    if (j->n_chunks == j->cap_chunks) {
        int32_t cap = j->cap_chunks ? 2 * j->cap_chunks : 16;
        hr_chunk *nc = realloc(j->chunks, (size_t)cap * sizeof *nc);
        if (!nc) {
            pthread_mutex_unlock(&j->mu);
            free(c.text), free(c.lps);
            return -1;
        }
        j->chunks = nc, j->cap_chunks = cap;
    }
    j->chunks[j->n_chunks++] = c;
    pthread_cond_broadcast(&j->cv);
    if (j->notify) j->notify(j->notify_ud);
    pthread_mutex_unlock(&j->mu);
    return 0;
}

void hr_job_finish(hr_job *j, const char *finish, int32_t n_gen, int status, const char *err) {
    pthread_mutex_lock(&j->mu);
    if (!j->done) {
        j->done = true;
        j->finish = finish;
        j->n_gen = n_gen;
        if (err) {
            strncpy(j->err, err, sizeof j->err - 1);
            j->err_status = status;
            j->finish = NULL;
        }
    }
    pthread_cond_broadcast(&j->cv);
    if (j->notify) j->notify(j->notify_ud);
    pthread_mutex_unlock(&j->mu);
}

bool hr_job_is_cancelled(hr_job *j) {
    pthread_mutex_lock(&j->mu);
    bool c = j->cancelled;
    pthread_mutex_unlock(&j->mu);
    return c;
}

void hr_job_cancel(hr_job *j) {
    pthread_mutex_lock(&j->mu);
    j->cancelled = true;
    pthread_mutex_unlock(&j->mu);
}

int32_t hr_job_wait(hr_job *j, int32_t next, int timeout_ms, bool *done) {
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    if (timeout_ms >= 0) {
        dl.tv_sec += timeout_ms / 1000;
        dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (dl.tv_nsec >= 1000000000L) dl.tv_sec++, dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&j->mu);
    while (j->n_chunks <= next && !j->done) {
        if (timeout_ms < 0) pthread_cond_wait(&j->cv, &j->mu);
        else if (pthread_cond_timedwait(&j->cv, &j->mu, &dl) == ETIMEDOUT) break;
    }
    int32_t n = j->n_chunks;
    *done = j->done;
    pthread_mutex_unlock(&j->mu);
    return n;
}

hr_chunk hr_job_chunk(hr_job *j, int32_t i) {
    /* The array may move when the engine grows it; the chunk's buffers never do. */
    pthread_mutex_lock(&j->mu);
    hr_chunk c = j->chunks[i];
    pthread_mutex_unlock(&j->mu);
    return c;
}

void hr_job_set_notify(hr_job *j, void (*fn)(void *ud), void *ud) {
    pthread_mutex_lock(&j->mu);
    j->notify = fn, j->notify_ud = ud;
    pthread_mutex_unlock(&j->mu);
}
