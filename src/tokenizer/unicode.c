#include "unicode.h"

int hr_ucat(uint32_t cpt) {
    if (cpt > 0x10FFFF) return HR_UCAT_UNDEF;
    uint32_t lo = 0, hi = hr_ucat_n_runs; /* last run starting <= cpt */
    while (hi - lo > 1) {
        uint32_t mid = (lo + hi) / 2;
        if ((hr_ucat_runs[mid] >> 3) <= cpt) lo = mid;
        else hi = mid;
    }
    return (int)(hr_ucat_runs[lo] & 7);
}

int hr_uspace(uint32_t c) {
    return (c >= 9 && c <= 13) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

size_t hr_utf8_len(unsigned char lead) {
    static const unsigned char len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return len[lead >> 4];
}

static int cont(const unsigned char *s, size_t n, size_t i) { return i < n && (s[i] & 0xC0) == 0x80; }

/* Mirrors llama.cpp: only the continuation pattern is checked, so overlong forms and
 * surrogates decode to their (odd) values; that is what the pre-tokenizer then sees. */
uint32_t hr_utf8_next(const unsigned char *s, size_t n, size_t *off) {
    size_t i = *off;
    unsigned char b = s[i];
    if (b < 0x80) {
        *off = i + 1;
        return b;
    }
    if ((b & 0xE0) == 0xC0 && cont(s, n, i + 1)) {
        *off = i + 2;
        return ((uint32_t)(b & 0x1F) << 6) | (s[i + 1] & 0x3F);
    }
    if ((b & 0xF0) == 0xE0 && cont(s, n, i + 1) && cont(s, n, i + 2)) {
        *off = i + 3;
        return ((uint32_t)(b & 0x0F) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
    }
    if ((b & 0xF8) == 0xF0 && cont(s, n, i + 1) && cont(s, n, i + 2) && cont(s, n, i + 3)) {
        uint32_t c = ((uint32_t)(b & 0x07) << 18) | ((uint32_t)(s[i + 1] & 0x3F) << 12) |
                     ((uint32_t)(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
        *off = i + 4;
        /* llama.cpp throws on re-encoding these; a replacement character keeps us total. */
        return c > 0x10FFFF ? 0xFFFD : c;
    }
    *off = i + 1;
    return 0xFFFD;
}

size_t hr_utf8_put(uint32_t c, char *o) {
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (char)(0xC0 | (c >> 6));
        o[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (char)(0xE0 | (c >> 12));
        o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (c >> 18));
    o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
    o[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* Printable Latin-1 bytes stand for themselves; the other 68 bytes take U+0100.. in order. */
static int printable(unsigned b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE); }

uint32_t hr_byte_cpt(unsigned char b) {
    if (printable(b)) return b;
    uint32_t k = 0;
    for (unsigned x = 0; x < b; x++) k += !printable(x);
    return 0x100 + k;
}

int hr_cpt_byte(uint32_t c) {
    if (c < 0x100) return printable(c) ? (int)c : -1;
    if (c >= 0x100 + 68) return -1;
    uint32_t k = c - 0x100;
    for (unsigned x = 0; x < 256; x++)
        if (!printable(x) && k-- == 0) return (int)x;
    return -1;
}
