/* The matcher: which tokens keep the generated text inside the grammar.
 *
 * State is a set of pushdown stacks, as in llama.cpp: each stack's top is a character class
 * the next code point may match, the rest are return positions in the rules that referenced
 * it; the empty stack means "the text may end here". Unlike llama.cpp, stacks are hash-consed
 * linked nodes (pos, below): a stack is one integer, equal stacks are equal integers, and the
 * stacks reached by matching a class at a stack's top ("pop and expand") are computed once per
 * node and cached, because that result does not depend on which code point matched.
 *
 * The allowed tokens come from one walk of a byte trie of all token pieces, carrying the set
 * of stacks down the trie, so a prefix shared by many tokens is matched once, and subtrees
 * whose prefix the grammar rejects are skipped. Results are cached per state (stack set and
 * partial UTF-8), which repeats constantly (inside a JSON string every character leads back to
 * the same set). Byte decoding, partial UTF-8 and the end-of-generation rule follow llama.cpp's
 * llama_grammar_apply_impl exactly, quirks included, so both allow the same tokens. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gbnf_internal.h"

#define MAX_STACKS 8192       /* stacks in one state: beyond this the grammar is too ambiguous */
#define MAX_NODES (1u << 23)  /* node table size that triggers a rebuild at reset */
#define N_CACHE 64            /* cached allowed-token sets */

typedef struct i32vec {
    int32_t *v;
    size_t n, cap;
} i32vec;

static int vpush(i32vec *a, int32_t x) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        int32_t *g = realloc(a->v, cap * sizeof *g);
        if (!g) return -1;
        a->v = g, a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

/* Partial UTF-8 across bytes: value so far, continuation bytes still due, and whether those
 * bytes continue a character begun by an earlier token (only those are checked to be
 * continuation bytes, as llama.cpp does). */
typedef struct utf8st {
    uint32_t value;
    int32_t n_remain;
    int32_t strict;
} utf8st;

typedef struct cache_ent {
    uint64_t hash;
    int32_t *key; /* stack ids, then value, n_remain, strict */
    size_t n_key;
    uint8_t *bits;
    int32_t count;
} cache_ent;

struct hr_grammar_sampler {
    const hr_grammar *g;
    int32_t n_vocab;
    /* tokens */
    char *bytes;          /* all pieces, each cut at its first NUL as llama.cpp's C strings are */
    uint32_t *off, *len;  /* n_vocab */
    uint8_t *eog;         /* n_vocab */
    /* byte trie: node 0 is the root */
    int32_t *t_first, *t_next, *t_tok;
    uint8_t *t_byte;
    int32_t *tok_next;    /* n_vocab: next token with the same piece */
    size_t t_n, t_cap;
    /* stack nodes: 0 is the empty stack */
    uint32_t *n_pos;
    int32_t *n_below, *n_adv_off, *n_adv_cnt;
    uint32_t *n_seen, *n_mark;
    size_t n_n, n_cap;
    int32_t *h;           /* open-addressing hash of (pos, below) -> node */
    size_t h_cap;
    uint32_t seen_gen, mark_gen;
    i32vec adv;           /* pop-and-expand results */
    i32vec todo, scratch;
    /* state */
    i32vec init, cur;
    utf8st ps;
    bool finished, failed;
    char err[160];
    /* apply */
    uint8_t *allow;       /* n_vocab / 8 bits */
    cache_ent cache[N_CACHE];
    int cache_next;
};

/* ---- stack nodes ---- */

