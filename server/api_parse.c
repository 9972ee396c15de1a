/* Request bodies to jobs: field types and ranges, prompt, sampling, stops, limits. */
#include "api_parse.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "json_util.h"

#define MAX_STOPS 16

static int parse_stops(const cJSON *root, hr_job *j, hr_apierr *ae) {
    const cJSON *v = hr_json_field(root, "stop");
    if (!v) return 0;
    if (cJSON_IsString(v)) return hr_job_add_stop(j, v->valuestring, strlen(v->valuestring)) ? hr_apierr_set(ae, 500, NULL, NULL, "out of memory") : 0;
    if (!cJSON_IsArray(v)) return hr_apierr_set(ae, 400, "stop", "invalid_type", "'stop' must be a string or an array of strings");
    if (cJSON_GetArraySize(v) > MAX_STOPS)
        return hr_apierr_set(ae, 400, "stop", "invalid_value", "'stop' holds at most %d strings", MAX_STOPS);
    const cJSON *it;
    cJSON_ArrayForEach(it, v) {
        if (!cJSON_IsString(it))
            return hr_apierr_set(ae, 400, "stop", "invalid_type", "'stop' must be a string or an array of strings");
        if (hr_job_add_stop(j, it->valuestring, strlen(it->valuestring))) return hr_apierr_set(ae, 500, NULL, NULL, "out of memory");
    }
    return 0;
}

static int parse_sampling(hr_server *s, const cJSON *root, hr_job *j, hr_apierr *ae) {
    j->sp = s->p.sp;
    double d;
    int64_t i;
    bool has_seed = false;
    d = j->sp.temp;
    if (hr_json_num(root, "temperature", 0, 2, &d, ae)) return -1;
    j->sp.temp = (float)d;
    d = j->sp.top_p;
    if (hr_json_num(root, "top_p", 0, 1, &d, ae)) return -1;
    j->sp.top_p = (float)d;
    d = j->sp.min_p;
    if (hr_json_num(root, "min_p", 0, 1, &d, ae)) return -1;
    j->sp.min_p = (float)d;
    d = j->sp.repeat_penalty;
    if (hr_json_num(root, "repeat_penalty", -HUGE_VAL, HUGE_VAL, &d, ae)) return -1;
    j->sp.repeat_penalty = (float)d;
    i = j->sp.top_k;
    if (hr_json_int(root, "top_k", 0, 1 << 24, &i, NULL, ae)) return -1;
    j->sp.top_k = (int32_t)i;
    /* JSON numbers are doubles: integers are exact up to 2^53. */
    if (hr_json_int(root, "seed", -(INT64_C(1) << 53), INT64_C(1) << 53, &i, &has_seed, ae)) return -1;
    j->sp.seed = has_seed ? (uint64_t)i : s->p.seed_fixed ? s->p.sp.seed : hr_server_next(s);
    return hr_json_sampling_check(&j->sp, ae); /* the sampler's ranges, as the CLI's */
}

static int parse_limits(hr_server *s, hr_api_kind kind, const cJSON *root, hr_job *j, hr_apierr *ae) {
    int64_t n = 1, mt = s->p.n_predict;
    bool present;
    if (hr_json_int(root, "n", -(1 << 30), 1 << 30, &n, NULL, ae)) return -1;
    if (n != 1) return hr_apierr_set(ae, 400, "n", "invalid_value", "only n = 1 is supported");
    if (hr_json_int(root, "max_tokens", 1, 1 << 30, &mt, NULL, ae)) return -1;
    if (kind == HR_API_CHAT && hr_json_int(root, "max_completion_tokens", 1, 1 << 30, &mt, &present, ae)) return -1;
    j->max_tokens = (int32_t)mt;
    return hr_json_bool(root, "ignore_eos", &j->ignore_eos, ae);
}

static int parse_logprobs(hr_api_kind kind, const cJSON *root, hr_job *j, hr_apierr *ae) {
    int64_t n = -1;
    bool present = false;
    if (kind == HR_API_COMPLETION) {
        if (hr_json_int(root, "logprobs", 0, HR_MAX_TOP_LOGPROBS, &n, &present, ae)) return -1;
        j->n_logprobs = present ? (int32_t)n : -1;
        return 0;
    }
    bool on = false;
    if (hr_json_bool(root, "logprobs", &on, ae)) return -1;
    n = 0;
    if (hr_json_int(root, "top_logprobs", 0, HR_MAX_TOP_LOGPROBS, &n, &present, ae)) return -1;
    if (present && !on)
        return hr_apierr_set(ae, 400, "top_logprobs", "invalid_value", "'top_logprobs' needs 'logprobs': true");
    j->n_logprobs = on ? (int32_t)n : -1;
    return 0;
}

