/* SentencePiece-style encoding as llama.cpp does it: start from UTF-8 characters,
 * repeatedly merge the adjacent pair whose concatenation is the highest-scoring token,
 * then emit each symbol as its token or, failing that, as byte tokens. */
#include <stdio.h>
#include <stdlib.h>
#include "symbols.h"
#include "tok_internal.h"

static int try_pair(const hr_tokenizer *t, tok_sym *sy, int l, int r, tok_heap *h) {
    if (l < 0 || r < 0) return 0;
    size_t size = sy[l].n + sy[r].n;
    int32_t id = hr_tok_find(t, sy[l].text, size);
    if (id < 0) return 0;
    return hr_heap_push(h, (tok_pair){-(double)t->score[id], l, r, size});
}

/* <0xXX> if the vocabulary has it, else the byte as a one-character token. */
static int32_t byte_token(const hr_tokenizer *t, unsigned char b) {
    char hex[7];
    snprintf(hex, sizeof hex, "<0x%02X>", b);
    int32_t id = hr_tok_find(t, hex, 6);
    return id >= 0 ? id : hr_tok_find(t, (const char *)&b, 1);
}

int hr_spm_encode(const hr_tokenizer *t, const char *text, size_t n, tok_ids *out, hr_err *e) {
    tok_sym *sy;
    size_t ns;
    if (hr_syms_split(text, n, &sy, &ns)) return hr_errf(e, "out of memory");
    tok_heap h = {0};
    int rc = 0;
    for (size_t i = 1; i < ns && !rc; i++) rc = try_pair(t, sy, (int)i - 1, (int)i, &h);
    while (h.n && !rc) {
        tok_pair p = hr_heap_pop(&h);
        tok_sym *l = &sy[p.left], *r = &sy[p.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != p.size) continue; /* outdated */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) sy[r->next].prev = p.left;
        rc = try_pair(t, sy, l->prev, p.left, &h);
        if (!rc) rc = try_pair(t, sy, p.left, l->next, &h);
    }
    if (rc) rc = hr_errf(e, "out of memory");
    /* llama.cpp resegments a symbol through the pairs that formed it when the symbol is
     * no token; it only records pairs whose text is a token, so that path never fires:
     * a symbol is its token, or its bytes. */
    for (int i = ns ? 0 : -1; i != -1 && !rc; i = sy[i].next) {
        int32_t id = hr_tok_find(t, sy[i].text, sy[i].n);
        if (id >= 0) {
            if (hr_ids_push(out, id)) rc = hr_errf(e, "out of memory");
            continue;
        }
        for (size_t j = 0; j < sy[i].n && !rc; j++) {
            unsigned char b = (unsigned char)sy[i].text[j];
            int32_t bt = byte_token(t, b);
            if (bt < 0) rc = hr_errf(e, "text needs byte 0x%02X, but the vocabulary has no <0x%02X> token", b, b);
            else if (hr_ids_push(out, bt)) rc = hr_errf(e, "out of memory");
        }
    }
    free(h.v);
    free(sy);
    return rc;
}
