/* JSON schema to GBNF, accepting the same language as llama.cpp's converter (same rule names
 * and whitespace rule, required properties first), so that Hearth and llama.cpp constrain a
 * model the same way. Differences are refusals: whatever llama.cpp would silently ignore
 * (pattern, unknown formats, number bounds, ...) is an error naming the keyword here. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gbnf_internal.h"
#include "grammar.h"
#include "util/json.h"

enum {
    JS_MAX_SCHEMA = 1 << 20,     /* schema text bytes */
    JS_MAX_GRAMMAR = 4 << 20,    /* produced GBNF bytes */
    JS_MAX_JSON_DEPTH = 128,     /* JSON nesting of the schema text */
    JS_MAX_VISIT_DEPTH = 128,    /* nested schemas, $ref hops included */
    JS_MAX_REPEAT = HR_GRAMMAR_MAX_REPEAT, /* minItems, maxItems, minLength, maxLength: what the parser expands */
};

/* ---- growing strings ---- */

typedef struct {
    char *p;
    size_t n, cap;
    bool oom;
} sb;

static void sb_putn(sb *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->n + n + 1) * 2;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np, b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
static void sb_put(sb *b, const char *s) { sb_putn(b, s, strlen(s)); }
static void sb_printf(sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sb *b, const char *fmt, ...) {
    char tmp[256];
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof tmp) { /* long rule names */
        char *big = malloc((size_t)n + 1);
        if (big) vsnprintf(big, (size_t)n + 1, fmt, aq), sb_putn(b, big, (size_t)n);
        else b->oom = true;
        free(big);
    } else if (n > 0) sb_putn(b, tmp, (size_t)n);
    va_end(aq);
}

/* ---- the rule table: names hashed, bodies compared on reuse ---- */

typedef struct {
    char *name, *body; /* body NULL: a $ref's name reserved while its target is built */
} rule;

typedef struct {
    const char *ref; /* the $ref text (in the schema document) */
    char *name;      /* the rule reserved for it */
    int containers;  /* arrays/objects entered when resolution began */
    bool done;
} refstate;

typedef struct {
    const hr_json *root;
    rule *rules;
    size_t n_rules, cap_rules;
    size_t *hash; /* open addressing over rules, index + 1, 0 empty */
    size_t cap_hash;
    refstate *refs;
    size_t n_refs, cap_refs;
    int depth, containers;
    size_t bytes;
    char path[512]; /* JSON pointer of the schema being visited, for messages */
    size_t path_len;
    const char *fill; /* the reserved $ref rule whose target is being built */
    hr_err *e;
    bool failed;
} conv;

static const char *fail(conv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *fail(conv *c, const char *fmt, ...) {
    if (c->failed) return NULL;
    c->failed = true;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->path_len > 1) hr_errf(c->e, "json schema: %s (at %s)", msg, c->path);
    else hr_errf(c->e, "json schema: %s", msg);
    return NULL;
}

static const char *oom(conv *c) { return fail(c, "out of memory"); }

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static rule *find_rule(const conv *c, const char *name) {
    if (!c->cap_hash) return NULL;
    for (size_t k = hash_str(name) & (c->cap_hash - 1);; k = (k + 1) & (c->cap_hash - 1)) {
        size_t v = c->hash[k];
        if (!v) return NULL;
        if (!strcmp(c->rules[v - 1].name, name)) return &c->rules[v - 1];
    }
}

static bool grow_hash(conv *c) {
    size_t cap = c->cap_hash ? c->cap_hash * 2 : 256;
    size_t *h = calloc(cap, sizeof *h);
    if (!h) return false;
    for (size_t r = 0; r < c->n_rules; r++) {
        size_t k = hash_str(c->rules[r].name) & (cap - 1);
        while (h[k]) k = (k + 1) & (cap - 1);
        h[k] = r + 1;
    }
    free(c->hash);
    c->hash = h, c->cap_hash = cap;
    return true;
}

/* Appends a rule (name and body are taken over, body may be NULL). */
static rule *new_rule(conv *c, char *name, char *body) {
    if ((c->n_rules + 1) * 2 > c->cap_hash && !grow_hash(c)) goto no;
    if (c->n_rules == c->cap_rules) {
        size_t cap = c->cap_rules ? c->cap_rules * 2 : 64;
        rule *nr = realloc(c->rules, cap * sizeof *nr);
        if (!nr) goto no;
        c->rules = nr, c->cap_rules = cap;
    }
    c->rules[c->n_rules] = (rule){name, body};
    size_t k = hash_str(name) & (c->cap_hash - 1);
    while (c->hash[k]) k = (k + 1) & (c->cap_hash - 1);
    c->hash[k] = ++c->n_rules;
    return &c->rules[c->n_rules - 1];
no:
    free(name);
    free(body);
    oom(c);
    return NULL;
}

/* Rule names keep [a-zA-Z0-9-]; every other run of bytes becomes one '-'. */
static char *sanitize(const char *name) {
    size_t n = strlen(name);
    char *o = malloc(n + 1), *w = o;
    if (!o) return NULL;
    for (size_t k = 0; k < n;) {
        if (isalnum((unsigned char)name[k]) || name[k] == '-') *w++ = name[k++];
        else {
            *w++ = '-';
            while (k < n && !(isalnum((unsigned char)name[k]) || name[k] == '-')) k++;
        }
    }
    *w = 0;
    return o;
}

static bool account(conv *c, size_t n) {
    c->bytes += n;
    if (c->bytes > JS_MAX_GRAMMAR) {
        fail(c, "the grammar would be over the limit of %d bytes", JS_MAX_GRAMMAR);
        return false;
    }
    return true;
}

/* Adds name ::= body and returns the rule's name: the same name when it is free or already
 * holds this body, else the first of name0, name1, ... that is. A reserved $ref name with no
 * body yet is filled. */
static const char *add_rule(conv *c, const char *name, const char *body) {
    if (c->failed || !body) return NULL;
    char *esc = sanitize(name);
    if (!esc) return oom(c);
    rule *r = find_rule(c, esc);
    if (r && r->body && !strcmp(r->body, body)) return free(esc), r->name;
    /* a reserved name that is not the one being filled counts as taken */
    if (r && !r->body && c->fill && !strcmp(c->fill, esc)) {
        if (!(r->body = strdup(body))) return free(esc), oom(c);
        free(esc);
        return account(c, strlen(body) + strlen(r->name) + 6) ? r->name : NULL;
    }
    if (r) {
        size_t n = strlen(esc);
        char *alt = malloc(n + 24);
        if (!alt) return free(esc), oom(c);
        for (unsigned i = 0;; i++) {
            snprintf(alt, n + 24, "%s%u", esc, i);
            rule *q = find_rule(c, alt);
            if (!q) break;
            if (q->body && !strcmp(q->body, body)) return free(esc), free(alt), q->name;
        }
        free(esc);
        esc = alt;
    }
    char *b = strdup(body);
    if (!b) return free(esc), oom(c);
    if (!account(c, strlen(body) + strlen(esc) + 6)) return free(esc), free(b), NULL;
    r = new_rule(c, esc, b);
    return r ? r->name : NULL;
}

/* ---- built-in rules (JSON syntax as llama.cpp's converter writes it) ---- */

typedef struct {
    const char *name, *body, *deps[6];
} builtin;

