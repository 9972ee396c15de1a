/* Helpers shared by the tokenizer tests: compare an encoding with expected ids. */
#ifndef HR_TOK_TEST_UTIL_H
#define HR_TOK_TEST_UTIL_H
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "tokenizer/tokenizer.h"

#define IDS(...) ((const int32_t[]){__VA_ARGS__}), (sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t))

static inline void expect_ids(const hr_tokenizer *t, const char *text, bool add_special, bool parse_special,
                              const int32_t *want, size_t n_want, int line) {
    int32_t *ids = NULL;
    size_t n = 0;
    hr_err e = {{0}};
    int rc = hr_tok_encode(t, text, strlen(text), add_special, parse_special, &ids, &n, &e);
    bool same = rc == 0 && n == n_want && (n == 0 || !memcmp(ids, want, n * sizeof *ids));
    if (!same) {
        fprintf(stderr, "line %d: '%s': rc %d (%s), got [", line, text, rc, e.msg);
        for (size_t i = 0; i < n; i++) fprintf(stderr, i ? " %d" : "%d", ids[i]);
        fprintf(stderr, "], want [");
        for (size_t i = 0; i < n_want; i++) fprintf(stderr, i ? " %d" : "%d", want[i]);
        fprintf(stderr, "]\n");
    }
    CHECK(same);
    free(ids);
}
#define EXPECT(t, text, add, parse, ...) expect_ids(t, text, add, parse, IDS(__VA_ARGS__), __LINE__)
#define EXPECT_NONE(t, text, add, parse) expect_ids(t, text, add, parse, NULL, 0, __LINE__)

/* Concatenated pieces of ids (render_special as given); malloc'ed, NUL-terminated. */
static inline char *detok_all(const hr_tokenizer *t, const int32_t *ids, size_t n, bool special, size_t *len) {
    size_t cap = 64, k = 0;
    char *out = malloc(cap);
    for (size_t i = 0; i < n && out; i++) {
        int m = hr_tok_piece(t, ids[i], special, NULL, 0);
        if (m < 0) {
            free(out);
            return NULL;
        }
        while (k + (size_t)m + 1 > cap) out = realloc(out, cap *= 2);
        if (!out) return NULL;
        hr_tok_piece(t, ids[i], special, out + k, (size_t)m + 1);
        k += (size_t)m;
    }
    if (out) out[k] = 0;
    *len = k;
    return out;
}
#endif