static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static int grow_nodes(hr_grammar_sampler *s) {
    size_t cap = s->n_cap ? s->n_cap * 2 : 1024;
    uint32_t *p = realloc(s->n_pos, cap * sizeof *p);
    if (p) s->n_pos = p;
    int32_t *b = realloc(s->n_below, cap * sizeof *b);
    if (b) s->n_below = b;
    int32_t *o = realloc(s->n_adv_off, cap * sizeof *o);
    if (o) s->n_adv_off = o;
    int32_t *c = realloc(s->n_adv_cnt, cap * sizeof *c);
    if (c) s->n_adv_cnt = c;
    uint32_t *sn = realloc(s->n_seen, cap * sizeof *sn);
    if (sn) s->n_seen = sn;
    uint32_t *mk = realloc(s->n_mark, cap * sizeof *mk);
    if (mk) s->n_mark = mk;
    if (!p || !b || !o || !c || !sn || !mk) return -1;
    memset(s->n_seen + s->n_cap, 0, (cap - s->n_cap) * sizeof *sn);
    memset(s->n_mark + s->n_cap, 0, (cap - s->n_cap) * sizeof *mk);
    s->n_cap = cap;
    size_t hcap = cap * 2;
    int32_t *h = malloc(hcap * sizeof *h);
    if (!h) return -1;
    memset(h, 0xff, hcap * sizeof *h);
    for (size_t i = 1; i < s->n_n; i++) {
        size_t k = mix((uint64_t)s->n_pos[i] << 32 | (uint32_t)s->n_below[i]) & (hcap - 1);
        while (h[k] >= 0) k = (k + 1) & (hcap - 1);
        h[k] = (int32_t)i;
    }
    free(s->h);
    s->h = h, s->h_cap = hcap;
    return 0;
}

static int32_t intern(hr_grammar_sampler *s, uint32_t pos, int32_t below) {
    if (s->n_n + 1 >= s->n_cap && grow_nodes(s)) return -1;
    size_t k = mix((uint64_t)pos << 32 | (uint32_t)below) & (s->h_cap - 1);
    for (; s->h[k] >= 0; k = (k + 1) & (s->h_cap - 1)) {
        int32_t i = s->h[k];
        if (s->n_pos[i] == pos && s->n_below[i] == below) return i;
    }
    int32_t i = (int32_t)s->n_n++;
    s->n_pos[i] = pos, s->n_below[i] = below, s->n_adv_off[i] = -1, s->n_adv_cnt[i] = 0;
    s->n_seen[i] = 0, s->n_mark[i] = 0;
    s->h[k] = i;
    return i;
}

static uint32_t next_gen(uint32_t *gen, uint32_t *arr, size_t n) {
    if (++*gen == 0) memset(arr, 0, n * sizeof *arr), *gen = 1;
    return *gen;
}

/* Every stack whose top is a class, reachable from `start` by entering rules and leaving
 * finished ones (llama.cpp's advance_stack), appended to out. */
static int expand(hr_grammar_sampler *s, int32_t start, i32vec *out) {
    const hr_gel *el = s->g->el;
    uint32_t gen = next_gen(&s->seen_gen, s->n_seen, s->n_n);
    s->todo.n = 0;
    if (vpush(&s->todo, start)) return -1;
    while (s->todo.n) {
        int32_t n = s->todo.v[--s->todo.n];
        if (s->n_seen[n] == gen) continue;
        s->n_seen[n] = gen;
        if (n == 0 || el[s->n_pos[n]].type != HR_GE_RULE_REF) {
            if (vpush(out, n)) return -1;
            continue;
        }
        uint32_t ret = s->n_pos[n] + 1;
        int32_t below = hr_gel_is_end(&el[ret]) ? s->n_below[n] : intern(s, ret, s->n_below[n]);
        if (below < 0) return -1;
        for (uint32_t a = s->g->rule_start[el[s->n_pos[n]].value];;) {
            int32_t t = hr_gel_is_end(&el[a]) ? below : intern(s, a, below);
            if (t < 0 || vpush(&s->todo, t)) return -1;
            while (!hr_gel_is_end(&el[a])) a++;
            if (el[a].type != HR_GE_ALT) break;
            a++;
        }
    }
    return 0;
}

/* The position after the class starting at pos. */
static uint32_t class_end(const hr_gel *el, uint32_t pos) {
    do pos += el[pos + 1].type == HR_GE_CHAR_RNG_UPPER ? 2 : 1;
    while (el[pos].type == HR_GE_CHAR_ALT);
    return pos;
}

