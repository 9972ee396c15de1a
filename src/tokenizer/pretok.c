#include "pretok.h"
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "unicode.h"

/* A growing list of word lengths. */
typedef struct lens {
    size_t *v, n, cap;
    bool oom;
} lens;

static void push(lens *l, size_t x) {
    if (l->oom) return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        size_t *v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            l->oom = true;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = x;
}

/* Character classes as llama.cpp's flags report them. Positions outside the current
 * piece read as "no flags at all", which the splitters rely on (e.g. \s+(?!\S)). */
enum { F_DEF = 1, F_L = 2, F_N = 4, F_WS = 8 };
#define OOR 0xFFFFFFFFu

typedef struct piece {
    const uint32_t *c;
    size_t ini, end, prev; /* bounds, end of the last word emitted */
    lens *out;
} piece;

static unsigned flags_of(uint32_t c) {
    int k = hr_ucat(c);
    return F_DEF | (k == HR_UCAT_L ? F_L : 0) | (k == HR_UCAT_N ? F_N : 0) | (hr_uspace(c) ? F_WS : 0);
}
static uint32_t cp(const piece *p, size_t i) { return i >= p->ini && i < p->end ? p->c[i] : OOR; }
static unsigned fl(const piece *p, size_t i) { return i >= p->ini && i < p->end ? flags_of(p->c[i]) : 0; }
static size_t add(piece *p, size_t end) {
    size_t len = end - p->prev;
    if (len) push(p->out, len);
    p->prev = end;
    return len;
}
static uint32_t lower_ascii(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* 's 't 're 've 'm 'll 'd at pos (optionally case-insensitive): length or 0. */
static size_t contraction(const piece *p, size_t pos, bool icase) {
    if (cp(p, pos) != '\'' || pos + 1 >= p->end) return 0;
    uint32_t a = cp(p, pos + 1);
    if (icase) a = lower_ascii(a);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (pos + 2 >= p->end) return 0;
    uint32_t b = cp(p, pos + 2);
    if (icase) b = lower_ascii(b);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

static bool other(unsigned f) { return !(f & (F_WS | F_L | F_N)) && f; }

static void split_gpt2(piece *p) {
    for (size_t pos = p->ini; pos < p->end;) {
        uint32_t c = cp(p, pos);
        size_t k = contraction(p, pos, false);
        if (k) {
            pos += add(p, pos + k);
            continue;
        }
        unsigned f2 = c == ' ' ? fl(p, pos + 1) : fl(p, pos);
        if (f2 & (F_L | F_N)) { /* ?\p{L}+ and ?\p{N}+ */
            unsigned want = f2 & F_L ? F_L : F_N;
            pos += c == ' ';
            while (f2 & want) f2 = fl(p, ++pos);
            add(p, pos);
            continue;
        }
        if (other(f2)) { /* ?[^\s\p{L}\p{N}]+ */
            pos += c == ' ';
            while (other(f2)) f2 = fl(p, ++pos);
            add(p, pos);
            continue;
        }
        size_t nws = 0;
        while (fl(p, pos + nws) & F_WS) nws++;
        if (nws > 1 && cp(p, pos + nws) != OOR) { /* \s+(?!\S): leave the last one to the next word */
            pos += nws - 1;
            add(p, pos);
            continue;
        }
        if (nws > 0) {
            pos += nws;
            add(p, pos);
            continue;
        }
        add(p, ++pos);
    }
}

static void split_llama3(piece *p) {
    for (size_t pos = p->ini; pos < p->end;) {
        uint32_t c = cp(p, pos);
        unsigned f = fl(p, pos);
        size_t k = contraction(p, pos, true);
        if (k) {
            pos += add(p, pos + k);
            continue;
        }
        /* [^\r\n\p{L}\p{N}]?\p{L}+ */
        if (!(c == '\r' || c == '\n' || (f & F_N)) && ((f & F_L) || (fl(p, pos + 1) & F_L))) {
            pos++;
            while (fl(p, pos) & F_L) pos++;
            add(p, pos);
            continue;
        }
        if (f & F_N) { /* \p{N}{1,3} */
            size_t ini = pos;
            while (fl(p, pos) & F_N) {
                if (++pos - ini >= 3) {
                    add(p, pos);
                    ini = pos;
                }
            }
            add(p, pos);
            continue;
        }
        /* ?[^\s\p{L}\p{N}]+[\r\n]*  (llama.cpp tests the first character's own flags
         * for "defined" here, not the flags after the optional space; kept as is) */
        unsigned f2 = c == ' ' ? fl(p, pos + 1) : f;
        if (!(f2 & (F_WS | F_L | F_N)) && f) {
            pos += c == ' ';
            while (other(f2)) f2 = fl(p, ++pos);
            uint32_t c2 = cp(p, pos);
            while (c2 == '\r' || c2 == '\n') c2 = cp(p, ++pos);
            add(p, pos);
            continue;
        }
        size_t nws = 0, last_rn = 0;
        while (fl(p, pos + nws) & F_WS) {
            uint32_t c2 = cp(p, pos + nws);
            if (c2 == '\r' || c2 == '\n') last_rn = pos + nws + 1;
            nws++;
        }
        if (last_rn > 0) { /* \s*[\r\n]+ */
            pos = last_rn;
            add(p, pos);
            continue;
        }
        if (nws > 1 && cp(p, pos + nws) != OOR) {
            pos += nws - 1;
            add(p, pos);
            continue;
        }
        if (nws > 0) {
            pos += nws;
            add(p, pos);
            continue;
        }
        add(p, ++pos);
    }
}

/* The "default" pre-tokenizer's std::regex stages reduce to runs of one class. */
static bool is_punct_run(uint32_t c) { /* [\p{P}\$\+<=>\^~\|] on llama.cpp's collapsed text */
    if (c < 128) return c && strchr("!\"#%&'()*,-./:;?@[\\]_{}$+<=>^~|", (int)c) != NULL;
    return !hr_uspace(c) && hr_ucat(c) == HR_UCAT_P;
}
static bool is_num_run(uint32_t c) { /* \p{N} on the collapsed text */
    if (c < 128) return c >= '0' && c <= '9';
    return !hr_uspace(c) && hr_ucat(c) == HR_UCAT_N;
}
static bool is_digit(uint32_t c) { return c >= '0' && c <= '9'; }

static void split_runs(piece *p, bool (*in)(uint32_t)) {
    size_t pos = p->ini;
    while (pos < p->end) {
        bool m = in(p->c[pos]);
        while (pos < p->end && in(p->c[pos]) == m) pos++;
        add(p, pos);
    }
}

static void split_triples(piece *p) { /* [0-9][0-9][0-9], leftmost matches, gaps kept */
    size_t pos = p->ini;
    while (pos < p->end) {
        if (pos + 3 <= p->end && is_digit(p->c[pos]) && is_digit(p->c[pos + 1]) && is_digit(p->c[pos + 2])) {
            add(p, pos);
            pos += 3;
            add(p, pos);
        } else {
            pos++;
        }
    }
    add(p, p->end);
}

typedef enum { ST_GPT2, ST_LLAMA3, ST_PUNCT, ST_NUM, ST_TRIPLE } stage;

static int run_stage(stage s, const uint32_t *c, lens *in, lens *out) {
    size_t start = 0;
    for (size_t i = 0; i < in->n; i++) {
        piece p = {c, start, start + in->v[i], start, out};
        switch (s) {
        case ST_GPT2: split_gpt2(&p); break;
        case ST_LLAMA3: split_llama3(&p); break;
        case ST_PUNCT: split_runs(&p, is_punct_run); break;
        case ST_NUM: split_runs(&p, is_num_run); break;
        case ST_TRIPLE: split_triples(&p); break;
        }
        start += in->v[i];
    }
    return out->oom ? -1 : 0;
}

int hr_pretok(hr_pre_kind k, const char *text, size_t n, hr_words *w) {
    memset(w, 0, sizeof *w);
    w->cpts = malloc((n ? n : 1) * sizeof *w->cpts);
    if (!w->cpts) return -1;
    for (size_t off = 0; off < n;) w->cpts[w->n_cpts++] = hr_utf8_next((const unsigned char *)text, n, &off);

    static const stage def[] = {ST_PUNCT, ST_GPT2, ST_NUM, ST_TRIPLE};
    static const stage gpt2[] = {ST_GPT2};
    static const stage llama3[] = {ST_LLAMA3};
    const stage *st = k == HR_PRE_GPT2 ? gpt2 : k == HR_PRE_LLAMA3 ? llama3 : def;
    size_t nst = k == HR_PRE_DEFAULT ? 4 : 1;

    lens cur = {0};
    if (w->n_cpts) push(&cur, w->n_cpts);
    for (size_t i = 0; i < nst && !cur.oom; i++) {
        lens next = {0};
        int rc = run_stage(st[i], w->cpts, &cur, &next);
        free(cur.v);
        cur = next;
        if (rc) break;
    }
    if (cur.oom) {
        free(cur.v);
        hr_words_free(w);
        return -1;
    }
    w->lens = cur.v;
    w->n_words = cur.n;
    return 0;
}

void hr_words_free(hr_words *w) {
    free(w->cpts);
    free(w->lens);
    memset(w, 0, sizeof *w);
}
