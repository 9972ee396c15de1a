/* Malformed vocabularies are refused with a message naming the problem. */
#include <stdio.h>
#include "tok_test_util.h"

static char *text[] = {"<unk>", "<s>", "</s>", "a", "b", "ab"};
static int32_t types[] = {HR_TT_UNKNOWN, HR_TT_CONTROL, HR_TT_CONTROL, HR_TT_NORMAL, HR_TT_NORMAL, HR_TT_NORMAL};

static hr_vocab_desc base(hr_tok_kind k) {
    static char *merges[] = {"a b"};
    hr_vocab_desc d = {.kind = k, .n = 6, .text = text, .types = types, .bos = 1, .eos = 2, .unk = 0, .pad = -1,
                       .add_bos = true, .add_space_prefix = k == HR_TOK_SPM};
    if (k == HR_TOK_BPE) {
        d.merges = merges;
        d.n_merges = 1;
        d.pre = "gpt-2";
    }
    return d;
}

static void refuse(hr_vocab_desc d, const char *needle, int line) {
    hr_tokenizer *t = NULL;
    hr_err e = {{0}};
    int rc = hr_tok_new(&t, &d, &e);
    CHECKF(rc < 0 && t == NULL, "line %d: accepted", line);
    CHECKF(strstr(e.msg, needle) != NULL, "line %d: message '%s' lacks '%s'", line, e.msg, needle);
    hr_tok_free(t);
}
#define REFUSE(d, needle) refuse(d, needle, __LINE__)

int main(void) {
    hr_tokenizer *t = NULL;
    hr_err e = {{0}};
    hr_vocab_desc d = base(HR_TOK_BPE);
    CHECKF(hr_tok_new(&t, &d, &e) == 0, "%s", e.msg);
    hr_tok_free(t);

    d = base(HR_TOK_SPM);
    d.n = 0;
    REFUSE(d, "no tokens");
    char *dup[] = {"<unk>", "<s>", "</s>", "a", "b", "a"};
    d = base(HR_TOK_SPM);
    d.text = dup;
    REFUSE(d, "duplicate token");
    int32_t badtype[] = {2, 3, 3, 1, 9, 1};
    d = base(HR_TOK_SPM);
    d.types = badtype;
    REFUSE(d, "invalid type 9");
    int32_t bytetype[] = {2, 3, 3, 6, 1, 1};
    d = base(HR_TOK_SPM);
    d.types = bytetype;
    REFUSE(d, "not <0xHH>");
    d = base(HR_TOK_SPM);
    d.bos = 6;
    REFUSE(d, "BOS id 6 is out of range");
    d = base(HR_TOK_SPM);
    d.eos = -5;
    REFUSE(d, "EOS id -5");
    d = base(HR_TOK_SPM);
    d.bos = -1;
    REFUSE(d, "bos_token_id is not set");
    d = base(HR_TOK_SPM);
    d.add_eos = true;
    d.eos = -1;
    REFUSE(d, "eos_token_id is not set");
    d = base(HR_TOK_SPM);
    d.kind = (hr_tok_kind)7;
    REFUSE(d, "unknown tokenizer kind");

    char *m1[] = {"a c"}, *m2[] = {"ab"}, *m3[] = {"x b"}, *m4[] = {" ab"};
    d = base(HR_TOK_BPE);
    d.merges = m1;
    REFUSE(d, "right part 'c' is not a token");
    d.merges = m2;
    REFUSE(d, "not of the form");
    d.merges = m3;
    REFUSE(d, "left part 'x' is not a token");
    d.merges = m4;
    REFUSE(d, "not of the form");
    d = base(HR_TOK_BPE);
    d.pre = "gpt2";
    REFUSE(d, "'gpt-2'");
    d.pre = "whitespace"; /* known to llama.cpp, its own session type: not implemented */
    REFUSE(d, "not implemented");
    d.pre = "no-such-pre";
    REFUSE(d, "unknown pre-tokenizer type: 'no-such-pre'");

    /* a vocabulary without byte tokens cannot encode unknown characters: an error, not a crash */
    d = base(HR_TOK_SPM);
    CHECK(hr_tok_new(&t, &d, &e) == 0);
    int32_t *ids = NULL;
    size_t n = 0;
    CHECK(hr_tok_encode(t, "z", 1, false, false, &ids, &n, &e) < 0 && strstr(e.msg, "has no <0xE2> token"));
    free(ids);
    hr_tok_free(t);
    return TEST_END();
}
