/* The libmicrohttpd daemon: a few epoll event-loop threads serve every connection, so idle
 * connections cost a socket, not a thread. Request bodies are collected up to --max-body,
 * then routed; handlers that wait for the engine defer or suspend (waker.h). Connections
 * that have not sent a whole request get a short timeout; per-address and total connection
 * limits keep one client from taking every socket. One log line per request. */
#define _GNU_SOURCE /* POLLRDHUP */
#include "http.h"
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include "routes.h"

#define HEADER_TIMEOUT_S 10 /* a connection without a complete request, or idle between requests */
#define POOL_THREADS 4
#define MAX_CONNS_CAP 16384

/* One request's state (libmicrohttpd's per-request pointer). */
struct hr_http_state {
    char *buf; /* the body so far */
    size_t len, cap;
    bool too_large;
    size_t discarded;
    hr_http_log log;
    char method[16], url[200]; /* for the log line */
    hr_wait *wait;
    hr_http_poll_fn poll; /* deferred answer */
    void (*drop)(void *ud);
    void *ud;
};

double hr_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

bool hr_http_peer_gone(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return false;
    struct pollfd p = {ci->connect_fd, POLLRDHUP, 0};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* --cors: "*" allows every origin; else a comma-separated list, each echoed when it is the
 * request's Origin. */
static void add_cors(hr_http_req *r, struct MHD_Response *resp) {
    const char *allow = r->srv->p.cors ? r->srv->p.cors : "*";
    if (!*allow) return;
    if (!strcmp(allow, "*")) {
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", "*");
        return;
    }
    const char *origin = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Origin");
    MHD_add_response_header(resp, "Vary", "Origin");
    if (!origin) return;
    size_t n = strlen(origin);
    for (const char *p = allow; *p;) {
        const char *end = strchr(p, ',');
        size_t k = end ? (size_t)(end - p) : strlen(p);
        while (k && *p == ' ') p++, k--;
        while (k && p[k - 1] == ' ') k--;
        if (k == n && !strncmp(p, origin, n)) {
            MHD_add_response_header(resp, "Access-Control-Allow-Origin", origin);
            return;
        }
        if (!end) break;
        p = end + 1;
    }
}

enum MHD_Result hr_http_queue(hr_http_req *r, int status, struct MHD_Response *resp) {
    if (!resp) return MHD_NO;
    add_cors(r, resp);
    hr_metrics_request(&r->srv->metrics, r->endpoint, status);
    if (r->log) r->log->status = status;
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

hr_wait *hr_http_wait(hr_http_req *r) {
    if (!r->st->wait) r->st->wait = hr_wait_new(r->srv->waker, r->conn);
    return r->st->wait;
}

static hr_http_req make_req(hr_server *s, struct MHD_Connection *c, const char *method, const char *url,
                            struct hr_http_state *st) {
    hr_http_req r = {s, c, method, url, st->buf ? st->buf : "", st->len, "other", &st->log, st};
    if (st->buf) st->buf[st->len] = 0;
    return r;
}

/* Runs the deferred answer once; suspends the connection while there is nothing to send. */
static enum MHD_Result run_deferred(hr_http_req *r) {
    struct hr_http_state *st = r->st;
    enum MHD_Result rc;
    for (int tries = 0;; tries++) {
        bool again = false;
        rc = st->poll(r, st->ud, &again);
        if (rc == MHD_NO) return MHD_NO;
        if (!again) break;
        if (hr_wait_suspend(st->wait)) return MHD_YES;
        /* Not suspended: news arrived since the poll (look again), or the server is stopping
         * (its jobs have all ended, so the next poll answers; the bound is a safety net).
         * libmicrohttpd would not call back by itself for a request that has no response. */
        if (tries == 1000) return MHD_NO;
    }
    st->poll = NULL;
    st->drop(st->ud);
    st->drop = NULL, st->ud = NULL;
    return rc;
}

enum MHD_Result hr_http_defer(hr_http_req *r, hr_http_poll_fn poll, void (*drop)(void *ud), void *ud) {
    struct hr_http_state *st = r->st;
    if (!hr_http_wait(r)) {
        drop(ud);
        return MHD_NO;
    }
    st->poll = poll, st->drop = drop, st->ud = ud;
    return run_deferred(r);
}

static enum MHD_Result too_large(hr_server *s, struct MHD_Connection *c, const char *url, struct hr_http_state *st) {
    hr_http_req r = make_req(s, c, "", url, st);
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
static bool take(struct hr_http_state *b, const char *data, size_t n, size_t max) {
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

static unsigned long_timeout(const hr_server *s) { return s->p.timeout_s > 0 ? (unsigned)s->p.timeout_s : 600; }
static unsigned short_timeout(const hr_server *s) {
    unsigned l = long_timeout(s);
    return l < HEADER_TIMEOUT_S ? l : HEADER_TIMEOUT_S;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                 const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    hr_server *s = cls;
    struct hr_http_state *st = *con_cls;
    if (!st) {
        if (!(st = calloc(1, sizeof *st))) return MHD_NO;
        st->log.n_prompt = st->log.n_gen = -1;
        snprintf(st->method, sizeof st->method, "%s", method);
        snprintf(st->url, sizeof st->url, "%s", url);
        *con_cls = st;
        /* The headers are in: the request may now take as long as --timeout allows. */
        MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, long_timeout(s));
        if (declared_too_large(c, s->p.max_body)) {
            st->too_large = true;
            return too_large(s, c, url, st);
        }
        return MHD_YES;
    }
    if (*upload_size) {
        bool ok = take(st, upload, *upload_size, s->p.max_body);
        *upload_size = 0;
        return ok ? MHD_YES : MHD_NO;
    }
    hr_http_req r = make_req(s, c, method, url, st);
    if (st->poll) return run_deferred(&r);
    if (st->too_large) return too_large(s, c, url, st);
    st->log.t_start = hr_now_s();
    return hr_route(&r);
}

/* Routine polls are not logged when they succeed (as llama-server). */
static bool quiet_route(const char *url, int status) {
    static const char *const quiet[] = {"/health", "/metrics", "/props", "/v1/models", NULL};
    if (status < 200 || status >= 300) return false;
    for (int i = 0; quiet[i]; i++)
        if (!strcmp(url, quiet[i])) return true;
    return false;
}

static void log_line(hr_server *s, struct MHD_Connection *c, const struct hr_http_state *st,
                     enum MHD_RequestTerminationCode toe) {
    const hr_http_log *l = &st->log;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    char addr[INET6_ADDRSTRLEN] = "?";
    if (ci && ci->client_addr) {
        const struct sockaddr *sa = ci->client_addr;
        if (sa->sa_family == AF_INET) inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, addr, sizeof addr);
        else if (sa->sa_family == AF_INET6) inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, addr, sizeof addr);
    }
    char gen[256] = "";
    double now = hr_now_s(), t0 = l->t_start > 0 ? l->t_start : now;
    double end = l->t_end > 0 ? l->t_end : now;
    if (l->n_prompt >= 0) {
        double first = l->t_first > 0 ? l->t_first : end;
        double tg = end - first;
        int k = snprintf(gen, sizeof gen, " | prompt %d tok %.1f ms", l->n_prompt, (first - t0) * 1e3);
        if (k > 0 && k < (int)sizeof gen && l->n_gen >= 0)
            k += snprintf(gen + k, sizeof gen - (size_t)k, ", gen %d tok %.1f ms", l->n_gen, tg * 1e3);
        if (k > 0 && k < (int)sizeof gen && l->n_gen > 1 && tg > 0)
            k += snprintf(gen + k, sizeof gen - (size_t)k, " (%.1f tok/s)", (l->n_gen - 1) / tg);
        if (k > 0 && k < (int)sizeof gen && l->trimmed > 0)
            snprintf(gen + k, sizeof gen - (size_t)k, " | %d oldest message%s left out to fit the context", l->trimmed,
                     l->trimmed == 1 ? "" : "s");
    }
    const char *why = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? ""
                      : toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ? " (timed out)"
                      : toe == MHD_REQUEST_TERMINATED_CLIENT_ABORT || toe == MHD_REQUEST_TERMINATED_READ_ERROR
                          ? " (client left)"
                      : toe == MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN ? " (shutdown)"
                                                                       : " (connection closed)";
    fprintf(s->p.log, "hearth serve: %s %s %s %d%s | total %.1f ms%s\n", addr, st->method, st->url,
            l->status, why, (now - t0) * 1e3, gen);
    fflush(s->p.log);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    hr_server *s = cls;
    struct hr_http_state *st = *con_cls;
    *con_cls = NULL;
    if (!st) return;
    if (st->drop) st->drop(st->ud);
    if (s->p.log && st->url[0] && !quiet_route(st->url, st->log.status)) log_line(s, c, st, toe);
    hr_wait_unref(st->wait);
    free(st->buf);
    free(st);
    /* Back to the short timeout until the next request's headers are in. */
    if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK) MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, short_timeout(s));
}

