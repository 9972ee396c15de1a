/* Tool calls in chat.completion messages and chat.completion.chunk deltas. */
#include "tool_format.h"
#include <stdlib.h>
#include <string.h>
#include "json_util.h"

/* OpenAI's ids look like "call_<24 letters and digits>"; Mistral's templates want exactly
 * nine letters and digits, so their calls get such ids. */
static void call_id(hr_fmt *f, hr_tool_fmt fmt, char *out, size_t cap) {
    static const char A[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    size_t n = fmt == HR_TOOLFMT_MISTRAL ? 9 : 24, k = 0;
    if (fmt != HR_TOOLFMT_MISTRAL) memcpy(out, "call_", 5), k = 5;
    uint64_t r = hr_server_next(f->s);
    for (size_t i = 0; i < n && k + 1 < cap; i++) {
        if (i % 10 == 9) r = hr_server_next(f->s);
        out[k++] = A[r % 62], r /= 62;
    }
    out[k] = 0;
}

/* {"index"?, "id", "type": "function", "function": {"name", "arguments"}} */
static cJSON *call_json(hr_fmt *f, const hr_tool_spec *spec, const hr_tool_call *c, int index) {
    char id[40];
    cJSON *o = cJSON_CreateObject(), *fn;
    if (index >= 0) cJSON_AddNumberToObject(o, "index", index);
    if (!c->id) call_id(f, spec->fmt, id, sizeof id);
    cJSON_AddStringToObject(o, "id", c->id ? c->id : id);
    cJSON_AddStringToObject(o, "type", "function");
    fn = cJSON_AddObjectToObject(o, "function");
    cJSON_AddItemToObject(fn, "name", hr_json_str(c->name, (size_t)-1));
    cJSON_AddItemToObject(fn, "arguments", hr_json_str(c->arguments, (size_t)-1));
    return o;
}

int hr_fmt_tool_message(hr_fmt *f, const hr_tool_spec *spec, const char *text, size_t len, cJSON *msg) {
    char *content;
    hr_tool_call *calls;
    int n;
    if (hr_tool_reply_parse(spec, text, len, &content, &calls, &n)) return -1;
    if (content) cJSON_AddItemToObject(msg, "content", hr_json_str(content, (size_t)-1));
    else cJSON_AddNullToObject(msg, "content");
    if (n) {
        cJSON *arr = cJSON_AddArrayToObject(msg, "tool_calls");
        for (int i = 0; i < n; i++) cJSON_AddItemToArray(arr, call_json(f, spec, &calls[i], -1));
    }
    free(content);
    hr_tool_calls_free(calls, n);
    return n;
}

static int grow(hr_tool_stream *ts, const char *s, size_t n) {
    if (ts->len + n + 1 > ts->cap) {
        size_t cap = (ts->len + n + 1) * 2;
        char *p = realloc(ts->acc, cap);
        if (!p) return -1;
        ts->acc = p, ts->cap = cap;
    }
    memcpy(ts->acc + ts->len, s, n);
    ts->len += n;
    ts->acc[ts->len] = 0;
    return 0;
}

int hr_tool_stream_push(hr_tool_stream *ts, hr_fmt *f, const hr_tool_spec *spec, const hr_chunk *c, bool lp_on,
                        hr_event_fn add, void *ud) {
    if (grow(ts, c->text, c->len)) return -1;
    bool held;
    size_t safe = hr_tool_stream_safe(spec, ts->acc, ts->len, ts->sent, &held);
    size_t n = safe > ts->sent ? safe - ts->sent : 0;
    if (!n && !(lp_on && c->n_lps)) return 0;
    cJSON *ev = hr_fmt_chunk(f, ts->acc + ts->sent, n, false, lp_on, c->lps, c->n_lps, NULL);
    ts->sent += n;
    return add(ud, ev);
}

int hr_tool_stream_end(hr_tool_stream *ts, hr_fmt *f, const hr_tool_spec *spec, hr_event_fn add, void *ud, int *n_calls) {
    char *content;
    hr_tool_call *calls;
    int n, rc = 0;
    *n_calls = 0;
    if (hr_tool_reply_parse(spec, ts->acc ? ts->acc : "", ts->len, &content, &calls, &n)) return -1;
    /* What went out is always a prefix of the final content (the parser keeps the text
     * before a marker; without calls the content is the whole reply). */
    size_t clen = content ? strlen(content) : 0;
    if (clen > ts->sent) rc = add(ud, hr_fmt_chunk(f, content + ts->sent, clen - ts->sent, false, false, NULL, 0, NULL));
    for (int i = 0; !rc && i < n; i++) {
        cJSON *ev = hr_fmt_chunk(f, "", 0, false, false, NULL, 0, NULL);
        cJSON *d = ev ? cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(ev, "choices"), 0), "delta") : NULL;
        if (d) cJSON_AddItemToArray(cJSON_AddArrayToObject(d, "tool_calls"), call_json(f, spec, &calls[i], i));
        rc = add(ud, ev);
    }
    *n_calls = n;
    free(content);
    hr_tool_calls_free(calls, n);
    return rc;
}

void hr_tool_stream_free(hr_tool_stream *ts) {
    free(ts->acc);
    memset(ts, 0, sizeof *ts);
}
