/* The model's reply split into content and tool calls, whole or while it streams. */
#include <stdlib.h>
#include <string.h>
#include "chat/chat_buf.h"
#include "tools.h"

static const char HERMES_MARK[] = "<tool_call>", HERMES_END[] = "</tool_call>";
static const char MISTRAL_MARK[] = "[TOOL_CALLS]", MISTRAL_ARGS[] = "[ARGS]";
static const char PYTHON_TAG[] = "<|python_tag|>";

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static const char *skip_ws(const char *p, const char *end) {
    while (p < end && is_ws(*p)) p++;
    return p;
}

static bool starts(const char *p, const char *end, const char *lit) {
    size_t n = strlen(lit);
    return (size_t)(end - p) >= n && !memcmp(p, lit, n);
}

static const char *find(const char *p, const char *end, const char *lit) {
    for (; p < end; p++)
        if (starts(p, end, lit)) return p;
    return NULL;
}

static bool declared(const hr_tool_spec *spec, const char *name) {
    for (int i = 0; i < spec->n_names; i++)
        if (!strcmp(spec->names[i], name)) return true;
    return false;
}

typedef struct calls_out {
    hr_tool_call *v;
    int n, cap;
    bool oom;
} calls_out;

/* Adds a call of a declared tool; args: an object, or text holding one. false: not a call. */
static bool add_call(const hr_tool_spec *spec, calls_out *co, const char *name, size_t name_len, const cJSON *args,
                     const cJSON *id) {
    char *nm = strndup(name, name_len);
    cJSON *parsed = cJSON_IsString(args) ? cJSON_Parse(args->valuestring) : NULL;
    const cJSON *a = parsed ? parsed : args;
    bool ok = nm && declared(spec, nm) && cJSON_IsObject(a);
    if (ok && co->n == co->cap) {
        int cap = co->cap ? 2 * co->cap : 4;
        hr_tool_call *v = realloc(co->v, (size_t)cap * sizeof *v);
        if (v) co->v = v, co->cap = cap;
        else co->oom = true, ok = false;
    }
    if (ok) {
        hr_tool_call *c = &co->v[co->n++];
        c->name = nm, nm = NULL;
        c->arguments = cJSON_PrintUnformatted(a);
        c->id = cJSON_IsString(id) && *id->valuestring ? strdup(id->valuestring) : NULL;
        if (!c->arguments || (cJSON_IsString(id) && *id->valuestring && !c->id)) co->oom = true;
    }
    free(nm);
    cJSON_Delete(parsed);
    return ok;
}

/* {"name": ..., key: {...}} (key "arguments", or for Llama 3 also "parameters"). */
static bool add_obj(const hr_tool_spec *spec, calls_out *co, const cJSON *o) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name"), *args = cJSON_GetObjectItemCaseSensitive(o, "arguments");
    if (!args) args = cJSON_GetObjectItemCaseSensitive(o, "parameters");
    if (!cJSON_IsObject(o) || !cJSON_IsString(name) || !args) return false;
    return add_call(spec, co, name->valuestring, strlen(name->valuestring), args, cJSON_GetObjectItemCaseSensitive(o, "id"));
}

/* One JSON value at p; *next: just after it. NULL when p holds none. */
static cJSON *json_at(const char *p, const char *end, const char **next) {
    const char *e = NULL;
    cJSON *v = cJSON_ParseWithLengthOpts(p, (size_t)(end - p), &e, false);
    *next = v ? e : p;
    return v;
}

/* <tool_call> {...} </tool_call>, repeated. Returns where parsing stopped. */
static const char *parse_hermes(const hr_tool_spec *spec, calls_out *co, const char *p, const char *end) {
    while (starts(p, end, HERMES_MARK)) {
        const char *q;
        cJSON *o = json_at(skip_ws(p + strlen(HERMES_MARK), end), end, &q);
        bool ok = o && add_obj(spec, co, o);
        cJSON_Delete(o);
        if (!ok) break;
        q = skip_ws(q, end);
        /* The closing tag may be missing at the very end (a reply cut by a stop or length). */
        if (starts(q, end, HERMES_END)) q += strlen(HERMES_END);
        p = skip_ws(q, end);
    }
    return p;
}

/* [TOOL_CALLS] [{...}, ...]   or   [TOOL_CALLS]name[ARGS]{...}, repeated. */
static const char *parse_mistral(const hr_tool_spec *spec, calls_out *co, const char *p, const char *end) {
    while (starts(p, end, MISTRAL_MARK)) {
        const char *q = skip_ws(p + strlen(MISTRAL_MARK), end), *args = find(q, end, MISTRAL_ARGS);
        bool ok = false;
        if (q < end && *q == '[') {
            cJSON *list = json_at(q, end, &q), *o;
            ok = cJSON_IsArray(list) && cJSON_GetArraySize(list) > 0;
            cJSON *items = ok ? list : NULL;
            cJSON_ArrayForEach(o, items) ok = ok && add_obj(spec, co, o);
            cJSON_Delete(list);
        } else if (args) {
            const char *name = q;
            cJSON *o = json_at(args + strlen(MISTRAL_ARGS), end, &q);
            ok = o && add_call(spec, co, name, (size_t)(args - name), o, NULL);
            cJSON_Delete(o);
        }
        if (!ok) break;
        p = skip_ws(q, end);
    }
    return p;
}

