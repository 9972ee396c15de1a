/* Conversations with tools rendered as the published templates print them: Qwen3's ChatML
 * (Hermes-style <tool_call> blocks, <tool_response> turns), Llama 3.1's (tools in the system
 * turn, JSON calls, ipython turns) and Mistral's ([AVAILABLE_TOOLS] before the last user turn,
 * [TOOL_CALLS], [TOOL_RESULTS]). Without tool turns or tools the text equals hr_chat_render's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "chat/chat_buf.h"
#include "json_util.h"
#include "tools.h"

/* --- Python's json.dumps ------------------------------------------------------------------ */

static void py_str(hr_chat_buf *b, const char *s) {
    hr_chat_buf_put(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[8] = {0};
        switch (c) {
        case '"': hr_chat_buf_put(b, "\\\""); continue;
        case '\\': hr_chat_buf_put(b, "\\\\"); continue;
        case '\n': hr_chat_buf_put(b, "\\n"); continue;
        case '\r': hr_chat_buf_put(b, "\\r"); continue;
        case '\t': hr_chat_buf_put(b, "\\t"); continue;
        case '\b': hr_chat_buf_put(b, "\\b"); continue;
        case '\f': hr_chat_buf_put(b, "\\f"); continue;
        default: break;
        }
        if (c < 0x20) snprintf(esc, sizeof esc, "\\u%04x", c);
        else esc[0] = (char)c;
        hr_chat_buf_put(b, esc);
    }
    hr_chat_buf_put(b, "\"");
}

/* Integers as integers; other numbers with the fewest digits that read back the same. */
static void py_num(hr_chat_buf *b, double d) {
    char t[40];
    if (!isfinite(d)) snprintf(t, sizeof t, "null");
    else if (d == floor(d) && fabs(d) < 9007199254740992.0) snprintf(t, sizeof t, "%.0f", d);
    else
        for (int p = 15; p <= 17; p++) {
            snprintf(t, sizeof t, "%.*g", p, d);
            if (strtod(t, NULL) == d) break;
        }
    hr_chat_buf_put(b, t);
}

static void py_nl(hr_chat_buf *b, int indent, int depth) {
    hr_chat_buf_put(b, "\n");
    for (int i = 0; i < indent * depth; i++) hr_chat_buf_put(b, " ");
}

static void py_put(hr_chat_buf *b, const cJSON *v, int indent, int depth) {
    if (cJSON_IsString(v)) return py_str(b, v->valuestring);
    if (cJSON_IsNumber(v)) return py_num(b, v->valuedouble);
    if (cJSON_IsTrue(v)) return hr_chat_buf_put(b, "true");
    if (cJSON_IsFalse(v)) return hr_chat_buf_put(b, "false");
    if (!cJSON_IsArray(v) && !cJSON_IsObject(v)) return hr_chat_buf_put(b, "null");
    bool obj = cJSON_IsObject(v);
    hr_chat_buf_put(b, obj ? "{" : "[");
    for (const cJSON *c = v->child; c; c = c->next) {
        /* json.dumps with an indent separates items with "," and a new line. */
        if (c != v->child) hr_chat_buf_put(b, indent > 0 ? "," : ", ");
        if (indent > 0) py_nl(b, indent, depth + 1);
        if (obj) {
            py_str(b, c->string ? c->string : "");
            hr_chat_buf_put(b, ": ");
        }
        py_put(b, c, indent, depth + 1);
    }
    if (indent > 0 && v->child) py_nl(b, indent, depth);
    hr_chat_buf_put(b, obj ? "}" : "]");
}

char *hr_json_py(const cJSON *v, int indent) {
    hr_chat_buf b = {0};
    hr_chat_buf_put(&b, "");
    py_put(&b, v, indent, 0);
    if (b.oom) free(b.p);
    return b.oom ? NULL : b.p;
}

/* --- messages ----------------------------------------------------------------------------- */

typedef struct tmsg {
    const char *role;    /* system, user, assistant, tool */
    char *content;
    cJSON *calls;        /* assistant: [{"name", "arguments" (parsed), "id"?}], or NULL */
    const char *call_id; /* tool */
} tmsg;

typedef struct targs {
    hr_chat_tmpl t;
    const tmsg *m;
    int n;
    const hr_tools_req *tr;
    bool offer, forced;
    const char *bos, *eos;
} targs;

