/* The line editor of hearth chat (cli/lineedit.c) fed key bytes through a pipe: each editing
 * key, UTF-8 cursor steps, history, Ctrl-C / Ctrl-D, bracketed paste, CR LF. The expected
 * lines are written out by hand from what each key means. The terminal side (raw mode, a
 * real pseudo-terminal) is tests/cli/chat_tty.py. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lineedit.h"
#include "testutil.h"


typedef struct feed {
    hr_lineedit le;
    int wr;
} feed;

/* An editor reading from a pipe that holds input, drawing into /dev/null. */
static void feed_open(feed *f, const char *input, size_t n) {
    int p[2];
    if (pipe(p)) { perror("pipe"); exit(1); }
    if (write(p[1], input, n) != (ssize_t)n) { perror("write"); exit(1); }
    close(p[1]);
    hr_le_init(&f->le, p[0], open("/dev/null", O_WRONLY));
}

/* Keeps the history of le across feeds. */
static void feed_more(feed *f, const char *input) {
    close(f->le.in);
    int p[2];
    if (pipe(p)) { perror("pipe"); exit(1); }
    if (write(p[1], input, strlen(input)) != (ssize_t)strlen(input)) { perror("write"); exit(1); }
    close(p[1]);
    f->le.in = p[0];
}

static void feed_close(feed *f) {
    close(f->le.in), close(f->le.out);
    hr_le_free(&f->le);
}

/* Reads one line and compares status and text. */
static void expect_line(feed *f, int want_rc, const char *want, int line) {
    char *got = NULL;
    size_t len = 0;
    int rc = hr_le_read(&f->le, "> ", &got, &len);
    if (rc != want_rc || (want && (!got || len != strlen(want) || memcmp(got, want, len))))
        fprintf(stderr, "line %d: got rc %d '%s', want rc %d '%s'\n", line, rc, got && rc != HR_LE_EOF ? got : "", want_rc,
                want ? want : ""),
            hr_test_failures++;
    if (rc >= 0 || rc == HR_LE_INTR) free(got);
}

#define ONE(input, rc, want) do { feed f; feed_open(&f, input, sizeof input - 1); \
    expect_line(&f, rc, want, __LINE__); feed_close(&f); } while (0)

static void editing_keys(void) {
    ONE("hello\r", HR_LE_LINE, "hello");
    ONE("hello\n", HR_LE_LINE, "hello");
    ONE("abc\x1b[D\x1b[DX\r", HR_LE_LINE, "aXbc");        /* Left */
    ONE("abc\x02\x02X\x06Y\r", HR_LE_LINE, "aXbYc");      /* Ctrl-B, Ctrl-F */
    ONE("abc\x1b[D\x1b[D\x1b[CX\r", HR_LE_LINE, "abXc");  /* Right */
    ONE("bc\x01" "a\x05" "d\r", HR_LE_LINE, "abcd");      /* Ctrl-A, Ctrl-E */
    ONE("bc\x1b[Ha\x1b[F" "d\r", HR_LE_LINE, "abcd");     /* Home, End (CSI H/F) */
    ONE("bc\x1b[1~a\x1b[4~" "d\r", HR_LE_LINE, "abcd");   /* Home, End (CSI 1~/4~) */
    ONE("bc\x1bOHa\x1bOF" "d\r", HR_LE_LINE, "abcd");     /* Home, End (SS3) */
    ONE("abc\x7f\x7f\r", HR_LE_LINE, "a");                /* Backspace */
    ONE("abc\x08\r", HR_LE_LINE, "ab");                   /* Ctrl-H */
    ONE("abc\x01\x1b[3~\r", HR_LE_LINE, "bc");            /* Delete */
    ONE("abc\x01\x04\r", HR_LE_LINE, "bc");               /* Ctrl-D deletes on a non-empty line */
    ONE("abc\x1b[3~\r", HR_LE_LINE, "abc");               /* Delete at the end: nothing */
    ONE("abc def\x1b[D\x1b[D\x15\r", HR_LE_LINE, "ef");   /* Ctrl-U */
    ONE("abc def\x01\x1b[C\x0b\r", HR_LE_LINE, "a");      /* Ctrl-K */
    ONE("abc def  \x17\r", HR_LE_LINE, "abc ");           /* Ctrl-W */
    ONE("abc def\x1b\x7f\r", HR_LE_LINE, "abc ");         /* Alt-Backspace */
    ONE("abc def\x1b" "bX\r", HR_LE_LINE, "abc Xdef");    /* Alt-B */
    ONE("abc def\x01\x1b" "fX\r", HR_LE_LINE, "abcX def");/* Alt-F */
    ONE("abc def\x1b[1;5DX\r", HR_LE_LINE, "abc Xdef");   /* Ctrl-Left */
    ONE("abc def\x01\x1b[1;5CX\r", HR_LE_LINE, "abcX def");/* Ctrl-Right */
    ONE("a\tb\r", HR_LE_LINE, "a\tb");                    /* a tab is text */
    ONE("a\x1b[Zb\x0c\r", HR_LE_LINE, "ab");              /* unknown CSI and Ctrl-L change nothing */
    ONE("ab\x1b", HR_LE_EOF, NULL);                       /* a lone ESC, then the input ends */
}

