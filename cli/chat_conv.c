/* The conversation of hearth chat (chat_conv.h). /load reads with the core library's JSON
 * reader (src/util/json.h), so it works in builds without the server's JSON library. */
#include "text_file.h"
#include "chat_conv.h"
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/json.h"

int hr_conv_push(hr_conv *cv, const char *role, const char *text, size_t len) {
    if (cv->n == cv->cap) {
        size_t cap = cv->cap ? cv->cap * 2 : 8;
        hr_chat_msg *p = realloc(cv->msgs, cap * sizeof *p);
        if (!p) return -1;
        cv->msgs = p, cv->cap = cap;
    }
    char *s = malloc(len + 1);
    if (!s) return -1;
    memcpy(s, text, len);
    s[len] = 0;
    cv->msgs[cv->n++] = (hr_chat_msg){role, s};
    return 0;
}

size_t hr_conv_first(const hr_conv *cv) { return cv->n && !strcmp(cv->msgs[0].role, "system") ? 1 : 0; }

void hr_conv_remove(hr_conv *cv, size_t i) {
    free((char *)cv->msgs[i].content);
    memmove(cv->msgs + i, cv->msgs + i + 1, (cv->n - i - 1) * sizeof *cv->msgs);
    cv->n--;
}

bool hr_conv_can_drop(const hr_conv *cv) { return cv->n > hr_conv_first(cv) + 1; }

size_t hr_conv_drop_turn(hr_conv *cv) {
    size_t f = hr_conv_first(cv), n0 = cv->n;
    hr_conv_remove(cv, f);
    while (cv->n > f + 1 && strcmp(cv->msgs[f].role, "user")) hr_conv_remove(cv, f);
    return n0 - cv->n;
}

void hr_conv_truncate(hr_conv *cv, size_t keep) {
    while (cv->n > keep) hr_conv_remove(cv, cv->n - 1);
}

void hr_conv_free(hr_conv *cv) {
    hr_conv_truncate(cv, 0);
    free(cv->msgs);
    *cv = (hr_conv){0};
}

/* ---- writing ---- */

/* Length of the valid UTF-8 character at s (n > 0 bytes), or 0 if it is not one. */
static size_t utf8_valid(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t k = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (!k || k > n) return 0;
    uint32_t cp = c & (0x7F >> k);
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000}; /* overlong forms are invalid */
    return cp < least[k] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) ? 0 : k;
}

static void write_string(FILE *f, const char *s) {
    size_t n = strlen(s);
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = utf8_valid((const unsigned char *)s + i, n - i);
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\r') fputs("\\r", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else if (k) fwrite(s + i, 1, k, f);
        else fputs("\\ufffd", f);
        i += k ? k : 1;
    }
    fputc('"', f);
}

int hr_conv_save(const hr_conv *cv, const char *path, char *err, size_t cap) {
    FILE *f = fopen(path, "wb");
    if (!f) return snprintf(err, cap, "cannot write %s: %s", path, strerror(errno)), -1;
    fputs("{\"messages\": [", f);
    for (size_t i = 0; i < cv->n; i++) {
        fputs(i ? ",\n  {\"role\": " : "\n  {\"role\": ", f);
        write_string(f, cv->msgs[i].role);
        fputs(", \"content\": ", f);
        write_string(f, cv->msgs[i].content);
        fputc('}', f);
    }
    fputs(cv->n ? "\n]}\n" : "]}\n", f);
    if (fclose(f)) return snprintf(err, cap, "cannot write %s: %s", path, strerror(errno)), -1;
    return 0;
}

/* ---- reading ---- */

typedef struct rd {
    const char *text;
    size_t len;
    char *err;
    size_t cap;
} rd;

/* A problem with a well-formed file, placed at the line of the value it is about. */
static int fail_at(rd *r, const hr_json *v, const char *fmt, ...) {
    int line, col;
    hr_json_line_col(r->text, r->len, v->offset, &line, &col);
    int k = snprintf(r->err, r->cap, "line %d: ", line);
    va_list ap;
    va_start(ap, fmt);
    if (k >= 0 && (size_t)k < r->cap) vsnprintf(r->err + k, r->cap - (size_t)k, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *known_role(const hr_json *s) {
    static const char *const roles[] = {"system", "user", "assistant"};
    for (size_t i = 0; i < 3; i++)
        if (hr_json_is(s, roles[i])) return roles[i];
    return NULL;
}

/* One {"role": ..., "content": ...} object, appended to cv; other keys are ignored. */
static int message(rd *r, const hr_json *m, hr_conv *cv) {
    size_t i = cv->n + 1;
    if (m->type != HR_JSON_OBJECT) return fail_at(r, m, "message %zu is not an object", i);
    const hr_json *role = hr_json_get(m, "role"), *content = hr_json_get(m, "content");
    if (!role) return fail_at(r, m, "message %zu has no role", i);
    if (!content) return fail_at(r, m, "message %zu has no content", i);
    if (role->type != HR_JSON_STRING) return fail_at(r, role, "message %zu: the role is not a string", i);
    if (content->type != HR_JSON_STRING) return fail_at(r, content, "message %zu: the content is not a string", i);
    const char *known = known_role(role);
    if (!known) return fail_at(r, role, "message %zu: unknown role '%s' (system, user, assistant)", i, role->str);
    if (known[0] == 's' && cv->n) return fail_at(r, m, "message %zu: a system message must come first", i);
    if (hr_conv_push(cv, known, content->str, content->len)) return snprintf(r->err, r->cap, "out of memory"), -1;
    return 0;
}

/* The document: an object with "messages" (other keys ignored), or the array itself. */
static int document(rd *r, const hr_json *root, hr_conv *cv) {
    const hr_json *msgs = root->type == HR_JSON_ARRAY ? root : hr_json_get(root, "messages");
    if (root->type != HR_JSON_ARRAY && root->type != HR_JSON_OBJECT)
        return fail_at(r, root, "expected a JSON object with \"messages\"");
    if (!msgs) return fail_at(r, root, "no \"messages\" array");
    if (msgs->type != HR_JSON_ARRAY) return fail_at(r, msgs, "\"messages\" is not an array");
    for (size_t i = 0; i < msgs->n; i++)
        if (message(r, &msgs->items[i], cv)) return -1;
    return 0;
}

int hr_conv_load(hr_conv *out, const char *path, char *err, size_t cap) {
    size_t n;
    hr_err fe = {{0}};
    char *text = hr_text_file(path, 0, &n, &fe);
    if (!text) return snprintf(err, cap, "%s", fe.msg), -1;
    char msg[512] = "";
    hr_err je = {""};
    hr_json_doc *doc = hr_json_parse(text, n, NULL, &je);
    rd r = {text, n, msg, sizeof msg};
    int rc = doc ? document(&r, hr_json_root(doc), out) : (snprintf(msg, sizeof msg, "%s", je.msg), -1);
    hr_json_free(doc);
    free(text);
    if (rc) {
        snprintf(err, cap, "%s: %s", path, msg);
        hr_conv_free(out);
    }
    return rc;
}