#define OOM(ae) hr_apierr_set(ae, 500, NULL, NULL, "out of memory")

/* Content: a string, null, or text parts (joined), as for plain chat messages. */
static int msg_text(const cJSON *c, int i, char **out, hr_apierr *ae) {
    hr_chat_buf b = {0};
    hr_chat_buf_put(&b, "");
    if (cJSON_IsString(c)) hr_chat_buf_put(&b, c->valuestring);
    else if (c && !cJSON_IsNull(c) && !cJSON_IsArray(c)) {
        free(b.p);
        return hr_apierr_set(ae, 400, "messages", "invalid_type", "messages[%d]: 'content' must be a string or an array of text parts", i);
    }
    const cJSON *p, *parts = cJSON_IsArray(c) ? c : NULL;
    cJSON_ArrayForEach(p, parts) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "text"), *ty = cJSON_GetObjectItemCaseSensitive(p, "type");
        if (!cJSON_IsObject(p) || !cJSON_IsString(t) || (ty && !(cJSON_IsString(ty) && !strcmp(ty->valuestring, "text")))) {
            free(b.p);
            return hr_apierr_set(ae, 400, "messages", "invalid_value", "only text content parts are supported");
        }
        hr_chat_buf_put(&b, t->valuestring);
    }
    if (b.oom) return free(b.p), OOM(ae);
    *out = b.p;
    return 0;
}

/* One of an assistant's tool_calls, as {"name", "arguments", "id"?}; arguments may come as
 * JSON text (OpenAI's shape) or as an object. */
static int one_call(const cJSON *tc, int i, cJSON *calls, hr_apierr *ae) {
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function"), *ty = hr_json_field(tc, "type");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name"), *args = hr_json_field(fn, "arguments");
    const cJSON *id = hr_json_field(tc, "id");
    if (!cJSON_IsObject(tc) || !cJSON_IsString(name) || (ty && !(cJSON_IsString(ty) && !strcmp(ty->valuestring, "function"))) ||
        (id && !cJSON_IsString(id)))
        return hr_apierr_set(ae, 400, "messages", "invalid_value",
                             "messages[%d].tool_calls: each call must be {\"id\":...,\"type\":\"function\",\"function\":{\"name\":...,\"arguments\":...}}", i);
    cJSON *a = !args ? cJSON_CreateObject() : cJSON_IsString(args) ? cJSON_Parse(args->valuestring) : cJSON_Duplicate(args, true);
    if (!a || !cJSON_IsObject(a)) {
        cJSON_Delete(a);
        return hr_apierr_set(ae, 400, "messages", "invalid_value",
                             "messages[%d].tool_calls: function.arguments of '%s' must be a JSON object (or its text)", i, name->valuestring);
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", name->valuestring);
    cJSON_AddItemToObject(o, "arguments", a);
    if (id) cJSON_AddStringToObject(o, "id", id->valuestring);
    cJSON_AddItemToArray(calls, o);
    return 0;
}

static int one_msg(const cJSON *m, int i, tmsg *out, hr_apierr *ae) {
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
    if (!cJSON_IsObject(m) || !cJSON_IsString(role))
        return hr_apierr_set(ae, 400, "messages", "invalid_type", "each message must be an object with a string 'role'");
    const char *r = role->valuestring;
    out->role = !strcmp(r, "developer") ? "system" : r;
    if (strcmp(out->role, "system") && strcmp(r, "user") && strcmp(r, "assistant") && strcmp(r, "tool"))
        return hr_apierr_set(ae, 400, "messages", "invalid_value", "messages[%d]: unknown role '%s' (system, user, assistant, tool)", i, r);
    if (!strcmp(out->role, "system") && i)
        return hr_apierr_set(ae, 400, "messages", "invalid_value", "messages[%d]: a system message must be the first message", i);
    if (msg_text(cJSON_GetObjectItemCaseSensitive(m, "content"), i, &out->content, ae)) return -1;
    const cJSON *tcs = hr_json_field(m, "tool_calls"), *tc, *id = hr_json_field(m, "tool_call_id");
    if (!strcmp(r, "tool")) {
        if (!cJSON_IsString(id))
            return hr_apierr_set(ae, 400, "messages", "invalid_value", "messages[%d]: a tool message needs a string 'tool_call_id'", i);
        out->call_id = id->valuestring;
    }
    if (!tcs) return 0;
    if (strcmp(r, "assistant") || !cJSON_IsArray(tcs))
        return hr_apierr_set(ae, 400, "messages", "invalid_value", "messages[%d]: 'tool_calls' must be an array on an assistant message", i);
    if (!cJSON_GetArraySize(tcs)) return 0;
    if (!(out->calls = cJSON_CreateArray())) return OOM(ae);
    cJSON_ArrayForEach(tc, tcs) if (one_call(tc, i, out->calls, ae)) return -1;
    return 0;
}