static const builtin BUILTINS[] = {
    {"boolean", "(\"true\" | \"false\")", {NULL}},
    {"decimal-part", "[0-9]{1,16}", {NULL}},
    {"integral-part", "[0] | [1-9] [0-9]{0,15}", {NULL}},
    {"number", "(\"-\"? integral-part) (\".\" decimal-part)? ([eE] [-+]? integral-part)?", {"integral-part", "decimal-part", NULL}},
    {"integer", "(\"-\"? integral-part)", {"integral-part", NULL}},
    {"value", "object | array | string | number | boolean | null", {"object", "array", "string", "number", "boolean", "null"}},
    {"object", "\"{\" space ( string \":\" space value (\",\" space string \":\" space value)* )? space \"}\"", {"string", "value", NULL}},
    {"array", "\"[\" space ( value (\",\" space value)* )? space \"]\"", {"value", NULL}},
    {"uuid", "\"\\\"\" [0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{12} \"\\\"\"", {NULL}},
    {"char", "[^\"\\\\\\x7F\\x00-\\x1F] | [\\\\] ([\"\\\\bfnrt] | \"u\" [0-9a-fA-F]{4})", {NULL}},
    {"string", "\"\\\"\" char* \"\\\"\"", {"char", NULL}},
    {"null", "\"null\"", {NULL}},
    /* string formats */
    {"date", "[0-9]{4} \"-\" ( \"0\" [1-9] | \"1\" [0-2] ) \"-\" ( \"0\" [1-9] | [1-2] [0-9] | \"3\" [0-1] )", {NULL}},
    {"time", "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{3} )? ( \"Z\" | ( \"+\" | \"-\" ) ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )", {NULL}},
    {"date-time", "date \"T\" time", {"date", "time", NULL}},
    {"date-string", "\"\\\"\" date \"\\\"\"", {"date", NULL}},
    {"time-string", "\"\\\"\" time \"\\\"\"", {"time", NULL}},
    {"date-time-string", "\"\\\"\" date-time \"\\\"\"", {"date-time", NULL}},
};

/* Spaces between tokens: nothing, one space, or one or two newlines and an indent of at most
 * 20 (bounded, so that a model cannot fill its output with whitespace). */
static const char SPACE_RULE[] = "| \" \" | \"\\n\"{1,2} [ \\t]{0,20}";

static const builtin *find_builtin(const char *name) {
    for (size_t k = 0; k < sizeof BUILTINS / sizeof *BUILTINS; k++)
        if (!strcmp(BUILTINS[k].name, name)) return &BUILTINS[k];
    return NULL;
}

static bool is_reserved(const char *name) { return !strcmp(name, "root") || find_builtin(name); }

/* Adds a built-in under name (its own name, or "root") and, under their own names, what it uses. */
static const char *add_builtin(conv *c, const char *name, const char *which) {
    const builtin *b = find_builtin(which);
    const char *r = add_rule(c, name, b->body);
    for (int k = 0; r && k < 6 && b->deps[k]; k++)
        if (!find_rule(c, b->deps[k]) && !add_builtin(c, b->deps[k], b->deps[k])) return NULL;
    return r;
}

/* ---- literals ---- */

/* A GBNF string literal matching exactly the bytes s[0..n). */
static void put_literal(sb *b, const char *s, size_t n) {
    sb_put(b, "\"");
    for (size_t k = 0; k < n; k++) {
        char ch = s[k];
        if (ch == '\r') sb_put(b, "\\r");
        else if (ch == '\n') sb_put(b, "\\n");
        else if (ch == '"') sb_put(b, "\\\"");
        else if (ch == '\\') sb_put(b, "\\\\");
        else sb_putn(b, &ch, 1);
    }
    sb_put(b, "\"");
}

/* The literal of a JSON value written compactly. */
static bool put_value_literal(conv *c, sb *b, const hr_json *v) {
    size_t n;
    char *t = hr_json_dump(v, &n);
    if (!t) return oom(c), false;
    put_literal(b, t, n);
    free(t);
    return true;
}

/* ---- paths (for messages) ---- */

static size_t path_push(conv *c, const char *seg) {
    size_t old = c->path_len;
    int n = snprintf(c->path + old, sizeof c->path - old, "/%s", seg);
    if (n > 0) c->path_len = old + (size_t)n < sizeof c->path ? old + (size_t)n : sizeof c->path - 1;
    return old;
}
static void path_pop(conv *c, size_t old) { c->path_len = old, c->path[old] = 0; }

/* ---- keywords ---- */

static const char *const ANNOTATIONS[] = {"title", "description", "$schema", "$id", "$comment", "examples", "default",
                                          "deprecated", "readOnly", "writeOnly", "$defs", "definitions",
                                          "contentMediaType", "contentEncoding", NULL};
/* Standard keywords that constrain values and that this converter cannot express. */
static const char *const UNSUPPORTED[] = {"pattern", "patternProperties", "propertyNames", "minProperties",
                                          "maxProperties", "dependentRequired", "dependentSchemas", "dependencies",
                                          "if", "then", "else", "not", "contains", "minContains", "maxContains",
                                          "uniqueItems", "multipleOf", "unevaluatedProperties", "unevaluatedItems",
                                          "additionalItems", "$anchor", "$dynamicRef", "$dynamicAnchor",
                                          "$recursiveRef", "$recursiveAnchor", "contentSchema", NULL};

static bool in_list(const char *const *l, const hr_json *key) {
    for (int k = 0; l[k]; k++)
        if (hr_json_is(key, l[k])) return true;
    return false;
}

static bool refuse_unsupported(conv *c, const hr_json *s) {
    for (size_t k = 0; k < s->n; k++)
        if (in_list(UNSUPPORTED, &s->keys[k])) return fail(c, "'%s' is not supported", s->keys[k].str), false;
    return true;
}

/* With $ref, anyOf/oneOf or allOf, other constraining keywords would be ignored by llama.cpp:
 * refuse them instead. allowed: keywords that may stand beside (NULL-terminated). */
static bool refuse_siblings(conv *c, const hr_json *s, const char *kw, const char *const *allowed) {
    for (size_t k = 0; k < s->n; k++) {
        const hr_json *key = &s->keys[k];
        if (hr_json_is(key, kw) || in_list(ANNOTATIONS, key) || (allowed && in_list(allowed, key))) continue;
        return fail(c, "'%s' next to '%s' is not supported", key->str, kw), false;
    }
    return true;
}

/* A non-negative count keyword; def when absent; -2 on error. */
static long get_count(conv *c, const hr_json *s, const char *key, long def) {
    const hr_json *v = hr_json_get(s, key);
    if (!v) return def;
    if (v->type != HR_JSON_NUMBER || !v->is_int || v->i < 0) return fail(c, "'%s' must be a non-negative integer", key), -2;
    if (v->i > JS_MAX_REPEAT) return fail(c, "'%s' %lld is over the limit of %d", key, (long long)v->i, JS_MAX_REPEAT), -2;
    return (long)v->i;
}

/* ---- repetition: item{min,max} with an optional separator between items ---- */

static void put_repeat(sb *b, const char *item, long min, long max, const char *sep) {
    bool has_max = max >= 0;
    if (max == 0) return;
    if (min == 0 && max == 1) {
        sb_printf(b, "%s?", item);
        return;
    }
    if (!sep) {
        if (min == 1 && !has_max) sb_printf(b, "%s+", item);
        else if (min == 0 && !has_max) sb_printf(b, "%s*", item);
        else if (has_max) sb_printf(b, "%s{%ld,%ld}", item, min, max);
        else sb_printf(b, "%s{%ld,}", item, min);
        return;
    }
    /* the first item, then (sep item) for the others */
    sb tail = {0};
    sb_printf(&tail, "(%s %s)", sep, item);
    if (min == 0) sb_put(b, "(");
    sb_printf(b, "%s ", item);
    if (!tail.oom) put_repeat(b, tail.p, min ? min - 1 : 0, has_max ? max - 1 : -1, NULL);
    else b->oom = true;
    if (min == 0) sb_put(b, ")?");
    free(tail.p);
}

/* ---- integer ranges ---- */

