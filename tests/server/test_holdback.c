/* Stop-text hold-back (server/stops.c) against a direct reference: random texts over a
 * small alphabet fed in random pieces (tokens), random stop texts. What is let out must
 * only ever grow (nothing is taken back), must never contain a stop text, and must end up
 * equal to the reference: generation ends after the first piece whose arrival makes the
 * text contain a stop; the reply is the text before that stop's earliest occurrence (or
 * all of the text when no stop occurs). */
#include <stdbool.h>
#include <string.h>
#include "stops.h"
#include "testutil.h"

/* Reference: the text before the earliest occurrence of any stop; *hit if one occurs. */
static size_t reference(const char *text, size_t n, char *const *stops, int n_stops, bool *hit) {
    *hit = false;
    for (size_t p = 0; p < n; p++)
        for (int i = 0; i < n_stops; i++) {
            size_t k = strlen(stops[i]);
            if (k && p + k <= n && !memcmp(text + p, stops[i], k)) { *hit = true; return p; }
        }
    return n;
}

static void random_case(hr_rng *r) {
    char text[200], out[400], s0[6], s1[6], s2[6];
    char *stops[3] = {s0, s1, s2};
    size_t n = 1 + hr_rng_next(r) % 120, out_len = 0;
    for (size_t i = 0; i < n; i++) text[i] = "abc"[hr_rng_next(r) % 3];
    int n_stops = (int)(hr_rng_next(r) % 4);
    for (int i = 0; i < n_stops; i++) {
        size_t k = hr_rng_next(r) % 5; /* 0: an empty stop text, which must be ignored */
        for (size_t j = 0; j < k; j++) stops[i][j] = "abc"[hr_rng_next(r) % 3];
        stops[i][k] = 0;
    }
    size_t ends[200], n_pieces = 0;
    for (size_t at = 0; at < n;) {
        at += 1 + hr_rng_next(r) % 4;
        ends[n_pieces++] = at < n ? at : n;
    }
    bool ref_hit = false;
    size_t want = n;
    for (size_t i = 0; i < n_pieces && !ref_hit; i++) want = reference(text, ends[i], stops, n_stops, &ref_hit);
    if (!ref_hit) want = n;

    hr_stopper st = {stops, n_stops, NULL, 0, 0};
    bool hit = false;
    for (size_t i = 0, at = 0; i < n_pieces && !hit; i++) {
        size_t piece = ends[i] - at;
        size_t emit;
        CHECK(hr_stop_feed(&st, text + at, piece, &emit, &hit) == 0);
        at += piece;
        if (at == n && !hit) emit = st.len; /* end of generation: nothing left to hold */
        memcpy(out + out_len, st.buf, emit);
        out_len += emit;
        hr_stop_consume(&st, emit);
        bool dummy;
        /* What was let out so far never contains a whole stop text. */
        CHECKF(reference(out, out_len, stops, n_stops, &dummy) == out_len, "stop text let out: %.*s", (int)out_len, out);
    }
    CHECKF(hit == ref_hit && out_len == want && !memcmp(out, text, want), "stops [%s|%s|%s] (%d), text %.*s: got %.*s, want %.*s",
           n_stops > 0 ? s0 : "", n_stops > 1 ? s1 : "", n_stops > 2 ? s2 : "", n_stops, (int)n, text,
           (int)out_len, out, (int)want, text);
    hr_stop_free(&st);
}

int main(void) {
    hr_rng r = {42};
    for (int i = 0; i < 20000; i++) random_case(&r);

    /* Held back exactly while it could still be a stop: "Hello <|im" waits, "<|x" goes. */
    char *stops[] = {"<|im_end|>"};
    hr_stopper st = {stops, 1, NULL, 0, 0};
    size_t emit;
    bool hit;
    CHECK(!hr_stop_feed(&st, "Hello <|im", 10, &emit, &hit) && !hit && emit == 6);
    hr_stop_consume(&st, emit);
    CHECK(!hr_stop_feed(&st, "x", 1, &emit, &hit) && !hit && emit == 5);
    hr_stop_consume(&st, emit);
    CHECK(!hr_stop_feed(&st, "<|im_en", 7, &emit, &hit) && !hit && emit == 0);
    CHECK(!hr_stop_feed(&st, "d|> more", 8, &emit, &hit) && hit && emit == 0);
    hr_stop_free(&st);
    return TEST_END();
}
