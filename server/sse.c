/* The event stream of one generation request. */
#include "sse.h"
#include <stdlib.h>
#include <string.h>
#include "api_format.h"
#include "tool_format.h"

#define SSE_KEEPALIVE_S 15.0 /* a comment line after this long without events */

typedef struct sse {
    hr_server *s;
    struct MHD_Connection *conn;
    hr_job *j;
    hr_fmt f;
    hr_wait *wait;
    hr_http_log *log; /* the request's, valid until the stream has ended */
    bool include_usage, lp_on, role_sent, finished, trimmed;
    int32_t next;
    double last; /* when the last event went out */
    char *buf;
    size_t len, off, cap;
    hr_tool_stream ts; /* tools offered: content held back from a call marker on */
} sse;

static int add_raw(sse *st, const char *text, size_t n) {
    if (st->len + n > st->cap) {
        size_t cap = (st->len + n) * 2;
        char *b = realloc(st->buf, cap);
        if (!b) return -1;
        st->buf = b, st->cap = cap;
    }
    memcpy(st->buf + st->len, text, n);
    st->len += n;
    return 0;
}

/* "data: {json}\n\n"; consumes o. */
static int add_event(sse *st, cJSON *o) {
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text) return -1;
    int rc = add_raw(st, "data: ", 6) || add_raw(st, text, strlen(text)) || add_raw(st, "\n\n", 2) ? -1 : 0;
    free(text);
    return rc;
}

static int add_event_cb(void *st, cJSON *o) { return add_event(st, o); }

static int add_end(sse *st) {
    hr_job *j = st->j;
    int rc = 0, n_calls = 0;
    if (j->finish && j->tools) rc = hr_tool_stream_end(&st->ts, &st->f, j->tools, add_event_cb, st, &n_calls);
    st->log->t_end = hr_now_s();
    st->log->n_gen = j->n_gen;
    if (j->finish) {
        cJSON *o = rc ? NULL : hr_fmt_chunk(&st->f, "", 0, false, false, NULL, 0, n_calls > 0 ? "tool_calls" : j->finish);
        if (o && st->trimmed) cJSON_AddBoolToObject(o, "truncated", true);
        rc = add_event(st, o);
        if (!rc && st->include_usage) rc = add_event(st, hr_fmt_usage_chunk(&st->f, j->n_prompt, j->n_gen));
    } else {
        hr_apierr ae;
        hr_apierr_set(&ae, j->err_status ? j->err_status : 500, NULL, NULL, "%s", j->err);
        rc = add_event(st, hr_apierr_json(&ae));
    }
    st->finished = true;
    return rc ? rc : add_raw(st, "data: [DONE]\n\n", 14);
}

/* Produces the events available now (none: returns 0 with nothing added). -1: end the stream. */
static int fill(sse *st) {
    if (!st->role_sent && st->f.kind == HR_API_CHAT) {
        st->role_sent = true;
        return add_event(st, hr_fmt_chunk(&st->f, "", 0, true, false, NULL, 0, NULL));
    }
    bool done;
    int32_t n = hr_job_wait(st->j, st->next, 0, &done);
    double now = hr_now_s();
    if (n > st->next) {
        st->last = now;
        if (!st->log->t_first) st->log->t_first = now;
        for (; st->next < n; st->next++) {
            hr_chunk c = hr_job_chunk(st->j, st->next);
            if (st->j->tools) {
                if (hr_tool_stream_push(&st->ts, &st->f, st->j->tools, &c, st->lp_on, add_event_cb, st)) return -1;
                continue;
            }
            if (add_event(st, hr_fmt_chunk(&st->f, c.text, c.len, false, st->lp_on, c.lps, c.n_lps, NULL))) return -1;
        }
        return 0;
    }
    if (done) return add_end(st);
    if (hr_http_peer_gone(st->conn)) return -1;
    if (now - st->last < SSE_KEEPALIVE_S) return 0;
    st->last = now;
    return add_raw(st, ": keep-alive\n\n", 14);
}

static ssize_t reader(void *cls, uint64_t pos, char *out, size_t max) {
    (void)pos;
    sse *st = cls;
    while (st->off == st->len) {
        st->off = st->len = 0;
        if (st->finished) return MHD_CONTENT_READER_END_OF_STREAM;
        if (fill(st)) return MHD_CONTENT_READER_END_WITH_ERROR;
        /* Nothing yet: sleep until the job has news (or the next tick). Returning 0
         * without suspending would make libmicrohttpd call again at once. */
        if (st->off == st->len && hr_wait_suspend(st->wait)) return 0;
    }
    size_t n = st->len - st->off < max ? st->len - st->off : max;
    memcpy(out, st->buf + st->off, n);
    st->off += n;
    return (ssize_t)n;
}

/* The connection is done with the response: normal end, or the client went away. */
static void release(void *cls) {
    sse *st = cls;
    hr_job_set_notify(st->j, NULL, NULL);
    hr_sched_cancel(st->s->sched, st->j);
    hr_job_unref(st->j);
    hr_wait_unref(st->wait);
    hr_tool_stream_free(&st->ts);
    free(st->buf);
    free(st);
}

enum MHD_Result hr_sse_respond(hr_http_req *r, hr_gen_req *g) {
    sse *st = calloc(1, sizeof *st);
    struct MHD_Response *resp = NULL;
    if (st) {
        st->s = r->srv, st->conn = r->conn, st->j = g->job, st->wait = hr_http_wait(r), st->log = r->log;
        st->trimmed = g->trimmed > 0, st->last = hr_now_s();
        hr_wait_ref(st->wait); /* generate() made it */
        st->include_usage = g->include_usage, st->lp_on = g->job->n_logprobs >= 0;
        hr_fmt_init(&st->f, r->srv, g->kind);
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, reader, st, release);
    }
    if (!resp) {
        if (st) hr_wait_unref(st->wait);
        hr_job_set_notify(g->job, NULL, NULL);
        hr_sched_cancel(r->srv->sched, g->job);
        hr_job_unref(g->job);
        free(st);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    return hr_http_queue(r, 200, resp);
}