/* Digits [0-9]{lo,hi} (hi < 0: no upper bound). */
static void put_digits(sb *b, int lo, int hi) {
    sb_put(b, "[0-9]");
    if (lo == 1 && hi == 1) return;
    if (lo == hi) sb_printf(b, "{%d}", lo);
    else if (hi < 0) sb_printf(b, "{%d,}", lo);
    else sb_printf(b, "{%d,%d}", lo, hi);
}

static void put_digit_class(sb *b, char lo, char hi) {
    if (lo == hi) sb_printf(b, "[%c]", lo);
    else sb_printf(b, "[%c-%c]", lo, hi);
}

/* Numbers from a to z, both strings of the same length (leading zeros allowed inside). */
static void put_same_len(sb *b, const char *a, const char *z, size_t n) {
    size_t i = 0;
    while (i < n && a[i] == z[i]) i++;
    if (i) {
        sb_put(b, "\"");
        sb_putn(b, a, i);
        sb_put(b, "\"");
    }
    if (i == n) return;
    if (i) sb_put(b, " ");
    size_t rest = n - i - 1;
    if (!rest) {
        put_digit_class(b, a[i], z[i]);
        return;
    }
    bool a_zeros = strspn(a + i + 1, "0") == rest, z_nines = strspn(z + i + 1, "9") == rest;
    char lo = a_zeros ? a[i] : (char)(a[i] + 1), hi = z_nines ? z[i] : (char)(z[i] - 1);
    char nines[24], zeros[24];
    memset(nines, '9', rest), memset(zeros, '0', rest);
    sb_put(b, "(");
    bool first = true;
    if (!a_zeros) { /* a[i] followed by a's tail up to 99..9 */
        sb_printf(b, "[%c] (", a[i]);
        put_same_len(b, a + i + 1, nines, rest);
        sb_put(b, ")");
        first = false;
    }
    if (lo <= hi) { /* whole blocks of digits */
        if (!first) sb_put(b, " | ");
        put_digit_class(b, lo, hi);
        sb_put(b, " ");
        put_digits(b, (int)rest, (int)rest);
        first = false;
    }
    if (!z_nines) { /* z[i] followed by 00..0 up to z's tail */
        if (!first) sb_put(b, " | ");
        sb_printf(b, "[%c] (", z[i]);
        put_same_len(b, zeros, z + i + 1, rest);
        sb_put(b, ")");
    }
    sb_put(b, ")");
}

enum { INT_DIGITS = 16 }; /* as integral-part: unbounded sides stop at 16 digits */

/* Non-negative integers in [lo, hi], hi < 0 meaning no bound (up to INT_DIGITS digits). */
static void put_nonneg_range(sb *b, int64_t lo, int64_t hi) {
    char a[24], z[24];
    int la = snprintf(a, sizeof a, "%lld", (long long)lo);
    int lz = hi >= 0 ? snprintf(z, sizeof z, "%lld", (long long)hi) : INT_DIGITS;
    bool first = true;
    for (int len = la; len <= lz; len++) {
        char from[24], to[24];
        if (len == la) memcpy(from, a, (size_t)la + 1);
        else from[0] = '1', memset(from + 1, '0', (size_t)len - 1), from[len] = 0;
        if (len == lz && hi >= 0) memcpy(to, z, (size_t)lz + 1);
        else memset(to, '9', (size_t)len), to[len] = 0;
        if (!first) sb_put(b, " | ");
        first = false;
        if (len > la && (len < lz || hi < 0)) { /* a whole length class: [1-9] [0-9]{len-1} */
            /* merge every remaining whole class into one alternative */
            int last = hi < 0 ? INT_DIGITS : lz - 1;
            sb_put(b, "[1-9]");
            if (last > 1) sb_put(b, " "), put_digits(b, len - 1, last - 1);
            len = last;
            continue;
        }
        put_same_len(b, from, to, (size_t)len);
    }
}

/* Integers in [lo, hi]; has_lo / has_hi say which bounds exist. "-0" is never produced. */
static void put_int_range(sb *b, bool has_lo, int64_t lo, bool has_hi, int64_t hi) {
    bool first = true;
    if (!has_lo || lo < 0) { /* negative part: "-" then |x| in [max(1,-hi), -lo] */
        int64_t nlo = has_hi && hi < 0 ? -hi : 1, nhi = has_lo ? -lo : -1;
        sb_put(b, "\"-\" (");
        put_nonneg_range(b, nlo, nhi);
        sb_put(b, ")");
        first = false;
    }
    if (!has_hi || hi >= 0) {
        if (!first) sb_put(b, " | ");
        put_nonneg_range(b, has_lo && lo > 0 ? lo : 0, has_hi ? hi : -1);
    }
}

/* A bound of an integer schema, rounded inwards (minimum up, maximum down). */
static bool get_bound(conv *c, const hr_json *s, const char *key, bool up, bool *has, int64_t *out) {
    const hr_json *v = hr_json_get(s, key);
    if (!v) return true;
    if (v->type != HR_JSON_NUMBER) return fail(c, "'%s' must be a number", key), false;
    double d = up ? ceil(v->num) : floor(v->num);
    if (v->is_int) d = (double)v->i;
    if (!(d > -9e15 && d < 9e15)) return fail(c, "'%s' %.*s is out of range (at most 15 digits)", key, (int)v->len, v->str), false;
    int64_t x = v->is_int ? v->i : (int64_t)d;
    bool excl = key[0] == 'e';
    if (excl && !v->is_int && d != v->num) excl = false; /* 2.5 exclusive is 3 inclusive already */
    if (excl) x += up ? 1 : -1;
    if (*has) x = up ? (x > *out ? x : *out) : (x < *out ? x : *out);
    *has = true, *out = x;
    return true;
}

/* ---- visiting ---- */

static const char *visit(conv *c, const hr_json *s, const char *name, const hr_json *type);

static char *joined(const char *a, const char *sep, const char *b) {
    size_t na = strlen(a), ns = strlen(sep), nb = strlen(b);
    char *o = malloc(na + ns + nb + 1);
    if (o) memcpy(o, a, na), memcpy(o + na, sep, ns), memcpy(o + na + ns, b, nb + 1);
    return o;
}

/* name + "-" + suffix, or suffix alone when name is empty (llama.cpp's child names). */
static char *child_name(const char *name, const char *suffix) { return joined(name, *name ? "-" : "", suffix); }

static const char *visit_child(conv *c, const hr_json *s, const char *name, const char *suffix, const char *seg) {
    /* a top-level property named "" must not take the name "root" (llama.cpp's does) */
    char *n = *name || *suffix ? child_name(name, suffix) : strdup("-");
    if (!n) return oom(c);
    size_t p = path_push(c, seg);
    const char *r = visit(c, s, n, NULL);
    path_pop(c, p);
    free(n);
    return r;
}

/* Alternatives: alts[k] (or the schema with type types[k]) as name-k. */
static const char *visit_union(conv *c, const char *rule_name, const char *name, const hr_json *alts,
                               const hr_json *self, const char *seg) {
    if (alts->type != HR_JSON_ARRAY || !alts->n) return fail(c, "'%s' must be a non-empty array", seg);
    sb b = {0};
    for (size_t k = 0; k < alts->n && !c->failed; k++) {
        char suf[48], ps[64];
        snprintf(suf, sizeof suf, "%s%zu", *name ? "" : "alternative-", k);
        snprintf(ps, sizeof ps, "%s/%zu", seg, k);
        char *n = joined(name, *name ? "-" : "", suf);
        if (!n) return free(b.p), oom(c);
        size_t p = path_push(c, ps);
        const char *r = self ? visit(c, self, n, &alts->items[k]) : visit(c, &alts->items[k], n, NULL);
        path_pop(c, p);
        free(n);
        if (!r) break;
        if (k) sb_put(&b, " | ");
        sb_put(&b, r);
    }
    const char *r = b.oom ? oom(c) : add_rule(c, rule_name, b.p);
    free(b.p);
    return r;
}

