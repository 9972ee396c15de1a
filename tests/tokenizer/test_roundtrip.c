/* encode -> pieces gives the text back, on the synthetic vocabularies, for many random
 * and tricky strings. Where it cannot, as in llama.cpp: SPM adds a leading space, reads a
 * literal U+2581 as a space, and, since it writes spaces as U+2581 before splitting the
 * text into characters, an invalid byte next to a space can swallow part of that U+2581
 * (so invalid bytes are tested in texts without spaces); BPE turns invalid bytes into
 * U+FFFD before its byte-level encoding (so it is tested on valid UTF-8). */
#include <stdio.h>
#include "tok_test_util.h"

static const char *const frags[] = {
    "a", "b", "the", " the", "and", "weather", "Hello", "WORLD", " ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", "'s",
    "'LL", "'", "\"", "0", "7", "12345", "3.14", "1,000", ".", ",", "!", "?", "-", "_", "(", ")", "$", "+", "<", ">",
    "=", "^", "~", "|", "`", "@", "#", "%", "&", "*", "/", "\\", ":", ";", "\xc3\xa9", "\xc3\x9f", "\xce\xa9",
    "\xd0\xb6", "\xe4\xb8\xad", "\xe6\x96\x87", "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", "\xf0\x9f\x98\x80",
    "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd", "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9", "e\xcc\x81", "a\xcc\x88",
    "\xc2\xa0", "\xe2\x80\x83", "\xe3\x80\x80", "\xe2\x80\x8b", "\xc2\xbd", "\xc2\xb2", "\xd9\xa3", "\xe2\x82\xac",
    "\xc2\xa9", "\xe2\x80\x94", "\xe2\x80\xa6", "\xef\xac\x81", "\xc2\x85", "\x0b", "\x0c", "\x01",
    "\x7f", "x", "Z", "q"};
#define NF (sizeof frags / sizeof frags[0])

static const char *const bad[] = {"\xff", "\xfe", "\x80", "\xc3", "\xe2\x82", "\xf0\x9f\x98", "\xc0\x80", "\xed\xa0\x80",
                                  "\xf8\x88\x80\x80\x80"};
#define NB (sizeof bad / sizeof bad[0])

static size_t make_text(hr_rng *r, char *buf, bool invalid) {
    size_t k = 0, n = 1 + hr_rng_next(r) % 30;
    for (size_t i = 0; i < n; i++) {
        const char *f = invalid && hr_rng_next(r) % 5 == 0 ? bad[hr_rng_next(r) % NB] : frags[hr_rng_next(r) % NF];
        size_t l = strlen(f);
        memcpy(buf + k, f, l);
        k += l;
    }
    buf[k] = 0;
    return k;
}

static void roundtrip(const hr_tokenizer *t, const char *text, size_t n, bool parse_special, const char *want,
                      size_t want_n) {
    int32_t *ids = NULL;
    size_t nid = 0, len = 0;
    hr_err e = {{0}};
    CHECKF(hr_tok_encode(t, text, n, false, parse_special, &ids, &nid, &e) == 0, "%s", e.msg);
    char *back = detok_all(t, ids, nid, true, &len);
    bool ok = back && len == want_n && !memcmp(back, want, len);
    if (!ok) {
        fprintf(stderr, "round trip failed for %zu bytes -> %zu tokens:", n, nid);
        for (size_t i = 0; i < n; i++) fprintf(stderr, " %02x", (unsigned char)text[i]);
        fprintf(stderr, "\n back:");
        for (size_t i = 0; back && i < len; i++) fprintf(stderr, " %02x", (unsigned char)back[i]);
        fprintf(stderr, "\n");
    }
    CHECK(ok);
    free(back);
    free(ids);
}

static hr_tokenizer *synth(hr_tok_kind k, uint32_t n) {
    hr_vocab_desc d;
    hr_err e = {{0}};
    hr_tokenizer *t = NULL;
    CHECKF(hr_vocab_synth(k, n, &d, &e) == 0, "%s", e.msg);
    CHECK(d.n == n);
    CHECKF(hr_tok_new(&t, &d, &e) == 0, "%s", e.msg);
    hr_vocab_free(&d);
    return t;
}