/* Connections allowed at once: as many as the open-file limit leaves room for (raised to
 * its hard limit first), up to a cap. */
static unsigned conn_limit(const hr_server *s) {
    if (s->p.max_conns > 0) return (unsigned)s->p.max_conns;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl)) return 1000;
    if (rl.rlim_cur < rl.rlim_max) {
        struct rlimit up = rl;
        up.rlim_cur = rl.rlim_max > 65536 ? 65536 : rl.rlim_max;
        if (up.rlim_cur > rl.rlim_cur && !setrlimit(RLIMIT_NOFILE, &up)) rl = up;
    }
    rlim_t n = rl.rlim_cur > 128 ? rl.rlim_cur - 96 : 32; /* model file, logs, epoll and pipes */
    return n > MAX_CONNS_CAP ? MAX_CONNS_CAP : (unsigned)n;
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
    if (!(s->waker = hr_waker_new(e))) return -1;
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME;
    if (v6) flags |= MHD_USE_IPv6;
    unsigned per_ip = s->p.conn_per_ip > 0 ? (unsigned)s->p.conn_per_ip : 0;
    s->mhd = MHD_start_daemon(flags, (uint16_t)s->p.port, NULL, NULL, on_access, s,
                              MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                              MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                              MHD_OPTION_THREAD_POOL_SIZE, (unsigned)POOL_THREADS,
                              MHD_OPTION_CONNECTION_LIMIT, conn_limit(s),
                              MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip,
                              MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u,
                              /* Until a request's headers are in; then --timeout (on_access).
                               * Streams waiting for tokens are suspended (no timeout) and send
                               * a keep-alive comment every 15 s. */
                              MHD_OPTION_CONNECTION_TIMEOUT, short_timeout(s),
                              MHD_OPTION_END);
    if (!s->mhd) return hr_errf(e, "cannot listen on %s port %d (in use, or not an address of this machine?)", s->host, s->p.port);
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di && di->port ? di->port : s->p.port;
    return 0;
}

void hr_http_stop(hr_server *s) {
    /* Nothing may stay suspended when the daemon stops. */
    hr_waker_stop(s->waker);
    if (s->mhd) MHD_stop_daemon(s->mhd);
    s->mhd = NULL;
    hr_waker_free(s->waker);
    s->waker = NULL;
}
