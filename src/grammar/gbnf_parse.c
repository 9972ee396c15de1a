/* GBNF text to rules, following llama.cpp's grammar parser: the same syntax (names of
 * [a-zA-Z0-9-], '::=', alternatives, groups, literals, classes, '.', repetition operators,
 * '#' comments, newlines allowed inside groups and after '|'), the same rewriting of
 * repetitions into generated rules, the same left-recursion rule. Unlike llama.cpp, every
 * error names its line and column, and a few inputs llama.cpp accepts silently are refused:
 * a rule defined twice, {m,n} with n < m, empty classes '[]', a root that can never finish. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gbnf_internal.h"

typedef struct gel_vec {
    hr_gel *v;
    size_t n, cap;
} gel_vec;

typedef struct sym {
    char *name;
    size_t len;
    gel_vec rule;
    bool defined;
    size_t def_off;  /* where the rule (or, for generated rules, its parent) is defined */
    size_t ref_off;  /* first reference, for "undefined rule" */
    uint32_t origin; /* the user rule a generated rule belongs to (itself for user rules) */
} sym;

typedef struct parser {
    const char *src; /* NUL-terminated copy of the text */
    sym *s;
    size_t n_sym, cap_sym;
    size_t total_el;
    int depth;
    hr_err *e;
    bool failed;
} parser;

#define NO_OFF ((size_t)-1)

/* "grammar:L:C: message"; columns count characters, not bytes. */
static const char *fail(parser *P, const char *at, const char *fmt, ...) {
    if (P->failed) return NULL;
    P->failed = true;
    int line = 1, col = 1;
    for (const char *p = P->src; p < at && *p; p++) {
        if (*p == '\n') line++, col = 1;
        else if (((unsigned char)*p & 0xC0) != 0x80) col++;
    }
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    hr_errf(P->e, "grammar:%d:%d: %s", line, col, msg);
    return NULL;
}

static int push(parser *P, gel_vec *r, uint32_t type, uint32_t value, const char *at) {
    if (++P->total_el > HR_GRAMMAR_MAX_ELEMENTS) {
        fail(P, at, "grammar too large: over %u elements after expanding repetitions", HR_GRAMMAR_MAX_ELEMENTS);
        return -1;
    }
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        hr_gel *g = realloc(r->v, cap * sizeof *g);
        if (!g) { fail(P, at, "out of memory"); return -1; }
        r->v = g, r->cap = cap;
    }
    r->v[r->n++] = (hr_gel){type, value};
    return 0;
}

static int append(parser *P, gel_vec *r, const hr_gel *v, size_t n, const char *at) {
    for (size_t i = 0; i < n; i++)
        if (push(P, r, v[i].type, v[i].value, at)) return -1;
    return 0;
}

static int64_t new_sym(parser *P, const char *name, size_t len, const char *at) {
    if (P->n_sym == P->cap_sym) {
        size_t cap = P->cap_sym ? P->cap_sym * 2 : 32;
        sym *g = realloc(P->s, cap * sizeof *g);
        if (!g) { fail(P, at, "out of memory"); return -1; }
        P->s = g, P->cap_sym = cap;
    }
    char *c = malloc(len + 1);
    if (!c) { fail(P, at, "out of memory"); return -1; }
    memcpy(c, name, len);
    c[len] = 0;
    uint32_t id = (uint32_t)P->n_sym++;
    P->s[id] = (sym){.name = c, .len = len, .def_off = NO_OFF, .ref_off = NO_OFF, .origin = id};
    return id;
}

/* The id of a named rule, created on first mention. Linear search: grammars have at most a
 * few thousand names and parse once. */
static int64_t symbol_id(parser *P, const char *name, size_t len, const char *at) {
    for (size_t i = 0; i < P->n_sym; i++)
        if (P->s[i].len == len && !memcmp(P->s[i].name, name, len)) return (int64_t)i;
    return new_sym(P, name, len, at);
}

