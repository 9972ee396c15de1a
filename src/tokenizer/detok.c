/* Ids -> text: one token's bytes (llama.cpp's token_to_piece) and a streaming
 * decoder that only ever hands out whole UTF-8 characters. */
#include <stdlib.h>
#include <string.h>
#include "tok_internal.h"
#include "unicode.h"

static int put(char *buf, size_t cap, size_t at, const char *s, size_t n) {
    if (at < cap) memcpy(buf + at, s, n < cap - at ? n : cap - at);
    return (int)n;
}

static int hexv(char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

/* A byte-level BPE token's text back to raw bytes. A character outside the byte
 * alphabet is rendered the way llama.cpp does: [UNK_BYTE_0x<its utf8 hex><token text>]. */
static int bpe_decode(const hr_tokenizer *t, int32_t id, char *buf, size_t cap) {
    const unsigned char *s = (const unsigned char *)t->text[id];
    size_t n = t->len[id], k = 0;
    for (size_t off = 0; off < n;) {
        uint32_t c = hr_utf8_next(s, n, &off);
        int b = hr_cpt_byte(c);
        if (b >= 0) {
            char ch = (char)b;
            k += (size_t)put(buf, cap, k, &ch, 1);
            continue;
        }
        char u[4], hex[3];
        size_t m = hr_utf8_put(c, u);
        k += (size_t)put(buf, cap, k, "[UNK_BYTE_0x", 12);
        for (size_t j = 0; j < m; j++) {
            static const char dig[] = "0123456789abcdef";
            hex[0] = dig[(unsigned char)u[j] >> 4];
            hex[1] = dig[(unsigned char)u[j] & 15];
            k += (size_t)put(buf, cap, k, hex, 2);
        }
        k += (size_t)put(buf, cap, k, (const char *)s, n);
        k += (size_t)put(buf, cap, k, "]", 1);
    }
    return (int)k;
}

int hr_tok_piece(const hr_tokenizer *t, int32_t id, bool render_special, char *buf, size_t cap) {
    if (id < 0 || (uint32_t)id >= t->n) return -1;
    uint32_t a = t->attr[id];
    const char *s = t->text[id];
    size_t n = t->len[id];
    if (!render_special && (a & (HR_ATTR_UNKNOWN | HR_ATTR_CONTROL))) return 0;
    if (a & (HR_ATTR_UNKNOWN | HR_ATTR_CONTROL | HR_ATTR_USER_DEFINED)) return put(buf, cap, 0, s, n);
    if (a & HR_ATTR_NORMAL) {
        if (t->kind == HR_TOK_BPE && !t->raw_bpe) return bpe_decode(t, id, buf, cap);
        size_t k = 0; /* SPM and SentencePiece-style BPE: U+2581 stands for a space */
        for (size_t i = 0; i < n;) {
            if (n - i >= 3 && !memcmp(s + i, "\xe2\x96\x81", 3)) {
                k += (size_t)put(buf, cap, k, " ", 1);
                i += 3;
            } else {
                k += (size_t)put(buf, cap, k, s + i, 1);
                i++;
            }
        }
        return (int)k;
    }
    if (a & HR_ATTR_BYTE) {
        char b = (char)(hexv(s[3]) * 16 + hexv(s[4]));
        return put(buf, cap, 0, &b, 1);
    }
    return 0; /* unused / undefined tokens render as nothing */
}

/* ---- streaming ---- */

/* Length of the complete character at s[0..n), 0 if it may still be completed by more
 * bytes, or 1 for a byte that cannot start (or continue) a valid sequence. */
static size_t char_len(const unsigned char *s, size_t n) {
    unsigned char b = s[0];
    size_t need = b < 0x80 ? 1 : b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xF0 && b <= 0xF4 ? 4 : 0;
    if (need == 0) return 1; /* stray continuation or impossible lead: passed through alone */
    for (size_t i = 1; i < need; i++) {
        if (i >= n) return 0;
        if ((s[i] & 0xC0) != 0x80) return 1;
        /* second-byte limits that rule out overlong forms, surrogates and > U+10FFFF */
        if (i == 1 && ((b == 0xE0 && s[1] < 0xA0) || (b == 0xED && s[1] > 0x9F) || (b == 0xF0 && s[1] < 0x90) ||
                       (b == 0xF4 && s[1] > 0x8F)))
            return 1;
    }
    return need;
}

size_t hr_detok_push(hr_detok *d, const char *bytes, size_t n, char *out, size_t cap) {
    size_t k = 0;
    size_t total = (size_t)d->n_pending + n;
    unsigned char small[64], *buf = total <= sizeof small ? small : malloc(total);
    if (!buf) return 0;
    memcpy(buf, d->pending, (size_t)d->n_pending);
    if (n) memcpy(buf + d->n_pending, bytes, n);
    size_t i = 0;
    d->n_pending = 0;
    while (i < total) {
        size_t m = char_len(buf + i, total - i);
        if (m == 0) { /* an incomplete tail: keep it for the next push */
            d->n_pending = (int)(total - i);
            memcpy(d->pending, buf + i, total - i);
            break;
        }
        if (k + m > cap) break; /* out of room: drop the rest rather than split a character */
        memcpy(out + k, buf + i, m);
        k += m;
        i += m;
    }
    if (buf != small) free(buf);
    return k;
}

size_t hr_detok_flush(hr_detok *d, char *out, size_t cap) {
    size_t k = (size_t)d->n_pending < cap ? (size_t)d->n_pending : cap;
    memcpy(out, d->pending, k);
    d->n_pending = 0;
    return k;
}
