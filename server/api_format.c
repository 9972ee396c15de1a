/* Response and chunk objects in OpenAI's shapes. */
#include "api_format.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json_util.h"
#include "tool_format.h"

void hr_fmt_init(hr_fmt *f, hr_server *s, hr_api_kind kind) {
    memset(f, 0, sizeof *f);
    f->s = s, f->kind = kind;
    snprintf(f->id, sizeof f->id, "%s-%016" PRIx64, kind == HR_API_CHAT ? "chatcmpl" : "cmpl", hr_server_next(s));
    f->created = (long long)time(NULL);
}

static cJSON *head(const hr_fmt *f, const char *object) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", f->id);
    cJSON_AddStringToObject(o, "object", object);
    cJSON_AddNumberToObject(o, "created", (double)f->created);
    cJSON_AddStringToObject(o, "model", f->s->model_id);
    return o;
}

cJSON *hr_fmt_usage(int32_t n_prompt, int32_t n_gen) {
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", n_prompt);
    cJSON_AddNumberToObject(u, "completion_tokens", n_gen);
    cJSON_AddNumberToObject(u, "total_tokens", n_prompt + n_gen);
    return u;
}

cJSON *hr_fmt_logprobs_new(const hr_fmt *f) {
    cJSON *lp = cJSON_CreateObject();
    if (f->kind == HR_API_CHAT) {
        cJSON_AddArrayToObject(lp, "content");
    } else {
        cJSON_AddArrayToObject(lp, "tokens");
        cJSON_AddArrayToObject(lp, "token_logprobs");
        cJSON_AddArrayToObject(lp, "top_logprobs");
        cJSON_AddArrayToObject(lp, "text_offset");
    }
    return lp;
}

/* A token's text as the client should see it (special tokens by name). */
static int piece(hr_fmt *f, int32_t id, char *buf, size_t cap) {
    int n = hearth_token_piece(f->s->model, id, true, buf, cap);
    return n < 0 ? 0 : n > (int)cap ? (int)cap : n;
}

static cJSON *chat_entry(hr_fmt *f, int32_t id, float lp) {
    char buf[256];
    int n = piece(f, id, buf, sizeof buf);
    cJSON *e = cJSON_CreateObject(), *bytes = cJSON_CreateArray();
    cJSON_AddItemToObject(e, "token", hr_json_str(buf, (size_t)n));
    cJSON_AddNumberToObject(e, "logprob", lp);
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(bytes, cJSON_CreateNumber((unsigned char)buf[i]));
    cJSON_AddItemToObject(e, "bytes", bytes);
    return e;
}

void hr_fmt_logprobs_add(hr_fmt *f, cJSON *lp, const hr_tok_lp *lps, int32_t n) {
    char buf[256];
    for (int32_t i = 0; i < n; i++) {
        const hr_tok_lp *t = &lps[i];
        if (f->kind == HR_API_CHAT) {
            cJSON *e = chat_entry(f, t->id, t->lp), *top = cJSON_AddArrayToObject(e, "top_logprobs");
            for (int32_t k = 0; k < t->n_top; k++) cJSON_AddItemToArray(top, chat_entry(f, t->top_id[k], t->top_lp[k]));
            cJSON_AddItemToArray(cJSON_GetObjectItem(lp, "content"), e);
            continue;
        }
        int len = piece(f, t->id, buf, sizeof buf);
        cJSON_AddItemToArray(cJSON_GetObjectItem(lp, "tokens"), hr_json_str(buf, (size_t)len));
        cJSON_AddItemToArray(cJSON_GetObjectItem(lp, "token_logprobs"), cJSON_CreateNumber(t->lp));
        cJSON_AddItemToArray(cJSON_GetObjectItem(lp, "text_offset"), cJSON_CreateNumber((double)f->text_offset));
        f->text_offset += (size_t)len;
        cJSON *top = cJSON_CreateObject();
        for (int32_t k = 0; k < t->n_top; k++) {
            int l = piece(f, t->top_id[k], buf, sizeof buf);
            cJSON *key = hr_json_str(buf, (size_t)l);
            /* Different tokens can share a text; the likelier one (listed first) wins. */
            if (key && !cJSON_GetObjectItemCaseSensitive(top, key->valuestring))
                cJSON_AddNumberToObject(top, key->valuestring, t->top_lp[k]);
            cJSON_Delete(key);
        }
        cJSON_AddItemToArray(cJSON_GetObjectItem(lp, "top_logprobs"), top);
    }
}

