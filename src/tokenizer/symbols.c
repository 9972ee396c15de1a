#include "symbols.h"
#include <stdlib.h>
#include "unicode.h"

static int before(const tok_pair *a, const tok_pair *b) {
    return a->key < b->key || (a->key == b->key && a->left < b->left);
}

int hr_heap_push(tok_heap *h, tok_pair p) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        tok_pair *v = realloc(h->v, cap * sizeof *v);
        if (!v) return -1;
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0 && before(&p, &h->v[(i - 1) / 2])) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = p;
    return 0;
}

tok_pair hr_heap_pop(tok_heap *h) {
    tok_pair top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && before(&h->v[c + 1], &h->v[c])) c++;
        if (!before(&h->v[c], &last)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n) h->v[i] = last;
    return top;
}

int hr_syms_split(const char *s, size_t n, tok_sym **out, size_t *n_out) {
    tok_sym *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) return -1;
    size_t k = 0;
    for (size_t off = 0; off < n;) {
        size_t len = hr_utf8_len((unsigned char)s[off]);
        if (len > n - off) len = n - off;
        v[k].text = s + off;
        v[k].n = len;
        v[k].prev = (int)k - 1;
        off += len;
        v[k].next = off == n ? -1 : (int)k + 1;
        k++;
    }
    *out = v;
    *n_out = k;
    return 0;
}