/* The schema a local JSON pointer ("#", "#/$defs/a", with ~0 ~1 escapes) names. */
static const hr_json *resolve_pointer(conv *c, const hr_json *ref) {
    const char *p = ref->str;
    if (p[0] != '#' || (p[1] && p[1] != '/'))
        return fail(c, "$ref '%s' is not supported (only references inside the schema, '#/...')", p), NULL;
    const hr_json *t = c->root;
    for (p++; *p == '/';) {
        p++;
        char seg[256];
        size_t n = 0;
        for (; *p && *p != '/'; p++) {
            char ch = *p;
            if (ch == '~' && (p[1] == '0' || p[1] == '1')) ch = p[1] == '0' ? '~' : '/', p++;
            if (n + 1 < sizeof seg) seg[n++] = ch;
        }
        seg[n] = 0;
        const hr_json *next = NULL;
        if (t->type == HR_JSON_OBJECT) next = hr_json_get(t, seg);
        else if (t->type == HR_JSON_ARRAY) {
            char *end;
            unsigned long idx = strtoul(seg, &end, 10);
            if (*seg && !*end && idx < t->n) next = &t->items[idx];
        }
        if (!next) return fail(c, "$ref '%s' does not resolve ('%s' not found)", ref->str, seg), NULL;
        t = next;
    }
    return t;
}

static refstate *find_ref(conv *c, const char *ref) {
    for (size_t k = 0; k < c->n_refs; k++)
        if (!strcmp(c->refs[k].ref, ref)) return &c->refs[k];
    return NULL;
}

/* The rule of a $ref target, built once. A reference back to a $ref still being built is
 * fine when an array or object was entered on the way (the recursion consumes input);
 * without one it would be left recursion, which no grammar can use. */
static const char *resolve_ref(conv *c, const hr_json *ref) {
    if (ref->type != HR_JSON_STRING) return fail(c, "'$ref' must be a string");
    refstate *st = find_ref(c, ref->str);
    if (st) {
        if (!st->done && st->containers == c->containers)
            return fail(c, "$ref '%s' refers back to itself without consuming input", ref->str);
        return st->name;
    }
    const hr_json *target = resolve_pointer(c, ref);
    if (!target) return NULL;
    /* "ref" + the fragment with every run of other characters as '-' (llama.cpp's naming) */
    char *raw = joined("ref", "", ref->str + 1), *nm = raw ? sanitize(raw) : NULL;
    free(raw);
    if (!nm) return oom(c);
    /* reserve the name: the first free one of nm, nm0, nm1, ... */
    char *res = NULL;
    if (!find_rule(c, nm)) res = strdup(nm);
    else {
        size_t n = strlen(nm);
        res = malloc(n + 24);
        for (unsigned i = 0; res; i++) {
            snprintf(res, n + 24, "%s%u", nm, i);
            if (!find_rule(c, res)) break;
        }
    }
    free(nm);
    if (!res) return oom(c);
    rule *r = new_rule(c, res, NULL);
    if (!r) return NULL;
    const char *name = r->name;
    if (c->n_refs == c->cap_refs) {
        size_t cap = c->cap_refs ? c->cap_refs * 2 : 16;
        refstate *nr = realloc(c->refs, cap * sizeof *nr);
        if (!nr) return oom(c);
        c->refs = nr, c->cap_refs = cap;
    }
    size_t idx = c->n_refs++;
    c->refs[idx] = (refstate){ref->str, (char *)name, c->containers, false};
    char saved[sizeof c->path];
    size_t saved_len = c->path_len;
    memcpy(saved, c->path, sizeof saved);
    snprintf(c->path, sizeof c->path, "%s", ref->str);
    c->path_len = strlen(c->path);
    const char *fill = c->fill;
    c->fill = name;
    const char *got = visit(c, target, name, NULL);
    memcpy(c->path, saved, sizeof saved);
    c->path_len = saved_len;
    if (!got) return c->fill = fill, NULL;
    r = find_rule(c, name);
    if (!r->body && !add_rule(c, name, got)) return NULL; /* the target was a built-in: alias it */
    c->fill = fill;
    c->refs[idx].done = true;
    return name;
}

/* ---- strings, objects, arrays ---- */

static const char *visit_string(conv *c, const hr_json *s, const char *rule_name) {
    const hr_json *fmt = hr_json_get(s, "format");
    long min = get_count(c, s, "minLength", 0), max = get_count(c, s, "maxLength", -1);
    if (min == -2 || max == -2) return NULL;
    if (fmt) {
        if (fmt->type != HR_JSON_STRING) return fail(c, "'format' must be a string");
        if (hr_json_get(s, "minLength") || hr_json_get(s, "maxLength"))
            return fail(c, "'minLength' or 'maxLength' next to 'format' is not supported");
        const char *f = fmt->str;
        bool uuid = !strcmp(f, "uuid") || (strlen(f) == 5 && !strncmp(f, "uuid", 4) && f[4] >= '1' && f[4] <= '5');
        if (uuid) return add_builtin(c, !strcmp(rule_name, "root") ? "root" : "uuid", "uuid");
        const char *prim = !strcmp(f, "date") ? "date-string" : !strcmp(f, "time") ? "time-string"
                         : !strcmp(f, "date-time") ? "date-time-string" : NULL;
        if (!prim) return fail(c, "format '%s' is not supported (date, time, date-time, uuid)", f);
        return add_rule(c, rule_name, add_builtin(c, prim, prim));
    }
    if (max >= 0 && min > max) return fail(c, "'minLength' %ld is above 'maxLength' %ld", min, max);
    if (min > 0 || max >= 0) {
        const char *ch = add_builtin(c, "char", "char");
        if (!ch) return NULL;
        sb b = {0};
        sb_put(&b, "\"\\\"\" ");
        put_repeat(&b, ch, min, max, NULL);
        sb_put(&b, " \"\\\"\"");
        const char *r = b.oom ? oom(c) : add_rule(c, rule_name, b.p);
        free(b.p);
        return r;
    }
    return add_builtin(c, !strcmp(rule_name, "root") ? "root" : "string", "string");
}

/* One property's key and value. */
typedef struct {
    const char *name; /* decoded property name, or "*" for additional properties */
    char *kv;         /* rule name of "key": value */
    bool required;
} prop;

/* A string that is none of the given names, as a trie: at each node either a child's
 * character, or any other character followed by anything; the empty rest only where no
 * name ends. Names are matched in their written form, so names that need escaping are
 * refused. */
typedef struct tnode {
    uint32_t *cp;
    struct tnode **kid;
    int n, cap;
    bool end;
} tnode;

enum { JS_MAX_EXCLUDED_NAME = 256 }; /* bytes of a property name excluded from additional keys */

static void trie_free(tnode *t) {
    if (!t) return;
    for (int k = 0; k < t->n; k++) trie_free(t->kid[k]);
    free(t->cp);
    free(t->kid);
    free(t);
}

static size_t utf8_dec(const unsigned char *s, uint32_t *cp) {
    if (s[0] < 0x80) return *cp = s[0], 1;
    if (s[0] < 0xE0) return *cp = (uint32_t)(s[0] & 0x1F) << 6 | (s[1] & 0x3F), 2;
    if (s[0] < 0xF0) return *cp = (uint32_t)(s[0] & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3F), 3;
    *cp = (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3F) << 12 | (uint32_t)(s[2] & 0x3F) << 6 | (s[3] & 0x3F);
    return 4;
}

