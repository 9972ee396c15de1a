/* HTTP plumbing over libmicrohttpd: one request as handlers see it, and the responses
 * they send (each counted in the metrics under the route's endpoint label, and logged).
 * Handlers run on libmicrohttpd's event-loop threads and must not block: a request that
 * waits for the engine defers its answer (hr_http_defer), a stream suspends itself. */
#ifndef HR_SRV_HTTP_H
#define HR_SRV_HTTP_H
#include <stdbool.h>
#include <stddef.h>
#include <microhttpd.h>
#include <cjson/cJSON.h>
#include "apierr.h"
#include "server_impl.h"
#include "waker.h"

/* What the request log line reports; handlers fill what they know. */
typedef struct hr_http_log {
    int status;
    int32_t n_prompt, n_gen; /* -1: not a generation */
    int32_t trimmed;         /* chat messages left out to fit the context */
    double t_start, t_first, t_end; /* monotonic seconds: request complete, first output, job done */
} hr_http_log;

typedef struct hr_http_req {
    hr_server *srv;
    struct MHD_Connection *conn;
    const char *method, *url;
    const char *body; /* NUL-terminated */
    size_t len;
    const char *endpoint; /* metrics label */
    hr_http_log *log;
    struct hr_http_state *st; /* http.c's state of the request */
} hr_http_req;

/* Starts the daemon on s->p.host:s->p.port; sets s->mhd and s->port. */
int hr_http_start(hr_server *s, hr_err *e);
void hr_http_stop(hr_server *s);

/* Sends obj (consumed) as application/json. */
enum MHD_Result hr_http_json(hr_http_req *r, int status, cJSON *obj);
enum MHD_Result hr_http_error(hr_http_req *r, const hr_apierr *ae);
/* Sends data that outlives the server (static). */
enum MHD_Result hr_http_static(hr_http_req *r, int status, const char *ctype, const void *data, size_t len);
/* Queues a response that is already built, with the CORS header, and counts it. */
enum MHD_Result hr_http_queue(hr_http_req *r, int status, struct MHD_Response *resp);
/* The client closed its end of the connection. */
bool hr_http_peer_gone(struct MHD_Connection *c);

/* The request's wake handle (made on first use; the request holds a reference until it
 * ends). NULL when out of memory. */
hr_wait *hr_http_wait(hr_http_req *r);
/* Answers later: poll(r, ud, &again) runs now and whenever the wake handle is signalled
 * (and at the waker's ticks); it queues the response, or sets *again (nothing yet), or
 * returns MHD_NO (close the connection). drop(ud) runs once, when the request ends for
 * whatever reason. */
typedef enum MHD_Result (*hr_http_poll_fn)(hr_http_req *r, void *ud, bool *again);
enum MHD_Result hr_http_defer(hr_http_req *r, hr_http_poll_fn poll, void (*drop)(void *ud), void *ud);

double hr_now_s(void);
#endif
