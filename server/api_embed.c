/* POST /v1/embeddings (OpenAI's shape) and /embedding (llama-server's): each input's hidden
 * states after the output norm, mean-pooled over its tokens and scaled to unit length, as
 * llama-server does for a model without a pooling head. The engine computes them between
 * generation steps on a free slot's sequence (hr_sched_submit_embed). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "json_util.h"
#include "routes.h"

#define MAX_INPUTS 256

typedef struct embed_req {
    hr_server *s;
    bool oai, base64;
    int n;
    hr_job **jobs;
} embed_req;

static void wake(void *ud) { hr_wait_signal(ud); }

static void drop(void *ud) {
    embed_req *q = ud;
    for (int i = 0; i < q->n; i++) {
        hr_job_set_notify(q->jobs[i], NULL, NULL);
        hr_sched_cancel(q->s->sched, q->jobs[i]);
        hr_job_unref(q->jobs[i]);
    }
    free(q->jobs);
    free(q);
}

/* Tokens of one input: a string, or an array of token ids. */
static int input_tokens(hr_server *s, const cJSON *in, int idx, hr_job *j, hr_apierr *ae) {
    if (cJSON_IsString(in)) {
        hr_err e = {{0}};
        size_t n = 0;
        if (hearth_tokenize(s->model, in->valuestring, strlen(in->valuestring), true, true, &j->prompt, &n, &e))
            return hr_apierr_set(ae, 400, "input", "invalid_value", "%s", e.msg);
        j->n_prompt = (int32_t)n;
    } else if (cJSON_IsArray(in)) {
        int n = cJSON_GetArraySize(in);
        if (n && !(j->prompt = malloc((size_t)n * sizeof *j->prompt))) return hr_apierr_set(ae, 500, NULL, NULL, "out of memory");
        const cJSON *t;
        cJSON_ArrayForEach(t, in) {
            double d = cJSON_IsNumber(t) ? t->valuedouble : -1;
            if (d < 0 || d >= s->n_vocab || d != (double)(int32_t)d)
                return hr_apierr_set(ae, 400, "input", "invalid_value", "input %d: token ids must be integers below %d", idx,
                                     s->n_vocab);
            j->prompt[j->n_prompt++] = (int32_t)d;
        }
    } else {
        return hr_apierr_set(ae, 400, "input", "invalid_type",
                             "'input' must be a string, an array of strings, or token ids (an array, or arrays of them)");
    }
    if (!j->n_prompt) return hr_apierr_set(ae, 400, "input", "invalid_value", "input %d is empty", idx);
    if (j->n_prompt > s->n_ctx)
        return hr_apierr_set(ae, 400, "input", "context_length_exceeded", "input %d has %d tokens, the context holds %d", idx,
                             j->n_prompt, s->n_ctx);
    return 0;
}

/* One input (a string or token ids) or a list of them. */
static bool is_list(const cJSON *in) {
    if (!cJSON_IsArray(in)) return false;
    const cJSON *first = cJSON_GetArrayItem(in, 0);
    return first && (cJSON_IsString(first) || cJSON_IsArray(first));
}

static int parse(hr_server *s, const cJSON *root, bool oai, embed_req *q, hr_apierr *ae) {
    const cJSON *in = hr_json_field(root, "input");
    if (!in && !oai) in = hr_json_field(root, "content");
    if (!in) return hr_apierr_set(ae, 400, "input", "missing", "'input' is required");
    const char *fmt = "float";
    if (hr_json_string(root, "encoding_format", &fmt, ae)) return -1;
    if (strcmp(fmt, "float") && strcmp(fmt, "base64"))
        return hr_apierr_set(ae, 400, "encoding_format", "invalid_value", "'encoding_format' must be \"float\" or \"base64\"");
    q->base64 = !strcmp(fmt, "base64");
    bool list = is_list(in);
    int n = list ? cJSON_GetArraySize(in) : 1;
    if (n > MAX_INPUTS) return hr_apierr_set(ae, 400, "input", "invalid_value", "at most %d inputs per request", MAX_INPUTS);
    if (!(q->jobs = calloc((size_t)n, sizeof *q->jobs))) return hr_apierr_set(ae, 500, NULL, NULL, "out of memory");
    bool strings = list && cJSON_IsString(cJSON_GetArrayItem(in, 0));
    for (int i = 0; i < n; i++) {
        const cJSON *it = list ? cJSON_GetArrayItem(in, i) : in;
        if (list && (strings ? !cJSON_IsString(it) : !cJSON_IsArray(it)))
            return hr_apierr_set(ae, 400, "input", "invalid_type", "'input': a list holds only strings or only token id arrays");
        if (!(q->jobs[i] = hr_job_new())) return hr_apierr_set(ae, 500, NULL, NULL, "out of memory");
        q->n++;
        if (input_tokens(s, it, i, q->jobs[i], ae)) return -1;
    }
    return 0;
}

