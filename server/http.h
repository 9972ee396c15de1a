/* HTTP plumbing over libmicrohttpd: one request as handlers see it, and the responses
 * they send (each counted in the metrics under the route's endpoint label). */
#ifndef HR_SRV_HTTP_H
#define HR_SRV_HTTP_H
#include <stdbool.h>
#include <stddef.h>
#include <microhttpd.h>
#include <cjson/cJSON.h>
#include "apierr.h"
#include "server_impl.h"

typedef struct hr_http_req {
    hr_server *srv;
    struct MHD_Connection *conn;
    const char *method, *url;
    const char *body; /* NUL-terminated */
    size_t len;
    const char *endpoint; /* metrics label */
} hr_http_req;

/* Starts the daemon on s->p.host:s->p.port; sets s->mhd and s->port. */
int hr_http_start(hr_server *s, hr_err *e);
void hr_http_stop(hr_server *s);

/* Sends obj (consumed) as application/json. */
enum MHD_Result hr_http_json(hr_http_req *r, int status, cJSON *obj);
enum MHD_Result hr_http_error(hr_http_req *r, const hr_apierr *ae);
/* Sends data that outlives the server (static). */
enum MHD_Result hr_http_static(hr_http_req *r, int status, const char *ctype, const void *data, size_t len);
/* Queues a response that is already built and counts it. */
enum MHD_Result hr_http_queue(hr_http_req *r, int status, struct MHD_Response *resp);
/* The client closed its end of the connection. */
bool hr_http_peer_gone(struct MHD_Connection *c);
#endif
