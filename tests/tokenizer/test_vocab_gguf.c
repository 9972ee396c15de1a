/* tokenizer.ggml.* keys: a written vocabulary reads back to the same tokenizer, and
 * files with missing or mistyped keys are refused with a message naming the key. */
#include <stdio.h>
#include <unistd.h>
#include "tok_test_util.h"

static const char *const samples[] = {"Hello world, the weather is fine.", "  tabs\tand\nnewlines\r\n", "12345 678",
                                      "x<s>y</s>", "<|end_of_text|>a", "\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80", ""};

static void same_encodings(const hr_tokenizer *a, const hr_tokenizer *b) {
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++)
        for (int flags = 0; flags < 4; flags++) {
            int32_t *x = NULL, *y = NULL;
            size_t nx = 0, ny = 0;
            hr_err e = {{0}};
            const char *s = samples[i];
            CHECK(hr_tok_encode(a, s, strlen(s), flags & 1, flags & 2, &x, &nx, &e) == 0);
            CHECK(hr_tok_encode(b, s, strlen(s), flags & 1, flags & 2, &y, &ny, &e) == 0);
            CHECKF(nx == ny && (nx == 0 || !memcmp(x, y, nx * sizeof *x)), "sample %zu flags %d", i, flags);
            free(x);
            free(y);
        }
}

static void roundtrip_kind(hr_tok_kind k) {
    hr_vocab_desc d;
    hr_err e = {{0}};
    CHECK(hr_vocab_synth(k, 800, &d, &e) == 0);
    char path[256];
    hr_test_tmp(path, sizeof path, "vocab.gguf");
    gguf_writer *w = gguf_writer_new(false);
    gguf_w_str(w, "general.architecture", "llama");
    hr_vocab_write_gguf(w, &d);
    CHECKF(gguf_w_write(w, path, &e) == 0, "%s", e.msg);
    gguf_writer_free(w);
    gguf_file f;
    hr_tokenizer *a = NULL, *b = NULL;
    CHECKF(gguf_open(&f, path, &e) == 0, "%s", e.msg);
    CHECKF(hr_tok_from_gguf(&a, &f, &e) == 0, "%s", e.msg);
    uint32_t bos = 0;
    CHECK(gguf_get_u32(&f, "tokenizer.ggml.bos_token_id", &bos, &e) == 0 && (int32_t)bos == d.bos);
    const gguf_kv *kv = gguf_find_kv(&f, "tokenizer.ggml.bos_token_id");
    CHECK(kv && kv->val.type == GGUF_VT_UINT32); /* llama.cpp accepts no other type here */
    CHECK(hr_tok_new(&b, &d, &e) == 0);
    if (a && b) {
        same_encodings(a, b);
        CHECK(hr_tok_bos(a) == d.bos && hr_tok_eos(a) == d.eos && hr_tok_add_bos(a) == d.add_bos);
        CHECK(hr_tok_n_vocab(a) == (int32_t)d.n);
    }
    hr_tok_free(a);
    hr_tok_free(b);
    gguf_close(&f);
    unlink(path);
    hr_vocab_free(&d);
}

/* A small vocabulary file; `what` selects one defect. */
static void write_vocab(const char *path, int what) {
    const char *toks[] = {"<unk>", "<s>", "</s>", "a", "b", "ab"};
    const char *merges[] = {"a b"};
    float scores[6] = {0};
    int32_t types[6] = {2, 3, 3, 1, 1, 1};
    gguf_writer *w = gguf_writer_new(false);
    const char *model = what == 1 ? NULL : what == 2 ? "bert" : what == 3 ? "foo" : (what >= 7 && what <= 9) || what == 11 ? "gpt2" : "llama";
    if (model) gguf_w_str(w, "tokenizer.ggml.model", model);
    if (what == 4) gguf_w_arr_i32(w, "tokenizer.ggml.tokens", types, 6);
    else gguf_w_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, 6);
    gguf_w_arr_f32(w, "tokenizer.ggml.scores", scores, what == 5 ? 3 : 6);
    if (what == 6) gguf_w_arr_f32(w, "tokenizer.ggml.token_type", scores, 6);
    else gguf_w_arr_i32(w, "tokenizer.ggml.token_type", types, 6);
    if (what == 8 || what == 9 || what == 11) gguf_w_arr_str(w, "tokenizer.ggml.merges", merges, NULL, 1);
    if (what == 9) gguf_w_str(w, "tokenizer.ggml.pre", "gpt2");
    if (what == 10) gguf_w_u32(w, "tokenizer.ggml.bos_token_id", 99);
    if (what == 11) gguf_w_bool(w, "tokenizer.ggml.add_bos_token", true);
    if (what == 12) gguf_w_str(w, "tokenizer.ggml.add_bos_token", "yes");
    hr_err e = {{0}};
    CHECKF(gguf_w_write(w, path, &e) == 0, "%s", e.msg);
    gguf_writer_free(w);
}

static hr_tokenizer *load(int what, char *msg) {
    char path[256];
    hr_test_tmp(path, sizeof path, "bad.gguf");
    write_vocab(path, what);
    gguf_file f;
    hr_err e = {{0}};
    hr_tokenizer *t = NULL;
    CHECKF(gguf_open(&f, path, &e) == 0, "%s", e.msg);
    if (hr_tok_from_gguf(&t, &f, &e) != 0) t = NULL;
    strcpy(msg, e.msg);
    gguf_close(&f);
    unlink(path);
    return t;
}

static void refuse(int what, const char *needle) {
    char msg[512];
    hr_tokenizer *t = load(what, msg);
    CHECKF(!t && strstr(msg, needle), "defect %d: '%s' lacks '%s'", what, msg, needle);
    hr_tok_free(t);
}

int main(void) {
    roundtrip_kind(HR_TOK_SPM);
    roundtrip_kind(HR_TOK_BPE);
    char msg[512];
    hr_tokenizer *t = load(0, msg);
    CHECKF(t != NULL, "%s", msg);
    if (t) CHECK(hr_tok_bos(t) == 1 && hr_tok_eos(t) == 2 && hr_tok_add_bos(t)); /* SPM defaults */
    hr_tok_free(t);
    refuse(1, "no vocabulary");
    refuse(2, "'bert' is not supported");
    refuse(3, "unknown tokenizer model: 'foo'");
    refuse(4, "tokenizer.ggml.tokens must be an array of strings");
    refuse(5, "tokenizer.ggml.scores has 3 entries but there are 6 tokens");
    refuse(6, "tokenizer.ggml.token_type has elements of type");
    refuse(7, "tokenizer.ggml.merges is missing");
    refuse(9, "'gpt-2'");
    refuse(11, "bos_token_id is not set"); /* BPE's default BOS (11) is past the end */
    refuse(12, "tokenizer.ggml.add_bos_token");
    t = load(8, msg); /* BPE, default pre-tokenizer, no BOS wanted */
    CHECKF(t != NULL, "%s", msg);
    if (t) CHECK(hr_tok_bos(t) == -1 && !hr_tok_add_bos(t));
    EXPECT(t, "ab", true, false, 5);
    hr_tok_free(t);
    t = load(10, msg); /* an out-of-range BOS id disables BOS (llama.cpp keeps its default id 1 instead) */
    CHECKF(t != NULL, "%s", msg);
    if (t) CHECK(hr_tok_bos(t) == -1 && !hr_tok_add_bos(t));
    hr_tok_free(t);
    return TEST_END();
}