static void utf8(void) {
    ONE("a\xc3\xa9\x7f\r", HR_LE_LINE, "a");                                   /* é is one character */
    ONE("\xe6\x97\xa5\xe6\x9c\xac\x1b[DX\r", HR_LE_LINE, "\xe6\x97\xa5X\xe6\x9c\xac");  /* 日X本 */
    ONE("\xf0\x9f\x98\x80z\x1b[D\x1b[D\x1b[3~\r", HR_LE_LINE, "z");            /* Delete a 4-byte emoji */
    ONE("x\xe6\x97\xa5\x01\x1b[C\x1b[CY\r", HR_LE_LINE, "x\xe6\x97\xa5Y");
    ONE("ab \xc3\xa9t\xc3\xa9\x17\r", HR_LE_LINE, "ab ");                     /* Ctrl-W over UTF-8 */
    CHECK(hr_le_columns("\xe6\x97\xa5\xe6\x9c\xac", 6) == 4);   /* wide: two columns each */
    CHECK(hr_le_columns("e\xcc\x81", 3) == 1);                  /* combining acute: none */
    CHECK(hr_le_columns("\xc3\xa9t\xc3\xa9", 5) == 3);
    CHECK(hr_le_columns("\xff\xfe", 2) == 2);                   /* invalid bytes: one each */
}

static void control(void) {
    ONE("\x04", HR_LE_EOF, NULL);          /* Ctrl-D on an empty line */
    ONE("", HR_LE_EOF, NULL);              /* the input ends */
    ONE("abc\x03", HR_LE_INTR, "abc");     /* Ctrl-C: the discarded text comes back */
    ONE("\x03", HR_LE_INTR, "");
    /* A paste: newlines inside it continue the message; CR LF is one newline. */
    feed f;
    const char paste[] = "\x1b[200~one\rtwo\r\nthree\x1b[201~!\rnext\r\nlast\r";
    feed_open(&f, paste, sizeof paste - 1);
    expect_line(&f, HR_LE_PASTED, "one", __LINE__);
    expect_line(&f, HR_LE_PASTED, "two", __LINE__);
    expect_line(&f, HR_LE_LINE, "three!", __LINE__);
    expect_line(&f, HR_LE_LINE, "next", __LINE__);   /* typed: CR LF is one Enter */
    expect_line(&f, HR_LE_LINE, "last", __LINE__);
    CHECK(!f.le.in_paste);
    feed_close(&f);
}

static void history(void) {
    feed f;
    const char four[] = "first\rsecond\rsecond\r\r";
    feed_open(&f, four, sizeof four - 1);
    expect_line(&f, HR_LE_LINE, "first", __LINE__);
    expect_line(&f, HR_LE_LINE, "second", __LINE__);
    expect_line(&f, HR_LE_LINE, "second", __LINE__);
    expect_line(&f, HR_LE_LINE, "", __LINE__);
    CHECKF(f.le.n_hist == 2, "%zu entries (repeats and empty lines are not kept)", f.le.n_hist);
    feed_more(&f, "\x1b[A\x1b[A\r");
    expect_line(&f, HR_LE_LINE, "first", __LINE__);
    feed_more(&f, "\x1b[A\x1b[A\x1b[A\x1b[A\x1b[B\r"); /* first second first: Up stops at the oldest */
    expect_line(&f, HR_LE_LINE, "second", __LINE__);
    feed_more(&f, "typing\x10\x10\x0e\x0e!\r"); /* Ctrl-P/N away and back to the line being typed */
    expect_line(&f, HR_LE_LINE, "typing!", __LINE__);
    feed_more(&f, "\x1b[Bx\r"); /* Down past the newest: nothing */
    expect_line(&f, HR_LE_LINE, "x", __LINE__);
    feed_more(&f, "\x1b[A\x7f\x7f\r"); /* an edited recall */
    expect_line(&f, HR_LE_LINE, "", __LINE__);
    CHECKF(f.le.n_hist == 6 && !strcmp(f.le.hist[f.le.n_hist - 1], "x"), "%zu entries", f.le.n_hist);
    feed_close(&f);
    /* The history keeps the newest HR_LE_HISTORY_MAX lines. */
    hr_lineedit le;
    hr_le_init(&le, -1, -1);
    char s[16];
    for (int i = 0; i < HR_LE_HISTORY_MAX + 44; i++) {
        snprintf(s, sizeof s, "%d", i);
        CHECK(!hr_le_history_add(&le, s));
    }
    CHECK(le.n_hist == HR_LE_HISTORY_MAX && !strcmp(le.hist[0], "44"));
    hr_le_free(&le);
}

