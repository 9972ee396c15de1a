/* POST /v1/completions and /v1/chat/completions. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "api_format.h"
#include "routes.h"
#include "sse.h"

static void wake(void *ud) { hr_wait_signal(ud); }

/* A non-streamed reply, waiting for its job. */
typedef struct pending {
    hr_server *s;
    hr_gen_req g;
} pending;

static void drop(void *ud) {
    pending *p = ud;
    hr_job_set_notify(p->g.job, NULL, NULL);
    hr_sched_cancel(p->s->sched, p->g.job); /* no-op once the job has finished */
    hr_job_unref(p->g.job);
    free(p);
}

/* Answers once the job is done; a client that leaves cancels it. */
static enum MHD_Result poll_reply(hr_http_req *r, void *ud, bool *again) {
    pending *p = ud;
    hr_job *j = p->g.job;
    bool done = false;
    int32_t n = hr_job_wait(j, INT32_MAX, 0, &done);
    if (n > 0 && !r->log->t_first) r->log->t_first = hr_now_s();
    if (!done) {
        if (hr_http_peer_gone(r->conn)) return MHD_NO;
        *again = true;
        return MHD_YES;
    }
    r->log->t_end = hr_now_s();
    r->log->n_gen = j->n_gen;
    hr_apierr ae;
    if (!j->finish) {
        hr_apierr_set(&ae, j->err_status ? j->err_status : 500, NULL, NULL, "%s", j->err);
        return hr_http_error(r, &ae);
    }
    hr_fmt f;
    hr_fmt_init(&f, r->srv, p->g.kind);
    cJSON *o = hr_fmt_full(&f, j, n);
    /* llama-server's flag for a prompt that was cut to fit. */
    if (o && p->g.trimmed) cJSON_AddBoolToObject(o, "truncated", true);
    return hr_http_json(r, 200, o);
}

static enum MHD_Result generate(hr_http_req *r, hr_api_kind kind) {
    hr_gen_req g;
    hr_apierr ae;
    if (hr_gen_parse(r->srv, kind, r->body, r->len, &g, &ae)) return hr_http_error(r, &ae);
    r->log->n_prompt = g.job->n_prompt;
    r->log->trimmed = g.trimmed;
    hr_wait *w = hr_http_wait(r);
    if (!w) {
        hr_job_unref(g.job);
        return MHD_NO;
    }
    hr_job_set_notify(g.job, wake, w);
    if (hr_sched_submit(r->srv->sched, g.job)) {
        hr_job_set_notify(g.job, NULL, NULL);
        hr_job_unref(g.job);
        hr_apierr_set(&ae, 503, NULL, NULL, "the server is shutting down");
        return hr_http_error(r, &ae);
    }
    if (g.stream) return hr_sse_respond(r, &g);
    pending *p = malloc(sizeof *p);
    if (!p) {
        hr_job_set_notify(g.job, NULL, NULL);
        hr_sched_cancel(r->srv->sched, g.job);
        hr_job_unref(g.job);
        return MHD_NO;
    }
    p->s = r->srv, p->g = g;
    return hr_http_defer(r, poll_reply, drop, p);
}

enum MHD_Result hr_api_completions(hr_http_req *r) { return generate(r, HR_API_COMPLETION); }
enum MHD_Result hr_api_chat(hr_http_req *r) { return generate(r, HR_API_CHAT); }
