/* `hearth tokenize`: ids and pieces agree with the library, flags and bad files give
 * the documented exit codes (0 ok, 1 bad file, 2 bad flags). Needs HEARTH_BIN. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tok_test_util.h"

static const char *bin;

/* Runs hearth with args, stdout into out (cap), returns the exit status. */
static int run(const char *args, char *out, size_t cap) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>/dev/null", bin, args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void write_model(const char *path, hr_tok_kind k, hr_vocab_desc *d) {
    hr_err e = {{0}};
    CHECK(hr_vocab_synth(k, 700, d, &e) == 0);
    gguf_writer *w = gguf_writer_new(false);
    gguf_w_str(w, "general.architecture", "llama");
    hr_vocab_write_gguf(w, d);
    CHECKF(gguf_w_write(w, path, &e) == 0, "%s", e.msg);
    gguf_writer_free(w);
}

/* hearth's --ids line equals the library's encoding. */
static void same_ids(const char *model, const hr_tokenizer *t, const char *text, const char *flags, bool add, bool parse) {
    char args[1024], out[8192];
    snprintf(args, sizeof args, "tokenize -m '%s' -p '%s' --ids %s", model, text, flags);
    CHECK(run(args, out, sizeof out) == 0);
    int32_t *ids = NULL;
    size_t n = 0;
    hr_err e = {{0}};
    CHECK(hr_tok_encode(t, text, strlen(text), add, parse, &ids, &n, &e) == 0);
    char want[8192];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += (size_t)snprintf(want + k, sizeof want - k, i ? " %d" : "%d", ids[i]);
    snprintf(want + k, sizeof want - k, "\n");
    CHECKF(!strcmp(out, want), "'%s' %s: got '%s' want '%s'", text, flags, out, want);
    free(ids);
}