/* A rule generated for a group or repetition inside user rule `parent`. */
static int64_t generated_sym(parser *P, uint32_t parent, const char *at) {
    char buf[160];
    int n = snprintf(buf, sizeof buf, "%.120s_%zu", P->s[P->s[parent].origin].name, P->n_sym);
    int64_t id = new_sym(P, buf, (size_t)n, at);
    if (id >= 0) {
        P->s[id].origin = P->s[parent].origin;
        P->s[id].def_off = P->s[P->s[parent].origin].def_off;
        P->s[id].defined = true;
    }
    return id;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_word(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || is_digit(c); }

static const char *skip_space(const char *p, bool newline_ok) {
    while (*p == ' ' || *p == '\t' || *p == '#' || (newline_ok && (*p == '\r' || *p == '\n'))) {
        if (*p == '#')
            while (*p && *p != '\r' && *p != '\n') p++;
        else
            p++;
    }
    return p;
}

static const char *parse_hex(parser *P, const char *p, int n, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < n; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return fail(P, p + i, "expected %d hex digits after '\\%c'", n, n == 2 ? 'x' : n == 4 ? 'u' : 'U');
        v = v << 4 | (uint32_t)d;
    }
    *out = v;
    return p + n;
}

/* One character of a literal or class: an escape or one UTF-8 encoded code point. */
static const char *parse_char(parser *P, const char *p, uint32_t *out) {
    if (*p == '\\') {
        switch (p[1]) {
        case 'x': return parse_hex(P, p + 2, 2, out);
        case 'u': return parse_hex(P, p + 2, 4, out);
        case 'U': return parse_hex(P, p + 2, 8, out);
        case 't': *out = '\t'; return p + 2;
        case 'r': *out = '\r'; return p + 2;
        case 'n': *out = '\n'; return p + 2;
        case '\\': case '"': case '[': case ']': case '-': *out = (unsigned char)p[1]; return p + 2;
        case 0: return fail(P, p, "unexpected end of input after '\\'");
        default: return fail(P, p, "unknown escape '\\%c'", p[1]);
        }
    }
    const unsigned char *u = (const unsigned char *)p;
    if (!*u) return fail(P, p, "unexpected end of input");
    int n = u[0] < 0x80 ? 1 : (u[0] & 0xE0) == 0xC0 ? 2 : (u[0] & 0xF0) == 0xE0 ? 3 : (u[0] & 0xF8) == 0xF0 ? 4 : 0;
    if (!n || (n == 2 && u[0] < 0xC2)) return fail(P, p, "invalid UTF-8 byte 0x%02X", u[0]);
    uint32_t v = n == 1 ? u[0] : u[0] & (0x7Fu >> n);
    for (int i = 1; i < n; i++) {
        if ((u[i] & 0xC0) != 0x80) return fail(P, p, "invalid UTF-8 sequence");
        v = v << 6 | (u[i] & 0x3F);
    }
    if ((n == 3 && v < 0x800) || (n == 4 && (v < 0x10000 || v > 0x10FFFF)) || (v >= 0xD800 && v <= 0xDFFF))
        return fail(P, p, "invalid UTF-8 sequence");
    *out = v;
    return p + n;
}

/* A decimal count of a {m,n} repetition, saturated so huge numbers compare as huge. */
static const char *parse_count(parser *P, const char *p, uint64_t *out) {
    if (!is_digit(*p)) return fail(P, p, "expected a number");
    uint64_t v = 0;
    for (; is_digit(*p); p++) v = v > 100000000 ? v : v * 10 + (uint64_t)(*p - '0');
    *out = v;
    return p;
}

static const char *parse_alternates(parser *P, const char *p, uint32_t parent, uint32_t rule_id, bool nested);

typedef struct seq_state {
    gel_vec *rule;
    size_t last_start; /* first element of the last item, for repetition operators */
    uint64_t n_prev;   /* rules the last item stands for (bounds nested repetition) */
    uint32_t parent;
} seq_state;

#define UNBOUNDED UINT64_MAX

/* Rewrites the last item S as llama.cpp does: S{m,n} -> S..S (m times) then n-m nested
 * optional rules S'(k) ::= S S'(k-1) | ; S{m,} -> S..S S' with S' ::= S S' | . */