static bool class_match(const hr_gel *el, uint32_t pos, uint32_t c) {
    bool positive = el[pos].type != HR_GE_CHAR_NOT, found = false;
    do {
        if (el[pos + 1].type == HR_GE_CHAR_RNG_UPPER) {
            found = found || (el[pos].value <= c && c <= el[pos + 1].value);
            pos += 2;
        } else {
            found = found || el[pos].type == HR_GE_CHAR_ANY || el[pos].value == c;
            pos += 1;
        }
    } while (el[pos].type == HR_GE_CHAR_ALT);
    return found == positive;
}

/* Whether some completion of a partial UTF-8 sequence could match the class: llama.cpp's
 * test, which for negated classes refuses as soon as the possible range meets any excluded
 * code point. */
static bool class_match_partial(const hr_gel *el, uint32_t pos, utf8st p) {
    bool positive = el[pos].type != HR_GE_CHAR_NOT;
    if (p.n_remain < 0 || (p.n_remain == 1 && p.value < 2)) return false;
    uint32_t lo = p.value << (p.n_remain * 6), hi = lo | ((1u << (p.n_remain * 6)) - 1);
    if (lo == 0) lo = p.n_remain == 2 ? 1u << 11 : p.n_remain == 3 ? 1u << 16 : lo;
    do {
        if (el[pos + 1].type == HR_GE_CHAR_RNG_UPPER) {
            if (el[pos].value <= hi && lo <= el[pos + 1].value) return positive;
            pos += 2;
        } else if (el[pos].type == HR_GE_CHAR_ANY) {
            return true;
        } else {
            if (lo <= el[pos].value && el[pos].value <= hi) return positive;
            pos += 1;
        }
    } while (el[pos].type == HR_GE_CHAR_ALT);
    return !positive;
}

/* Stacks after matching the class at node n's top (cached per node). */
static int pop_advance(hr_grammar_sampler *s, int32_t n, int32_t *off, int32_t *cnt) {
    if (s->n_adv_off[n] < 0) {
        uint32_t next = class_end(s->g->el, s->n_pos[n]);
        int32_t start = hr_gel_is_end(&s->g->el[next]) ? s->n_below[n] : intern(s, next, s->n_below[n]);
        size_t at = s->adv.n;
        if (start < 0 || expand(s, start, &s->adv)) return -1;
        s->n_adv_off[n] = (int32_t)at, s->n_adv_cnt[n] = (int32_t)(s->adv.n - at);
    }
    *off = s->n_adv_off[n], *cnt = s->n_adv_cnt[n];
    return 0;
}

static void set_failed(hr_grammar_sampler *s, const char *msg) {
    if (!s->failed) snprintf(s->err, sizeof s->err, "%s", msg);
    s->failed = true;
}

/* The stacks (union, without repeats) after code point c from the set scratch[in_off,
 * in_off+n), appended to scratch. Returns how many: 0 when none matches, or on failure (then
 * s->failed). */
static size_t step(hr_grammar_sampler *s, size_t in_off, size_t n, uint32_t c) {
    const hr_gel *el = s->g->el;
    i32vec *out = &s->scratch;
    size_t start = out->n;
    uint32_t gen = next_gen(&s->mark_gen, s->n_mark, s->n_n);
    for (size_t i = 0; i < n; i++) {
        int32_t t = out->v[in_off + i];
        if (t == 0 || !class_match(el, s->n_pos[t], c)) continue;
        int32_t off, cnt;
        if (pop_advance(s, t, &off, &cnt)) { set_failed(s, "grammar: out of memory"); out->n = start; return 0; }
        for (int32_t j = 0; j < cnt; j++) {
            int32_t u = s->adv.v[off + j];
            if (s->n_mark[u] == gen) continue;
            s->n_mark[u] = gen;
            if (vpush(out, u)) { set_failed(s, "grammar: out of memory"); out->n = start; return 0; }
        }
    }
    size_t k = out->n - start;
    if (k > MAX_STACKS) {
        set_failed(s, "grammar: too ambiguous (over 8192 parse stacks at once)");
        out->n = start;
        return 0;
    }
    return k;
}

/* One byte of a token's piece: false when the bytes can no longer be valid (llama.cpp rejects
 * the token). *done is set when a code point is complete (in p->value). */