static size_t count(const hr_tokenizer *t, const char *s) {
    int32_t *ids = NULL;
    size_t n = 0;
    hr_err e = {{0}};
    CHECK(hr_tok_encode(t, s, strlen(s), false, false, &ids, &n, &e) == 0);
    free(ids);
    return n;
}

int main(void) {
    static char text[4096], want[4200];
    hr_rng r = {42};
    for (int kind = 0; kind < 2; kind++) {
        const uint32_t sizes[] = {kind ? 260u : 300u, 1000, 4000};
        for (int s = 0; s < 3; s++) {
            hr_tokenizer *t = synth((hr_tok_kind)kind, sizes[s]);
            if (!t) continue;
            for (int i = 0; i < 300; i++) {
                bool invalid = kind == HR_TOK_SPM && i % 2;
                size_t n = make_text(&r, text, invalid);
                for (size_t j = 0; invalid && j < n; j++)
                    if (text[j] == ' ') text[j] = '_';
                if (kind == HR_TOK_SPM) { /* SPM adds one space in front */
                    want[0] = ' ';
                    memcpy(want + 1, text, n);
                    roundtrip(t, text, n, false, want, n + 1);
                } else {
                    roundtrip(t, text, n, i % 2, text, n);
                }
            }
            /* raw random bytes: SPM falls back to byte tokens for anything */
            if (kind == HR_TOK_SPM)
                for (int i = 0; i < 100; i++) {
                    size_t n = hr_rng_next(&r) % 64;
                    for (size_t j = 0; j < n; j++) {
                        text[j] = (char)(1 + hr_rng_next(&r) % 255);
                        if (text[j] == ' ') text[j] = '_';
                    }
                    want[0] = ' ';
                    memcpy(want + 1, text, n);
                    roundtrip(t, text, n, false, want, n ? n + 1 : 0);
                }
            hr_tok_free(t);
        }
    }
    /* special tokens in text: BPE renders them back; SPM puts a space after each */
    hr_tokenizer *b = synth(HR_TOK_BPE, 1000), *p = synth(HR_TOK_SPM, 1000);
    if (b && p) {
        const char *s = "x<|end_of_text|>y<|begin_of_text|>";
        roundtrip(b, s, strlen(s), true, s, strlen(s));
        roundtrip(p, "x<s>y</s>", 9, true, " x<s> y</s>", 11);
        roundtrip(b, "a\xff", 2, false, "a\xef\xbf\xbd", 4);
        roundtrip(p, "a\xe2\x96\x81" "b", 5, false, " a b", 4);
        /* the vocabularies learned real words: common words are single tokens */
        CHECK(count(p, "the") == 1 && count(p, "and the weather") == 3);
        CHECK(count(b, " the") == 1 && count(b, " and the weather") == 3);
        const char *sent = "The farmer carried water from the well every morning before the sun was up.";
        CHECK(count(p, sent) * 3 < strlen(sent) && count(b, sent) * 3 < strlen(sent));
    }
    hr_tok_free(b);
    hr_tok_free(p);
    /* deterministic */
    hr_vocab_desc d1, d2;
    hr_err e = {{0}};
    CHECK(hr_vocab_synth(HR_TOK_BPE, 700, &d1, &e) == 0 && hr_vocab_synth(HR_TOK_BPE, 700, &d2, &e) == 0);
    CHECK(d1.n == d2.n && d1.n_merges == d2.n_merges);
    for (uint32_t i = 0; i < d1.n && i < d2.n; i++) CHECK(!strcmp(d1.text[i], d2.text[i]));
    for (uint32_t i = 0; i < d1.n_merges && i < d2.n_merges; i++) CHECK(!strcmp(d1.merges[i], d2.merges[i]));
    hr_vocab_free(&d1);
    hr_vocab_free(&d2);
    CHECK(hr_vocab_synth(HR_TOK_SPM, 299, &d1, &e) < 0 && hr_vocab_synth(HR_TOK_BPE, 259, &d1, &e) < 0);
    return TEST_END();
}
