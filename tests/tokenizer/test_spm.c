/* SPM encoding against hand-worked examples on a tiny vocabulary.
 * Ids: 0 <unk>, 1 <s>, 2 </s>, 3+b the byte token <0xBB>, then pieces (score):
 * 259 ▁(-1) 260 a(-1) 261 b(-1) 262 c(-1) 263 ab(-2) 264 bc(-1.5) 265 ▁a(-3) 266 abc(-0.5) 267 ▁ab(-4)
 * 268 aa(-1) 269 <u>(user-defined) */
#include <stdio.h>
#include "tok_test_util.h"

#define SP "\xe2\x96\x81"

static hr_tokenizer *make(bool space_prefix, bool add_eos) {
    static char bytes[256][8];
    char *text[270];
    float scores[270] = {0};
    int32_t types[270];
    text[0] = "<unk>", types[0] = HR_TT_UNKNOWN;
    text[1] = "<s>", types[1] = HR_TT_CONTROL;
    text[2] = "</s>", types[2] = HR_TT_CONTROL;
    for (int b = 0; b < 256; b++) {
        snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
        text[3 + b] = bytes[b];
        types[3 + b] = HR_TT_BYTE;
    }
    const char *pieces[] = {SP, "a", "b", "c", "ab", "bc", SP "a", "abc", SP "ab", "aa", "<u>"};
    const float sc[] = {-1, -1, -1, -1, -2, -1.5f, -3, -0.5f, -4, -1, 0};
    for (int i = 0; i < 11; i++) {
        text[259 + i] = (char *)pieces[i];
        scores[259 + i] = sc[i];
        types[259 + i] = HR_TT_NORMAL;
    }
    types[269] = HR_TT_USER_DEFINED;
    hr_vocab_desc d = {.kind = HR_TOK_SPM, .n = 270, .text = text, .scores = scores, .types = types,
                       .bos = 1, .eos = 2, .unk = 0, .pad = -1, .add_bos = true, .add_eos = add_eos,
                       .add_space_prefix = space_prefix};
    hr_tokenizer *t = NULL;
    hr_err e = {{0}};
    CHECKF(hr_tok_new(&t, &d, &e) == 0, "%s", e.msg);
    return t;
}

static void check_piece(const hr_tokenizer *t, int32_t id, bool special, const char *want, size_t want_len) {
    char buf[32];
    int n = hr_tok_piece(t, id, special, buf, sizeof buf);
    CHECKF(n == (int)want_len && !memcmp(buf, want, want_len), "piece %d: got %d bytes", id, n);
}

int main(void) {
    hr_tokenizer *t = make(true, false);
    if (!t) return TEST_END();
    /* ▁abc: bc (-1.5) beats ab (-2) and ▁a (-3); then a+bc = abc (-0.5); ▁abc is no token */
    EXPECT(t, "abc", false, false, 259, 266);
    /* ▁ab: ab first (rank by score), then ▁+ab = ▁ab although ▁a scored lower */
    EXPECT(t, "ab", false, false, 267);
    /* é is no piece: its two bytes fall back to <0xC3> <0xA9> */
    EXPECT(t, "\xc3\xa9", false, false, 259, 3 + 0xC3, 3 + 0xA9);
    EXPECT(t, "b", true, false, 1, 259, 261);
    /* equal scores: the leftmost pair merges first (a a|a), leaving ▁ aa a */
    EXPECT(t, "aaa", false, false, 259, 268, 260);
    EXPECT(t, "a b", false, false, 265, 259, 261);
    /* a special token splits the text; the fragment after it gets its own space prefix */
    EXPECT(t, "a<s>b", false, true, 265, 1, 259, 261);
    EXPECT(t, "a<s>b", false, false, 265, 3 + '<', 3 + 's', 3 + '>', 261);
    /* user-defined tokens are cut out even without parse_special */
    EXPECT(t, "a<u>a", false, false, 265, 269, 265);
    EXPECT(t, "<unk>", false, true, 0);
    EXPECT(t, "", true, true, 1);
    EXPECT_NONE(t, "", false, true);
    check_piece(t, 267, false, " ab", 3);
    check_piece(t, 1, false, "", 0);
    check_piece(t, 1, true, "<s>", 3);
    check_piece(t, 0, false, "", 0);
    check_piece(t, 3 + 0xC3, false, "\xc3", 1);
    check_piece(t, 269, false, "<u>", 3);
    CHECK(hr_tok_piece(t, 270, true, NULL, 0) == -1);
    CHECK(hr_tok_piece(t, -1, true, NULL, 0) == -1);
    /* truncated output still reports the full length */
    char two[2];
    CHECK(hr_tok_piece(t, 267, false, two, 2) == 3 && two[0] == ' ' && two[1] == 'a');
    CHECK(hr_tok_n_vocab(t) == 270 && hr_tok_bos(t) == 1 && hr_tok_eos(t) == 2 && hr_tok_add_bos(t));
    CHECK(hr_tok_is_eog(t, 2) && !hr_tok_is_eog(t, 1));
    hr_tok_free(t);

    t = make(false, true);
    if (!t) return TEST_END();
    EXPECT(t, "ab", false, false, 263);
    EXPECT(t, "ab", true, false, 1, 263, 2);
    EXPECT(t, " ab", false, false, 267);
    hr_tok_free(t);
    return TEST_END();
}