/* The child of t for cp, made if missing (children kept sorted by code point). */
static tnode *trie_child(tnode *t, uint32_t cp) {
    int at = 0;
    while (at < t->n && t->cp[at] < cp) at++;
    if (at < t->n && t->cp[at] == cp) return t->kid[at];
    if (t->n == t->cap) {
        int cap = t->cap ? t->cap * 2 : 4;
        uint32_t *ncp = realloc(t->cp, (size_t)cap * sizeof *ncp);
        if (ncp) t->cp = ncp;
        tnode **nk = realloc(t->kid, (size_t)cap * sizeof *nk);
        if (nk) t->kid = nk;
        if (!ncp || !nk) return NULL;
        t->cap = cap;
    }
    tnode *k = calloc(1, sizeof *k);
    if (!k) return NULL;
    memmove(&t->cp[at + 1], &t->cp[at], (size_t)(t->n - at) * sizeof *t->cp);
    memmove(&t->kid[at + 1], &t->kid[at], (size_t)(t->n - at) * sizeof *t->kid);
    t->cp[at] = cp, t->kid[at] = k, t->n++;
    return k;
}

static void put_cp(sb *b, uint32_t cp, bool in_class) {
    char u[5];
    if (in_class && (cp == ']' || cp == '-' || cp == '^')) {
        sb_printf(b, "\\x%02X", (unsigned)cp);
        return;
    }
    size_t n = 0;
    if (cp < 0x80) u[n++] = (char)cp;
    else if (cp < 0x800) u[n++] = (char)(0xC0 | cp >> 6), u[n++] = (char)(0x80 | (cp & 0x3F));
    else if (cp < 0x10000)
        u[n++] = (char)(0xE0 | cp >> 12), u[n++] = (char)(0x80 | (cp >> 6 & 0x3F)), u[n++] = (char)(0x80 | (cp & 0x3F));
    else
        u[n++] = (char)(0xF0 | cp >> 18), u[n++] = (char)(0x80 | (cp >> 12 & 0x3F)), u[n++] = (char)(0x80 | (cp >> 6 & 0x3F)),
        u[n++] = (char)(0x80 | (cp & 0x3F));
    if (in_class) sb_putn(b, u, n);
    else put_literal(b, u, n);
}

static void put_trie(sb *b, const tnode *t, const char *ch) {
    sb_put(b, "(");
    for (int k = 0; k < t->n; k++) {
        put_cp(b, t->cp[k], false);
        sb_put(b, " ");
        put_trie(b, t->kid[k], ch);
        sb_put(b, " | ");
    }
    /* any other character (or an escape: names never start one here), then anything */
    sb_put(b, "([^\"\\\\\\x7F\\x00-\\x1F");
    for (int k = 0; k < t->n; k++) put_cp(b, t->cp[k], true);
    sb_printf(b, "] | [\\\\] ([\"\\\\bfnrt] | \"u\" [0-9a-fA-F]{4})) %s*)", ch);
    if (!t->end) sb_put(b, "?");
}

/* The body of a key rule: any JSON string but the n names (malloc'd, NULL on error). */
static char *not_strings(conv *c, const prop *props, size_t n) {
    tnode *root = calloc(1, sizeof *root);
    if (!root) return oom(c), NULL;
    for (size_t k = 0; k < n; k++) {
        const unsigned char *p = (const unsigned char *)props[k].name;
        if (strlen(props[k].name) > JS_MAX_EXCLUDED_NAME) {
            trie_free(root);
            return fail(c, "additional properties next to a property name over %d bytes are not supported",
                        JS_MAX_EXCLUDED_NAME), NULL;
        }
        tnode *t = root;
        while (*p && t) {
            uint32_t cp;
            if (*p < 0x20 || *p == '"' || *p == '\\' || *p == 0x7F) {
                trie_free(root);
                return fail(c, "additional properties next to property '%s', whose name needs escaping, are not supported",
                            props[k].name), NULL;
            }
            p += utf8_dec(p, &cp);
            t = trie_child(t, cp);
        }
        if (!t) return trie_free(root), oom(c), NULL;
        t->end = true;
    }
    const char *ch = add_builtin(c, "char", "char");
    sb b = {0};
    if (ch) {
        sb_put(&b, "\"\\\"\" ");
        put_trie(&b, root, ch);
        sb_put(&b, " \"\\\"\"");
    }
    trie_free(root);
    if (!ch || b.oom) {
        free(b.p);
        if (ch) oom(c);
        return NULL;
    }
    return b.p;
}

/* The object rule over props (kv rule names set): required ones first, then every way of
 * choosing optional ones in order, each tail of the optional list a rule of its own. */
static char *object_body(conv *c, const char *name, prop *props, size_t n) {
    sb b = {0};
    size_t n_req = 0, n_opt = 0;
    for (size_t k = 0; k < n; k++) n_req += props[k].required, n_opt += !props[k].required;
    if (!n) {
        sb_put(&b, "\"{\" space \"}\"");
        return b.p;
    }
    const prop **opt = malloc((n_opt + 1) * sizeof *opt);
    const char **rest = calloc(n_opt + 1, sizeof *rest);
    if (!opt || !rest) return free(opt), free(rest), oom(c), NULL;
    sb_put(&b, "\"{\" space ");
    size_t r = 0, o = 0;
    for (size_t k = 0; k < n; k++) {
        if (!props[k].required) {
            opt[o++] = &props[k];
            continue;
        }
        if (r++) sb_put(&b, " \",\" space ");
        sb_put(&b, props[k].kv);
    }
    if (n_opt) {
        /* rest[j]: optional j.. where j may be left out: ( "," space kv_j )? rest[j+1] */
        for (size_t j = n_opt; j-- > 1 && !c->failed;) {
            sb t = {0};
            bool star = !strcmp(opt[j]->name, "*");
            sb_printf(&t, "( \",\" space %s )%s", opt[j]->kv, star ? "*" : "?");
            if (rest[j + 1]) sb_printf(&t, " %s", rest[j + 1]);
            char *rn = joined(name, *name ? "-" : "", opt[j - 1]->name), *rn2 = rn ? joined(rn, "", "-rest") : NULL;
            rest[j] = t.oom || !rn2 ? oom(c) : add_rule(c, rn2, t.p);
            free(rn), free(rn2), free(t.p);
        }
        sb_put(&b, " (");
        if (n_req) sb_put(&b, " \",\" space ( ");
        for (size_t i = 0; i < n_opt; i++) {
            if (i) sb_put(&b, " | ");
            sb_put(&b, opt[i]->kv);
            if (!strcmp(opt[i]->name, "*")) sb_printf(&b, " ( \",\" space %s )*", opt[i]->kv);
            if (i + 1 < n_opt && rest[i + 1]) sb_printf(&b, " %s", rest[i + 1]);
        }
        if (n_req) sb_put(&b, " )");
        sb_put(&b, " )?");
    }
    sb_put(&b, " space \"}\"");
    free(opt);
    free(rest);
    if (b.oom || c->failed) return free(b.p), c->failed ? NULL : (oom(c), NULL);
    return b.p;
}

static bool has_key(const hr_json *obj, const hr_json *key) {
    for (size_t k = 0; obj && k < obj->n; k++)
        if (obj->keys[k].len == key->len && !memcmp(obj->keys[k].str, key->str, key->len)) return true;
    return false;
}

static bool is_required(const hr_json *req, const hr_json *key) {
    for (size_t k = 0; req && k < req->n; k++)
        if (req->items[k].len == key->len && !memcmp(req->items[k].str, key->str, key->len)) return true;
    return false;
}

