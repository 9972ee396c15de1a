/* A deterministic vocabulary for generated models: byte-pair merges learned from the
 * built-in English text, so ordinary words become multi-byte tokens. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pretok.h"
#include "strmap.h"
#include "tok_internal.h"
#include "unicode.h"
#include "vocab_synth.h"

/* ---- pieces: the growing set of strings, each with an index ---- */
typedef struct pieces {
    char **s;
    uint32_t *len;
    size_t n, cap;
    hr_strmap map;
} pieces;

static int32_t piece_add(pieces *p, const char *s, size_t n) {
    int32_t id = hr_strmap_get(&p->map, s, n);
    if (id >= 0) return id;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 512;
        char **ns = realloc(p->s, cap * sizeof *ns);
        if (!ns) return -1;
        p->s = ns;
        uint32_t *nl = realloc(p->len, cap * sizeof *nl);
        if (!nl) return -1;
        p->len = nl;
        p->cap = cap;
    }
    char *c = malloc(n + 1);
    if (!c) return -1;
    memcpy(c, s, n);
    c[n] = 0;
    p->s[p->n] = c;
    p->len[p->n] = (uint32_t)n;
    if (hr_strmap_put(&p->map, c, n, (int32_t)p->n) < 0) return -1;
    return (int32_t)p->n++;
}

static void pieces_free(pieces *p) {
    for (size_t i = 0; i < p->n; i++) free(p->s[i]);
    free(p->s);
    free(p->len);
    hr_strmap_free(&p->map);
}

/* ---- training words: symbol ids (-1: a character outside the vocabulary) ---- */
typedef struct word {
    int32_t *sym;
    size_t n;
} word;

typedef struct corpus {
    word *w;
    size_t n, cap;
} corpus;

static int corpus_add(corpus *c, pieces *p, const char *s, size_t n, const bool *usable) {
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 256;
        word *w = realloc(c->w, cap * sizeof *w);
        if (!w) return -1;
        c->w = w;
        c->cap = cap;
    }
    word *w = &c->w[c->n++];
    w->sym = malloc((n ? n : 1) * sizeof *w->sym);
    w->n = 0;
    if (!w->sym) return -1;
    for (size_t off = 0; off < n;) {
        size_t l = hr_utf8_len((unsigned char)s[off]);
        if (l > n - off) l = n - off;
        int32_t id = hr_strmap_get(&p->map, s + off, l);
        w->sym[w->n++] = id >= 0 && (!usable || usable[id]) ? id : -1;
        off += l;
    }
    return 0;
}

static void corpus_free(corpus *c) {
    for (size_t i = 0; i < c->n; i++) free(c->w[i].sym);
    free(c->w);
}

/* ---- pair counting ---- */
typedef struct pair_tab {
    uint64_t *key;
    uint32_t *cnt;
    size_t cap;
} pair_tab;

static void tab_inc(pair_tab *t, uint64_t k) {
    size_t i = (size_t)((k * 0x9E3779B97F4A7C15ull) >> 20) & (t->cap - 1);
    while (t->cnt[i] && t->key[i] != k) i = (i + 1) & (t->cap - 1);
    t->key[i] = k;
    t->cnt[i]++;
}

/* The most frequent adjacent pair; ties go to the smallest (left, right). */
static int best_pair(const corpus *c, int32_t *a, int32_t *b) {
    size_t total = 0;
    for (size_t i = 0; i < c->n; i++) total += c->w[i].n;
    pair_tab t = {0};
    t.cap = 64;
    while (t.cap < total * 2) t.cap *= 2;
    t.key = calloc(t.cap, sizeof *t.key);
    t.cnt = calloc(t.cap, sizeof *t.cnt);
    if (!t.key || !t.cnt) {
        free(t.key);
        free(t.cnt);
        return -1;
    }
    for (size_t i = 0; i < c->n; i++)
        for (size_t j = 1; j < c->w[i].n; j++)
            if (c->w[i].sym[j - 1] >= 0 && c->w[i].sym[j] >= 0)
                tab_inc(&t, (uint64_t)(uint32_t)c->w[i].sym[j - 1] << 32 | (uint32_t)c->w[i].sym[j]);
    uint32_t best = 0;
    uint64_t bk = 0;
    for (size_t i = 0; i < t.cap; i++)
        if (t.cnt[i] > best || (t.cnt[i] && t.cnt[i] == best && t.key[i] < bk)) {
            best = t.cnt[i];
            bk = t.key[i];
        }
    free(t.key);
    free(t.cnt);
    if (!best) return 0;
    *a = (int32_t)(bk >> 32);
    *b = (int32_t)(bk & 0xFFFFFFFFu);
    return 1;
}

