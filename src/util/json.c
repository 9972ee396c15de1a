/* JSON reader: recursive descent over the text, nodes in a bump arena freed at once. */
#include "json.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct block {
    struct block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} block;

struct hr_json_doc {
    block *blocks;
    hr_json root;
};

typedef struct {
    const char *s;
    size_t len, pos;
    int depth, max_depth;
    hr_json_doc *doc;
    hr_err *e;
} reader;

static void *arena_alloc(hr_json_doc *d, size_t n) {
    n = (n + 15) & ~(size_t)15;
    block *b = d->blocks;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        block *nb = malloc(sizeof *nb + cap);
        if (!nb) return NULL;
        nb->used = 0, nb->cap = cap;
        /* a big request gets its own block behind the current one, so the current keeps filling */
        if (b && n > 65536) nb->next = b->next, b->next = nb;
        else nb->next = b, d->blocks = nb;
        b = nb;
    }
    void *p = b->data + b->used;
    b->used += n;
    return p;
}

void hr_json_line_col(const char *text, size_t len, size_t offset, int *line, int *col) {
    int l = 1, c = 1;
    for (size_t k = 0; k < offset && k < len; k++) {
        if (text[k] == '\n') l++, c = 1;
        else if (((unsigned char)text[k] & 0xC0) != 0x80) c++; /* count characters, not bytes */
    }
    *line = l, *col = c;
}

static int fail_at(reader *r, size_t at, const char *msg) {
    int line, col;
    hr_json_line_col(r->s, r->len, at, &line, &col);
    return hr_errf(r->e, "invalid JSON at line %d, column %d: %s", line, col, msg);
}

static void skip_ws(reader *r) {
    while (r->pos < r->len) {
        char c = r->s[r->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        r->pos++;
    }
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int read_hex4(reader *r, size_t at, uint32_t *out) {
    if (r->len - at < 4) return -1;
    uint32_t v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(r->s[at + k]);
        if (h < 0) return -1;
        v = v << 4 | (uint32_t)h;
    }
    *out = v;
    return 0;
}

static size_t put_utf8(unsigned char *o, uint32_t cp) {
    if (cp < 0x80) return o[0] = (unsigned char)cp, 1;
    if (cp < 0x800) return o[0] = (unsigned char)(0xC0 | cp >> 6), o[1] = (unsigned char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | cp >> 12), o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | cp >> 18), o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F)), o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Length of the valid UTF-8 sequence at p (n bytes left), 0 if invalid (overlong forms,
 * surrogates and code points above U+10FFFF are invalid). */
