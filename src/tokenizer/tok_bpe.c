/* Byte-level BPE as llama.cpp does it: pre-tokenize into words, map every byte to
 * its printable stand-in, merge adjacent symbols by lowest merge rank, and emit each
 * symbol as its token (or its single bytes' tokens, silently skipping bytes without one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "symbols.h"
#include "tok_internal.h"
#include "unicode.h"

typedef struct bpe_ctx {
    const hr_tokenizer *t;
    tok_sym *sy;
    tok_heap h;
    char *key; /* scratch for "left right" */
    size_t key_cap;
} bpe_ctx;

static int rank_of(bpe_ctx *c, int l, int r, int32_t *rank) {
    size_t ln = c->sy[l].n, rn = c->sy[r].n, need = ln + rn + 1;
    if (need > c->key_cap) {
        char *k = realloc(c->key, need * 2);
        if (!k) return -1;
        c->key = k;
        c->key_cap = need * 2;
    }
    memcpy(c->key, c->sy[l].text, ln);
    c->key[ln] = ' ';
    memcpy(c->key + ln + 1, c->sy[r].text, rn);
    *rank = hr_strmap_get(&c->t->ranks, c->key, need);
    return 0;
}

static int try_pair(bpe_ctx *c, int l, int r) {
    if (l < 0 || r < 0) return 0;
    int32_t rank;
    if (rank_of(c, l, r, &rank)) return -1;
    if (rank < 0) return 0;
    return hr_heap_push(&c->h, (tok_pair){(double)rank, l, r, c->sy[l].n + c->sy[r].n});
}

/* A byte's token: its one-character text, or <0xXX> in SentencePiece-style BPE. */
static int32_t byte_token(const hr_tokenizer *t, unsigned char b) {
    if (!t->raw_bpe) return hr_tok_find(t, (const char *)&b, 1);
    char hex[7];
    snprintf(hex, sizeof hex, "<0x%02X>", b);
    return hr_tok_find(t, hex, 6);
}

static int emit(const hr_tokenizer *t, const char *s, size_t n, tok_ids *out) {
    int32_t id = hr_tok_find(t, s, n);
    if (id >= 0) return hr_ids_push(out, id);
    for (size_t j = 0; j < n; j++) {
        int32_t b = byte_token(t, (unsigned char)s[j]);
        if (b >= 0 && hr_ids_push(out, b)) return -1;
    }
    return 0;
}

static bool only_newlines(const char *w, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (w[i] != '\n') return false;
    return true;
}

static int merge_word(bpe_ctx *c, const char *w, size_t n, tok_ids *out) {
    const hr_tokenizer *t = c->t;
    if ((t->ignore_merges || (t->newline_words && only_newlines(w, n))) && hr_tok_find(t, w, n) >= 0)
        return emit(t, w, n, out);
    size_t ns;
    free(c->sy);
    c->sy = NULL;
    if (hr_syms_split(w, n, &c->sy, &ns)) return -1;
    tok_sym *sy = c->sy;
    c->h.n = 0;
    for (size_t i = 1; i < ns; i++)
        if (try_pair(c, (int)i - 1, (int)i)) return -1;
    while (c->h.n) {
        tok_pair p = hr_heap_pop(&c->h);
        tok_sym *l = &sy[p.left], *r = &sy[p.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != p.size || r->text != l->text + l->n) continue; /* outdated */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) sy[r->next].prev = p.left;
        if (try_pair(c, l->prev, p.left) || try_pair(c, p.left, l->next)) return -1;
    }
    for (int i = ns ? 0 : -1; i != -1; i = sy[i].next)
        if (sy[i].n && emit(t, sy[i].text, sy[i].n, out)) return -1;
    return 0;
}

/* The word's UTF-8 (as re-encoded from its code points) with each byte replaced by
 * the character standing for it, or (raw) the UTF-8 itself. */
static size_t byte_encode(const uint32_t *cp, size_t n, bool raw, char *dst) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char u[4];
        size_t m = hr_utf8_put(cp[i], u);
        if (raw) {
            memcpy(dst + k, u, m);
            k += m;
            continue;
        }
        for (size_t j = 0; j < m; j++) k += hr_utf8_put(hr_byte_cpt((unsigned char)u[j]), dst + k);
    }
    return k;
}

int hr_bpe_encode(const hr_tokenizer *t, const char *text, size_t n, tok_ids *out, hr_err *e) {
    hr_words w;
    if (hr_pretok(t->pre, text, n, &w)) return hr_errf(e, "pre-tokenizer failed (out of memory)");
    bpe_ctx c = {.t = t};
    size_t longest = 0;
    for (size_t i = 0; i < w.n_words; i++)
        if (w.lens[i] > longest) longest = w.lens[i];
    char *buf = malloc(longest * 8 + 1);
    int rc = buf ? 0 : -1;
    size_t start = 0;
    for (size_t i = 0; i < w.n_words && !rc; i++) {
        size_t m = byte_encode(w.cpts + start, w.lens[i], t->raw_bpe, buf);
        rc = merge_word(&c, buf, m, out);
        start += w.lens[i];
    }
    free(buf);
    free(c.sy);
    free(c.h.v);
    free(c.key);
    hr_words_free(&w);
    return rc ? hr_errf(e, "out of memory") : 0;
}