/* A completion prompt: a string, an array with one string, or an array of token ids. */
static int completion_prompt(hr_server *s, const cJSON *root, char **text, hr_job *j, hr_apierr *ae) {
    const cJSON *p = hr_json_field(root, "prompt");
    if (!p) return hr_apierr_set(ae, 400, "prompt", "missing", "'prompt' is required");
    if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1 && cJSON_IsString(cJSON_GetArrayItem(p, 0)))
        p = cJSON_GetArrayItem(p, 0);
    if (cJSON_IsString(p)) return (*text = strdup(p->valuestring)) ? 0 : hr_apierr_set(ae, 500, NULL, NULL, "out of memory");
    if (cJSON_IsArray(p) && cJSON_IsString(cJSON_GetArrayItem(p, 0)))
        return hr_apierr_set(ae, 400, "prompt", "invalid_value", "only one prompt per request is supported");
    int n = cJSON_IsArray(p) ? cJSON_GetArraySize(p) : 0;
    if (!n) return hr_apierr_set(ae, 400, "prompt", "invalid_type", "'prompt' must be a string or an array of token ids");
    if (!(j->prompt = malloc((size_t)n * sizeof *j->prompt))) return hr_apierr_set(ae, 500, NULL, NULL, "out of memory");
    const cJSON *it;
    cJSON_ArrayForEach(it, p) {
        double d = cJSON_IsNumber(it) ? it->valuedouble : -1;
        if (d < 0 || d >= s->n_vocab || d != (double)(int32_t)d)
            return hr_apierr_set(ae, 400, "prompt", "invalid_value",
                                 "'prompt' must be a string or an array of token ids below %d", s->n_vocab);
        j->prompt[j->n_prompt++] = (int32_t)d;
    }
    return 0;
}

static int tokenize(hr_server *s, const char *text, hr_job *j, hr_apierr *ae, const char *param) {
    hr_err e = {{0}};
    size_t n = 0;
    if (hearth_tokenize(s->model, text, strlen(text), true, true, &j->prompt, &n, &e))
        return hr_apierr_set(ae, 400, param, "invalid_value", "%s", e.msg);
    j->n_prompt = (int32_t)n;
    return 0;
}

static int fill(hr_server *s, hr_api_kind kind, const cJSON *root, hr_gen_req *out, hr_job *j, hr_apierr *ae) {
    const char *model = NULL, *param = kind == HR_API_CHAT ? "messages" : "prompt";
    if (hr_json_string(root, "model", &model, ae) || hr_json_bool(root, "stream", &out->stream, ae)) return -1;
    const cJSON *so = hr_json_field(root, "stream_options");
    if (so && !cJSON_IsObject(so)) return hr_apierr_set(ae, 400, "stream_options", "invalid_type", "'stream_options' must be an object");
    if (so && hr_json_bool(so, "include_usage", &out->include_usage, ae)) return -1;
    if (parse_limits(s, kind, root, j, ae) || parse_sampling(s, root, j, ae) || parse_logprobs(kind, root, j, ae) ||
        parse_stops(root, j, ae))
        return -1;
    char *text = NULL;
    int rc;
    hr_tools_req tr = {0};
    if (kind == HR_API_CHAT && hr_tools_parse(root, &tr, ae)) return -1;
    if (kind == HR_API_CHAT && hr_tools_needed(&tr, hr_json_field(root, "messages"))) {
        rc = hr_tools_prompt_fit(s, root, &tr, j->max_tokens, &text, &j->tools, &out->trimmed, ae);
        /* Call markers may be special tokens, which the reply's text must then show. */
        j->special_text = j->tools != NULL;
        for (const char *const *st = hr_chat_stops(s->tmpl); !rc && st && *st; st++)
            if (hr_job_add_stop(j, *st, strlen(*st))) rc = hr_apierr_set(ae, 500, NULL, NULL, "out of memory");
    } else if (kind == HR_API_CHAT) {
        rc = hr_chat_prompt_fit(s, root, j->max_tokens, &text, &out->trimmed, ae);
        for (const char *const *st = hr_chat_stops(s->tmpl); !rc && st && *st; st++)
            if (hr_job_add_stop(j, *st, strlen(*st))) rc = hr_apierr_set(ae, 500, NULL, NULL, "out of memory");
    } else {
        rc = completion_prompt(s, root, &text, j, ae);
    }
    if (!rc) rc = hr_constrain_parse(root, &tr, j, ae);
    if (!rc && text) rc = tokenize(s, text, j, ae, param);
    free(text);
    if (rc) return -1;
    if (!j->n_prompt) return hr_apierr_set(ae, 400, param, "invalid_value", "the prompt is empty");
    if (j->n_prompt > s->n_ctx)
        return hr_apierr_set(ae, 400, param, "context_length_exceeded", "prompt has %d tokens, the context holds %d",
                             j->n_prompt, s->n_ctx);
    /* A default reply length never asks for more than the context leaves. */
    if (!hr_json_field(root, "max_tokens") && !hr_json_field(root, "max_completion_tokens") &&
        j->max_tokens > s->n_ctx - j->n_prompt)
        j->max_tokens = s->n_ctx > j->n_prompt ? s->n_ctx - j->n_prompt : 1;
    return 0;
}

int hr_gen_parse(hr_server *s, hr_api_kind kind, const char *body, size_t len, hr_gen_req *out, hr_apierr *ae) {
    memset(out, 0, sizeof *out);
    out->kind = kind;
    cJSON *root = hr_json_parse_body(body, len, ae);
    if (!root) return -1;
    hr_job *j = hr_job_new();
    int rc = !j ? hr_apierr_set(ae, 500, NULL, NULL, "out of memory")
             : !cJSON_IsObject(root) ? hr_apierr_set(ae, 400, NULL, "invalid_json", "the body must be a JSON object")
                                      : fill(s, kind, root, out, j, ae);
    cJSON_Delete(root);
    if (rc) {
        hr_job_unref(j);
        return -1;
    }
    out->job = j;
    return 0;
}