static int repeat(parser *P, seq_state *q, uint64_t min, uint64_t max, const char *at, char op) {
    gel_vec *r = q->rule;
    if (q->last_start == r->n) { fail(P, at, "'%c' has no item before it to repeat", op); return -1; }
    if (max != UNBOUNDED && max < min) { fail(P, at, "repetition {%llu,%llu}: the maximum is below the minimum", (unsigned long long)min, (unsigned long long)max); return -1; }
    uint64_t total = max != UNBOUNDED && max > 0 ? max : min > 0 ? min : 1;
    if (q->n_prev * total > HR_GRAMMAR_MAX_REPEAT) {
        fail(P, at, "repetition too large: %llu nested repetitions (at most %d)", (unsigned long long)(q->n_prev * total), HR_GRAMMAR_MAX_REPEAT);
        return -1;
    }
    size_t n_item = r->n - q->last_start;
    hr_gel *item = malloc(n_item * sizeof *item);
    if (!item) { fail(P, at, "out of memory"); return -1; }
    memcpy(item, r->v + q->last_start, n_item * sizeof *item);
    int rc = 0;
    if (min == 0) r->n = q->last_start, P->total_el -= n_item;
    for (uint64_t i = 1; i < min && !rc; i++) rc = append(P, r, item, n_item, at);
    uint64_t n_opt = max == UNBOUNDED ? 1 : max - min;
    uint32_t last = 0;
    for (uint64_t i = 0; i < n_opt && !rc; i++) {
        int64_t id = generated_sym(P, q->parent, at);
        if (id < 0) { rc = -1; break; }
        gel_vec *g = &P->s[id].rule; /* P->s may move in generated_sym: take the pointer after */
        rc = append(P, g, item, n_item, at);
        if (!rc && (i > 0 || max == UNBOUNDED)) rc = push(P, g, HR_GE_RULE_REF, max == UNBOUNDED ? (uint32_t)id : last, at);
        if (!rc) rc = push(P, g, HR_GE_ALT, 0, at);
        if (!rc) rc = push(P, g, HR_GE_END, 0, at);
        last = (uint32_t)id;
    }
    free(item);
    if (!rc && n_opt > 0) rc = push(P, q->rule, HR_GE_RULE_REF, last, at);
    q->n_prev *= total;
    return rc;
}

static const char *parse_literal(parser *P, const char *p, seq_state *q, bool nested) {
    p++;
    q->last_start = q->rule->n, q->n_prev = 1;
    while (*p != '"') {
        if (!*p) return fail(P, p, "unterminated string literal (missing '\"')");
        uint32_t c;
        if (!(p = parse_char(P, p, &c)) || push(P, q->rule, HR_GE_CHAR, c, p)) return NULL;
    }
    return skip_space(p + 1, nested);
}

static const char *parse_class(parser *P, const char *p, seq_state *q, bool nested) {
    const char *open = p++;
    uint32_t first = HR_GE_CHAR;
    if (*p == '^') p++, first = HR_GE_CHAR_NOT;
    q->last_start = q->rule->n, q->n_prev = 1;
    if (*p == ']') return fail(P, open, "empty character class");
    while (*p != ']') {
        if (!*p) return fail(P, open, "unterminated character class (missing ']')");
        uint32_t c;
        if (!(p = parse_char(P, p, &c))) return NULL;
        if (push(P, q->rule, q->last_start < q->rule->n ? HR_GE_CHAR_ALT : first, c, p)) return NULL;
        if (p[0] == '-' && p[1] != ']') {
            if (!p[1]) return fail(P, open, "unterminated character class (missing ']')");
            if (!(p = parse_char(P, p + 1, &c)) || push(P, q->rule, HR_GE_CHAR_RNG_UPPER, c, p)) return NULL;
        }
    }
    return skip_space(p + 1, nested);
}

static const char *parse_braces(parser *P, const char *p, seq_state *q, bool nested) {
    const char *at = p;
    uint64_t min = 0, max = UNBOUNDED;
    if (!(p = parse_count(P, skip_space(p + 1, nested), &min))) return NULL;
    p = skip_space(p, nested);
    if (*p == '}') {
        max = min;
    } else if (*p == ',') {
        p = skip_space(p + 1, nested);
        if (is_digit(*p)) {
            if (!(p = parse_count(P, p, &max))) return NULL;
            p = skip_space(p, nested);
        }
        if (*p != '}') return fail(P, p, "expected '}'");
    } else {
        return fail(P, p, "expected ',' or '}'");
    }
    if (min > HR_GRAMMAR_MAX_REPEAT) return fail(P, at, "repetition count %llu is over the limit of %d", (unsigned long long)min, HR_GRAMMAR_MAX_REPEAT);
    if (max != UNBOUNDED && max > HR_GRAMMAR_MAX_REPEAT) {
        if (max < min) return fail(P, at, "repetition {%llu,%llu}: the maximum is below the minimum", (unsigned long long)min, (unsigned long long)max);
        max = UNBOUNDED; /* as llama.cpp: a huge maximum means no maximum */
    }
    if (repeat(P, q, min, max, at, '{')) return NULL;
    return skip_space(p + 1, nested);
}