int main(void) {
    bin = getenv("HEARTH_BIN");
    CHECKF(bin && access(bin, X_OK) == 0, "HEARTH_BIN must name the hearth binary");
    if (!bin || access(bin, X_OK)) return TEST_END();
    char spm[256], bpe[256], junk[256], txt[256], out[8192], args[1024];
    hr_test_tmp(spm, sizeof spm, "spm.gguf");
    hr_test_tmp(bpe, sizeof bpe, "bpe.gguf");
    hr_test_tmp(junk, sizeof junk, "junk.gguf");
    hr_test_tmp(txt, sizeof txt, "text.txt");
    hr_vocab_desc ds, db;
    write_model(spm, HR_TOK_SPM, &ds);
    write_model(bpe, HR_TOK_BPE, &db);
    hr_tokenizer *ts = NULL, *tb = NULL;
    hr_err e = {{0}};
    CHECK(hr_tok_new(&ts, &ds, &e) == 0 && hr_tok_new(&tb, &db, &e) == 0);
    if (ts && tb) {
        const char *texts[] = {"Hello world, the weather is fine.", "x<s>y", "a<|end_of_text|>b  c", "12345 678"};
        for (int i = 0; i < 4; i++) {
            same_ids(spm, ts, texts[i], "", true, true);
            same_ids(spm, ts, texts[i], "--no-bos", false, true);
            same_ids(spm, ts, texts[i], "--no-special", true, false);
            same_ids(bpe, tb, texts[i], "", true, true);
            same_ids(bpe, tb, texts[i], "--no-bos --no-special", false, false);
        }
        /* -f reads bytes as they are, invalid UTF-8 included */
        FILE *f = fopen(txt, "wb");
        fwrite("a\xff" "b\n", 1, 4, f);
        fclose(f);
        snprintf(args, sizeof args, "tokenize -m '%s' -f '%s' --ids --no-bos", spm, txt);
        CHECK(run(args, out, sizeof out) == 0);
        int32_t *ids = NULL;
        size_t n = 0;
        CHECK(hr_tok_encode(ts, "a\xff" "b\n", 4, false, true, &ids, &n, &e) == 0);
        char want[256];
        size_t k = 0;
        for (size_t i = 0; i < n; i++) k += (size_t)snprintf(want + k, sizeof want - k, i ? " %d" : "%d", ids[i]);
        snprintf(want + k, sizeof want - k, "\n");
        CHECK(!strcmp(out, want));
        free(ids);
        /* --delimiter: each text on its own (here a leading space, an empty text, the last
         * text running to the end of the file), one line each, equal to encoding the parts */
        f = fopen(txt, "wb");
        fputs(" two words|+||+|12345 x", f);
        fclose(f);
        snprintf(args, sizeof args, "tokenize -m '%s' -f '%s' --ids --no-bos --delimiter '|+|'", bpe, txt);
        CHECK(run(args, out, sizeof out) == 0);
        const char *parts[] = {" two words", "", "12345 x"};
        k = 0;
        for (int p = 0; p < 3; p++) {
            CHECK(hr_tok_encode(tb, parts[p], strlen(parts[p]), false, true, &ids, &n, &e) == 0);
            for (size_t i = 0; i < n; i++) k += (size_t)snprintf(want + k, sizeof want - k, i ? " %d" : "%d", ids[i]);
            k += (size_t)snprintf(want + k, sizeof want - k, "\n");
            free(ids);
        }
        CHECKF(!strcmp(out, want), "got '%s' want '%s'", out, want);
        snprintf(args, sizeof args, "tokenize -m '%s' -f '%s' --delimiter '|+|'", bpe, txt); /* needs --ids */
        CHECK(run(args, out, sizeof out) == 2);
        /* default format: id<TAB>'piece' per token; BOS renders as its text */
        snprintf(args, sizeof args, "tokenize -m '%s' -p 'the'", spm);
        CHECK(run(args, out, sizeof out) == 0);
        char line[64];
        snprintf(line, sizeof line, "1\t'<s>'\n");
        CHECKF(!strncmp(out, line, strlen(line)), "got '%s'", out);
        CHECKF(strstr(out, "\t' the'\n") != NULL, "got '%s'", out);
    }
    /* exit codes */
    snprintf(args, sizeof args, "tokenize --help");
    CHECK(run(args, out, sizeof out) == 0 && strstr(out, "usage"));
    CHECK(run("tokenize", out, sizeof out) == 2);
    snprintf(args, sizeof args, "tokenize -m '%s'", spm);
    CHECK(run(args, out, sizeof out) == 2);
    snprintf(args, sizeof args, "tokenize -m '%s' -p x -f '%s'", spm, txt);
    CHECK(run(args, out, sizeof out) == 2);
    snprintf(args, sizeof args, "tokenize -m '%s' -p x --bogus", spm);
    CHECK(run(args, out, sizeof out) == 2);
    snprintf(args, sizeof args, "tokenize -m '%s' -p", spm);
    CHECK(run(args, out, sizeof out) == 2);
    snprintf(args, sizeof args, "tokenize -m /nonexistent/model.gguf -p x");
    CHECK(run(args, out, sizeof out) == 1);
    snprintf(args, sizeof args, "tokenize -m '%s' -f /nonexistent/text", spm);
    CHECK(run(args, out, sizeof out) == 1);
    FILE *f = fopen(junk, "wb");
    fputs("this is not a gguf file at all", f);
    fclose(f);
    snprintf(args, sizeof args, "tokenize -m '%s' -p x", junk);
    CHECK(run(args, out, sizeof out) == 1);
    gguf_writer *w = gguf_writer_new(false); /* a valid GGUF without a vocabulary */
    gguf_w_str(w, "general.architecture", "llama");
    CHECK(gguf_w_write(w, junk, &e) == 0);
    gguf_writer_free(w);
    CHECK(run(args, out, sizeof out) == 1);
    hr_tok_free(ts);
    hr_tok_free(tb);
    hr_vocab_free(&ds);
    hr_vocab_free(&db);
    unlink(spm);
    unlink(bpe);
    unlink(junk);
    unlink(txt);
    return TEST_END();
}