static void apply_merge(corpus *c, int32_t a, int32_t b, int32_t m) {
    for (size_t i = 0; i < c->n; i++) {
        word *w = &c->w[i];
        size_t k = 0;
        for (size_t j = 0; j < w->n; j++) {
            if (j + 1 < w->n && w->sym[j] == a && w->sym[j + 1] == b) {
                w->sym[k++] = m;
                j++;
            } else {
                w->sym[k++] = w->sym[j];
            }
        }
        w->n = k;
    }
}

/* Learns merges until `want` pieces exist or no pair is left. Reports each merge
 * through cb (left, right, merged, merged_is_new). */
typedef int (*merge_cb)(void *ctx, pieces *p, int32_t a, int32_t b, int32_t m, bool fresh);
static int learn(corpus *c, pieces *p, size_t want, merge_cb cb, void *ctx) {
    while (p->n < want) {
        int32_t a, b;
        int r = best_pair(c, &a, &b);
        if (r <= 0) return r;
        size_t na = p->len[a], nb = p->len[b];
        char *s = malloc(na + nb + 1);
        if (!s) return -1;
        memcpy(s, p->s[a], na);
        memcpy(s + na, p->s[b], nb);
        size_t before = p->n;
        int32_t m = piece_add(p, s, na + nb);
        free(s);
        if (m < 0) return -1;
        apply_merge(c, a, b, m);
        if (cb(ctx, p, a, b, m, p->n > before)) return -1;
    }
    return 0;
}

/* ---- the vocabulary being assembled ---- */
typedef struct vb {
    hr_vocab_desc *d;
    uint32_t cap_merges;
} vb;

static int tok_add(hr_vocab_desc *d, const char *s, size_t n, float score, int32_t type) {
    char *c = malloc(n + 1);
    if (!c) return -1;
    memcpy(c, s, n);
    c[n] = 0;
    d->text[d->n] = c;
    if (d->scores) d->scores[d->n] = score;
    d->types[d->n] = type;
    d->n++;
    return 0;
}

static int alloc_desc(hr_vocab_desc *d, uint32_t n, bool scores) {
    d->text = calloc(n, sizeof *d->text);
    d->types = calloc(n, sizeof *d->types);
    d->scores = scores ? calloc(n, sizeof *d->scores) : NULL;
    return d->text && d->types && (!scores || d->scores) ? 0 : -1;
}

static int fill_unused(hr_vocab_desc *d, uint32_t upto) {
    char name[32];
    for (uint32_t k = 0; d->n < upto; k++) {
        snprintf(name, sizeof name, "[unused_%u]", k);
        if (tok_add(d, name, strlen(name), -1e9f, HR_TT_UNUSED)) return -1;
    }
    return 0;
}

/* SPM: a merged piece becomes a token scored so that earlier merges win. */
static int spm_on_merge(void *ctx, pieces *p, int32_t a, int32_t b, int32_t m, bool fresh) {
    (void)a;
    (void)b;
    hr_vocab_desc *d = ctx;
    if (!fresh) return 0;
    return tok_add(d, p->s[m], p->len[m], -(float)(d->n), HR_TT_NORMAL);
}

static int cmp_freq(const void *x, const void *y) {
    const uint32_t *a = x, *b = y; /* {count, char} */
    if (a[0] != b[0]) return a[0] > b[0] ? -1 : 1;
    return a[1] < b[1] ? -1 : a[1] > b[1];
}

