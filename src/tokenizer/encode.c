/* Text -> ids: special tokens are cut out of the text first (longest first, as
 * llama.cpp's tokenizer_st_partition does), then each raw fragment is encoded. */
#include <stdlib.h>
#include <string.h>
#include "tok_internal.h"

typedef struct frag {
    int32_t id; /* >= 0: a special token; -1: raw text [off, off+len) */
    size_t off, len;
} frag;

typedef struct frags {
    frag *v;
    size_t n, cap;
} frags;

static int frag_push(frags *f, frag x) {
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        frag *v = realloc(f->v, cap * sizeof *v);
        if (!v) return -1;
        f->v = v;
        f->cap = cap;
    }
    f->v[f->n++] = x;
    return 0;
}

/* Splits every raw fragment at each occurrence of special token id. */
static int cut(const hr_tokenizer *t, const char *text, int32_t id, frags *in, frags *out) {
    const char *s = t->text[id];
    size_t sl = t->len[id];
    out->n = 0;
    for (size_t i = 0; i < in->n; i++) {
        frag f = in->v[i];
        if (f.id >= 0) {
            if (frag_push(out, f)) return -1;
            continue;
        }
        size_t pos = f.off, end = f.off + f.len;
        for (;;) {
            const char *m = end - pos >= sl ? hr_memfind(text + pos, end - pos, s, sl) : NULL;
            if (!m) break;
            size_t at = (size_t)(m - text);
            if (at > pos && frag_push(out, (frag){-1, pos, at - pos})) return -1;
            if (frag_push(out, (frag){id, 0, 0})) return -1;
            pos = at + sl;
        }
        if (pos < end && frag_push(out, (frag){-1, pos, end - pos})) return -1;
    }
    return 0;
}

static int partition(const hr_tokenizer *t, const char *text, size_t n, bool parse_special, frags *res) {
    frags a = {0}, b = {0};
    if (n && frag_push(&a, (frag){-1, 0, n})) return -1;
    for (uint32_t k = 0; k < t->n_special; k++) {
        int32_t id = t->special[k];
        /* unparsed control/unknown tokens stay text; user-defined ones are always cut out */
        if (!parse_special && (t->attr[id] & (HR_ATTR_CONTROL | HR_ATTR_UNKNOWN))) continue;
        if (!hr_memfind(text, n, t->text[id], t->len[id])) continue;
        if (cut(t, text, id, &a, &b)) {
            free(a.v);
            free(b.v);
            return -1;
        }
        frags tmp = a;
        a = b;
        b = tmp;
    }
    free(b.v);
    *res = a;
    return 0;
}

/* SPM sees the fragment with a leading space when it follows a special token (or
 * starts the text) and the vocabulary asks for one, and every space as U+2581; so does
 * SentencePiece-style BPE (gemma4), without the prefix. */
static int escaped_fragment(const hr_tokenizer *t, const char *s, size_t n, bool prefix, tok_ids *out, hr_err *e) {
    size_t spaces = prefix;
    for (size_t i = 0; i < n; i++) spaces += s[i] == ' ';
    char *buf = malloc(n + 2 * spaces + 1 + 1);
    if (!buf) return hr_errf(e, "out of memory");
    size_t k = 0;
    if (prefix) {
        memcpy(buf, "\xe2\x96\x81", 3);
        k = 3;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') {
            memcpy(buf + k, "\xe2\x96\x81", 3);
            k += 3;
        } else {
            buf[k++] = s[i];
        }
    }
    int rc = t->kind == HR_TOK_SPM ? hr_spm_encode(t, buf, k, out, e) : hr_bpe_encode(t, buf, k, out, e);
    free(buf);
    return rc;
}

int hr_tok_encode(const hr_tokenizer *t, const char *text, size_t len, bool add_special, bool parse_special,
                  int32_t **out, size_t *n_out, hr_err *e) {
    *out = NULL;
    *n_out = 0;
    if (!text && len) return hr_errf(e, "no text");
    frags fr = {0};
    if (partition(t, text, len, parse_special, &fr)) return hr_errf(e, "out of memory");
    tok_ids ids = {0};
    int rc = 0;
    if (add_special && t->add_bos && hr_ids_push(&ids, t->bos)) rc = hr_errf(e, "out of memory");
    bool prev_special = true;
    for (size_t i = 0; i < fr.n && rc == 0; i++) {
        frag f = fr.v[i];
        if (f.id >= 0) {
            if (hr_ids_push(&ids, f.id)) rc = hr_errf(e, "out of memory");
            prev_special = true;
        } else if (t->kind == HR_TOK_SPM) {
            rc = escaped_fragment(t, text + f.off, f.len, t->add_space_prefix && prev_special, &ids, e);
            prev_special = false;
        } else if (t->raw_bpe) {
            rc = escaped_fragment(t, text + f.off, f.len, false, &ids, e);
        } else {
            rc = hr_bpe_encode(t, text + f.off, f.len, &ids, e);
        }
    }
    if (rc == 0 && add_special && t->add_eos && hr_ids_push(&ids, t->eos)) rc = hr_errf(e, "out of memory");
    free(fr.v);
    if (rc) {
        free(ids.v);
        return -1;
    }
    if (!ids.v) ids.v = malloc(sizeof *ids.v); /* a valid pointer even for no tokens */
    if (!ids.v) return hr_errf(e, "out of memory");
    *out = ids.v;
    *n_out = ids.n;
    return 0;
}