/* Checks "required": an array of strings naming properties. */
static bool check_required(conv *c, const hr_json *req, const hr_json *const *props, size_t n_props) {
    if (!req) return true;
    if (req->type != HR_JSON_ARRAY) return fail(c, "'required' must be an array of strings"), false;
    for (size_t k = 0; k < req->n; k++) {
        if (req->items[k].type != HR_JSON_STRING) return fail(c, "'required' must be an array of strings"), false;
        bool found = false;
        for (size_t p = 0; p < n_props && !found; p++) found = has_key(props[p], &req->items[k]);
        if (!found) return fail(c, "required property '%s' is not in 'properties'", req->items[k].str), false;
    }
    return true;
}

/* The object rule: props (name, schema, required) in order, then additional properties:
 * add NULL none, an empty-object marker (any) or a schema. */
typedef struct {
    const hr_json *key, *schema;
    bool required;
} pdef;

static const char *build_object(conv *c, const char *rule_name, const char *name, const pdef *defs, size_t n,
                                const hr_json *add, bool add_any) {
    prop *props = calloc(n + 1, sizeof *props);
    if (!props) return oom(c);
    const char *res = NULL;
    size_t np = 0;
    for (size_t k = 0; k < n; k++, np++) {
        const char *pn = defs[k].key->str;
        if (strlen(pn) != defs[k].key->len) {
            fail(c, "property names with NUL are not supported");
            goto out;
        }
        char seg[300];
        snprintf(seg, sizeof seg, "properties/%s", pn);
        const char *vr = visit_child(c, defs[k].schema, name, pn, seg);
        if (!vr) goto out;
        sb b = {0};
        if (!put_value_literal(c, &b, defs[k].key)) goto out;
        sb_printf(&b, " space \":\" space %s", vr);
        char *kvn = child_name(name, pn), *kvn2 = kvn ? joined(kvn, "", "-kv") : NULL;
        const char *kv = b.oom || !kvn2 ? oom(c) : add_rule(c, kvn2, b.p);
        free(b.p), free(kvn), free(kvn2);
        if (!kv || !(props[np].kv = strdup(kv))) goto out;
        props[np].name = pn, props[np].required = defs[k].required;
    }
    if (add || add_any) {
        char *sub = child_name(name, "additional");
        if (!sub) { oom(c); goto out; }
        const char *vr;
        if (add_any) vr = add_builtin(c, "value", "value");
        else {
            char *vn = joined(sub, "", "-value");
            size_t p = path_push(c, "additionalProperties");
            vr = vn ? visit(c, add, vn, NULL) : oom(c);
            path_pop(c, p);
            free(vn);
        }
        const char *kr = NULL;
        if (vr && !np) kr = add_builtin(c, "string", "string");
        else if (vr) {
            char *body = not_strings(c, props, np), *kn = body ? joined(sub, "", "-k") : NULL;
            kr = body && kn ? add_rule(c, kn, body) : NULL;
            free(body), free(kn);
        }
        char *kvn = joined(sub, "", "-kv");
        sb b = {0};
        if (kr && vr) sb_printf(&b, "%s \":\" space %s", kr, vr);
        const char *kv = kr && vr && kvn && !b.oom ? add_rule(c, kvn, b.p) : NULL;
        free(kvn), free(b.p), free(sub);
        if (!kv || !(props[np].kv = strdup(kv))) { if (!c->failed) oom(c); goto out; }
        props[np].name = "*", props[np].required = false, np++;
    }
    char *body = object_body(c, name, props, np);
    res = body ? add_rule(c, rule_name, body) : NULL;
    free(body);
out:
    for (size_t k = 0; k <= n; k++) free(props[k].kv);
    free(props);
    return res;
}

static const char *visit_object(conv *c, const hr_json *s, const char *rule_name, const char *name) {
    const hr_json *pr = hr_json_get(s, "properties"), *add = hr_json_get(s, "additionalProperties");
    if (pr && pr->type != HR_JSON_OBJECT) return fail(c, "'properties' must be an object");
    if (add && add->type != HR_JSON_BOOL && add->type != HR_JSON_OBJECT)
        return fail(c, "'additionalProperties' must be a boolean or a schema");
    const hr_json *req = hr_json_get(s, "required");
    if (!check_required(c, req, &pr, pr ? 1 : 0)) return NULL;
    /* llama.cpp's default: with properties and no additionalProperties, no other keys */
    bool add_any = add ? add->type == HR_JSON_BOOL && add->boolean : !pr;
    const hr_json *add_schema = add && add->type == HR_JSON_OBJECT ? add : NULL;
    if (add_schema && add_schema->n == 0) add_any = true, add_schema = NULL;
    size_t n = pr ? pr->n : 0;
    if (!n && add_any) return add_rule(c, rule_name, add_builtin(c, "object", "object"));
    pdef *defs = calloc(n + 1, sizeof *defs);
    if (!defs) return oom(c);
    for (size_t k = 0; k < n; k++) {
        for (size_t j = 0; j < k; j++)
            if (pr->keys[j].len == pr->keys[k].len && !memcmp(pr->keys[j].str, pr->keys[k].str, pr->keys[k].len)) {
                free(defs);
                return fail(c, "property '%s' is defined twice", pr->keys[k].str);
            }
        defs[k] = (pdef){&pr->keys[k], &pr->items[k], is_required(req, &pr->keys[k])};
    }
    const char *r = build_object(c, rule_name, name, defs, n, add_schema, add_any);
    free(defs);
    return r;
}

/* allOf over object schemas (or $refs to them): their properties merged, required where any
 * part requires them, no additional properties (as llama.cpp). */
static const char *visit_all_of(conv *c, const hr_json *s, const char *rule_name, const char *name) {
    static const char *const beside[] = {"type", NULL};
    const hr_json *all = hr_json_get(s, "allOf"), *type = hr_json_get(s, "type");
    if (!refuse_siblings(c, s, "allOf", beside)) return NULL;
    if (type && !hr_json_is(type, "object")) return fail(c, "'allOf' is supported only for objects");
    if (all->type != HR_JSON_ARRAY || !all->n) return fail(c, "'allOf' must be a non-empty array");
    size_t cap = 0, n = 0;
    pdef *defs = NULL;
    const hr_json **parts = calloc(all->n, sizeof *parts);
    if (!parts) return oom(c);
    for (size_t k = 0; k < all->n && !c->failed; k++) {
        const hr_json *p = &all->items[k];
        for (int hops = 0; p && p->type == HR_JSON_OBJECT && hr_json_get(p, "$ref"); hops++) {
            const hr_json *ref = hr_json_get(p, "$ref");
            if (hops > 32 || ref->type != HR_JSON_STRING) { fail(c, "'$ref' inside 'allOf' does not lead to an object"); break; }
            p = resolve_pointer(c, ref);
        }
        if (c->failed) break;
        const hr_json *pt = p ? hr_json_get(p, "type") : NULL;
        if (!p || p->type != HR_JSON_OBJECT || (pt && !hr_json_is(pt, "object")) ||
            (!pt && !hr_json_get(p, "properties") && !hr_json_get(p, "required"))) {
            fail(c, "'allOf' is supported only for objects (part %zu is not one)", k);
            break;
        }
        static const char *const part_ok[] = {"type", "properties", "required", "additionalProperties", NULL};
        for (size_t j = 0; j < p->n && !c->failed; j++)
            if (!in_list(ANNOTATIONS, &p->keys[j]) && !in_list(part_ok, &p->keys[j]))
                fail(c, "'%s' inside an 'allOf' part is not supported", p->keys[j].str);
        const hr_json *pr = hr_json_get(p, "properties");
        if (pr && pr->type != HR_JSON_OBJECT) fail(c, "'properties' must be an object");
        parts[k] = pr;
        for (size_t j = 0; pr && j < pr->n && !c->failed; j++) {
            for (size_t q = 0; q < n; q++)
                if (defs[q].key->len == pr->keys[j].len && !memcmp(defs[q].key->str, pr->keys[j].str, pr->keys[j].len))
                    fail(c, "property '%s' is defined in two 'allOf' parts", pr->keys[j].str);
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                pdef *nd = realloc(defs, cap * sizeof *nd);
                if (!nd) { oom(c); break; }
                defs = nd;
            }
            defs[n++] = (pdef){&pr->keys[j], &pr->items[j], false};
        }
    }
    for (size_t k = 0; k < all->n && !c->failed; k++) {
        const hr_json *p = &all->items[k];
        while (p && hr_json_get(p, "$ref")) p = resolve_pointer(c, hr_json_get(p, "$ref"));
        const hr_json *req = p ? hr_json_get(p, "required") : NULL;
        if (!check_required(c, req, parts, all->n)) break;
        for (size_t q = 0; q < n; q++) defs[q].required |= is_required(req, defs[q].key);
    }
    const char *r = c->failed ? NULL : build_object(c, rule_name, name, defs, n, NULL, false);
    free(defs);
    free(parts);
    return r;
}