static bool utf8_byte(utf8st *p, uint8_t b, bool *done) {
    static const int8_t lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 3, 4};
    if (p->n_remain > 0) {
        if (p->strict && (b >> 6) != 2) return false;
        p->value = (p->value << 6) + (b & 0x3Fu);
        p->n_remain--;
    } else {
        int n = lookup[b >> 4] - 1;
        if (n < 0) return false;
        p->value = b & ((1u << (7 - n)) - 1);
        p->n_remain = n;
        p->strict = 0;
    }
    *done = p->n_remain == 0;
    if (*done) p->strict = 0;
    return true;
}

/* ---- the allowed set: trie walk ---- */

static bool any_partial(const hr_grammar_sampler *s, size_t off, size_t n, utf8st p) {
    for (size_t i = 0; i < n; i++) {
        int32_t t = s->scratch.v[off + i];
        if (t && class_match_partial(s->g->el, s->n_pos[t], p)) return true;
    }
    return false;
}

static void allow_tokens(hr_grammar_sampler *s, int32_t trie_node, int32_t *count) {
    for (int32_t t = s->t_tok[trie_node]; t >= 0; t = s->tok_next[t]) {
        s->allow[t >> 3] |= (uint8_t)(1u << (t & 7));
        (*count)++;
    }
}

/* Walks the children of trie node `node` with the stack set scratch[off, off+n). */
static void walk(hr_grammar_sampler *s, int32_t node, size_t off, size_t n, utf8st p, int32_t *count) {
    for (int32_t c = s->t_first[node]; c >= 0 && !s->failed; c = s->t_next[c]) {
        utf8st q = p;
        bool done;
        if (!utf8_byte(&q, s->t_byte[c], &done)) continue;
        if (!done) {
            if (s->t_tok[c] >= 0 && any_partial(s, off, n, q)) allow_tokens(s, c, count);
            walk(s, c, off, n, q, count);
            continue;
        }
        size_t at = s->scratch.n;
        size_t k = step(s, off, n, q.value);
        if (k) {
            allow_tokens(s, c, count);
            if (s->t_first[c] >= 0) walk(s, c, at, k, q, count);
        }
        s->scratch.n = at;
    }
}

static bool has_empty(const i32vec *v) {
    for (size_t i = 0; i < v->n; i++)
        if (v->v[i] == 0) return true;
    return false;
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The state as a cache key: sorted stack ids and the partial UTF-8. */
static size_t state_key(hr_grammar_sampler *s, uint64_t *hash) {
    s->scratch.n = 0;
    for (size_t i = 0; i < s->cur.n; i++)
        if (vpush(&s->scratch, s->cur.v[i])) return 0;
    qsort(s->scratch.v, s->scratch.n, sizeof *s->scratch.v, cmp_i32);
    if (vpush(&s->scratch, (int32_t)s->ps.value) || vpush(&s->scratch, s->ps.n_remain) || vpush(&s->scratch, s->ps.strict)) return 0;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < s->scratch.n; i++) h = mix(h ^ (uint32_t)s->scratch.v[i]) + i;
    *hash = h;
    return s->scratch.n;
}

static cache_ent *cache_find(hr_grammar_sampler *s, uint64_t h, size_t n_key) {
    for (int i = 0; i < N_CACHE; i++) {
        cache_ent *c = &s->cache[i];
        if (c->bits && c->hash == h && c->n_key == n_key && !memcmp(c->key, s->scratch.v, n_key * sizeof *c->key)) return c;
    }
    return NULL;
}

static void cache_store(hr_grammar_sampler *s, uint64_t h, const int32_t *key, size_t n_key, int32_t count) {
    cache_ent *c = &s->cache[s->cache_next];
    size_t nb = ((size_t)s->n_vocab + 7) / 8;
    int32_t *k = realloc(c->key, n_key * sizeof *k);
    if (!k) return;
    c->key = k;
    if (!c->bits && !(c->bits = malloc(nb))) return;
    memcpy(c->key, key, n_key * sizeof *key);
    memcpy(c->bits, s->allow, nb);
    c->n_key = n_key, c->hash = h, c->count = count;
    s->cache_next = (s->cache_next + 1) % N_CACHE;
}

