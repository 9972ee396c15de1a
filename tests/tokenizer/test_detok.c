/* Streaming detokenization: whatever the chunking, each push hands out only whole
 * UTF-8 characters, and everything handed out (plus the final flush) is the input. */
#include <string.h>
#include "testutil.h"
#include "tokenizer/tokenizer.h"

/* Independent strict UTF-8 check (RFC 3629). */
static bool valid_utf8(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!k || i + k > n) return false;
        uint32_t cp = k == 1 ? c : k == 2 ? c & 0x1F : k == 3 ? c & 0x0F : c & 0x07;
        for (size_t j = 1; j < k; j++) {
            if ((s[i + j] & 0xC0) != 0x80) return false;
            cp = cp << 6 | (s[i + j] & 0x3F);
        }
        static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[k] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += k;
    }
    return true;
}

static const char *const chars[] = {"a", " ", "\n", "\xc3\xa9", "\xd0\xb6", "\xe4\xb8\xad", "\xe2\x82\xac",
                                    "\xf0\x9f\x98\x80", "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd", "e\xcc\x81", "\xef\xbf\xbd"};

int main(void) {
    hr_rng r = {7};
    char in[2048], out[4096], got[4096];
    for (int iter = 0; iter < 2000; iter++) {
        size_t n = 0, m = 1 + hr_rng_next(&r) % 40;
        for (size_t i = 0; i < m; i++) {
            const char *c = chars[hr_rng_next(&r) % (sizeof chars / sizeof chars[0])];
            memcpy(in + n, c, strlen(c));
            n += strlen(c);
        }
        hr_detok d = {{0}, 0};
        size_t k = 0;
        for (size_t at = 0; at < n;) {
            size_t step = 1 + hr_rng_next(&r) % 5;
            if (step > n - at) step = n - at;
            size_t w = hr_detok_push(&d, in + at, step, out, sizeof out);
            CHECK(valid_utf8((const unsigned char *)out, w));
            memcpy(got + k, out, w);
            k += w;
            at += step;
        }
        CHECK(d.n_pending == 0);
        k += hr_detok_flush(&d, got + k, sizeof got - k);
        CHECK(k == n && !memcmp(got, in, n));
    }
    /* an incomplete tail waits; the flush gives it out as it is */
    hr_detok d = {{0}, 0};
    CHECK(hr_detok_push(&d, "ab\xe2\x82", 4, out, sizeof out) == 2 && d.n_pending == 2);
    CHECK(hr_detok_push(&d, "\xac", 1, out, sizeof out) == 3 && !memcmp(out, "\xe2\x82\xac", 3));
    CHECK(hr_detok_push(&d, "\xf0\x9f", 2, out, sizeof out) == 0);
    CHECK(hr_detok_flush(&d, out, sizeof out) == 2 && !memcmp(out, "\xf0\x9f", 2) && d.n_pending == 0);
    /* invalid bytes pass through at once */
    CHECK(hr_detok_push(&d, "\xff" "a\x80", 3, out, sizeof out) == 3 && !memcmp(out, "\xff" "a\x80", 3));
    CHECK(hr_detok_push(&d, "\xe2\x41", 2, out, sizeof out) == 2 && !memcmp(out, "\xe2\x41", 2));
    /* a pending lead followed by a non-continuation: both pass, nothing kept */
    CHECK(hr_detok_push(&d, "\xc3", 1, out, sizeof out) == 0);
    CHECK(hr_detok_push(&d, "x", 1, out, sizeof out) == 2 && !memcmp(out, "\xc3x", 2) && d.n_pending == 0);
    /* too little room: stops at a character boundary */
    CHECK(hr_detok_push(&d, "\xe4\xb8\xad\xe4\xb8\xad", 6, out, 4) == 3);
    return TEST_END();
}