static const char *visit_array(conv *c, const hr_json *s, const char *rule_name, const char *name) {
    const hr_json *items = hr_json_get(s, "items"), *prefix = hr_json_get(s, "prefixItems");
    if (prefix && prefix->type == HR_JSON_OBJECT && !items) items = prefix, prefix = NULL; /* as llama.cpp: the item schema */
    long min = get_count(c, s, "minItems", 0), max = get_count(c, s, "maxItems", -1);
    if (min == -2 || max == -2) return NULL;
    if (max >= 0 && min > max) return fail(c, "'minItems' %ld is above 'maxItems' %ld", min, max);
    const hr_json *tuple = prefix ? prefix : items && items->type == HR_JSON_ARRAY ? items : NULL;
    sb b = {0};
    const char *r = NULL;
    if (tuple) {
        if (tuple->type != HR_JSON_ARRAY) return fail(c, "'prefixItems' must be an array");
        if (prefix && items && !(items->type == HR_JSON_BOOL && !items->boolean))
            return fail(c, "'items' next to 'prefixItems' is not supported (only \"items\": false)");
        if ((long)tuple->n < min || (max >= 0 && (long)tuple->n > max))
            return fail(c, "'minItems'/'maxItems' do not admit the %zu items of the tuple", tuple->n);
        sb_put(&b, "\"[\" space ");
        for (size_t k = 0; k < tuple->n; k++) {
            char suf[32], seg[48];
            snprintf(suf, sizeof suf, "tuple-%zu", k);
            snprintf(seg, sizeof seg, "%s/%zu", prefix ? "prefixItems" : "items", k);
            const char *ir = visit_child(c, &tuple->items[k], name, suf, seg);
            if (!ir) return free(b.p), NULL;
            if (k) sb_put(&b, " \",\" space ");
            sb_put(&b, ir);
        }
        sb_put(&b, " space \"]\"");
    } else {
        if (items && items->type == HR_JSON_BOOL && !items->boolean) max = 0;
        bool any = !items || (items->type == HR_JSON_OBJECT && !items->n) || (items->type == HR_JSON_BOOL && items->boolean);
        if (any && min == 0 && max < 0) return add_builtin(c, !strcmp(rule_name, "root") ? "root" : "array", "array");
        const char *ir = NULL;
        if (max != 0) ir = any ? add_builtin(c, "value", "value") : visit_child(c, items, name, "item", "items");
        if (max != 0 && !ir) return NULL;
        sb_put(&b, "\"[\" space ");
        if (max != 0) put_repeat(&b, ir, min, max, "\",\" space");
        sb_put(&b, " space \"]\"");
    }
    r = b.oom ? oom(c) : add_rule(c, rule_name, b.p);
    free(b.p);
    return r;
}

static const char *visit_integer(conv *c, const hr_json *s, const char *rule_name) {
    bool has_lo = false, has_hi = false;
    int64_t lo = 0, hi = 0;
    if (!get_bound(c, s, "minimum", true, &has_lo, &lo) || !get_bound(c, s, "exclusiveMinimum", true, &has_lo, &lo) ||
        !get_bound(c, s, "maximum", false, &has_hi, &hi) || !get_bound(c, s, "exclusiveMaximum", false, &has_hi, &hi))
        return NULL;
    if (!has_lo && !has_hi) return add_builtin(c, !strcmp(rule_name, "root") ? "root" : "integer", "integer");
    if (has_lo && has_hi && lo > hi)
        return fail(c, "no integer lies between the minimum %lld and the maximum %lld", (long long)lo, (long long)hi);
    sb b = {0};
    sb_put(&b, "(");
    put_int_range(&b, has_lo, lo, has_hi, hi);
    sb_put(&b, ")");
    const char *r = b.oom ? oom(c) : add_rule(c, rule_name, b.p);
    free(b.p);
    return r;
}

static bool type_matches(const hr_json *v, const char *t) {
    switch (v->type) {
    case HR_JSON_NULL: return !strcmp(t, "null");
    case HR_JSON_BOOL: return !strcmp(t, "boolean");
    case HR_JSON_STRING: return !strcmp(t, "string");
    case HR_JSON_ARRAY: return !strcmp(t, "array");
    case HR_JSON_OBJECT: return !strcmp(t, "object");
    case HR_JSON_NUMBER: return !strcmp(t, "number") || (!strcmp(t, "integer") && v->num == floor(v->num));
    }
    return false;
}

/* const and enum: alternatives of literals; with a type beside, values of another type are
 * left out (they could never validate). */
static bool value_has_type(const hr_json *v, const hr_json *type) {
    if (!type) return true;
    if (type->type == HR_JSON_STRING) return type_matches(v, type->str);
    for (size_t k = 0; k < type->n; k++)
        if (type->items[k].type == HR_JSON_STRING && type_matches(v, type->items[k].str)) return true;
    return false;
}

static const char *visit_values(conv *c, const hr_json *s, const char *rule_name, const hr_json *type) {
    const hr_json *cst = hr_json_get(s, "const"), *en = hr_json_get(s, "enum");
    if (en && (en->type != HR_JSON_ARRAY || !en->n)) return fail(c, "'enum' must be a non-empty array");
    const hr_json *vals = cst ? cst : en->items;
    size_t n = cst ? 1 : en->n, used = 0;
    sb b = {0};
    if (!cst) sb_put(&b, "(");
    for (size_t k = 0; k < n; k++) {
        const hr_json *v = &vals[k];
        if (!value_has_type(v, type)) continue;
        if (cst && en) { /* both: the const must be one of the enum values */
            char *a = hr_json_dump(v, NULL);
            bool in = false;
            for (size_t j = 0; a && j < en->n && !in; j++) {
                char *x = hr_json_dump(&en->items[j], NULL);
                in = x && !strcmp(a, x);
                free(x);
            }
            free(a);
            if (!in) continue;
        }
        if (used++) sb_put(&b, " | ");
        if (!put_value_literal(c, &b, v)) return free(b.p), NULL;
    }
    if (!cst) sb_put(&b, ")");
    if (!used) return free(b.p), fail(c, "no value of '%s' can validate", cst ? "const" : "enum");
    const char *r = b.oom ? oom(c) : add_rule(c, rule_name, b.p);
    free(b.p);
    return r;
}

static bool has_any(const hr_json *s, const char *const *keys) {
    for (int k = 0; keys[k]; k++)
        if (hr_json_get(s, keys[k])) return true;
    return false;
}