static void cache_clear(hr_grammar_sampler *s) {
    for (int i = 0; i < N_CACHE; i++) free(s->cache[i].key), free(s->cache[i].bits), s->cache[i] = (cache_ent){0};
    s->cache_next = 0;
}

/* Fills s->allow; returns how many tokens are allowed. */
static int32_t compute_allowed(hr_grammar_sampler *s) {
    size_t nb = ((size_t)s->n_vocab + 7) / 8;
    memset(s->allow, 0, nb);
    if (s->finished || s->failed || !s->cur.n) return 0;
    uint64_t h = 0;
    size_t n_key = state_key(s, &h);
    if (!n_key) { set_failed(s, "grammar: out of memory"); return 0; }
    cache_ent *c = cache_find(s, h, n_key);
    if (c) {
        memcpy(s->allow, c->bits, nb);
        return c->count;
    }
    int32_t *key = malloc(n_key * sizeof *key);
    if (!key) { set_failed(s, "grammar: out of memory"); return 0; }
    memcpy(key, s->scratch.v, n_key * sizeof *key);
    s->scratch.n = 0;
    for (size_t i = 0; i < s->cur.n; i++)
        if (vpush(&s->scratch, s->cur.v[i])) { free(key); set_failed(s, "grammar: out of memory"); return 0; }
    int32_t count = 0;
    walk(s, 0, 0, s->cur.n, s->ps, &count);
    if (has_empty(&s->cur))
        for (int32_t t = 0; t < s->n_vocab; t++)
            if (s->eog[t]) s->allow[t >> 3] |= (uint8_t)(1u << (t & 7)), count++;
    if (s->failed) count = 0, memset(s->allow, 0, nb);
    else cache_store(s, h, key, n_key, count);
    free(key);
    return count;
}

int32_t hr_grammar_sampler_apply(hr_grammar_sampler *s, float *logits) {
    int32_t count = compute_allowed(s);
    for (int32_t t = 0; t < s->n_vocab; t++)
        if (!(s->allow[t >> 3] >> (t & 7) & 1)) logits[t] = -INFINITY;
    return count;
}

/* Runs a token's bytes from the current state; the resulting stacks are left in scratch. */
static bool run_piece(hr_grammar_sampler *s, int32_t tok, utf8st *out_ps, size_t *out_off, size_t *out_n) {
    s->scratch.n = 0;
    for (size_t i = 0; i < s->cur.n; i++)
        if (vpush(&s->scratch, s->cur.v[i])) return false;
    size_t off = 0, n = s->cur.n;
    utf8st p = s->ps;
    const uint8_t *b = (const uint8_t *)s->bytes + s->off[tok];
    for (uint32_t i = 0; i < s->len[tok]; i++) {
        bool done;
        if (!utf8_byte(&p, b[i], &done)) return false;
        if (!done) continue;
        size_t at = s->scratch.n;
        n = step(s, off, n, p.value);
        if (!n) return false;
        off = at;
    }
    if (p.n_remain > 0 && !any_partial(s, off, n, p)) return false;
    *out_ps = p, *out_off = off, *out_n = n;
    return true;
}

bool hr_grammar_sampler_allows(hr_grammar_sampler *s, int32_t tok) {
    if (!s || tok < 0 || tok >= s->n_vocab || s->finished || s->failed) return false;
    if (s->eog[tok]) return has_empty(&s->cur);
    if (!s->len[tok]) return false;
    utf8st p;
    size_t off, n;
    return run_piece(s, tok, &p, &off, &n);
}

