/* The tool request fields, the reply-parser spec, and the grammar that forces a call. */
#include "tools.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "chat/chat_buf.h"
#include "grammar/grammar.h"
#include "json_util.h"

#define MAX_TOOLS 128

hr_tool_fmt hr_tool_fmt_of(hr_chat_tmpl t) {
    switch (t) {
    case HR_CHAT_CHATML: return HR_TOOLFMT_HERMES;
    case HR_CHAT_LLAMA3: return HR_TOOLFMT_LLAMA3;
    case HR_CHAT_MISTRAL:
    case HR_CHAT_MISTRAL_V1:
    case HR_CHAT_MISTRAL_V3:
    case HR_CHAT_MISTRAL_V3_TEKKEN:
    case HR_CHAT_MISTRAL_V7:
    case HR_CHAT_MISTRAL_V7_TEKKEN: return HR_TOOLFMT_MISTRAL;
    default: return HR_TOOLFMT_NONE;
    }
}

/* OpenAI's rule for function names: letters, digits, '_' and '-', at most 64. */
static bool good_name(const char *s) {
    size_t n = strlen(s);
    if (!n || n > 64) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return false;
    }
    return true;
}

static const cJSON *tool_fn(const cJSON *tool) { return cJSON_GetObjectItemCaseSensitive(tool, "function"); }
static const char *tool_name(const cJSON *tool) { return cJSON_GetObjectItemCaseSensitive(tool_fn(tool), "name")->valuestring; }

static int check_tool(const cJSON *t, int i, hr_apierr *ae) {
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(t, "type"), *fn = tool_fn(t);
    if (!cJSON_IsObject(t) || !cJSON_IsString(ty) || strcmp(ty->valuestring, "function"))
        return hr_apierr_set(ae, 400, "tools", "invalid_value", "tools[%d]: only {\"type\":\"function\",\"function\":{...}} tools are supported", i);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
    if (!cJSON_IsObject(fn) || !cJSON_IsString(name) || !good_name(name->valuestring))
        return hr_apierr_set(ae, 400, "tools", "invalid_value",
                             "tools[%d].function.name must be 1 to 64 letters, digits, '_' or '-'", i);
    const cJSON *d = hr_json_field(fn, "description"), *p = hr_json_field(fn, "parameters");
    if (d && !cJSON_IsString(d)) return hr_apierr_set(ae, 400, "tools", "invalid_type", "tools[%d].function.description must be a string", i);
    if (p && !cJSON_IsObject(p)) return hr_apierr_set(ae, 400, "tools", "invalid_type", "tools[%d].function.parameters must be a JSON schema object", i);
    return 0;
}

static const cJSON *find_tool(const hr_tools_req *tr, const char *name) {
    const cJSON *t;
    cJSON_ArrayForEach(t, tr->tools) if (!strcmp(tool_name(t), name)) return t;
    return NULL;
}

static int parse_choice(const cJSON *root, hr_tools_req *out, hr_apierr *ae) {
    const cJSON *c = hr_json_field(root, "tool_choice");
    const char *bad = "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\":\"function\",\"function\":{\"name\":...}}";
    if (!c) return 0;
    if (cJSON_IsString(c)) {
        const char *v = c->valuestring;
        out->choice = !strcmp(v, "none") ? HR_TOOL_NONE : !strcmp(v, "auto") ? HR_TOOL_AUTO : !strcmp(v, "required") ? HR_TOOL_REQUIRED : -1;
        if ((int)out->choice < 0) return hr_apierr_set(ae, 400, "tool_choice", "invalid_value", "%s", bad);
    } else {
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(c, "type"), *name = cJSON_GetObjectItemCaseSensitive(tool_fn(c), "name");
        if (!cJSON_IsObject(c) || !cJSON_IsString(ty) || strcmp(ty->valuestring, "function") || !cJSON_IsString(name))
            return hr_apierr_set(ae, 400, "tool_choice", "invalid_value", "%s", bad);
        out->choice = HR_TOOL_NAMED, out->forced = name->valuestring;
    }
    if (out->choice == HR_TOOL_REQUIRED && !out->tools)
        return hr_apierr_set(ae, 400, "tool_choice", "invalid_value", "'tool_choice' \"required\" needs 'tools'");
    if (out->choice == HR_TOOL_NAMED && (!out->tools || !find_tool(out, out->forced)))
        return hr_apierr_set(ae, 400, "tool_choice", "invalid_value", "'tool_choice' names '%s', which is not in 'tools'", out->forced);
    return 0;
}

