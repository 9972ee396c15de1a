/* POST /v1/completions and /v1/chat/completions. */
#include <stdint.h>
#include "api_format.h"
#include "routes.h"
#include "sse.h"

/* Non-streaming: waits for the whole reply; a client that leaves cancels it. */
static enum MHD_Result reply(hr_http_req *r, hr_gen_req *g) {
    hr_server *s = r->srv;
    bool done = false;
    int32_t n = 0;
    while (!done) {
        n = hr_job_wait(g->job, INT32_MAX, 500, &done);
        if (!done && hr_http_peer_gone(r->conn)) {
            hr_sched_cancel(s->sched, g->job);
            hr_job_unref(g->job);
            return MHD_NO;
        }
    }
    hr_apierr ae;
    if (!g->job->finish) {
        hr_apierr_set(&ae, g->job->err_status ? g->job->err_status : 500, NULL, NULL, "%s", g->job->err);
        hr_job_unref(g->job);
        return hr_http_error(r, &ae);
    }
    hr_fmt f;
    hr_fmt_init(&f, s, g->kind);
    cJSON *o = hr_fmt_full(&f, g->job, n);
    hr_job_unref(g->job);
    return hr_http_json(r, 200, o);
}

static enum MHD_Result generate(hr_http_req *r, hr_api_kind kind) {
    hr_gen_req g;
    hr_apierr ae;
    if (hr_gen_parse(r->srv, kind, r->body, r->len, &g, &ae)) return hr_http_error(r, &ae);
    if (hr_sched_submit(r->srv->sched, g.job)) {
        hr_job_unref(g.job);
        hr_apierr_set(&ae, 503, NULL, NULL, "the server is shutting down");
        return hr_http_error(r, &ae);
    }
    return g.stream ? hr_sse_respond(r, &g) : reply(r, &g);
}

enum MHD_Result hr_api_completions(hr_http_req *r) { return generate(r, HR_API_COMPLETION); }
enum MHD_Result hr_api_chat(hr_http_req *r) { return generate(r, HR_API_CHAT); }