cJSON *hr_fmt_chunk(hr_fmt *f, const char *text, size_t len, bool role, bool lp_on, const hr_tok_lp *lps,
                    int32_t n_lps, const char *finish) {
    bool chat = f->kind == HR_API_CHAT;
    cJSON *o = head(f, chat ? "chat.completion.chunk" : "text_completion");
    cJSON *ch = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "choices"), ch);
    cJSON_AddNumberToObject(ch, "index", 0);
    if (chat) {
        cJSON *d = cJSON_AddObjectToObject(ch, "delta");
        if (role) cJSON_AddStringToObject(d, "role", "assistant");
        if (len || role) cJSON_AddItemToObject(d, "content", hr_json_str(text, len));
    } else {
        cJSON_AddItemToObject(ch, "text", hr_json_str(text, len));
    }
    if (lp_on && n_lps) {
        cJSON *lp = hr_fmt_logprobs_new(f);
        hr_fmt_logprobs_add(f, lp, lps, n_lps);
        cJSON_AddItemToObject(ch, "logprobs", lp);
    } else {
        cJSON_AddNullToObject(ch, "logprobs");
    }
    if (finish) cJSON_AddStringToObject(ch, "finish_reason", finish);
    else cJSON_AddNullToObject(ch, "finish_reason");
    return o;
}

cJSON *hr_fmt_usage_chunk(hr_fmt *f, int32_t n_prompt, int32_t n_gen) {
    cJSON *o = head(f, f->kind == HR_API_CHAT ? "chat.completion.chunk" : "text_completion");
    cJSON_AddArrayToObject(o, "choices");
    cJSON_AddItemToObject(o, "usage", hr_fmt_usage(n_prompt, n_gen));
    return o;
}

cJSON *hr_fmt_full(hr_fmt *f, hr_job *j, int32_t n_chunks) {
    bool chat = f->kind == HR_API_CHAT;
    size_t len = 0;
    int n_calls = 0;
    for (int32_t i = 0; i < n_chunks; i++) len += hr_job_chunk(j, i).len;
    char *text = malloc(len + 1);
    if (!text) return NULL;
    cJSON *lp = j->n_logprobs >= 0 ? hr_fmt_logprobs_new(f) : NULL;
    len = 0;
    for (int32_t i = 0; i < n_chunks; i++) {
        hr_chunk c = hr_job_chunk(j, i);
        memcpy(text + len, c.text, c.len);
        len += c.len;
        if (lp) hr_fmt_logprobs_add(f, lp, c.lps, c.n_lps);
    }
    cJSON *o = head(f, chat ? "chat.completion" : "text_completion"), *ch = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "choices"), ch);
    cJSON_AddNumberToObject(ch, "index", 0);
    if (chat) {
        cJSON *m = cJSON_AddObjectToObject(ch, "message");
        cJSON_AddStringToObject(m, "role", "assistant");
        if (j->tools) n_calls = hr_fmt_tool_message(f, j->tools, text, len, m);
        else cJSON_AddItemToObject(m, "content", hr_json_str(text, len));
    } else {
        cJSON_AddItemToObject(ch, "text", hr_json_str(text, len));
    }
    free(text);
    if (lp) cJSON_AddItemToObject(ch, "logprobs", lp);
    else cJSON_AddNullToObject(ch, "logprobs");
    cJSON_AddStringToObject(ch, "finish_reason", n_calls > 0 ? "tool_calls" : j->finish);
    cJSON_AddItemToObject(o, "usage", hr_fmt_usage(j->n_prompt, j->n_gen));
    return o;
}