int hr_tools_parse(const cJSON *root, hr_tools_req *out, hr_apierr *ae) {
    memset(out, 0, sizeof *out);
    const cJSON *t = hr_json_field(root, "tools");
    if (t && !cJSON_IsArray(t)) return hr_apierr_set(ae, 400, "tools", "invalid_type", "'tools' must be an array");
    int n = t ? cJSON_GetArraySize(t) : 0, i = 0;
    if (n > MAX_TOOLS) return hr_apierr_set(ae, 400, "tools", "invalid_value", "'tools' holds at most %d tools", MAX_TOOLS);
    const cJSON *it;
    cJSON_ArrayForEach(it, t) {
        if (check_tool(it, i, ae)) return -1;
        for (const cJSON *p = t->child; p != it; p = p->next)
            if (!strcmp(tool_name(p), tool_name(it)))
                return hr_apierr_set(ae, 400, "tools", "invalid_value", "tools[%d]: the name '%s' is used twice", i, tool_name(it));
        i++;
    }
    if (n) out->tools = t, out->n_tools = n;
    return parse_choice(root, out, ae);
}

bool hr_tools_needed(const hr_tools_req *tr, const cJSON *messages) {
    if (tr->tools && tr->choice != HR_TOOL_NONE) return true;
    const cJSON *m, *list = cJSON_IsArray(messages) ? messages : NULL;
    cJSON_ArrayForEach(m, list) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        if ((cJSON_IsString(role) && !strcmp(role->valuestring, "tool")) || hr_json_field(m, "tool_calls")) return true;
    }
    return false;
}

void hr_tool_spec_free(hr_tool_spec *spec) {
    if (!spec) return;
    for (int i = 0; i < spec->n_names; i++) free(spec->names[i]);
    free(spec->names);
    free(spec->prefix);
    free(spec);
}

/* --- the grammar of a forced call --------------------------------------------------------- */

