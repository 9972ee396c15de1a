/* Byte-level BPE against hand-worked examples. Space is byte 0x20, which GPT-2's
 * byte alphabet writes as U+0120 (Ġ). Vocabulary (id text):
 * 0 a, 1 b, 2 c, 3 Ġ, 4 ab, 5 Ġa, 6 Ġab, 7 bc, 8 abc, 9 ', 10 s, 11 's, 12 <|end|>, 13 1, 14 2, 15 12
 * merges by rank: a b, Ġ a, Ġa b, b c, ab c, ' s, 1 2 */
#include "tok_test_util.h"

#define G "\xc4\xa0"

static hr_tokenizer *make(const char *pre) {
    char *text[] = {"a", "b", "c", G, "ab", G "a", G "ab", "bc", "abc", "'", "s", "'s", "<|end|>", "1", "2", "12"};
    int32_t types[16];
    for (int i = 0; i < 16; i++) types[i] = HR_TT_NORMAL;
    types[12] = HR_TT_CONTROL;
    char *merges[] = {"a b", G " a", G "a b", "b c", "ab c", "' s", "1 2"};
    hr_vocab_desc d = {.kind = HR_TOK_BPE, .n = 16, .text = text, .types = types, .n_merges = 7, .merges = merges,
                       .pre = (char *)pre, .bos = -1, .eos = 12, .unk = -1, .pad = -1};
    hr_tokenizer *t = NULL;
    hr_err e = {{0}};
    CHECKF(hr_tok_new(&t, &d, &e) == 0, "%s", e.msg);
    return t;
}

int main(void) {
    hr_tokenizer *t = make("gpt-2");
    if (!t) return TEST_END();
    /* words "abc" and " ab": abc via a+b (rank 0) then ab+c (rank 4); in " ab" the
     * merge a b (rank 0) wins over Ġ a (rank 1), and "Ġ ab" is no merge */
    EXPECT(t, "abc ab", false, false, 8, 3, 4);
    /* bytes without a token are dropped, as llama.cpp does: i, t */
    EXPECT(t, "it's", false, false, 11);
    EXPECT(t, "a<|end|>b", false, true, 0, 12, 1);
    EXPECT(t, "a<|end|>b", false, false, 0, 1);
    /* " ?\p{N}+" keeps 1212 whole: leftmost 1 2 first, then the second pair */
    EXPECT(t, "1212", false, false, 15, 15);
    /* " a" and then trailing spaces: \s+(?!\S) leaves the last space to " a" */
    EXPECT(t, "  a", false, false, 3, 5);
    EXPECT_NONE(t, "", true, true);
    /* pieces map the byte alphabet back to bytes */
    char buf[16];
    CHECK(hr_tok_piece(t, 6, false, buf, sizeof buf) == 3 && !memcmp(buf, " ab", 3));
    CHECK(hr_tok_piece(t, 12, false, buf, sizeof buf) == 0);
    CHECK(hr_tok_piece(t, 12, true, buf, sizeof buf) == 7 && !memcmp(buf, "<|end|>", 7));
    CHECK(hr_tok_is_eog(t, 12));
    hr_tok_free(t);

    /* llama3 splitting: digits in groups of three -> 121|2 */
    t = make("llama3");
    if (!t) return TEST_END();
    EXPECT(t, "1212", false, false, 15, 13, 14);
    /* a contraction is one word */
    EXPECT(t, "'s", false, false, 11);
    hr_tok_free(t);

    /* default splitting: digit runs cut into threes, punctuation runs separate */
    t = make("default");
    if (!t) return TEST_END();
    EXPECT(t, "1212", false, false, 15, 13, 14);
    EXPECT(t, "ab'c", false, false, 4, 9, 2);
    hr_tok_free(t);
    return TEST_END();
}