static int synth_spm(uint32_t n_vocab, hr_vocab_desc *d) {
    if (alloc_desc(d, n_vocab, true)) return -1;
    if (tok_add(d, "<unk>", 5, 0, HR_TT_UNKNOWN) || tok_add(d, "<s>", 3, 0, HR_TT_CONTROL) ||
        tok_add(d, "</s>", 4, 0, HR_TT_CONTROL))
        return -1;
    for (int b = 0; b < 256; b++) {
        char hex[8];
        snprintf(hex, sizeof hex, "<0x%02X>", b);
        if (tok_add(d, hex, 6, 0, HR_TT_BYTE)) return -1;
    }
    /* The text as SentencePiece sees it: each word with its leading space as U+2581.
     * The corpus is ASCII, so characters are bytes (plus the U+2581 marker). */
    const char *txt = hr_vocab_corpus;
    uint32_t freq[257][2] = {{0}};
    for (int i = 0; i < 257; i++) freq[i][1] = (uint32_t)i;
    for (const char *q = txt; *q; q++) freq[*q == ' ' ? 256 : (unsigned char)*q][0]++;
    freq[256][0]++; /* the prefix space of the first word */
    qsort(freq, 257, sizeof freq[0], cmp_freq);

    pieces p = {0};
    corpus c = {0};
    int rc = hr_strmap_init(&p.map, 1024);
    uint32_t room = n_vocab - d->n, nb = 0;
    while (nb < 257 && freq[nb][0] && nb < room - room / 4) nb++;
    for (uint32_t i = 0; i < nb && !rc; i++) { /* characters, most frequent first */
        uint32_t ch = freq[i][1];
        char one = (char)ch;
        const char *s = ch == 256 ? "\xe2\x96\x81" : &one;
        size_t len = ch == 256 ? 3 : 1;
        rc = piece_add(&p, s, len) < 0 || tok_add(d, s, len, -1e4f - (float)i, HR_TT_NORMAL);
    }
    for (const char *q = txt; *q && !rc;) {
        while (*q == ' ') q++;
        const char *w0 = q;
        while (*q && *q != ' ') q++;
        size_t wl = (size_t)(q - w0);
        if (!wl) break;
        char *wb = malloc(wl + 3);
        if (!wb) {
            rc = -1;
            break;
        }
        memcpy(wb, "\xe2\x96\x81", 3);
        memcpy(wb + 3, w0, wl);
        rc = corpus_add(&c, &p, wb, wl + 3, NULL);
        free(wb);
    }
    if (!rc) rc = learn(&c, &p, p.n + (n_vocab - d->n), spm_on_merge, d);
    if (!rc) rc = fill_unused(d, n_vocab);
    corpus_free(&c);
    pieces_free(&p);
    d->kind = HR_TOK_SPM;
    d->bos = 1;
    d->eos = 2;
    d->unk = 0;
    d->pad = -1;
    d->add_bos = true;
    d->add_eos = false;
    d->add_space_prefix = true;
    return rc;
}

/* BPE: every merge is recorded; a new string also becomes a token. */
static int bpe_on_merge(void *ctx, pieces *p, int32_t a, int32_t b, int32_t m, bool fresh) {
    vb *v = ctx;
    hr_vocab_desc *d = v->d;
    size_t na = p->len[a], nb = p->len[b];
    char *s = malloc(na + nb + 2);
    if (!s) return -1;
    memcpy(s, p->s[a], na);
    s[na] = ' ';
    memcpy(s + na + 1, p->s[b], nb);
    s[na + nb + 1] = 0;
    if (d->n_merges == v->cap_merges) {
        uint32_t cap = v->cap_merges ? v->cap_merges * 2 : 256;
        char **nm = realloc(d->merges, cap * sizeof *nm);
        if (!nm) {
            free(s);
            return -1;
        }
        d->merges = nm;
        v->cap_merges = cap;
    }
    d->merges[d->n_merges++] = s;
    return fresh ? tok_add(d, p->s[m], p->len[m], 0, HR_TT_NORMAL) : 0;
}