static bool word(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-'; }

/* Copies GBNF text with every rule name prefixed, so that the grammars of several tools
 * (each with its own root, string, space ... rules) live in one grammar. Literals, character
 * classes, repetition counts and comments are copied as they are. */
static void put_renamed(hr_chat_buf *b, const char *g, const char *prefix) {
    for (const char *p = g; *p;) {
        const char *q = p + 1;
        if (*p == '"' || *p == '[') {
            char close = *p == '"' ? '"' : ']';
            while (*q && *q != close) q += q[0] == '\\' && q[1] ? 2 : 1;
            if (*q) q++;
        } else if (*p == '#') {
            while (*q && *q != '\n') q++;
        } else if (*p == '{') {
            while (*q && *q != '}') q++;
            if (*q) q++;
        } else if (word(*p)) {
            while (word(*q)) q++;
            hr_chat_buf_put(b, prefix);
        }
        hr_chat_buf_putn(b, p, (size_t)(q - p));
        p = q;
    }
}

/* A GBNF string literal of s. */
static void gbnf_lit(hr_chat_buf *b, const char *s) {
    hr_chat_buf_put(b, "\"");
    for (; *s; s++) {
        char esc[8];
        if (*s == '"' || *s == '\\') snprintf(esc, sizeof esc, "\\%c", *s);
        else if (*s == '\n') snprintf(esc, sizeof esc, "\\n");
        else snprintf(esc, sizeof esc, "%c", *s);
        hr_chat_buf_put(b, esc);
    }
    hr_chat_buf_put(b, "\"");
}

/* tN-call ::= "{\"name\": \"NAME\", \"arguments\": " tN-root "}", and tool N's rules: the call
 * written exactly as the template shows it to the model; the arguments follow the schema. */
static int tool_rules(hr_chat_buf *b, const cJSON *tool, int i, hr_tool_fmt fmt, hr_apierr *ae) {
    const cJSON *params = hr_json_field(tool_fn(tool), "parameters");
    char *text = params ? cJSON_PrintUnformatted(params) : strdup("{\"type\":\"object\"}");
    if (!text) return hr_apierr_set(ae, 500, NULL, NULL, "out of memory");
    hr_err e = {{0}};
    char *g = hr_json_schema_to_gbnf(text, strlen(text), &e), prefix[16], head[160];
    free(text);
    if (!g) return hr_apierr_set(ae, 400, "tools", "invalid_value", "tools[%d].function.parameters: %s", i, e.msg);
    snprintf(prefix, sizeof prefix, "t%d-", i);
    put_renamed(b, g, prefix);
    free(g);
    snprintf(head, sizeof head, "{\"name\": \"%s\", \"%s\": ", tool_name(tool), fmt == HR_TOOLFMT_LLAMA3 ? "parameters" : "arguments");
    hr_chat_buf_put(b, "\n"), hr_chat_buf_put(b, prefix), hr_chat_buf_put(b, "call ::= ");
    gbnf_lit(b, head);
    hr_chat_buf_put(b, " "), hr_chat_buf_put(b, prefix), hr_chat_buf_put(b, "root \"}\"\n");
    return 0;
}

char *hr_tools_grammar(const hr_tools_req *tr, const hr_tool_spec *spec, const char **root, hr_apierr *ae) {
    static const char *const open[] = {[HR_TOOLFMT_HERMES] = "<tool_call>\n", [HR_TOOLFMT_LLAMA3] = "", [HR_TOOLFMT_MISTRAL] = "["};
    static const char *const close[] = {[HR_TOOLFMT_HERMES] = "\n</tool_call>", [HR_TOOLFMT_LLAMA3] = "", [HR_TOOLFMT_MISTRAL] = "]"};
    hr_chat_buf b = {0};
    hr_chat_buf_put(&b, "hearth-tool-call ::= ");
    gbnf_lit(&b, open[spec->fmt]);
    hr_chat_buf_put(&b, " (");
    int i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, tr->tools) {
        if (tr->choice != HR_TOOL_NAMED || !strcmp(tool_name(t), tr->forced)) {
            char alt[32];
            snprintf(alt, sizeof alt, "%st%d-call", b.p[b.len - 1] == '(' ? " " : " | ", i);
            hr_chat_buf_put(&b, alt);
        }
        i++;
    }
    hr_chat_buf_put(&b, " ) ");
    gbnf_lit(&b, close[spec->fmt]);
    hr_chat_buf_put(&b, "\n");
    i = 0;
    cJSON_ArrayForEach(t, tr->tools) {
        if ((tr->choice != HR_TOOL_NAMED || !strcmp(tool_name(t), tr->forced)) && tool_rules(&b, t, i, spec->fmt, ae)) {
            free(b.p);
            return NULL;
        }
        i++;
    }
    if (b.oom) {
        free(b.p);
        return hr_apierr_set(ae, 500, NULL, NULL, "out of memory"), NULL;
    }
    *root = "hearth-tool-call";
    return b.p;
}

int hr_tool_spec_new(const hr_tools_req *tr, hr_tool_fmt fmt, const char *prefix, hr_tool_spec **out) {
    hr_tool_spec *sp = calloc(1, sizeof *sp);
    if (!sp || !(sp->names = calloc((size_t)tr->n_tools, sizeof *sp->names)) || !(sp->prefix = strdup(prefix))) {
        hr_tool_spec_free(sp);
        return -1;
    }
    sp->fmt = fmt;
    const cJSON *t;
    cJSON_ArrayForEach(t, tr->tools) {
        if (!(sp->names[sp->n_names] = strdup(tool_name(t)))) {
            hr_tool_spec_free(sp);
            return -1;
        }
        sp->n_names++;
    }
    *out = sp;
    return 0;
}
