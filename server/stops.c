/* Stop-text matching with hold-back. */
#include "stops.h"
#include <stdlib.h>
#include <string.h>

/* Earliest position where some stop text occurs in buf, or -1. */
static long find_stop(const hr_stopper *s) {
    long best = -1;
    for (int i = 0; i < s->n_stops; i++) {
        size_t k = strlen(s->stops[i]);
        if (!k || k > s->len) continue;
        for (size_t p = 0; p + k <= s->len && (best < 0 || (long)p < best); p++)
            if (!memcmp(s->buf + p, s->stops[i], k)) { best = (long)p; break; }
    }
    return best;
}

/* Longest suffix of buf that is a proper prefix of some stop text. */
static size_t partial_tail(const hr_stopper *s) {
    size_t hold = 0;
    for (int i = 0; i < s->n_stops; i++) {
        size_t k = strlen(s->stops[i]);
        if (!k) continue;
        for (size_t t = k > s->len + 1 ? s->len : k - 1; t > hold; t--)
            if (!memcmp(s->buf + s->len - t, s->stops[i], t)) { hold = t; break; }
    }
    return hold;
}

int hr_stop_feed(hr_stopper *s, const char *text, size_t n, size_t *emit, bool *hit) {
    if (s->len + n + 1 > s->cap) {
        size_t cap = (s->len + n + 1) * 2;
        char *b = realloc(s->buf, cap);
        if (!b) return -1;
        s->buf = b, s->cap = cap;
    }
    memcpy(s->buf + s->len, text, n);
    s->len += n;
    long at = find_stop(s);
    *hit = at >= 0;
    *emit = *hit ? (size_t)at : s->len - partial_tail(s);
    return 0;
}

void hr_stop_consume(hr_stopper *s, size_t n) {
    if (n > s->len) n = s->len;
    memmove(s->buf, s->buf + n, s->len - n);
    s->len -= n;
}

void hr_stop_free(hr_stopper *s) {
    free(s->buf);
    s->buf = NULL;
    s->len = s->cap = 0;
}