static int synth_bpe(uint32_t n_vocab, hr_vocab_desc *d) {
    if (alloc_desc(d, n_vocab, false)) return -1;
    pieces p = {0};
    corpus c = {0};
    int rc = hr_strmap_init(&p.map, 1024);
    for (int b = 0; b < 256 && !rc; b++) {
        char u[4];
        size_t n = hr_utf8_put(hr_byte_cpt((unsigned char)b), u);
        rc = piece_add(&p, u, n) < 0 || tok_add(d, u, n, 0, HR_TT_NORMAL);
    }
    hr_words w = {0};
    const char *txt = hr_vocab_corpus;
    if (!rc) rc = hr_pretok(HR_PRE_GPT2, txt, strlen(txt), &w);
    size_t start = 0;
    for (size_t i = 0; i < w.n_words && !rc; i++) {
        char buf[512];
        size_t k = 0;
        for (size_t j = 0; j < w.lens[i] && k + 8 < sizeof buf; j++) {
            char u[4];
            size_t m = hr_utf8_put(w.cpts[start + j], u);
            for (size_t q = 0; q < m; q++) k += hr_utf8_put(hr_byte_cpt((unsigned char)u[q]), buf + k);
        }
        rc = corpus_add(&c, &p, buf, k, NULL);
        start += w.lens[i];
    }
    hr_words_free(&w);
    vb v = {d, 0};
    if (!rc) rc = learn(&c, &p, p.n + (n_vocab - 2 - d->n), bpe_on_merge, &v);
    if (!rc) rc = fill_unused(d, n_vocab - 2);
    if (!rc) rc = tok_add(d, "<|begin_of_text|>", 17, 0, HR_TT_CONTROL) || tok_add(d, "<|end_of_text|>", 15, 0, HR_TT_CONTROL);
    corpus_free(&c);
    pieces_free(&p);
    d->kind = HR_TOK_BPE;
    d->bos = (int32_t)n_vocab - 2;
    d->eos = (int32_t)n_vocab - 1;
    d->unk = -1;
    d->pad = -1;
    d->add_bos = true;
    d->add_eos = false;
    d->add_space_prefix = false;
    if (!rc) {
        d->pre = malloc(6);
        if (d->pre) memcpy(d->pre, "gpt-2", 6);
        else rc = -1;
    }
    return rc;
}

int hr_vocab_synth(hr_tok_kind kind, uint32_t n_vocab, hr_vocab_desc *out, hr_err *e) {
    memset(out, 0, sizeof *out);
    if (kind == HR_TOK_SPM && n_vocab < 300) return hr_errf(e, "a synthetic SPM vocabulary needs at least 300 tokens, not %u", n_vocab);
    if (kind == HR_TOK_BPE && n_vocab < 260) return hr_errf(e, "a synthetic BPE vocabulary needs at least 260 tokens, not %u", n_vocab);
    if (kind != HR_TOK_SPM && kind != HR_TOK_BPE) return hr_errf(e, "unknown tokenizer kind %d", (int)kind);
    if (n_vocab > (1u << 24)) return hr_errf(e, "synthetic vocabulary of %u tokens is too large", n_vocab);
    int rc = kind == HR_TOK_SPM ? synth_spm(n_vocab, out) : synth_bpe(n_vocab, out);
    if (rc) {
        hr_vocab_free(out);
        return hr_errf(e, "out of memory building a synthetic vocabulary");
    }
    return 0;
}

void hr_vocab_free(hr_vocab_desc *d) {
    for (uint32_t i = 0; d->text && i < d->n; i++) free(d->text[i]);
    for (uint32_t i = 0; d->merges && i < d->n_merges; i++) free(d->merges[i]);
    free(d->text);
    free(d->scores);
    free(d->types);
    free(d->merges);
    free(d->pre);
    memset(d, 0, sizeof *d);
}
