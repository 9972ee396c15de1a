/* The route table; CORS preflights; the API key check. */
#include "routes.h"
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct route {
    const char *path, *method;
    enum MHD_Result (*fn)(hr_http_req *r);
    bool auth; /* needs the API key when one is set */
} route;

static const route routes[] = {
    {"/v1/completions", "POST", hr_api_completions, true},
    {"/v1/chat/completions", "POST", hr_api_chat, true},
    {"/v1/embeddings", "POST", hr_api_embeddings, true},
    {"/embedding", "POST", hr_api_embedding, true}, /* llama-server's own shape */
    {"/v1/models", "GET", hr_api_models, true},
    {"/props", "GET", hr_api_props, true},
    {"/metrics", "GET", hr_api_metrics, true},
    {"/health", "GET", hr_api_health, false},
    {"/", "GET", hr_api_page, false},
};

/* Compares in time independent of where the strings differ. */
static bool same_secret(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    unsigned char d = la != lb;
    for (size_t i = 0; i < la; i++) d |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
    return d == 0;
}

static bool authorized(const hr_http_req *r) {
    const char *key = r->srv->p.api_key;
    if (!key) return true;
    const char *h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    /* The scheme name is case-insensitive (RFC 9110 11.1). */
    if (!h || strncasecmp(h, "Bearer", 6) || (h[6] != ' ' && h[6] != '\t')) return false;
    h += 7;
    while (*h == ' ' || *h == '\t') h++;
    return same_secret(h, key);
}

/* A browser's CORS preflight: which methods and headers the real request may use. No key
 * is needed (browsers send none with a preflight). */
static enum MHD_Result preflight(hr_http_req *r, const route *hit) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    const char *want = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Access-Control-Request-Headers");
    MHD_add_response_header(resp, "Access-Control-Allow-Methods",
                            !strcmp(hit->method, "GET") ? "GET, HEAD, OPTIONS" : "POST, OPTIONS");
    MHD_add_response_header(resp, "Access-Control-Allow-Headers", want && *want ? want : "Authorization, Content-Type");
    MHD_add_response_header(resp, "Access-Control-Max-Age", "86400");
    return hr_http_queue(r, 204, resp);
}

enum MHD_Result hr_route(hr_http_req *r) {
    const route *hit = NULL;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (!strcmp(r->url, routes[i].path)) { hit = &routes[i]; break; }
    hr_apierr ae;
    if (!hit) {
        hr_apierr_set(&ae, 404, NULL, "not_found", "no route %s %s", r->method, r->url);
        return hr_http_error(r, &ae);
    }
    r->endpoint = hit->path;
    if (!strcmp(r->method, "OPTIONS")) return preflight(r, hit);
    bool head = !strcmp(hit->method, "GET") && !strcmp(r->method, "HEAD");
    if (strcmp(r->method, hit->method) && !head) {
        hr_apierr_set(&ae, 405, NULL, "method_not_allowed", "%s needs %s, not %s", r->url, hit->method, r->method);
        cJSON *body = hr_apierr_json(&ae);
        char *text = body ? cJSON_PrintUnformatted(body) : NULL;
        cJSON_Delete(body);
        if (!text) return MHD_NO;
        struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
        if (!resp) { free(text); return MHD_NO; }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, hit->method);
        return hr_http_queue(r, 405, resp);
    }
    if (hit->auth && !authorized(r)) {
        hr_apierr_set(&ae, 401, NULL, "invalid_api_key", "missing or wrong API key (Authorization: Bearer KEY)");
        return hr_http_error(r, &ae);
    }
    return hit->fn(r);
}