static char *base64(const unsigned char *p, size_t n) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        *o++ = tab[v >> 18 & 63], *o++ = tab[v >> 12 & 63];
        *o++ = i + 1 < n ? tab[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? tab[v & 63] : '=';
    }
    *o = 0;
    return out;
}

/* The unit-length vector of job j's mean hidden state. */
static cJSON *vector(const embed_req *q, hr_job *j) {
    hr_chunk c = hr_job_chunk(j, 0);
    size_t d = c.len / sizeof(float);
    float *v = malloc(c.len ? c.len : 1);
    if (!v) return NULL;
    memcpy(v, c.text, c.len);
    double norm = 0;
    for (size_t k = 0; k < d; k++) norm += (double)v[k] * v[k];
    norm = sqrt(norm);
    for (size_t k = 0; norm > 0 && k < d; k++) v[k] = (float)(v[k] / norm);
    cJSON *out = NULL;
    if (q->base64) {
        char *b = base64((const unsigned char *)v, c.len); /* little-endian floats, as OpenAI */
        out = b ? cJSON_CreateString(b) : NULL;
        free(b);
    } else {
        out = cJSON_CreateFloatArray(v, (int)d);
    }
    free(v);
    return out;
}

static cJSON *answer(hr_http_req *r, const embed_req *q) {
    cJSON *data = cJSON_CreateArray();
    int32_t tokens = 0;
    for (int i = 0; i < q->n; i++) {
        cJSON *e = cJSON_CreateObject(), *v = vector(q, q->jobs[i]);
        if (q->oai) {
            cJSON_AddStringToObject(e, "object", "embedding");
            cJSON_AddItemToObject(e, "embedding", v);
        } else { /* llama-server: one pooled vector, inside an array */
            cJSON *outer = cJSON_CreateArray();
            cJSON_AddItemToArray(outer, v);
            cJSON_AddItemToObject(e, "embedding", outer);
        }
        cJSON_AddNumberToObject(e, "index", i);
        cJSON_AddItemToArray(data, e);
        tokens += q->jobs[i]->n_prompt;
    }
    r->log->n_prompt = tokens;
    if (!q->oai) return data;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON_AddItemToObject(o, "data", data);
    cJSON_AddStringToObject(o, "model", r->srv->model_id);
    cJSON *u = cJSON_AddObjectToObject(o, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", tokens);
    cJSON_AddNumberToObject(u, "total_tokens", tokens);
    return o;
}

static enum MHD_Result poll_embed(hr_http_req *r, void *ud, bool *again) {
    embed_req *q = ud;
    for (int i = 0; i < q->n; i++) {
        bool done = false;
        hr_job_wait(q->jobs[i], INT32_MAX, 0, &done);
        if (done && !q->jobs[i]->finish) {
            hr_apierr ae;
            hr_apierr_set(&ae, q->jobs[i]->err_status ? q->jobs[i]->err_status : 500, NULL, NULL, "%s", q->jobs[i]->err);
            return hr_http_error(r, &ae);
        }
        if (!done) {
            if (hr_http_peer_gone(r->conn)) return MHD_NO;
            *again = true;
            return MHD_YES;
        }
    }
    r->log->t_end = hr_now_s();
    return hr_http_json(r, 200, answer(r, q));
}

static enum MHD_Result embed(hr_http_req *r, bool oai) {
    hr_apierr ae;
    cJSON *root = hr_json_parse_body(r->body, r->len, &ae);
    if (!root) return hr_http_error(r, &ae);
    embed_req *q = calloc(1, sizeof *q);
    int rc = !q ? hr_apierr_set(&ae, 500, NULL, NULL, "out of memory")
             : !cJSON_IsObject(root) ? hr_apierr_set(&ae, 400, NULL, "invalid_json", "the body must be a JSON object")
                                      : parse(r->srv, root, oai, q, &ae);
    cJSON_Delete(root);
    hr_wait *w = rc ? NULL : hr_http_wait(r);
    if (!rc && !w) rc = hr_apierr_set(&ae, 500, NULL, NULL, "out of memory");
    if (q) q->s = r->srv, q->oai = oai;
    for (int i = 0; !rc && i < q->n; i++) {
        hr_job_set_notify(q->jobs[i], wake, w);
        if (hr_sched_submit_embed(r->srv->sched, q->jobs[i])) rc = hr_apierr_set(&ae, 503, NULL, NULL, "the server is shutting down");
    }
    if (rc) {
        if (q) drop(q);
        return hr_http_error(r, &ae);
    }
    return hr_http_defer(r, poll_embed, drop, q);
}

enum MHD_Result hr_api_embeddings(hr_http_req *r) { return embed(r, true); }
enum MHD_Result hr_api_embedding(hr_http_req *r) { return embed(r, false); }