static const char *parse_group(parser *P, const char *p, seq_state *q, bool nested) {
    const char *open = p;
    if (++P->depth > HR_GRAMMAR_MAX_NESTING) return fail(P, p, "groups nested too deeply (over %d)", HR_GRAMMAR_MAX_NESTING);
    size_t before = P->n_sym;
    int64_t sub = generated_sym(P, q->parent, p);
    if (sub < 0) return NULL;
    if (!(p = parse_alternates(P, skip_space(p + 1, true), q->parent, (uint32_t)sub, true))) return NULL;
    P->depth--;
    size_t made = P->n_sym - before;
    q->n_prev = made > 1 ? made : 1;
    q->last_start = q->rule->n;
    if (push(P, q->rule, HR_GE_RULE_REF, (uint32_t)sub, p)) return NULL;
    if (*p != ')') return fail(P, *p ? p : open, *p ? "expected ')'" : "unclosed '(' (missing ')')");
    return skip_space(p + 1, nested);
}

static const char *parse_ref(parser *P, const char *p, seq_state *q, bool nested) {
    const char *end = p;
    while (is_word(*end)) end++;
    int64_t id = symbol_id(P, p, (size_t)(end - p), p);
    if (id < 0) return NULL;
    if (P->s[id].ref_off == NO_OFF) P->s[id].ref_off = (size_t)(p - P->src);
    q->last_start = q->rule->n, q->n_prev = 1;
    if (push(P, q->rule, HR_GE_RULE_REF, (uint32_t)id, p)) return NULL;
    return skip_space(end, nested);
}

static const char *parse_sequence(parser *P, const char *p, uint32_t parent, gel_vec *rule, bool nested) {
    seq_state q = {rule, rule->n, 1, parent};
    while (*p && !P->failed) {
        char c = *p;
        if (c == '"') p = parse_literal(P, p, &q, nested);
        else if (c == '[') p = parse_class(P, p, &q, nested);
        else if (c == '(') p = parse_group(P, p, &q, nested);
        else if (is_word(c)) p = parse_ref(P, p, &q, nested);
        else if (c == '.') {
            q.last_start = rule->n, q.n_prev = 1;
            if (push(P, rule, HR_GE_CHAR_ANY, 0, p)) return NULL;
            p = skip_space(p + 1, nested);
        } else if (c == '*' || c == '+' || c == '?') {
            if (repeat(P, &q, c == '+' ? 1 : 0, c == '?' ? 1 : UNBOUNDED, p, c)) return NULL;
            p = skip_space(p + 1, nested);
        } else if (c == '{') p = parse_braces(P, p, &q, nested);
        else if (c == '<' || c == '!') return fail(P, p, "token references ('<...>', '!<...>') are not supported");
        else break;
        if (!p) return NULL;
    }
    return P->failed ? NULL : p;
}

/* parse_sequence appends to `rule`, which lives in P->s and may move when a nested group or
 * repetition adds symbols: the rule under construction is kept outside P->s until done. */
static const char *parse_alternates(parser *P, const char *p, uint32_t parent, uint32_t rule_id, bool nested) {
    gel_vec rule = {0};
    p = parse_sequence(P, p, parent, &rule, nested);
    while (p && *p == '|') {
        if (push(P, &rule, HR_GE_ALT, 0, p)) { p = NULL; break; }
        p = parse_sequence(P, skip_space(p + 1, true), parent, &rule, nested);
    }
    if (p && push(P, &rule, HR_GE_END, 0, p)) p = NULL;
    if (!p) { free(rule.v); return NULL; }
    free(P->s[rule_id].rule.v);
    P->s[rule_id].rule = rule;
    return p;
}

static const char *parse_rule(parser *P, const char *p) {
    const char *name = p;
    while (is_word(*p)) p++;
    if (p == name) return fail(P, p, *p == '_' ? "rule names may hold only letters, digits and '-'" : "expected a rule name");
    int64_t id = symbol_id(P, name, (size_t)(p - name), name);
    if (id < 0) return NULL;
    if (P->s[id].defined) return fail(P, name, "rule '%s' is defined twice", P->s[id].name);
    P->s[id].defined = true;
    P->s[id].def_off = (size_t)(name - P->src);
    p = skip_space(p, false);
    if (!(p[0] == ':' && p[1] == ':' && p[2] == '=')) return fail(P, p, "expected '::=' after the rule name");
    if (!(p = parse_alternates(P, skip_space(p + 3, true), (uint32_t)id, (uint32_t)id, false))) return NULL;
    if (*p == '\r') p += p[1] == '\n' ? 2 : 1;
    else if (*p == '\n') p++;
    else if (*p) return fail(P, p, *p == ')' ? "unexpected ')'" : "unexpected '%c'; expected the end of the rule", *p);
    return skip_space(p, true);
}