static const char *const NUMERIC_KW[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", NULL};

/* The schema by its type (a string or absent; absent: inferred from the keywords, in
 * llama.cpp's order, else any value). */
static const char *visit_typed(conv *c, const hr_json *s, const char *rule_name, const char *name, const hr_json *type) {
    static const char *const string_kw[] = {"minLength", "maxLength", "format", NULL};
    if (type && type->type != HR_JSON_STRING) return fail(c, "'type' must be a string or an array of strings");
    const char *t = type ? type->str : "";
    const hr_json *add = hr_json_get(s, "additionalProperties");
    bool has_props = hr_json_get(s, "properties") || (add && !(add->type == HR_JSON_BOOL && add->boolean));
    if (hr_json_get(s, "allOf") && (!*t || !strcmp(t, "object"))) return visit_all_of(c, s, rule_name, name);
    if (hr_json_get(s, "allOf")) return fail(c, "'allOf' is supported only for objects");
    if (!*t) {
        if (has_props) return visit_object(c, s, rule_name, name);
        if (hr_json_get(s, "items") || hr_json_get(s, "prefixItems")) return visit_array(c, s, rule_name, name);
        if (has_any(s, string_kw)) return visit_string(c, s, rule_name);
        if (has_any(s, NUMERIC_KW)) return fail(c, "'minimum'/'maximum' need \"type\": \"integer\"");
        return add_rule(c, rule_name, add_builtin(c, "value", "value"));
    }
    if (!strcmp(t, "object")) return visit_object(c, s, rule_name, name);
    if (!strcmp(t, "string")) return visit_string(c, s, rule_name);
    if (!strcmp(t, "array")) return visit_array(c, s, rule_name, name);
    if (!strcmp(t, "integer")) return visit_integer(c, s, rule_name);
    if (!strcmp(t, "number")) {
        if (has_any(s, NUMERIC_KW)) return fail(c, "'minimum'/'maximum' are supported only for \"type\": \"integer\"");
        return add_builtin(c, !strcmp(rule_name, "root") ? "root" : "number", "number");
    }
    if (!strcmp(t, "boolean") || !strcmp(t, "null"))
        return add_builtin(c, !strcmp(rule_name, "root") ? "root" : t, t);
    return fail(c, "type '%s' is unknown", t);
}

static bool all_strings(const hr_json *a) {
    for (size_t k = 0; k < a->n; k++)
        if (a->items[k].type != HR_JSON_STRING) return false;
    return true;
}

/* type: the type to use instead of the schema's own (one entry of a type array). */
static const char *visit(conv *c, const hr_json *s, const char *name, const hr_json *type) {
    if (c->failed) return NULL;
    if (c->depth >= JS_MAX_VISIT_DEPTH) return fail(c, "schemas nested deeper than %d levels", JS_MAX_VISIT_DEPTH);
    char *rn = is_reserved(name) ? joined(name, "", "-") : strdup(*name ? name : "root");
    if (!rn) return oom(c);
    c->depth++;
    const char *r = NULL;
    if (s->type == HR_JSON_BOOL) {
        r = s->boolean ? add_rule(c, rn, add_builtin(c, "value", "value")) : fail(c, "a false schema accepts nothing");
        goto out;
    }
    if (s->type != HR_JSON_OBJECT) {
        r = fail(c, "a schema must be an object or a boolean");
        goto out;
    }
    if (!refuse_unsupported(c, s)) goto out;
    bool container = hr_json_get(s, "properties") || hr_json_get(s, "items") || hr_json_get(s, "prefixItems") ||
                     hr_json_get(s, "additionalProperties") || hr_json_is(hr_json_get(s, "type"), "object") ||
                     hr_json_is(hr_json_get(s, "type"), "array");
    c->containers += container;
    const hr_json *ref = hr_json_get(s, "$ref"), *any = hr_json_get(s, "anyOf"), *one = hr_json_get(s, "oneOf");
    if (!type) type = hr_json_get(s, "type");
    if (ref) {
        if (refuse_siblings(c, s, "$ref", NULL)) r = add_rule(c, rn, resolve_ref(c, ref));
    } else if (any || one) {
        const char *kw = any ? "anyOf" : "oneOf";
        if (any && one) r = fail(c, "'anyOf' next to 'oneOf' is not supported");
        else if (refuse_siblings(c, s, kw, NULL)) r = visit_union(c, rn, name, any ? any : one, NULL, kw);
    } else if (type && type->type != HR_JSON_STRING &&
               (type->type != HR_JSON_ARRAY || !type->n || !all_strings(type))) {
        r = fail(c, "'type' must be a string or a non-empty array of strings");
    } else if (hr_json_get(s, "const") || hr_json_get(s, "enum")) {
        r = visit_values(c, s, rn, type);
    } else if (type && type->type == HR_JSON_ARRAY) {
        r = visit_union(c, rn, name, type, s, "type");
    } else {
        r = visit_typed(c, s, rn, name, type);
    }
    c->containers -= container;
out:
    c->depth--;
    free(rn);
    return r;
}

/* ---- entry points ---- */

static int cmp_rule(const void *a, const void *b) { return strcmp(((const rule *)a)->name, ((const rule *)b)->name); }

static char *format_grammar(conv *c) {
    qsort(c->rules, c->n_rules, sizeof *c->rules, cmp_rule);
    sb b = {0};
    for (size_t k = 0; k < c->n_rules; k++) {
        if (!c->rules[k].body) continue; /* cannot happen: every reserved $ref is filled */
        sb_printf(&b, "%s ::= ", c->rules[k].name);
        sb_put(&b, c->rules[k].body);
        sb_put(&b, "\n");
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

static void conv_free(conv *c) {
    for (size_t k = 0; k < c->n_rules; k++) free(c->rules[k].name), free(c->rules[k].body);
    free(c->rules);
    free(c->hash);
    free(c->refs);
}

char *hr_json_schema_to_gbnf(const char *schema, size_t len, hr_err *e) {
    if (len > JS_MAX_SCHEMA) {
        hr_errf(e, "json schema: %zu bytes is over the limit of %d", len, JS_MAX_SCHEMA);
        return NULL;
    }
    hr_json_limits lim = {.max_depth = JS_MAX_JSON_DEPTH, .max_bytes = JS_MAX_SCHEMA};
    hr_json_doc *d = hr_json_parse(schema, len, &lim, e);
    if (!d) {
        hr_errctx(e, "json schema");
        return NULL;
    }
    conv c = {.root = hr_json_root(d), .e = e, .path = "#", .path_len = 1};
    char *out = NULL;
    if (add_rule(&c, "space", SPACE_RULE) && visit(&c, c.root, "", NULL) && !c.failed) {
        out = format_grammar(&c);
        if (!out) hr_errf(e, "json schema: out of memory");
    }
    conv_free(&c);
    hr_json_free(d);
    return out;
}

const char *hr_gbnf_json_object(void) {
    /* what hr_json_schema_to_gbnf gives for {"type": "object"} (a test holds them equal) */
    return "array ::= \"[\" space ( value (\",\" space value)* )? space \"]\"\n"
           "boolean ::= (\"true\" | \"false\")\n"
           "char ::= [^\"\\\\\\x7F\\x00-\\x1F] | [\\\\] ([\"\\\\bfnrt] | \"u\" [0-9a-fA-F]{4})\n"
           "decimal-part ::= [0-9]{1,16}\n"
           "integral-part ::= [0] | [1-9] [0-9]{0,15}\n"
           "null ::= \"null\"\n"
           "number ::= (\"-\"? integral-part) (\".\" decimal-part)? ([eE] [-+]? integral-part)?\n"
           "object ::= \"{\" space ( string \":\" space value (\",\" space string \":\" space value)* )? space \"}\"\n"
           "root ::= object\n"
           "space ::= | \" \" | \"\\n\"{1,2} [ \\t]{0,20}\n"
           "string ::= \"\\\"\" char* \"\\\"\"\n"
           "value ::= object | array | string | number | boolean | null\n";
}