/* --- the three formats -------------------------------------------------------------------- */

static void put_py(hr_chat_buf *b, const cJSON *v, int indent) {
    char *s = hr_json_py(v, indent);
    if (!s) b->oom = true;
    hr_chat_buf_put(b, s);
    free(s);
}

static bool has_sys(const targs *a) { return a->n && !strcmp(a->m[0].role, "system"); }
static bool is(const tmsg *m, const char *role) { return !strcmp(m->role, role); }

static const char HERMES_HEAD[] =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
static const char HERMES_TAIL[] =
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
    "</tool_call><|im_end|>\n";

static void hermes_call(hr_chat_buf *b, const cJSON *c) {
    hr_chat_buf_put(b, "<tool_call>\n{\"name\": ");
    put_py(b, cJSON_GetObjectItemCaseSensitive(c, "name"), 0);
    hr_chat_buf_put(b, ", \"arguments\": ");
    put_py(b, cJSON_GetObjectItemCaseSensitive(c, "arguments"), 0);
    hr_chat_buf_put(b, "}\n</tool_call>");
}

static void render_hermes(hr_chat_buf *b, const targs *a) {
    int first = has_sys(a);
    if (a->offer) {
        hr_chat_buf_put(b, "<|im_start|>system\n");
        if (first) hr_chat_buf_put(b, a->m[0].content), hr_chat_buf_put(b, "\n\n");
        hr_chat_buf_put(b, HERMES_HEAD);
        const cJSON *t;
        cJSON_ArrayForEach(t, a->tr->tools) hr_chat_buf_put(b, "\n"), put_py(b, t, 0);
        hr_chat_buf_put(b, HERMES_TAIL);
    } else if (first) {
        hr_chat_buf_put(b, "<|im_start|>system\n"), hr_chat_buf_put(b, a->m[0].content), hr_chat_buf_put(b, "<|im_end|>\n");
    }
    for (int i = first; i < a->n; i++) {
        const tmsg *m = &a->m[i];
        if (is(m, "tool")) {
            /* Consecutive results share one user turn. */
            if (i == first || !is(&a->m[i - 1], "tool")) hr_chat_buf_put(b, "<|im_start|>user");
            hr_chat_buf_put(b, "\n<tool_response>\n"), hr_chat_buf_put(b, m->content), hr_chat_buf_put(b, "\n</tool_response>");
            if (i + 1 == a->n || !is(&a->m[i + 1], "tool")) hr_chat_buf_put(b, "<|im_end|>\n");
            continue;
        }
        hr_chat_buf_put(b, "<|im_start|>"), hr_chat_buf_put(b, m->role), hr_chat_buf_put(b, "\n");
        hr_chat_buf_put(b, m->content);
        const cJSON *c;
        cJSON_ArrayForEach(c, m->calls) {
            if (c != m->calls->child || *m->content) hr_chat_buf_put(b, "\n");
            hermes_call(b, c);
        }
        hr_chat_buf_put(b, "<|im_end|>\n");
    }
    hr_chat_buf_put(b, "<|im_start|>assistant\n");
}

static void l3_head(hr_chat_buf *b, const char *role) {
    hr_chat_buf_put(b, "<|start_header_id|>"), hr_chat_buf_put(b, role), hr_chat_buf_put(b, "<|end_header_id|>\n\n");
}

/* Llama 3.1's template with tools_in_user_message = false: the tools stay in the system turn,
 * which trimming old turns never drops. */