/* Left recursion as llama.cpp defines it: a rule reachable from itself through leftmost
 * references, looking past references to rules that may match the empty string. */
typedef struct lr_state {
    const parser *P;
    uint8_t *visited, *in_progress, *may_be_empty;
    int depth;
    bool too_deep;
    uint32_t culprit; /* the rule found to begin with itself */
} lr_state;

static bool left_recursive(lr_state *L, uint32_t r) {
    if (L->in_progress[r]) { L->culprit = r; return true; }
    if (++L->depth > 8000) { L->too_deep = true; return true; }
    L->in_progress[r] = 1;
    const gel_vec *rule = &L->P->s[r].rule;
    bool at_start = true;
    for (size_t i = 0; i < rule->n; i++) {
        if (hr_gel_is_end(&rule->v[i])) {
            if (at_start) { L->may_be_empty[r] = 1; break; }
            at_start = true;
        } else {
            at_start = false;
        }
    }
    bool leftmost = true;
    for (size_t i = 0; i < rule->n; i++) {
        const hr_gel *g = &rule->v[i];
        if (g->type == HR_GE_RULE_REF && leftmost) {
            if (left_recursive(L, g->value)) return true;
            if (!L->may_be_empty[g->value]) leftmost = false;
        } else {
            leftmost = hr_gel_is_end(g);
        }
    }
    L->in_progress[r] = 0;
    L->visited[r] = 1;
    L->depth--;
    return false;
}

static int check_left_recursion(parser *P) {
    lr_state L = {P, calloc(P->n_sym, 1), calloc(P->n_sym, 1), calloc(P->n_sym, 1), 0, false, 0};
    int rc = 0;
    if (!L.visited || !L.in_progress || !L.may_be_empty) rc = -1, fail(P, P->src, "out of memory");
    for (uint32_t r = 0; r < P->n_sym && !rc; r++) {
        if (L.visited[r] || !left_recursive(&L, r)) continue;
        const sym *s = &P->s[P->s[L.culprit].origin];
        if (L.too_deep) fail(P, P->src + s->def_off, "rules nested too deeply to check");
        else fail(P, P->src + s->def_off, "rule '%s' is left-recursive (a rule that can begin with itself), which GBNF does not support", s->name);
        rc = -1;
    }
    free(L.visited), free(L.in_progress), free(L.may_be_empty);
    return rc;
}

/* Whether a class can match some code point in [1, 0x10FFFF] (tokens never hold NUL). */
static bool class_nonempty(const hr_gel *g) {
    if (g->type == HR_GE_CHAR_ANY) return true;
    bool neg = g->type == HR_GE_CHAR_NOT;
    /* ranges of the class; a negated class is empty only if they cover 1..0x10FFFF */
    uint32_t covered_to = 0; /* for the negated case: [1, covered_to] is covered so far */
    bool progress = true;
    while (neg && progress && covered_to < 0x10FFFF) {
        progress = false;
        const hr_gel *p = g;
        do {
            uint32_t lo = p->value, hi = p[1].type == HR_GE_CHAR_RNG_UPPER ? p[1].value : lo;
            p += p[1].type == HR_GE_CHAR_RNG_UPPER ? 2 : 1;
            if (lo <= covered_to + 1 && hi > covered_to) covered_to = hi, progress = true;
        } while (p->type == HR_GE_CHAR_ALT);
    }
    if (neg) return covered_to < 0x10FFFF;
    const hr_gel *p = g;
    do {
        uint32_t lo = p->value, hi = p[1].type == HR_GE_CHAR_RNG_UPPER ? p[1].value : lo;
        p += p[1].type == HR_GE_CHAR_RNG_UPPER ? 2 : 1;
        if (hi >= 1 && lo <= hi) return true;
    } while (p->type == HR_GE_CHAR_ALT);
    return false;
}

/* A root that can never finish (every alternative needs a rule that never finishes, or a
 * class that matches nothing) accepts no text: generation under it could never end. */