/* [<|python_tag|>] {...} [; {...}]... as the whole reply. */
static const char *parse_llama3(const hr_tool_spec *spec, calls_out *co, const char *p, const char *end) {
    if (starts(p, end, PYTHON_TAG)) p = skip_ws(p + strlen(PYTHON_TAG), end);
    while (p < end && *p == '{') {
        const char *q;
        cJSON *o = json_at(p, end, &q);
        bool ok = o && add_obj(spec, co, o);
        cJSON_Delete(o);
        if (!ok) break;
        p = skip_ws(q, end);
        if (p < end && *p == ';') p = skip_ws(p + 1, end);
    }
    return p;
}

void hr_tool_calls_free(hr_tool_call *calls, int n) {
    for (int i = 0; i < n; i++) free(calls[i].id), free(calls[i].name), free(calls[i].arguments);
    free(calls);
}

/* Where the calls start: the marker, or for Llama 3 the first non-blank byte. */
static const char *call_start(const hr_tool_spec *spec, const char *p, const char *end) {
    if (spec->fmt == HR_TOOLFMT_LLAMA3) return skip_ws(p, end);
    return find(p, end, spec->fmt == HR_TOOLFMT_HERMES ? HERMES_MARK : MISTRAL_MARK);
}

int hr_tool_reply_parse(const hr_tool_spec *spec, const char *text, size_t len, char **content, hr_tool_call **calls,
                        int *n_calls) {
    *content = NULL, *calls = NULL, *n_calls = 0;
    hr_chat_buf full = {0};
    hr_chat_buf_put(&full, spec->prefix);
    hr_chat_buf_putn(&full, text, len);
    if (full.oom) return -1;
    const char *p = full.p, *end = full.p + full.len, *at = call_start(spec, p, end), *rest = at;
    calls_out co = {0};
    if (at) rest = spec->fmt == HR_TOOLFMT_HERMES ? parse_hermes(spec, &co, at, end)
                   : spec->fmt == HR_TOOLFMT_MISTRAL ? parse_mistral(spec, &co, at, end)
                                                     : parse_llama3(spec, &co, at, end);
    /* Content: what precedes the calls (trailing blanks dropped) and what follows them;
     * without a call, the whole reply. */
    hr_chat_buf c = {0};
    hr_chat_buf_put(&c, "");
    if (co.n) {
        const char *e = at;
        while (e > p && is_ws(e[-1])) e--;
        hr_chat_buf_putn(&c, p, (size_t)(e - p));
        hr_chat_buf_putn(&c, rest, (size_t)(end - rest));
    } else {
        hr_chat_buf_putn(&c, text, len);
    }
    free(full.p);
    if (c.oom || co.oom) {
        free(c.p);
        hr_tool_calls_free(co.v, co.n);
        return -1;
    }
    /* Beside calls, blank content is none (null); a reply without calls keeps its text. */
    if (co.n && skip_ws(c.p, c.p + c.len) == c.p + c.len) free(c.p), c.p = NULL;
    *content = c.p, *calls = co.v, *n_calls = co.n;
    return 0;
}

/* Length of the longest tail of text that is a proper prefix of lit. */
static size_t partial(const char *text, size_t len, const char *lit) {
    size_t n = strlen(lit);
    for (size_t k = n - 1; k > 0; k--)
        if (k <= len && !memcmp(text + len - k, lit, k)) return k;
    return 0;
}

size_t hr_tool_stream_safe(const hr_tool_spec *spec, const char *text, size_t len, size_t from, bool *held) {
    *held = true;
    if (spec->prefix[0]) return 0;
    const char *end = text + len;
    if (spec->fmt == HR_TOOLFMT_LLAMA3) {
        const char *p = skip_ws(text, end);
        size_t rest = (size_t)(end - p), tag = strlen(PYTHON_TAG);
        /* Undecided while blank, JSON-like, or possibly the python tag. */
        if (p == end || *p == '{' || !memcmp(p, PYTHON_TAG, rest < tag ? rest : tag)) return 0;
        *held = false;
        return len;
    }
    const char *mark = spec->fmt == HR_TOOLFMT_HERMES ? HERMES_MARK : MISTRAL_MARK;
    const char *at = find(text + (from < len ? from : len), end, mark);
    size_t safe = at ? (size_t)(at - text) : len - partial(text, len, mark);
    *held = at != NULL || safe < len;
    /* Blanks before a marker are dropped from the content, so they wait too. */
    while (safe > 0 && is_ws(text[safe - 1])) safe--, *held = true;
    return safe;
}