int hr_grammar_sampler_accept(hr_grammar_sampler *s, int32_t tok, hr_err *e) {
    if (tok < 0 || tok >= s->n_vocab) return hr_errf(e, "grammar: token %d is outside the vocabulary", tok);
    if (s->failed) return hr_errf(e, "%s", s->err);
    if (s->finished) return hr_errf(e, "grammar: the text is already complete");
    if (s->eog[tok]) {
        if (!has_empty(&s->cur)) return hr_errf(e, "grammar: end of generation (token %d) before the grammar is complete", tok);
        s->finished = true;
        return 0;
    }
    utf8st p;
    size_t off, n;
    if (!s->len[tok] || !run_piece(s, tok, &p, &off, &n)) {
        if (s->failed) return hr_errf(e, "%s", s->err);
        return hr_errf(e, "grammar: token %d ('%.40s') is not allowed here", tok, s->len[tok] ? s->bytes + s->off[tok] : "");
    }
    i32vec nx = {0};
    for (size_t i = 0; i < n; i++)
        if (vpush(&nx, s->scratch.v[off + i])) { free(nx.v); return hr_errf(e, "grammar: out of memory"); }
    free(s->cur.v);
    s->cur = nx;
    s->ps = p;
    s->ps.strict = p.n_remain > 0;
    return 0;
}

bool hr_grammar_sampler_done(const hr_grammar_sampler *s) {
    return s->finished || (s->cur.n == 1 && s->cur.v[0] == 0 && s->ps.n_remain == 0);
}

const char *hr_grammar_sampler_error(const hr_grammar_sampler *s) { return s->failed ? s->err : NULL; }

/* ---- setup ---- */

static int trie_node(hr_grammar_sampler *s, uint8_t byte) {
    if (s->t_n == s->t_cap) {
        size_t cap = s->t_cap ? s->t_cap * 2 : 4096;
        int32_t *f = realloc(s->t_first, cap * sizeof *f);
        if (f) s->t_first = f;
        int32_t *x = realloc(s->t_next, cap * sizeof *x);
        if (x) s->t_next = x;
        int32_t *t = realloc(s->t_tok, cap * sizeof *t);
        if (t) s->t_tok = t;
        uint8_t *b = realloc(s->t_byte, cap);
        if (b) s->t_byte = b;
        if (!f || !x || !t || !b) return -1;
        s->t_cap = cap;
    }
    int32_t i = (int32_t)s->t_n++;
    s->t_first[i] = s->t_next[i] = s->t_tok[i] = -1;
    s->t_byte[i] = byte;
    return i;
}

/* Children are kept sorted by byte so the walk visits tokens in a fixed order. */
static int trie_insert(hr_grammar_sampler *s, int32_t tok) {
    int32_t node = 0;
    const uint8_t *b = (const uint8_t *)s->bytes + s->off[tok];
    for (uint32_t i = 0; i < s->len[tok]; i++) {
        int32_t prev = -1, c = s->t_first[node];
        while (c >= 0 && s->t_byte[c] < b[i]) prev = c, c = s->t_next[c];
        if (c >= 0 && s->t_byte[c] == b[i]) { node = c; continue; }
        int32_t m = trie_node(s, b[i]);
        if (m < 0) return -1;
        s->t_next[m] = c;
        if (prev < 0) s->t_first[node] = m;
        else s->t_next[prev] = m;
        node = m;
    }
    s->tok_next[tok] = s->t_tok[node];
    s->t_tok[node] = tok;
    return 0;
}

/* Each token's bytes once, as llama.cpp sees them: special tokens rendered, cut at a NUL. */
static int load_pieces(hr_grammar_sampler *s, const hr_tokenizer *tok) {
    size_t cap = 1 << 16, used = 0;
    char buf[512];
    s->bytes = malloc(cap);
    if (!s->bytes) return -1;
    for (int32_t t = 0; t < s->n_vocab; t++) {
        s->eog[t] = hr_tok_is_eog(tok, t);
        int n = hr_tok_piece(tok, t, true, buf, sizeof buf);
        char *big = NULL;
        if (n > (int)sizeof buf) {
            if (!(big = malloc((size_t)n))) return -1;
            hr_tok_piece(tok, t, true, big, (size_t)n);
        }
        const char *src = big ? big : buf;
        size_t len = n > 0 ? strnlen(src, (size_t)n) : 0;
        if (used + len > cap) {
            while (used + len > cap) cap *= 2;
            char *g = realloc(s->bytes, cap);
            if (!g) { free(big); return -1; }
            s->bytes = g;
        }
        memcpy(s->bytes + used, src, len);
        s->off[t] = (uint32_t)used, s->len[t] = s->eog[t] ? 0 : (uint32_t)len;
        used += len;
        free(big);
    }
    return 0;
}

