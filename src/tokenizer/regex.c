/* The pre-tokenizer regex matcher (see regex.h): a recursive-descent compiler to a small
 * backtracking program, run with an explicit stack. */
#include "regex.h"
#include <stdlib.h>
#include <string.h>
#include "unicode.h"

enum { OP_SET, OP_JMP, OP_SPLIT, OP_EOL, OP_LOOK, OP_MATCH };
/* shorthand classes a set may hold besides its ranges */
enum { CL_S = 1, CL_NS = 2, CL_D = 4, CL_ND = 8, CL_W = 16, CL_NW = 32 };
enum { MARK_WS = 0x0B, MARK_OTHER = 0xD0, MARK_N = 0xD1, MARK_L, MARK_P, MARK_M, MARK_S };

typedef struct inst {
    uint8_t op, neg; /* neg: OP_SET negated class, OP_LOOK (?!...) */
    uint32_t x, y;   /* SET: set index; JMP: target; SPLIT: first, second; LOOK: continuation (sub at pc+1) */
} inst;

typedef struct cset {
    uint32_t first, n; /* its ranges */
    uint8_t cls;
} cset;

typedef struct range {
    uint32_t lo, hi;
} range;

struct hr_re {
    inst *code;
    size_t n_code, cap_code;
    cset *sets;
    size_t n_sets, cap_sets;
    range *ranges;
    size_t n_ranges, cap_ranges;
    bool collapsed;
    bool lead_plus; /* the pattern is X+R for a one-character class X (see search) */
};

/* ---- building ---- */

typedef struct parser {
    hr_re *re;
    const uint32_t *p; /* the pattern's code points */
    size_t n, at;
    int err; /* 0, -1 out of memory, -2 unsupported */
} parser;

static bool grow(void **v, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return true;
    size_t c = *cap ? *cap * 2 : 16;
    while (c < need) c *= 2;
    void *nv = realloc(*v, c * size);
    if (!nv) return false;
    *v = nv;
    *cap = c;
    return true;
}

static uint32_t emit(parser *ps, uint8_t op, uint32_t x, uint32_t y) {
    hr_re *re = ps->re;
    if (!grow((void **)&re->code, &re->cap_code, re->n_code + 1, sizeof *re->code)) {
        ps->err = -1;
        return 0;
    }
    re->code[re->n_code] = (inst){op, 0, x, y};
    return (uint32_t)re->n_code++;
}

static uint32_t new_set(parser *ps) {
    hr_re *re = ps->re;
    if (!grow((void **)&re->sets, &re->cap_sets, re->n_sets + 1, sizeof *re->sets)) {
        ps->err = -1;
        return 0;
    }
    re->sets[re->n_sets] = (cset){(uint32_t)re->n_ranges, 0, 0};
    return (uint32_t)re->n_sets++;
}

/* Ranges go to the newest set (sets are built one at a time). */
static void add_range(parser *ps, uint32_t lo, uint32_t hi) {
    hr_re *re = ps->re;
    if (ps->err) return;
    if (!grow((void **)&re->ranges, &re->cap_ranges, re->n_ranges + 1, sizeof *re->ranges)) {
        ps->err = -1;
        return;
    }
    re->ranges[re->n_ranges++] = (range){lo, hi};
    re->sets[re->n_sets - 1].n++;
}

static void add_ranges(parser *ps, const uint32_t *lohi, size_t n) {
    for (size_t i = 0; i < n; i += 2) add_range(ps, lohi[i], lohi[i + 1]);
}

static int peek(const parser *ps) { return ps->at < ps->n ? (int)ps->p[ps->at] : -1; }