static void render_llama3(hr_chat_buf *b, const targs *a) {
    int first = has_sys(a);
    if (a->offer) {
        l3_head(b, "system");
        hr_chat_buf_put(b, "Environment: ipython\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
                           "You have access to the following functions. To call a function, please respond with JSON for a "
                           "function call.Respond in the format {\"name\": function name, \"parameters\": dictionary of "
                           "argument name and its value}.Do not use variables.\n\n");
        const cJSON *t;
        cJSON_ArrayForEach(t, a->tr->tools) put_py(b, t, 4), hr_chat_buf_put(b, "\n\n");
        if (first) hr_chat_buf_put_trim(b, a->m[0].content);
        hr_chat_buf_put(b, "<|eot_id|>");
    }
    for (int i = a->offer ? first : 0; i < a->n; i++) {
        const tmsg *m = &a->m[i];
        l3_head(b, is(m, "tool") ? "ipython" : m->role);
        /* The template's tojson of the result (a string is "iterable" to Jinja): a JSON string. */
        if (is(m, "tool")) py_str(b, m->content);
        else if (!m->calls) hr_chat_buf_put_trim(b, m->content);
        const cJSON *c;
        cJSON_ArrayForEach(c, m->calls) {
            if (c != m->calls->child) hr_chat_buf_put(b, "\n");
            hr_chat_buf_put(b, "{\"name\": ");
            put_py(b, cJSON_GetObjectItemCaseSensitive(c, "name"), 0);
            hr_chat_buf_put(b, ", \"parameters\": ");
            put_py(b, cJSON_GetObjectItemCaseSensitive(c, "arguments"), 0);
            hr_chat_buf_put(b, "}");
        }
        hr_chat_buf_put(b, "<|eot_id|>");
    }
    l3_head(b, "assistant");
}

/* Spacing of each Mistral family (as their plain renderers in src/chat/render.c print it);
 * sp: the space the published templates put after a tool marker. */
typedef struct mistral_style {
    const char *lead, *open, *close, *reply, *sys_open, *sp;
    bool trim_reply, model_eos;
} mistral_style;

static mistral_style mistral_of(hr_chat_tmpl t) {
    switch (t) {
    case HR_CHAT_MISTRAL: return (mistral_style){"", "[INST] ", " [/INST]", "", NULL, " ", false, true};
    case HR_CHAT_MISTRAL_V1: return (mistral_style){" ", "[INST] ", " [/INST]", " ", NULL, " ", false, false};
    case HR_CHAT_MISTRAL_V3: return (mistral_style){"", "[INST] ", "[/INST]", " ", NULL, " ", true, false};
    case HR_CHAT_MISTRAL_V3_TEKKEN: return (mistral_style){"", "[INST]", "[/INST]", "", NULL, "", false, false};
    case HR_CHAT_MISTRAL_V7: return (mistral_style){"", "[INST] ", "[/INST]", " ", "[SYSTEM_PROMPT] ", "", false, false};
    default: return (mistral_style){"", "[INST]", "[/INST]", "", "[SYSTEM_PROMPT]", "", false, false};
    }
}

/* A tool result: its text when that is JSON, else the text as a JSON string, inside
 * {"content": ..., "call_id": ...}. */
static void mistral_result(hr_chat_buf *b, const tmsg *m, const char *sp) {
    hr_chat_buf_put(b, "[TOOL_RESULTS]"), hr_chat_buf_put(b, sp), hr_chat_buf_put(b, "{\"content\": ");
    cJSON *j = cJSON_Parse(m->content), *s = j ? NULL : cJSON_CreateString(m->content);
    put_py(b, j ? j : s, 0);
    cJSON_Delete(j), cJSON_Delete(s);
    hr_chat_buf_put(b, ", \"call_id\": ");
    py_str(b, m->call_id);
    hr_chat_buf_put(b, "}[/TOOL_RESULTS]");
}

static void mistral_tools(hr_chat_buf *b, const targs *a, const char *sp) {
    hr_chat_buf_put(b, "[AVAILABLE_TOOLS]"), hr_chat_buf_put(b, sp);
    put_py(b, a->tr->tools, 0);
    hr_chat_buf_put(b, "[/AVAILABLE_TOOLS]");
}