static int init_stacks(hr_grammar_sampler *s) {
    const hr_gel *el = s->g->el;
    s->init.n = 0;
    for (uint32_t a = s->g->rule_start[s->g->root];;) {
        int32_t t = hr_gel_is_end(&el[a]) ? 0 : intern(s, a, 0);
        size_t before = s->init.n;
        if (t < 0 || expand(s, t, &s->init)) return -1;
        /* alternatives may reach the same stacks: keep one of each */
        for (size_t i = before; i < s->init.n; i++)
            for (size_t j = 0; j < before; j++)
                if (s->init.v[j] == s->init.v[i]) { s->init.v[i--] = s->init.v[--s->init.n]; break; }
        while (!hr_gel_is_end(&el[a])) a++;
        if (el[a].type != HR_GE_ALT) break;
        a++;
    }
    return 0;
}

static void reset_nodes(hr_grammar_sampler *s) {
    s->n_n = 1; /* node 0: the empty stack */
    memset(s->h, 0xff, s->h_cap * sizeof *s->h);
    s->n_pos[0] = UINT32_MAX, s->n_below[0] = -1, s->n_adv_off[0] = -1, s->n_adv_cnt[0] = 0;
    s->adv.n = 0;
    cache_clear(s);
}

void hr_grammar_sampler_reset(hr_grammar_sampler *s) {
    s->failed = false, s->err[0] = 0;
    if (s->n_n > MAX_NODES) {
        reset_nodes(s);
        if (init_stacks(s)) set_failed(s, "grammar: out of memory");
    }
    s->cur.n = 0;
    for (size_t i = 0; i < s->init.n; i++)
        if (vpush(&s->cur, s->init.v[i])) set_failed(s, "grammar: out of memory");
    s->ps = (utf8st){0, 0, 0};
    s->finished = false;
}

hr_grammar_sampler *hr_grammar_sampler_new(const hr_grammar *g, const hr_tokenizer *tok, hr_err *e) {
    if (!g || !tok) { hr_errf(e, "grammar: no grammar or tokenizer"); return NULL; }
    hr_grammar_sampler *s = calloc(1, sizeof *s);
    if (!s) { hr_errf(e, "grammar: out of memory"); return NULL; }
    s->g = g;
    s->n_vocab = hr_tok_n_vocab(tok);
    size_t nv = (size_t)s->n_vocab;
    s->off = malloc(nv * sizeof *s->off), s->len = malloc(nv * sizeof *s->len);
    s->eog = malloc(nv), s->tok_next = malloc(nv * sizeof *s->tok_next), s->allow = malloc((nv + 7) / 8 + 1);
    bool ok = s->off && s->len && s->eog && s->tok_next && s->allow && !load_pieces(s, tok) && trie_node(s, 0) == 0;
    for (int32_t t = 0; ok && t < s->n_vocab; t++)
        if (s->len[t] && trie_insert(s, t)) ok = false;
    if (ok && grow_nodes(s)) ok = false;
    if (ok) reset_nodes(s);
    if (ok && init_stacks(s)) ok = false;
    if (!ok) {
        hr_grammar_sampler_free(s);
        hr_errf(e, "grammar: out of memory");
        return NULL;
    }
    hr_grammar_sampler_reset(s);
    return s;
}

void hr_grammar_sampler_free(hr_grammar_sampler *s) {
    if (!s) return;
    free(s->bytes), free(s->off), free(s->len), free(s->eog), free(s->tok_next), free(s->allow);
    free(s->t_first), free(s->t_next), free(s->t_tok), free(s->t_byte);
    free(s->n_pos), free(s->n_below), free(s->n_adv_off), free(s->n_adv_cnt), free(s->n_seen), free(s->n_mark), free(s->h);
    free(s->adv.v), free(s->todo.v), free(s->scratch.v), free(s->init.v), free(s->cur.v);
    cache_clear(s);
    free(s);
}