/* \p{X}: the category's marker and the ASCII characters llama.cpp counts in it. */
static void add_category(parser *ps) {
    static const char *const names[] = {"N", "L", "P", "M", "S", "Lu", "Ll", "Lt", "Lm", "Lo"};
    static const uint32_t num[] = {MARK_N, MARK_N, '0', '9'};
    static const uint32_t let[] = {MARK_L, MARK_L, 'A', 'Z', 'a', 'z'};
    static const uint32_t pun[] = {MARK_P, MARK_P, 0x21, 0x23, 0x25, 0x2A, 0x2C, 0x2F, 0x3A, 0x3B, 0x3F, 0x40,
                                   0x5B, 0x5D, 0x5F, 0x5F, 0x7B, 0x7B, 0x7D, 0x7D};
    static const uint32_t mark[] = {MARK_M, MARK_M};
    static const uint32_t sym[] = {MARK_S, MARK_S, 0x24, 0x24, 0x2B, 0x2B, 0x3C, 0x3E, 0x5E, 0x5E, 0x60, 0x60,
                                   0x7C, 0x7C, 0x7E, 0x7E};
    char name[8];
    size_t k = 0;
    if (peek(ps) != '{') {
        ps->err = -2;
        return;
    }
    ps->at++;
    while (peek(ps) >= 0 && peek(ps) != '}' && k < sizeof name - 1) name[k++] = (char)ps->p[ps->at++];
    name[k] = 0;
    if (peek(ps) != '}' || !ps->re->collapsed) {
        ps->err = -2;
        return;
    }
    ps->at++;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if (strcmp(names[i], name)) continue;
        if (name[0] == 'L') add_ranges(ps, let, sizeof let / sizeof *let);
        else if (name[0] == 'N') add_ranges(ps, num, sizeof num / sizeof *num);
        else if (name[0] == 'P') add_ranges(ps, pun, sizeof pun / sizeof *pun);
        else if (name[0] == 'M') add_ranges(ps, mark, sizeof mark / sizeof *mark);
        else add_ranges(ps, sym, sizeof sym / sizeof *sym);
        return;
    }
    ps->err = -2;
}

