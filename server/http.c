/* The libmicrohttpd daemon: one thread per connection (handlers and stream callbacks may
 * block waiting for tokens), request bodies collected up to --max-body, then routing. */
#define _GNU_SOURCE /* POLLRDHUP */
#include "http.h"
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "routes.h"

#define IDLE_TIMEOUT_S 600

/* What one request has sent so far. */
typedef struct body_state {
    char *buf;
    size_t len, cap;
    bool too_large;
    size_t discarded;
} body_state;

bool hr_http_peer_gone(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return false;
    struct pollfd p = {ci->connect_fd, POLLRDHUP, 0};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

enum MHD_Result hr_http_queue(hr_http_req *r, int status, struct MHD_Response *resp) {
    if (!resp) return MHD_NO;
    hr_metrics_request(&r->srv->metrics, r->endpoint, status);
    enum MHD_Result rc = MHD_queue_response(r->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return rc;
}

enum MHD_Result hr_http_static(hr_http_req *r, int status, const char *ctype, const void *data, size_t len) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    return hr_http_queue(r, status, resp);
}

enum MHD_Result hr_http_json(hr_http_req *r, int status, cJSON *obj) {
    char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;
    cJSON_Delete(obj);
    if (!text) return MHD_NO;
    struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!resp) { free(text); return MHD_NO; }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    if (status == 401) MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    return hr_http_queue(r, status, resp);
}

enum MHD_Result hr_http_error(hr_http_req *r, const hr_apierr *ae) {
    return hr_http_json(r, ae->status, hr_apierr_json(ae));
}

static enum MHD_Result too_large(hr_server *s, struct MHD_Connection *c, const char *url) {
    hr_http_req r = {s, c, "", url, "", 0, "other"};
    hr_apierr ae;
    hr_apierr_set(&ae, 413, NULL, "request_too_large", "the request body exceeds %zu bytes (--max-body)", s->p.max_body);
    return hr_http_error(&r, &ae);
}

/* A declared body over the limit is refused before it is read. */
static bool declared_too_large(struct MHD_Connection *c, size_t max) {
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!cl) return false;
    char *end;
    unsigned long long n = strtoull(cl, &end, 10);
    return end != cl && n > max;
}

/* Keeps the body up to the limit; past it, reads on and drops the rest so that the
 * client gets a clean 413 (up to a bound, beyond which the connection is cut). */
static bool take(body_state *b, const char *data, size_t n, size_t max) {
    if (!b->too_large && b->len + n <= max) {
        if (b->len + n + 1 > b->cap) {
            size_t cap = (b->len + n + 1) * 2;
            if (cap > max + 1) cap = max + 1;
            char *p = realloc(b->buf, cap);
            if (!p) return false;
            b->buf = p, b->cap = cap;
        }
        memcpy(b->buf + b->len, data, n);
        b->len += n;
        return true;
    }
    b->too_large = true;
    free(b->buf);
    b->buf = NULL;
    b->discarded += n;
    return b->discarded <= 4 * max + (64u << 20);
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                 const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    hr_server *s = cls;
    body_state *b = *con_cls;
    if (!b) {
        if (!(b = calloc(1, sizeof *b))) return MHD_NO;
        *con_cls = b;
        if (declared_too_large(c, s->p.max_body)) {
            b->too_large = true;
            return too_large(s, c, url);
        }
        return MHD_YES;
    }
    if (*upload_size) {
        bool ok = take(b, upload, *upload_size, s->p.max_body);
        *upload_size = 0;
        return ok ? MHD_YES : MHD_NO;
    }
    if (b->too_large) return too_large(s, c, url);
    hr_http_req r = {s, c, method, url, b->buf ? b->buf : "", b->len, "other"};
    if (b->buf) b->buf[b->len] = 0;
    return hr_route(&r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)cls, (void)c, (void)toe;
    body_state *b = *con_cls;
    if (b) free(b->buf), free(b);
    *con_cls = NULL;
}

int hr_http_start(hr_server *s, hr_err *e) {
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    int gai = getaddrinfo(s->host, NULL, &hints, &ai);
    if (gai) return hr_errf(e, "--host %s: %s", s->host, gai_strerror(gai));
    struct sockaddr_storage sa;
    memcpy(&sa, ai->ai_addr, ai->ai_addrlen);
    bool v6 = ai->ai_family == AF_INET6;
    freeaddrinfo(ai);
    if (v6) ((struct sockaddr_in6 *)&sa)->sin6_port = htons((uint16_t)s->p.port);
    else ((struct sockaddr_in *)&sa)->sin_port = htons((uint16_t)s->p.port);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL;
    if (v6) flags |= MHD_USE_IPv6;
    s->mhd = MHD_start_daemon(flags, (uint16_t)s->p.port, NULL, NULL, on_access, s,
                              MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                              MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                              /* Idle connections (no bytes either way) are closed after this;
                               * waiting streams send a keep-alive comment well before. */
                              MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S,
                              MHD_OPTION_END);
    if (!s->mhd) return hr_errf(e, "cannot listen on %s port %d (in use, or not an address of this machine?)", s->host, s->p.port);
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di && di->port ? di->port : s->p.port;
    return 0;
}

void hr_http_stop(hr_server *s) {
    if (s->mhd) MHD_stop_daemon(s->mhd);
    s->mhd = NULL;
}