static size_t utf8_len(const unsigned char *p, size_t n) {
    unsigned char c = p[0];
    size_t k;
    uint32_t cp;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) k = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) k = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) k = 4, cp = c & 0x07;
    else return 0;
    if (n < k) return 0;
    for (size_t j = 1; j < k; j++) {
        if ((p[j] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (p[j] & 0x3F);
    }
    if ((k == 3 && cp < 0x800) || (k == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return k;
}

/* One escape after the backslash at r->pos - 1; appends its UTF-8 to o. */
static int read_escape(reader *r, unsigned char *o, size_t *w) {
    size_t at = r->pos - 1;
    if (r->pos >= r->len) return fail_at(r, at, "unterminated string");
    char c = r->s[r->pos++];
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *f = strchr(from, c);
    if (c && f) {
        o[(*w)++] = (unsigned char)to[f - from];
        return 0;
    }
    if (c != 'u') return fail_at(r, at, "unknown escape in a string");
    uint32_t cp, lo;
    if (read_hex4(r, r->pos, &cp)) return fail_at(r, at, "\\u needs 4 hex digits");
    r->pos += 4;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return fail_at(r, at, "\\u escape is a lone low surrogate");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (r->len - r->pos < 6 || r->s[r->pos] != '\\' || r->s[r->pos + 1] != 'u' || read_hex4(r, r->pos + 2, &lo) ||
            lo < 0xDC00 || lo > 0xDFFF)
            return fail_at(r, at, "\\u escape is a high surrogate without its low half");
        r->pos += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    *w += put_utf8(o + *w, cp);
    return 0;
}

/* A string at r->pos (the opening quote). The decoded text is never longer than the source. */
static int read_string(reader *r, hr_json *v) {
    size_t start = r->pos++;
    size_t end = r->pos;
    while (end < r->len && r->s[end] != '"') end += r->s[end] == '\\' ? 2 : 1;
    if (end >= r->len) return fail_at(r, start, "unterminated string");
    unsigned char *o = arena_alloc(r->doc, end - r->pos + 1);
    if (!o) return hr_errf(r->e, "out of memory");
    size_t w = 0;
    while (r->s[r->pos] != '"') {
        const unsigned char *p = (const unsigned char *)r->s + r->pos;
        if (*p < 0x20) return fail_at(r, r->pos, "control character in a string (must be escaped)");
        if (*p == '\\') {
            r->pos++;
            if (read_escape(r, o, &w)) return -1;
            continue;
        }
        size_t k = utf8_len(p, r->len - r->pos);
        if (!k) return fail_at(r, r->pos, "invalid UTF-8 in a string");
        memcpy(o + w, p, k);
        w += k, r->pos += k;
    }
    r->pos++;
    o[w] = 0;
    v->type = HR_JSON_STRING, v->str = (const char *)o, v->len = w;
    return 0;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static int read_number(reader *r, hr_json *v) {
    size_t start = r->pos, p = r->pos;
    const char *s = r->s;
    bool frac = false;
    if (p < r->len && s[p] == '-') p++;
    if (p >= r->len || !is_digit(s[p])) return fail_at(r, start, "expected a digit");
    if (s[p] == '0') p++;
    else while (p < r->len && is_digit(s[p])) p++;
    if (p < r->len && s[p] == '.') {
        p++, frac = true;
        if (p >= r->len || !is_digit(s[p])) return fail_at(r, p, "expected a digit after '.'");
        while (p < r->len && is_digit(s[p])) p++;
    }
    if (p < r->len && (s[p] == 'e' || s[p] == 'E')) {
        p++, frac = true;
        if (p < r->len && (s[p] == '+' || s[p] == '-')) p++;
        if (p >= r->len || !is_digit(s[p])) return fail_at(r, p, "expected a digit in the exponent");
        while (p < r->len && is_digit(s[p])) p++;
    }
    char buf[64];
    size_t n = p - start;
    char *tmp = n < sizeof buf ? buf : malloc(n + 1);
    if (!tmp) return hr_errf(r->e, "out of memory");
    memcpy(tmp, s + start, n);
    tmp[n] = 0;
    v->type = HR_JSON_NUMBER, v->str = s + start, v->len = n;
    v->num = strtod(tmp, NULL);
    if (!frac) {
        errno = 0;
        long long ll = strtoll(tmp, NULL, 10);
        v->is_int = errno == 0, v->i = ll;
    }
    if (tmp != buf) free(tmp);
    r->pos = p;
    return 0;
}

static int read_value(reader *r, hr_json *v);

/* Elements of an array or members of an object, gathered in a growing buffer and then
 * copied into the arena (children are values, so copying keeps their own pointers valid). */
static int read_container(reader *r, hr_json *v, bool object) {
    size_t start = r->pos++;
    if (++r->depth > r->max_depth) {
        char m[80];
        snprintf(m, sizeof m, "nesting deeper than %d levels", r->max_depth);
        return fail_at(r, start, m);
    }
    hr_json *vals = NULL, *keys = NULL;
    size_t n = 0, cap = 0;
    int rc = -1;
    char close = object ? '}' : ']';
    skip_ws(r);
    if (r->pos < r->len && r->s[r->pos] == close) {
        r->pos++;
        goto done;
    }
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            hr_json *nv = realloc(vals, cap * sizeof *nv), *nk = object ? realloc(keys, cap * sizeof *nk) : NULL;
            if (nv) vals = nv;
            if (nk) keys = nk;
            if (!nv || (object && !nk)) {
                hr_errf(r->e, "out of memory");
                goto out;
            }
        }
        memset(&vals[n], 0, sizeof vals[n]);
        skip_ws(r);
        if (object) {
            memset(&keys[n], 0, sizeof keys[n]);
            if (r->pos >= r->len || r->s[r->pos] != '"') {
                fail_at(r, r->pos, n ? "expected a string key after ','" : "expected a string key or '}'");
                goto out;
            }
            keys[n].offset = r->pos;
            if (read_string(r, &keys[n])) goto out;
            skip_ws(r);
            if (r->pos >= r->len || r->s[r->pos] != ':') {
                fail_at(r, r->pos, "expected ':' after an object key");
                goto out;
            }
            r->pos++;
        }
        if (read_value(r, &vals[n])) goto out;
        n++;
        skip_ws(r);
        if (r->pos < r->len && r->s[r->pos] == ',') {
            r->pos++;
            continue;
        }
        if (r->pos < r->len && r->s[r->pos] == close) {
            r->pos++;
            break;
        }
        fail_at(r, r->pos, object ? "expected ',' or '}'" : "expected ',' or ']'");
        goto out;
    }
done:
    v->type = object ? HR_JSON_OBJECT : HR_JSON_ARRAY, v->n = n;
    if (n) {
        v->items = arena_alloc(r->doc, n * sizeof *vals);
        v->keys = object ? arena_alloc(r->doc, n * sizeof *keys) : NULL;
        if (!v->items || (object && !v->keys)) {
            hr_errf(r->e, "out of memory");
            goto out;
        }
        memcpy(v->items, vals, n * sizeof *vals);
        if (object) memcpy(v->keys, keys, n * sizeof *keys);
    }
    r->depth--;
    rc = 0;
out:
    free(vals);
    free(keys);
    return rc;
}

static bool word(reader *r, const char *w) {
    size_t n = strlen(w);
    if (r->len - r->pos < n || memcmp(r->s + r->pos, w, n)) return false;
    r->pos += n;
    return true;
}

static int read_value(reader *r, hr_json *v) {
    skip_ws(r);
    memset(v, 0, sizeof *v);
    v->offset = r->pos;
    if (r->pos >= r->len) return fail_at(r, r->pos, "expected a value, found the end of the text");
    char c = r->s[r->pos];
    if (c == '{' || c == '[') return read_container(r, v, c == '{');
    if (c == '"') return read_string(r, v);
    if (c == '-' || is_digit(c)) return read_number(r, v);
    if (word(r, "true")) return v->type = HR_JSON_BOOL, v->boolean = true, 0;
    if (word(r, "false")) return v->type = HR_JSON_BOOL, 0;
    if (word(r, "null")) return v->type = HR_JSON_NULL, 0;
    return fail_at(r, r->pos, "expected a value");
}

hr_json_doc *hr_json_parse(const char *text, size_t len, const hr_json_limits *lim, hr_err *e) {
    size_t max_bytes = lim ? lim->max_bytes : 0;
    if (max_bytes && len > max_bytes) {
        hr_errf(e, "JSON text of %zu bytes is over the limit of %zu", len, max_bytes);
        return NULL;
    }
    hr_json_doc *d = calloc(1, sizeof *d);
    if (!d) {
        hr_errf(e, "out of memory");
        return NULL;
    }
    reader r = {.s = text, .len = len, .max_depth = lim && lim->max_depth > 0 ? lim->max_depth : 64, .doc = d, .e = e};
    if (read_value(&r, &d->root)) goto fail;
    skip_ws(&r);
    if (r.pos < len) {
        fail_at(&r, r.pos, "unexpected text after the value");
        goto fail;
    }
    return d;
fail:
    hr_json_free(d);
    return NULL;
}

const hr_json *hr_json_root(const hr_json_doc *d) { return &d->root; }

void hr_json_free(hr_json_doc *d) {
    if (!d) return;
    for (block *b = d->blocks, *nx; b; b = nx) nx = b->next, free(b);
    free(d);
}

bool hr_json_is(const hr_json *v, const char *s) {
    return v && v->type == HR_JSON_STRING && strlen(s) == v->len && !memcmp(v->str, s, v->len);
}

const hr_json *hr_json_get(const hr_json *v, const char *key) {
    if (!v || v->type != HR_JSON_OBJECT) return NULL;
    for (size_t k = v->n; k-- > 0;)
        if (hr_json_is(&v->keys[k], key)) return &v->items[k];
    return NULL;
}

/* Growing output buffer for dump; ok turns false on the first failed allocation. */
typedef struct {
    char *p;
    size_t n, cap;
    bool ok;
} buf;

static void put(buf *b, const char *s, size_t n) {
    if (!b->ok) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->n + n + 1) * 2;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->ok = false;
            return;
        }
        b->p = np, b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void dump_string(buf *b, const char *s, size_t n) {
    put(b, "\"", 1);
    for (size_t k = 0; k < n; k++) {
        unsigned char c = (unsigned char)s[k];
        char esc[8];
        const char *rep = NULL;
        switch (c) {
        case '"': rep = "\\\""; break;
        case '\\': rep = "\\\\"; break;
        case '\b': rep = "\\b"; break;
        case '\f': rep = "\\f"; break;
        case '\n': rep = "\\n"; break;
        case '\r': rep = "\\r"; break;
        case '\t': rep = "\\t"; break;
        default:
            if (c < 0x20) snprintf(esc, sizeof esc, "\\u%04x", c), rep = esc;
        }
        if (rep) put(b, rep, strlen(rep));
        else put(b, (const char *)&s[k], 1);
    }
    put(b, "\"", 1);
}

static void dump(buf *b, const hr_json *v) {
    switch (v->type) {
    case HR_JSON_NULL: put(b, "null", 4); break;
    case HR_JSON_BOOL: v->boolean ? put(b, "true", 4) : put(b, "false", 5); break;
    case HR_JSON_NUMBER: put(b, v->str, v->len); break;
    case HR_JSON_STRING: dump_string(b, v->str, v->len); break;
    case HR_JSON_ARRAY:
    case HR_JSON_OBJECT: {
        bool obj = v->type == HR_JSON_OBJECT;
        put(b, obj ? "{" : "[", 1);
        for (size_t k = 0; k < v->n; k++) {
            if (k) put(b, ",", 1);
            if (obj) dump_string(b, v->keys[k].str, v->keys[k].len), put(b, ":", 1);
            dump(b, &v->items[k]);
        }
        put(b, obj ? "}" : "]", 1);
    }
    }
}

char *hr_json_dump(const hr_json *v, size_t *len) {
    buf b = {.ok = true};
    put(&b, "", 0);
    dump(&b, v);
    if (!b.ok) {
        free(b.p);
        return NULL;
    }
    if (len) *len = b.n;
    return b.p;
}
