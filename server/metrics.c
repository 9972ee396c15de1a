/* Prometheus counters and gauges. */
#include "metrics.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hr_metrics_init(hr_metrics *m, int n_slots) {
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    m->ffn_computed = -1;
    m->n_slots = n_slots;
}

void hr_metrics_destroy(hr_metrics *m) { pthread_mutex_destroy(&m->mu); }

void hr_metrics_request(hr_metrics *m, const char *endpoint, int status) {
    pthread_mutex_lock(&m->mu);
    int i = 0;
    while (i < m->n_req && !(m->req[i].status == status && !strcmp(m->req[i].endpoint, endpoint))) i++;
    if (i == m->n_req && m->n_req < HR_METRICS_MAX_SERIES) {
        m->req[i].endpoint = endpoint, m->req[i].status = status, m->req[i].n = 0;
        m->n_req++;
    }
    if (i < m->n_req) m->req[i].n++;
    pthread_mutex_unlock(&m->mu);
}

static void close_window(hr_metrics *m) {
    if (m->win_tokens && m->win_s > 0) m->tokens_per_s = m->win_tokens / m->win_s;
    m->win_s = 0, m->win_tokens = 0;
}

void hr_metrics_step(hr_metrics *m, uint64_t prompt, uint64_t gen, double seconds, double ffn_computed) {
    pthread_mutex_lock(&m->mu);
    m->prompt_tokens += prompt;
    m->gen_tokens += gen;
    if (ffn_computed >= 0) m->ffn_computed = ffn_computed;
    m->win_tokens += gen;
    m->win_s += seconds;
    if (m->win_s >= 1.0) close_window(m);
    pthread_mutex_unlock(&m->mu);
}

void hr_metrics_idle(hr_metrics *m) {
    pthread_mutex_lock(&m->mu);
    close_window(m);
    pthread_mutex_unlock(&m->mu);
}

void hr_metrics_cancelled(hr_metrics *m) {
    pthread_mutex_lock(&m->mu);
    m->cancelled++;
    pthread_mutex_unlock(&m->mu);
}

void hr_metrics_load(hr_metrics *m, int busy, int queued) {
    pthread_mutex_lock(&m->mu);
    m->busy = busy, m->queued = queued;
    if (busy > m->busy_peak) m->busy_peak = busy;
    pthread_mutex_unlock(&m->mu);
}

void hr_metrics_get_load(hr_metrics *m, int *busy, int *queued) {
    pthread_mutex_lock(&m->mu);
    *busy = m->busy, *queued = m->queued;
    pthread_mutex_unlock(&m->mu);
}

typedef struct {
    char *p;
    size_t len, cap;
    int oom;
} sbuf;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void put(sbuf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) { b->oom = 1; return; }
        if (b->p && b->len + (size_t)n < b->cap) { b->len += (size_t)n; return; }
        size_t cap = (b->cap + (size_t)n + 1) * 2;
        char *q = realloc(b->p, cap);
        if (!q) { b->oom = 1; return; }
        b->p = q, b->cap = cap;
    }
}

char *hr_metrics_render(hr_metrics *m) {
    sbuf b = {0};
    pthread_mutex_lock(&m->mu);
    put(&b, "# HELP hearth_requests_total HTTP requests by endpoint and status.\n"
            "# TYPE hearth_requests_total counter\n");
    for (int i = 0; i < m->n_req; i++)
        put(&b, "hearth_requests_total{endpoint=\"%s\",status=\"%d\"} %llu\n", m->req[i].endpoint, m->req[i].status,
            (unsigned long long)m->req[i].n);
    put(&b, "# HELP hearth_prompt_tokens_total Prompt tokens evaluated.\n# TYPE hearth_prompt_tokens_total counter\n"
            "hearth_prompt_tokens_total %llu\n", (unsigned long long)m->prompt_tokens);
    put(&b, "# HELP hearth_generated_tokens_total Tokens generated.\n# TYPE hearth_generated_tokens_total counter\n"
            "hearth_generated_tokens_total %llu\n", (unsigned long long)m->gen_tokens);
    put(&b, "# HELP hearth_requests_cancelled_total Requests whose client went away before the end.\n"
            "# TYPE hearth_requests_cancelled_total counter\nhearth_requests_cancelled_total %llu\n",
        (unsigned long long)m->cancelled);
    put(&b, "# HELP hearth_tokens_per_second Generated tokens per second over the last decode window.\n"
            "# TYPE hearth_tokens_per_second gauge\nhearth_tokens_per_second %.3f\n", m->tokens_per_s);
    put(&b, "# HELP hearth_queue_depth Requests waiting for a slot.\n# TYPE hearth_queue_depth gauge\n"
            "hearth_queue_depth %d\n", m->queued);
    put(&b, "# HELP hearth_slots_busy Slots generating.\n# TYPE hearth_slots_busy gauge\nhearth_slots_busy %d\n",
        m->busy);
    put(&b, "# HELP hearth_slots_busy_peak Most slots busy at once since the start.\n"
            "# TYPE hearth_slots_busy_peak gauge\nhearth_slots_busy_peak %d\n", m->busy_peak);
    put(&b, "# HELP hearth_slots_total Slots (parallel sequences).\n# TYPE hearth_slots_total gauge\n"
            "hearth_slots_total %d\n", m->n_slots);
    if (m->ffn_computed >= 0)
        put(&b, "# HELP hearth_ffn_sparsity Share of FFN neurons skipped per token (all layers, since start).\n"
                "# TYPE hearth_ffn_sparsity gauge\nhearth_ffn_sparsity %.6f\n", 1.0 - m->ffn_computed);
    pthread_mutex_unlock(&m->mu);
    if (b.oom) { free(b.p); return NULL; }
    return b.p;
}