static int hexdigit(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* After a backslash: adds a shorthand class or \p{..} to the newest set and returns -1, or
 * returns the literal code point the escape stands for. */
static int64_t escape(parser *ps) {
    int c = peek(ps);
    if (c < 0) {
        ps->err = -2;
        return -1;
    }
    ps->at++;
    cset *s = &ps->re->sets[ps->re->n_sets - 1];
    switch (c) {
    case 's': s->cls |= CL_S; return -1;
    case 'S': s->cls |= CL_NS; return -1;
    case 'd': s->cls |= CL_D; return -1;
    case 'D': s->cls |= CL_ND; return -1;
    case 'w': s->cls |= CL_W; return -1;
    case 'W': s->cls |= CL_NW; return -1;
    case 'p': add_category(ps); return -1;
    case 'r': return '\r';
    case 'n': return '\n';
    case 't': return '\t';
    case 'f': return '\f';
    case 'v': return '\v';
    case 'x': {
        int h = ps->at + 1 < ps->n ? hexdigit((int)ps->p[ps->at]) : -1, l = h >= 0 ? hexdigit((int)ps->p[ps->at + 1]) : -1;
        if (l < 0) break;
        ps->at += 2;
        return h * 16 + l;
    }
    default:
        /* identity escapes of syntax characters only: \b, \B, \1.. and others are not supported */
        if (c < 128 && strchr("^$\\.*+?()[]{}|/-'\"", c)) return c;
        break;
    }
    ps->err = -2;
    return -1;
}

/* [...] after the '['. */
static void parse_class(parser *ps) {
    uint32_t si = new_set(ps);
    if (ps->err) return;
    if (peek(ps) == '^') {
        ps->at++;
        emit(ps, OP_SET, si, 0);
        if (!ps->err) ps->re->code[ps->re->n_code - 1].neg = 1;
    } else {
        emit(ps, OP_SET, si, 0);
    }
    bool first = true;
    while (!ps->err) {
        int c = peek(ps);
        if (c < 0) {
            ps->err = -2;
            return;
        }
        if (c == ']' && !first) {
            ps->at++;
            return;
        }
        first = false;
        ps->at++;
        int64_t lo = c;
        if (c == '\\' && (lo = escape(ps)) < 0) continue;
        if (peek(ps) == '-' && ps->at + 1 < ps->n && ps->p[ps->at + 1] != ']') {
            ps->at++;
            int64_t hi = ps->p[ps->at++];
            if (hi == '\\' && (hi = escape(ps)) < 0) {
                ps->err = -2; /* a range ending in a class */
                return;
            }
            if (hi < lo) {
                ps->err = -2;
                return;
            }
            add_range(ps, (uint32_t)lo, (uint32_t)hi);
        } else {
            add_range(ps, (uint32_t)lo, (uint32_t)lo);
        }
    }
}

static bool parse_alt(parser *ps); /* returns whether it can match empty */

/* One atom; returns whether it can match empty. */
static bool parse_atom(parser *ps) {
    int c = peek(ps);
    ps->at++;
    if (c == '(') {
        int kind = 0; /* 0 group, '=' or '!' lookahead */
        if (peek(ps) == '?') {
            ps->at++;
            kind = peek(ps);
            ps->at++;
            if (kind == ':') kind = 0;
            else if (kind != '=' && kind != '!') ps->err = -2;
        }
        uint32_t look = 0;
        if (kind) look = emit(ps, OP_LOOK, 0, 0);
        bool nul = parse_alt(ps);
        if (peek(ps) != ')') ps->err = -2;
        ps->at++;
        if (kind && !ps->err) {
            emit(ps, OP_MATCH, 0, 0);
            ps->re->code[look].neg = kind == '!';
            ps->re->code[look].y = (uint32_t)ps->re->n_code;
            return true;
        }
        return nul;
    }
    if (c == '$') {
        emit(ps, OP_EOL, 0, 0);
        return true;
    }
    if (c == '[') {
        parse_class(ps);
        return false;
    }
    if (c < 0 || strchr("*+?{})|]^", c)) {
        ps->err = -2;
        return false;
    }
    uint32_t si = new_set(ps);
    if (ps->err) return false;
    emit(ps, OP_SET, si, 0);
    if (c == '.') { /* any but a line terminator */
        ps->re->code[ps->re->n_code - 1].neg = 1;
        add_range(ps, '\n', '\n');
        add_range(ps, '\r', '\r');
        add_range(ps, 0x2028, 0x2029);
    } else if (c == '\\') {
        int64_t v = escape(ps);
        if (v >= 0) add_range(ps, (uint32_t)v, (uint32_t)v);
    } else {
        add_range(ps, (uint32_t)c, (uint32_t)c);
    }
    return false;
}

static bool read_count(parser *ps, uint32_t *v) {
    if (peek(ps) < '0' || peek(ps) > '9') return false;
    *v = 0;
    while (peek(ps) >= '0' && peek(ps) <= '9' && *v < 100000) *v = *v * 10 + (uint32_t)(ps->p[ps->at++] - '0');
    return *v <= 1000;
}

/* {n}, {n,}, {n,m} after the '{'; max UINT32_MAX: unbounded. */
static void parse_braces(parser *ps, uint32_t *min, uint32_t *max) {
    if (!read_count(ps, min)) {
        ps->err = -2;
        return;
    }
    *max = *min;
    if (peek(ps) == ',') {
        ps->at++;
        *max = UINT32_MAX;
        if (peek(ps) != '}' && (!read_count(ps, max) || *max < *min)) ps->err = -2;
    }
    if (peek(ps) != '}') ps->err = -2;
    ps->at++;
}

/* Emits the atom at text position 'from' again (quantifiers lay out copies of it). */
static bool reemit(parser *ps, size_t from) {
    ps->at = from;
    return parse_atom(ps);
}

static void patch_split(parser *ps, uint32_t pc, uint32_t second) {
    if (!ps->err) ps->re->code[pc].y = second;
}

/* An atom and its quantifier, laid out as greedy loops and optional copies. */
static bool parse_piece(parser *ps) {
    size_t from = ps->at;
    uint32_t code0 = (uint32_t)ps->re->n_code;
    bool nul = parse_atom(ps);
    int q = peek(ps);
    if (ps->err || (q != '?' && q != '*' && q != '+' && q != '{')) return nul;
    ps->at++;
    uint32_t min = q == '+' ? 1 : 0, max = q == '?' ? 1 : UINT32_MAX;
    if (q == '{') parse_braces(ps, &min, &max);
    if (peek(ps) == '?' || peek(ps) == '+') ps->err = -2; /* lazy / possessive */
    if (ps->err) return false;
    if (nul && max > 1) { /* a loop over an empty match would never end */
        ps->err = -2;
        return false;
    }
    size_t after = ps->at;
    ps->re->n_code = code0;
    for (uint32_t i = 0; i < min && !ps->err; i++) reemit(ps, from);
    if (max == UINT32_MAX) {
        uint32_t loop = emit(ps, OP_SPLIT, 0, 0);
        if (!ps->err) ps->re->code[loop].x = loop + 1;
        reemit(ps, from);
        emit(ps, OP_JMP, loop, 0);
        patch_split(ps, loop, (uint32_t)ps->re->n_code);
    } else if (max > min) {
        uint32_t splits[1001], k = 0;
        for (uint32_t i = min; i < max && !ps->err; i++) {
            splits[k] = emit(ps, OP_SPLIT, 0, 0);
            if (!ps->err) ps->re->code[splits[k]].x = splits[k] + 1;
            k++;
            reemit(ps, from);
        }
        for (uint32_t i = 0; i < k; i++) patch_split(ps, splits[i], (uint32_t)ps->re->n_code);
    }
    ps->at = after;
    return nul || min == 0;
}

static bool parse_seq(parser *ps) {
    bool nul = true;
    while (!ps->err && peek(ps) >= 0 && peek(ps) != '|' && peek(ps) != ')') nul &= parse_piece(ps);
    return nul;
}

/* a|b|c as SPLIT(a, SPLIT(b, c)) with every branch jumping to the end */
static bool parse_alt(parser *ps) {
    uint32_t split = emit(ps, OP_SPLIT, 0, 0);
    if (!ps->err) ps->re->code[split].x = split + 1;
    bool nul = parse_seq(ps);
    if (peek(ps) != '|') { /* a single branch: the split just goes on into it */
        if (!ps->err) ps->re->code[split] = (inst){OP_JMP, 0, split + 1, 0};
        return nul;
    }
    uint32_t jmp = emit(ps, OP_JMP, 0, 0);
    ps->at++;
    patch_split(ps, split, (uint32_t)ps->re->n_code);
    nul |= parse_alt(ps);
    if (!ps->err) ps->re->code[jmp].x = (uint32_t)ps->re->n_code;
    return nul;
}

/* Whether llama.cpp would run the pattern on the collapsed text (it names a category). */
static bool names_category(const char *pat) {
    static const char *const cats[] = {"\\p{N}", "\\p{L}", "\\p{P}", "\\p{M}", "\\p{S}", "\\p{Lu}", "\\p{Ll}",
                                       "\\p{Lt}", "\\p{Lm}", "\\p{Lo}"};
    for (size_t i = 0; i < sizeof cats / sizeof *cats; i++)
        if (strstr(pat, cats[i])) return true;
    return false;
}

void hr_re_free(hr_re *re) {
    if (!re) return;
    free(re->code);
    free(re->sets);
    free(re->ranges);
    free(re);
}

int hr_re_compile(const char *pat, hr_re **out) {
    *out = NULL;
    size_t len = strlen(pat);
    hr_re *re = calloc(1, sizeof *re);
    uint32_t *cp = malloc((len + 1) * sizeof *cp);
    if (!re || !cp) {
        free(re);
        free(cp);
        return -1;
    }
    re->collapsed = names_category(pat);
    parser ps = {re, cp, 0, 0, 0};
    for (size_t off = 0; off < len;) {
        cp[ps.n] = hr_utf8_next((const unsigned char *)pat, len, &off);
        if (re->collapsed && cp[ps.n] >= 128) ps.err = -2; /* llama.cpp refuses these too */
        ps.n++;
    }
    if (!ps.err) parse_alt(&ps);
    if (!ps.err && ps.at != ps.n) ps.err = -2; /* an unmatched ')' */
    if (!ps.err) emit(&ps, OP_MATCH, 0, 0);
    /* one branch (JMP 1) starting with X+, laid out as X X*: SET; SPLIT(3, 5); SET; JMP 2 */
    const inst *c = re->code;
    re->lead_plus = !ps.err && re->n_code >= 6 && c[0].op == OP_JMP && c[1].op == OP_SET && c[2].op == OP_SPLIT &&
                    c[2].x == 3 && c[2].y == 5 && c[3].op == OP_SET && c[4].op == OP_JMP && c[4].x == 2;
    free(cp);
    if (ps.err) {
        hr_re_free(re);
        return ps.err;
    }
    *out = re;
    return 0;
}

bool hr_re_collapsed(const hr_re *re) { return re->collapsed; }

uint32_t hr_re_view(bool collapsed, uint32_t c) {
    if (c < 128) return c;
    if (hr_uspace(c)) return MARK_WS;
    if (!collapsed) return c;
    switch (hr_ucat(c)) {
    case HR_UCAT_N: return MARK_N;
    case HR_UCAT_L: return MARK_L;
    case HR_UCAT_P: return MARK_P;
    case HR_UCAT_M: return MARK_M;
    case HR_UCAT_S: return MARK_S;
    default: return MARK_OTHER;
    }
}

/* ---- matching ---- */

static bool is_space(uint32_t c) { return (c >= 9 && c <= 13) || c == ' '; }
static bool is_digit(uint32_t c) { return c >= '0' && c <= '9'; }
static bool is_word(uint32_t c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

static bool in_set(const hr_re *re, const inst *in, uint32_t c) {
    const cset *s = &re->sets[in->x];
    bool m = false;
    for (uint32_t i = 0; i < s->n && !m; i++) m = c >= re->ranges[s->first + i].lo && c <= re->ranges[s->first + i].hi;
    if (!m && s->cls) {
        m = ((s->cls & CL_S) && is_space(c)) || ((s->cls & CL_NS) && !is_space(c)) || ((s->cls & CL_D) && is_digit(c)) ||
            ((s->cls & CL_ND) && !is_digit(c)) || ((s->cls & CL_W) && is_word(c)) || ((s->cls & CL_NW) && !is_word(c));
    }
    return m != (in->neg != 0);
}

typedef struct btstack {
    uint32_t *pc;
    size_t *pos;
    size_t n, cap;
} btstack;

static bool bt_push(btstack *b, uint32_t pc, size_t pos) {
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        uint32_t *p = realloc(b->pc, cap * sizeof *p);
        if (p) b->pc = p;
        size_t *q = p ? realloc(b->pos, cap * sizeof *q) : NULL;
        if (!q) return false;
        b->pos = q;
        b->cap = cap;
    }
    b->pc[b->n] = pc;
    b->pos[b->n++] = pos;
    return true;
}

/* Runs the program from pc at pos; the end of the first match found (in the order
 * ECMAScript prefers), -1 none, -2 out of memory. not_null refuses an empty match. */
static int64_t run(const hr_re *re, uint32_t pc, const uint32_t *s, size_t pos, size_t end, bool not_null, btstack *b) {
    size_t base = b->n, start = pos;
    for (;;) {
        const inst *in = &re->code[pc];
        bool ok = true;
        switch (in->op) {
        case OP_SET:
            ok = pos < end && in_set(re, in, s[pos]);
            pc++;
            pos++;
            break;
        case OP_JMP: pc = in->x; break;
        case OP_SPLIT:
            if (!bt_push(b, in->y, pos)) return -2;
            pc = in->x;
            break;
        case OP_EOL:
            ok = pos == end;
            pc++;
            break;
        case OP_LOOK: {
            int64_t r = run(re, pc + 1, s, pos, end, false, b);
            if (r == -2) return -2;
            ok = (r >= 0) != (in->neg != 0);
            pc = in->y;
            break;
        }
        default: /* OP_MATCH */
            if (!not_null || pos > start) {
                b->n = base;
                return (int64_t)pos;
            }
            ok = false;
            break;
        }
        if (ok) continue;
        if (b->n == base) return -1;
        b->n--;
        pc = b->pc[b->n];
        pos = b->pos[b->n];
    }
}

/* Leftmost match at or after from: its start in *ms, end returned; -1 none, -2 out of memory.
 * For X+R, a failure at st with s[st] in X means a failure at st+1 too (every way X+R could
 * match from st+1 is a way it could match from st), so the rest of that X run is skipped:
 * without it a pattern like \s+$ takes quadratic time on long whitespace runs. */
static int64_t search(const hr_re *re, const uint32_t *s, size_t from, size_t end, size_t *ms, btstack *b) {
    for (size_t st = from; st <= end; st++) {
        int64_t r = run(re, 0, s, st, end, false, b);
        if (r != -1) {
            *ms = st;
            return r;
        }
        if (re->lead_plus)
            while (st + 1 < end && in_set(re, &re->code[1], s[st]) && in_set(re, &re->code[1], s[st + 1])) st++;
    }
    return -1;
}

int hr_re_split(const hr_re *re, const uint32_t *s, const size_t *lens, size_t n_lens,
                void (*push)(void *ctx, size_t len), void *ctx) {
    btstack b = {0};
    size_t ini = 0;
    int rc = 0;
    for (size_t i = 0; i < n_lens && !rc; i++) {
        size_t end = ini + lens[i], prev = ini, from = ini, ms = 0;
        for (;;) {
            int64_t me = search(re, s, from, end, &ms, &b);
            if (me == -2) rc = -1;
            if (me < 0) break;
            if (ms > prev) push(ctx, ms - prev);
            if ((size_t)me > ms) push(ctx, (size_t)me - ms);
            prev = (size_t)me;
            from = (size_t)me;
            if ((size_t)me != ms) continue;
            /* an empty match: std::regex_iterator next wants a non-empty match right here,
             * else searches on from the next position */
            if (ms == end) break;
            int64_t r = run(re, 0, s, ms, end, true, &b);
            if (r == -2) {
                rc = -1;
                break;
            }
            if (r >= 0) {
                push(ctx, (size_t)r - ms);
                prev = from = (size_t)r;
            } else {
                from = ms + 1;
            }
        }
        if (end > prev) push(ctx, end - prev);
        ini = end;
    }
    free(b.pc);
    free(b.pos);
    return rc;
}