static int check_productive(parser *P, uint32_t root) {
    uint8_t *ok = calloc(P->n_sym, 1);
    if (!ok) { fail(P, P->src, "out of memory"); return -1; }
    for (bool changed = true; changed && !ok[root];) {
        changed = false;
        for (size_t r = P->n_sym; r-- > 0;) {
            if (ok[r]) continue;
            const gel_vec *rule = &P->s[r].rule;
            bool alt_ok = true;
            for (size_t i = 0; i < rule->n; i++) {
                const hr_gel *g = &rule->v[i];
                if (hr_gel_is_end(g)) {
                    if (alt_ok) { ok[r] = 1, changed = true; break; }
                    alt_ok = true;
                } else if (g->type == HR_GE_RULE_REF) {
                    alt_ok = alt_ok && ok[g->value];
                } else if (hr_gel_is_char(g)) {
                    alt_ok = alt_ok && class_nonempty(g);
                }
            }
        }
    }
    int rc = ok[root] ? 0 : -1;
    free(ok);
    if (rc) fail(P, P->src + P->s[root].def_off, "rule '%s' can never complete, so the grammar accepts no text", P->s[root].name);
    return rc;
}

static hr_grammar *flatten(parser *P, uint32_t root) {
    hr_grammar *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->n_rules = (uint32_t)P->n_sym;
    g->root = root;
    g->n_el = (uint32_t)P->total_el;
    g->el = malloc((P->total_el + 1) * sizeof *g->el);
    g->rule_start = malloc((P->n_sym + 1) * sizeof *g->rule_start);
    if (!g->el || !g->rule_start) { hr_grammar_free(g); return NULL; }
    uint32_t n = 0;
    for (size_t r = 0; r < P->n_sym; r++) {
        g->rule_start[r] = n;
        memcpy(g->el + n, P->s[r].rule.v, P->s[r].rule.n * sizeof *g->el);
        n += (uint32_t)P->s[r].rule.n;
    }
    g->n_el = n;
    return g;
}

static int check_defined(parser *P) {
    for (size_t r = 0; r < P->n_sym; r++) {
        if (P->s[r].defined) continue;
        fail(P, P->src + (P->s[r].ref_off == NO_OFF ? 0 : P->s[r].ref_off), "undefined rule '%s'", P->s[r].name);
        return -1;
    }
    return 0;
}

static hr_grammar *parse_all(parser *P, const char *root) {
    const char *p = skip_space(P->src, true);
    while (p && *p) p = parse_rule(P, p);
    if (!p) return NULL;
    if (!P->n_sym) { fail(P, P->src, "the grammar has no rules"); return NULL; }
    if (check_defined(P)) return NULL;
    int64_t r = -1;
    for (size_t i = 0; i < P->n_sym && r < 0; i++)
        if (P->s[i].origin == i && !strcmp(P->s[i].name, root)) r = (int64_t)i;
    if (r < 0) { hr_errf(P->e, "grammar: no rule named '%s' (the start rule)", root); P->failed = true; return NULL; }
    if (check_left_recursion(P) || check_productive(P, (uint32_t)r)) return NULL;
    hr_grammar *g = flatten(P, (uint32_t)r);
    if (!g) fail(P, P->src, "out of memory");
    return g;
}

hr_grammar *hr_grammar_parse(const char *gbnf, size_t len, const char *root, hr_err *e) {
    if (!gbnf) { hr_errf(e, "grammar: no text"); return NULL; }
    if (memchr(gbnf, 0, len)) {
        size_t at = (size_t)((const char *)memchr(gbnf, 0, len) - gbnf);
        parser T = {.src = gbnf, .e = e};
        fail(&T, gbnf + at, "NUL byte in the grammar text");
        return NULL;
    }
    char *src = malloc(len + 1);
    if (!src) { hr_errf(e, "grammar: out of memory"); return NULL; }
    memcpy(src, gbnf, len);
    src[len] = 0;
    parser P = {.src = src, .e = e};
    hr_grammar *g = parse_all(&P, root ? root : "root");
    for (size_t i = 0; i < P.n_sym; i++) free(P.s[i].name), free(P.s[i].rule.v);
    free(P.s);
    free(src);
    return g;
}

void hr_grammar_free(hr_grammar *g) {
    if (!g) return;
    free(g->el);
    free(g->rule_start);
    free(g);
}
