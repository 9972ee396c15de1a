/* GET /health, /v1/models, /props, /metrics and the chat page at /. */
#include <stdlib.h>
#include <string.h>
#include "routes.h"
#include "web_page.h"

enum MHD_Result hr_api_health(hr_http_req *r) {
    int busy, queued;
    hr_metrics_get_load(&r->srv->metrics, &busy, &queued);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", "ok");
    cJSON_AddNumberToObject(o, "slots_total", r->srv->metrics.n_slots);
    cJSON_AddNumberToObject(o, "slots_idle", r->srv->metrics.n_slots - busy);
    cJSON_AddNumberToObject(o, "slots_processing", busy);
    cJSON_AddNumberToObject(o, "queued", queued);
    return hr_http_json(r, 200, o);
}

enum MHD_Result hr_api_models(hr_http_req *r) {
    hr_server *s = r->srv;
    cJSON *o = cJSON_CreateObject(), *m = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "data"), m);
    cJSON_AddStringToObject(m, "id", s->model_id);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", (double)s->started);
    cJSON_AddStringToObject(m, "owned_by", "hearth");
    cJSON *meta = cJSON_AddObjectToObject(m, "meta");
    const hearth_model_info *in = hearth_model_get_info(s->model);
    cJSON_AddStringToObject(meta, "arch", in->arch);
    cJSON_AddNumberToObject(meta, "n_vocab", in->n_vocab);
    cJSON_AddNumberToObject(meta, "n_ctx_train", in->n_ctx_train);
    cJSON_AddNumberToObject(meta, "n_ctx", s->n_ctx);
    cJSON_AddNumberToObject(meta, "slots", s->metrics.n_slots);
    cJSON_AddStringToObject(meta, "chat_template", hr_chat_name(s->tmpl));
    cJSON_AddStringToObject(meta, "ffn_mode", hearth_ffn_mode_name(hearth_ctx_ffn_mode(s->ctx)));
    return hr_http_json(r, 200, o);
}

/* llama-server's GET /props, the part clients read: the defaults a request gets for the fields it
 * leaves out, and the context of one slot. The chat page shows these as its settings' defaults. */
enum MHD_Result hr_api_props(hr_http_req *r) {
    const hr_server *s = r->srv;
    cJSON *o = cJSON_CreateObject(), *d = cJSON_AddObjectToObject(o, "default_generation_settings");
    cJSON_AddNumberToObject(d, "n_ctx", s->n_ctx);
    cJSON *p = cJSON_AddObjectToObject(d, "params");
    cJSON_AddNumberToObject(p, "n_predict", s->p.n_predict);
    cJSON_AddNumberToObject(p, "temperature", s->p.sp.temp);
    cJSON_AddNumberToObject(p, "top_k", s->p.sp.top_k);
    cJSON_AddNumberToObject(p, "top_p", s->p.sp.top_p);
    cJSON_AddNumberToObject(p, "min_p", s->p.sp.min_p);
    cJSON_AddNumberToObject(p, "repeat_penalty", s->p.sp.repeat_penalty);
    cJSON_AddNumberToObject(p, "repeat_last_n", s->p.sp.repeat_last_n);
    cJSON_AddNumberToObject(o, "total_slots", s->metrics.n_slots);
    cJSON_AddStringToObject(o, "model_path", s->model_id);
    return hr_http_json(r, 200, o);
}

enum MHD_Result hr_api_metrics(hr_http_req *r) {
    char *text = hr_metrics_render(&r->srv->metrics);
    if (!text) return MHD_NO;
    struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!resp) { free(text); return MHD_NO; }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
    return hr_http_queue(r, 200, resp);
}

enum MHD_Result hr_api_page(hr_http_req *r) {
    return hr_http_static(r, 200, "text/html; charset=utf-8", hr_web_index_html, hr_web_index_html_len);
}
