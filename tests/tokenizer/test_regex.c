/* The pre-tokenizer regex matcher: ECMAScript semantics on hand-worked cases (alternatives
 * in order, backtracking, counted repeats, lookaheads, '$', empty matches as
 * std::regex_iterator steps over them), refusal of what it does not support, and every
 * pattern of every pre-tokenizer compiling and splitting text into a partition. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "testutil.h"
#include "tokenizer/pretok.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"

typedef struct out {
    char *s;
    const uint32_t *c;
    size_t at, o;
} out;

static void put_piece(void *ctx, size_t len) {
    out *x = ctx;
    if (x->o) x->s[x->o++] = '|';
    for (size_t j = 0; j < len; j++) x->o += hr_utf8_put(x->c[x->at + j], x->s + x->o);
    x->at += len;
    x->s[x->o] = 0;
}

static void expect(const char *pat, const char *text, const char *want, int line) {
    hr_re *re;
    int rc = hr_re_compile(pat, &re);
    CHECKF(rc == 0, "line %d: '%s' does not compile (%d)\n", line, pat, rc);
    if (rc) return;
    uint32_t c[256], view[256]; /* the pieces are printed from the code points, not the view */
    size_t n = 0, len = strlen(text);
    for (size_t off = 0; off < len; n++) {
        c[n] = hr_utf8_next((const unsigned char *)text, len, &off);
        view[n] = hr_re_view(hr_re_collapsed(re), c[n]);
    }
    char got[1024] = "";
    out x = {got, c, 0, 0};
    CHECK(hr_re_split(re, view, &n, 1, put_piece, &x) == 0);
    if (strcmp(got, want)) fprintf(stderr, "line %d: /%s/ on '%s': got '%s', want '%s'\n", line, pat, text, got, want);
    CHECK(!strcmp(got, want));
    CHECK(x.at == n);
    hr_re_free(re);
}
#define E(pat, text, want) expect(pat, text, want, __LINE__)

static void refuse(const char *pat, int line) {
    hr_re *re = NULL;
    int rc = hr_re_compile(pat, &re);
    CHECKF(rc == -2 && !re, "line %d: '%s' compiled (%d)\n", line, pat, rc);
    hr_re_free(re);
}
#define R(pat) refuse(pat, __LINE__)

static void count_piece(void *ctx, size_t len) {
    (void)len;
    ++*(size_t *)ctx;
}

/* \s+$ over a long whitespace run that is not at the end: linear, not quadratic (deepseek-llm
 * has this pattern; 200k positions each rescanning the run would take minutes). */
static void long_run(void) {
    size_t n = 200000, pieces = 0;
    uint32_t *v = malloc((n + 1) * sizeof *v);
    CHECK(v != NULL);
    if (!v) return;
    for (size_t i = 0; i < n; i++) v[i] = ' ';
    v[n++] = 'x';
    hr_re *re;
    CHECK(hr_re_compile("\\s+$", &re) == 0);
    clock_t t0 = clock();
    CHECK(hr_re_split(re, v, &n, 1, count_piece, &pieces) == 0);
    double s = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CHECKF(pieces == 1 && s < 10, "%zu pieces in %.1f s\n", pieces, s);
    hr_re_free(re);
    free(v);
}

int main(void) {
    E("a|ab", "ab", "a|b");               /* the first alternative that matches wins, not the longest */
    E("(?:a|ab)c", "abc", "abc");         /* backtracking into an alternation */
    E("x{2,3}", "xxxxx", "xxx|xx");
    E("x{2}", "xxxxx", "xx|xx|x");
    E("a(?=b)", "abac", "a|bac");
    E("a(?!b)", "abac", "ab|a|c");
    E("b$", "abb", "ab|b");               /* '$' is the end of the piece only */
    E("\\s+(?!\\S)", "a   b  ", "a|  | b|  ");
    E("\\s+$", "a   b  ", "a   b|  ");   /* X+R: a failed run is skipped, later matches still found */
    E("\\s+x", "   y  x \tx", "   y|  x| \tx");
    E("a+b", "aaacaab", "aaac|aab");
    E("(?=b)", "abab", "a|ba|b");         /* empty matches cut without consuming */
    E("(?=(\\d{3})+(?!\\d))", "1234567", "1|234|567");
    E("[^a-c]+", "abxyzc", "ab|xyz|c");
    E("[\\-.]+", "a-.b", "a|-.|b");
    E("[!-/:-@\\[-`{-~]", "a{b", "a|{|b");
    E("(IMGIMG)((A|B|C){1,4})Z", "xIMGIMGABZy", "x|IMGIMGABZ|y");
    E("\\d+", "a12b3", "a|12|b|3");
    /* categories: \p{..} patterns see collapsed code points (marks, letters, numbers...) */
    E("\\p{L}+", "h\xc3\xa9llo w", "h\xc3\xa9llo| |w");
    E("[\\p{L}\\p{M}]+", "e\xcc\x81x 1", "e\xcc\x81x| 1");
    E("\\p{N}", "x\xc2\xbd" "2", "x|\xc2\xbd|2");
    E("\\p{P}+", "a,\xe3\x80\x82" "b", "a|,\xe3\x80\x82|b"); /* ideographic full stop is punctuation */
    /* without categories, code points; non-ASCII whitespace is \s */
    E("[\xe4\xb8\x80-\xe9\xbe\xa5]+", "ab\xe4\xb8\xad\xe6\x96\x87" "c", "ab|\xe4\xb8\xad\xe6\x96\x87|c");
    E("\\s", "a\xe3\x80\x80" "b", "a|\xe3\x80\x80|b");
    /* nested loops: letters joined by single spaces (exaone-moe's word) */
    E("(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+", "ab cd  e", "ab cd|  |e");

    R("\\b");
    R("a*?");
    R("a++");
    R("(?<=a)b");
    R("(a*)*");     /* an empty-matching loop */
    R("(?=a)+");
    R("[z-a]");
    R("\\p{Xx}");
    R("\\p{L}\xc3\xa9"); /* a category together with non-ASCII text: llama.cpp refuses it too */
    R("(a");
    R("a)");
    R("[ab");
    R("a{2,1}");
    R("\\1");
    long_run();

    /* every pre-tokenizer: its patterns run, and the words partition the text */
    static const char text[] = "Hello WORLD it's 12345 \xe4\xb8\xad\xe6\x96\x87 caf\xc3\xa9 e\xcc\x81 x+=y\t\n\n  "
                               "<sentinel:1> IMGIMGAZ ok.\xe3\x80\x82 \xc2\xa0 \xff end  ";
    for (int k = 0; k < HR_PRE_COUNT; k++) {
        hr_words w;
        CHECKF(hr_pretok((hr_pre_kind)k, text, sizeof text - 1, &w) == 0, "kind %d\n", k);
        size_t sum = 0;
        for (size_t i = 0; i < w.n_words; i++) {
            CHECK(w.lens[i] > 0);
            sum += w.lens[i];
        }
        CHECKF(sum == w.n_cpts && w.n_words > 1, "kind %d\n", k);
        hr_words_free(&w);
        CHECK(hr_pretok_patterns((hr_pre_kind)k)[0] != NULL);
    }
    return TEST_END();
}