/* What the editor draws: the prompt, the typed text between the colour codes, erase to the end of the row. */
static void drawing(void) {
    char path[256];
    hr_test_tmp(path, sizeof path, "lineedit.out");
    int out = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600), p[2];
    if (out < 0 || pipe(p)) { perror(path); exit(1); }
    if (write(p[1], "hi\r", 3) != 3) exit(1);
    close(p[1]);
    hr_lineedit le;
    hr_le_init(&le, p[0], out);
    le.color = "\x1b[1;32m", le.color_end = "\x1b[0m";
    char *line = NULL;
    size_t len;
    CHECK(hr_le_read(&le, "> ", &line, &len) == HR_LE_LINE && !strcmp(line, "hi"));
    free(line);
    char buf[512] = {0};
    ssize_t n = pread(out, buf, sizeof buf - 1, 0);
    CHECK(n > 0 && strstr(buf, "\r> \x1b[1;32mhi\x1b[0m\x1b[0K\r\x1b[4C"));
    close(out), close(p[0]), unlink(path);
    hr_le_free(&le);
}

/* The history kept in a file: lines typed in one editor come back in the next (escaped text
 * included), the file is the owner's only, missing directories are made, only the newest
 * entries are read and a long file is rewritten with them; an unusable path is an error. */
static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    char *b = calloc(1, 1 << 16);
    if (f && b) (void)!fread(b, 1, (1 << 16) - 1, f);
    if (f) fclose(f);
    return b;
}

static void persisted(void) {
    char dir[256], path[300], err[256];
    hr_test_tmp(dir, sizeof dir, "lineedit_hist");
    snprintf(path, sizeof path, "%s/state/hearth/chat_history", dir);
    feed f;
    static const char typed[] = "first\r" "a \\ b\r" "tab\there\r";
    feed_open(&f, typed, sizeof typed - 1);
    CHECKF(!hr_le_history_persist(&f.le, path, err, sizeof err), "%s", err);
    CHECK(f.le.n_hist == 0);
    expect_line(&f, HR_LE_LINE, "first", __LINE__);
    expect_line(&f, HR_LE_LINE, "a \\ b", __LINE__);
    expect_line(&f, HR_LE_LINE, "tab\there", __LINE__);
    feed_close(&f);
    char *text = slurp(path);
    CHECKF(text && !strcmp(text, "first\na \\\\ b\ntab\\x09here\n"), "file holds '%s'", text ? text : "");
    free(text);
    struct stat st;
    CHECK(!stat(path, &st) && (st.st_mode & 0777) == 0600);
    /* a second editor: Up recalls the first one's lines, newest first */
    static const char up[] = "\x1b[A\x1b[A\r";
    feed_open(&f, up, sizeof up - 1);
    CHECKF(!hr_le_history_persist(&f.le, path, err, sizeof err), "%s", err);
    CHECK(f.le.n_hist == 3 && !strcmp(f.le.hist[2], "tab\there"));
    expect_line(&f, HR_LE_LINE, "a \\ b", __LINE__);
    feed_close(&f);
    /* a file of 3 x HR_LE_HISTORY_MAX lines: the newest are read and the file is cut to them */
    FILE *w = fopen(path, "w");
    for (int i = 0; w && i < 3 * HR_LE_HISTORY_MAX; i++) fprintf(w, "line %d\n", i);
    if (w) fclose(w);
    hr_lineedit le;
    hr_le_init(&le, -1, -1);
    CHECKF(!hr_le_history_persist(&le, path, err, sizeof err), "%s", err);
    CHECK(le.n_hist == HR_LE_HISTORY_MAX && !strcmp(le.hist[0], "line 512") && !strcmp(le.hist[HR_LE_HISTORY_MAX - 1], "line 767"));
    hr_le_free(&le);
    text = slurp(path);
    int lines = 0;
    for (const char *p = text; p && *p; p++) lines += *p == '\n';
    CHECKF(lines == HR_LE_HISTORY_MAX && !strncmp(text, "line 512\n", 9), "%d lines after the rewrite", lines);
    free(text);
    /* a path under a regular file cannot be made: an error naming it, the history in memory */
    char bad[400];
    snprintf(bad, sizeof bad, "%s/chat_history/below", path);
    hr_le_init(&le, -1, -1);
    CHECK(hr_le_history_persist(&le, bad, err, sizeof err) == -1 && strstr(err, path) && !le.hist_path);
    CHECK(!hr_le_history_add(&le, "kept in memory") && le.n_hist == 1);
    hr_le_free(&le);
    unlink(path);
}

int main(void) {
    editing_keys();
    utf8();
    control();
    history();
    drawing();
    persisted();
    return TEST_END();
}