static void render_mistral(hr_chat_buf *b, const targs *a, const char **prefix) {
    mistral_style st = mistral_of(a->t);
    const char *eos = st.model_eos ? a->eos : "</s>", *sys = has_sys(a) ? a->m[0].content : NULL;
    int last_user = -1;
    for (int i = 0; i < a->n; i++) last_user = is(&a->m[i], "user") ? i : last_user;
    if (sys && st.sys_open) hr_chat_buf_put(b, st.sys_open), hr_chat_buf_put(b, sys), hr_chat_buf_put(b, "[/SYSTEM_PROMPT]"), sys = NULL;
    for (int i = has_sys(a); i < a->n; i++) {
        const tmsg *m = &a->m[i];
        if (is(m, "tool")) {
            mistral_result(b, m, st.sp);
        } else if (is(m, "user")) {
            if (a->offer && i == last_user) mistral_tools(b, a, st.sp);
            hr_chat_buf_put(b, st.lead), hr_chat_buf_put(b, st.open);
            /* With tools, the published templates put the system text in the last user turn
             * (next to the tools); without, Hearth's Mistral renderers put it in the first. */
            if (sys && (!a->offer || i == last_user)) hr_chat_buf_put(b, sys), hr_chat_buf_put(b, "\n\n"), sys = NULL;
            hr_chat_buf_put(b, m->content), hr_chat_buf_put(b, st.close);
        } else {
            if (*m->content || !m->calls) hr_chat_buf_put(b, st.reply);
            if (st.trim_reply) hr_chat_buf_put_trim(b, m->content);
            else hr_chat_buf_put(b, m->content);
            if (m->calls) hr_chat_buf_put(b, "[TOOL_CALLS]"), hr_chat_buf_put(b, st.sp), put_py(b, m->calls, 0);
            hr_chat_buf_put(b, eos);
        }
    }
    /* A system message with no user turn after it: a turn of its own. */
    if (sys) hr_chat_buf_put(b, st.lead), hr_chat_buf_put(b, st.open), hr_chat_buf_put(b, sys), hr_chat_buf_put(b, st.close);
    *prefix = a->forced ? (st.sp[0] ? "[TOOL_CALLS] " : "[TOOL_CALLS]") : "";
    hr_chat_buf_put(b, *prefix);
}

static int collect(const cJSON *messages, tmsg *m, int n, hr_apierr *ae) {
    int i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, messages) {
        if (i == n || one_msg(it, i, &m[i], ae)) return -1;
        i++;
    }
    return 0;
}

int hr_tools_render(hr_chat_tmpl t, const hr_tools_req *tr, const cJSON *messages, const char *bos, const char *eos,
                    char **out, hr_tool_spec **spec, hr_apierr *ae) {
    *out = NULL, *spec = NULL;
    hr_tool_fmt fmt = hr_tool_fmt_of(t);
    if (!fmt)
        return hr_apierr_set(ae, 400, tr->tools ? "tools" : "messages", "invalid_value",
                             "the chat template '%s' has no tool-call format (tools work with chatml, llama3 and the mistral "
                             "families: --chat-template)", hr_chat_name(t));
    if (!messages) return hr_apierr_set(ae, 400, "messages", "missing", "'messages' is required");
    int n = cJSON_IsArray(messages) ? cJSON_GetArraySize(messages) : -1;
    if (n < 0) return hr_apierr_set(ae, 400, "messages", "invalid_type", "'messages' must be an array");
    if (!n) return hr_apierr_set(ae, 400, "messages", "invalid_value", "'messages' must not be empty");
    tmsg *m = calloc((size_t)n, sizeof *m);
    if (!m) return OOM(ae);
    int rc = collect(messages, m, n, ae);
    bool offer = tr->tools && tr->choice != HR_TOOL_NONE;
    targs a = {t, m, n, tr, offer, offer && (tr->choice == HR_TOOL_REQUIRED || tr->choice == HR_TOOL_NAMED), bos, eos ? eos : ""};
    hr_chat_buf b = {0};
    const char *prefix = "";
    hr_chat_buf_put(&b, "");
    if (!rc && fmt == HR_TOOLFMT_HERMES) render_hermes(&b, &a);
    else if (!rc && fmt == HR_TOOLFMT_LLAMA3) render_llama3(&b, &a);
    else if (!rc) render_mistral(&b, &a, &prefix);
    for (int i = 0; i < n; i++) free(m[i].content), cJSON_Delete(m[i].calls);
    free(m);
    if (!rc && (b.oom || (offer && hr_tool_spec_new(tr, fmt, prefix, spec)))) rc = OOM(ae);
    if (rc) {
        free(b.p);
        return -1;
    }
    *out = b.p;
    return 0;
}
