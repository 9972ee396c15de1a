/* The conversation of hearth chat (cli/chat_conv.c): dropping the oldest turn keeps the
 * system message; /save then /load gives back every message byte for byte (quotes,
 * backslashes, control characters, multi-byte UTF-8), other writers' JSON (escapes, surrogate
 * pairs, unknown keys, a bare array) reads as JSON means it, and bad files get one message
 * naming the line. tests/cli/chat.sh checks the saved file with python3's json module. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "chat_conv.h"
#include "testutil.h"


static void push(hr_conv *cv, const char *role, const char *s) { CHECK(!hr_conv_push(cv, role, s, strlen(s))); }

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); exit(1); }
    fputs(text, f);
    fclose(f);
}

static void trimming(void) {
    hr_conv cv = {0};
    push(&cv, "system", "S");
    push(&cv, "user", "u1"), push(&cv, "assistant", "a1");
    push(&cv, "user", "u2"), push(&cv, "assistant", "a2"), push(&cv, "user", "u3");
    CHECK(hr_conv_first(&cv) == 1 && hr_conv_can_drop(&cv));
    CHECK(hr_conv_drop_turn(&cv) == 2);
    CHECK(cv.n == 4 && !strcmp(cv.msgs[0].content, "S") && !strcmp(cv.msgs[1].content, "u2"));
    CHECK(hr_conv_drop_turn(&cv) == 2);
    CHECK(cv.n == 2 && !strcmp(cv.msgs[1].content, "u3") && !hr_conv_can_drop(&cv));
    hr_conv_free(&cv);
    /* Without a system message the first message goes; a turn of several replies goes whole. */
    push(&cv, "user", "u1"), push(&cv, "assistant", "a1"), push(&cv, "assistant", "a1b"), push(&cv, "user", "u2");
    CHECK(hr_conv_first(&cv) == 0 && hr_conv_drop_turn(&cv) == 3 && cv.n == 1);
    hr_conv_free(&cv);
}

static void round_trip(void) {
    char path[256], err[512];
    hr_test_tmp(path, sizeof path, "conv.json");
    const char *texts[] = {
        "Answer \"briefly\".",
        "back\\slash, tab\there, new\nline, cr\r, ctl \x01\x1f, del \x7f",
        "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xc3\xa9 \xf0\x9f\x98\x80 </script> \\u0041",
        "",
    };
    const char *roles[] = {"system", "user", "assistant", "user"};
    hr_conv cv = {0}, back = {0};
    for (int i = 0; i < 4; i++) push(&cv, roles[i], texts[i]);
    CHECK(!hr_conv_save(&cv, path, err, sizeof err));
    CHECKF(!hr_conv_load(&back, path, err, sizeof err), "%s", err);
    CHECK(back.n == 4);
    for (size_t i = 0; i < back.n && i < 4; i++)
        CHECKF(!strcmp(back.msgs[i].role, roles[i]) && !strcmp(back.msgs[i].content, texts[i]), "message %zu", i);
    hr_conv_free(&back);
    /* An empty conversation, and invalid UTF-8 (written as U+FFFD). */
    hr_conv_free(&cv);
    CHECK(!hr_conv_save(&cv, path, err, sizeof err) && !hr_conv_load(&back, path, err, sizeof err) && back.n == 0);
    push(&cv, "user", "a\xff" "b\xc3");
    CHECK(!hr_conv_save(&cv, path, err, sizeof err) && !hr_conv_load(&back, path, err, sizeof err));
    CHECK(back.n == 1 && !strcmp(back.msgs[0].content, "a\xef\xbf\xbd" "b\xef\xbf\xbd"));
    hr_conv_free(&cv), hr_conv_free(&back);
    unlink(path);
}

static void other_writers(void) {
    char path[256], err[512];
    hr_test_tmp(path, sizeof path, "conv2.json");
    hr_conv cv = {0};
    write_file(path, " {\"model\": \"x\", \"stream\": true, \"n\": -1.5e3, \"opts\": {\"a\": [1, null, {\"b\": false}]},\n"
                     "  \"messages\": [ {\"content\": \"\\ud83d\\ude00 \\u00e9\\/\\b\\f\", \"name\": \"n\", \"role\": \"user\"},\n"
                     "  {\"role\": \"assistant\", \"content\": \"two\\nlines\"} ] }\n");
    CHECKF(!hr_conv_load(&cv, path, err, sizeof err), "%s", err);
    CHECK(cv.n == 2 && !strcmp(cv.msgs[0].role, "user") && !strcmp(cv.msgs[0].content, "\xf0\x9f\x98\x80 \xc3\xa9/\b\f"));
    CHECK(cv.n == 2 && !strcmp(cv.msgs[1].content, "two\nlines"));
    hr_conv_free(&cv);
    write_file(path, "[{\"role\": \"user\", \"content\": \"hi\"}]");
    CHECK(!hr_conv_load(&cv, path, err, sizeof err) && cv.n == 1);
    hr_conv_free(&cv);
    unlink(path);
}

/* Each bad file fails with a message holding want. */
static void bad(const char *text, const char *want) {
    char path[256], err[512] = "";
    hr_test_tmp(path, sizeof path, "bad.json");
    write_file(path, text);
    hr_conv cv = {0};
    CHECKF(hr_conv_load(&cv, path, err, sizeof err) && strstr(err, want) && cv.n == 0, "'%s': got '%s', want '%s'", text,
           err, want);
    hr_conv_free(&cv);
    unlink(path);
}

static void bad_files(void) {
    bad("", "line 1, column 1: expected a value");
    bad("5", "line 1: expected a JSON object");
    bad("{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}", "line 1, column 47: expected ',' or ']'");
    bad("{\"messages\": [\n{\"role\": \"tool\", \"content\": \"x\"}]}", "line 2: message 1: unknown role 'tool'");
    bad("{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}, {\"role\": \"system\", \"content\": \"s\"}]}",
        "message 2: a system message must come first");
    bad("{\"messages\": [{\"role\": \"user\"}]}", "message 1 has no content");
    bad("{\"messages\": [{\"content\": \"x\"}]}", "message 1 has no role");
    bad("{\"messages\": [{\"role\": \"user\", \"content\": 5}]}", "message 1: the content is not a string");
    bad("{\"messages\": [{\"role\": 1, \"content\": \"x\"}]}", "message 1: the role is not a string");
    bad("{\"messages\": [3]}", "message 1 is not an object");
    bad("{\"messages\": {}}", "\"messages\" is not an array");
    bad("{\"messages\": [{\"role\": \"user\", \"content\": \"lone \\ud800 x\"}]}", "high surrogate without its low half");
    bad("{\"messages\": [{\"role\": \"user\", \"content\": \"a\nb\"}]}", "control character in a string");
    bad("{\"messages\": [{\"role\": \"user\", \"content\": \"\\q\"}]}", "unknown escape in a string");
    bad("{\"messages\": [{\"role\": \"user\", \"content\": \"\\u12\"}]}", "\\u needs 4 hex digits");
    bad("{\"messages\": [{\"role\": \"user\", \"content\": \"x}]}", "unterminated string");
    bad("{\"messages\": []} x", "unexpected text after the value");
    bad("{\"model\": \"m\"}", "no \"messages\" array");
    char deep[400] = "{\"x\": ";
    for (int i = 0; i < 100; i++) strcat(deep, "[");
    bad(deep, "nesting deeper than 64 levels");
    char err[512];
    hr_conv cv = {0};
    CHECK(hr_conv_load(&cv, "/nonexistent/chat.json", err, sizeof err) && strstr(err, "cannot read '/nonexistent/chat.json'"));
    CHECK(hr_conv_load(&cv, "/tmp", err, sizeof err) && strstr(err, "/tmp"));
    CHECK(hr_conv_save(&cv, "/nonexistent/chat.json", err, sizeof err) && strstr(err, "cannot write /nonexistent/chat.json"));
}

int main(void) {
    trimming();
    round_trip();
    other_writers();
    bad_files();
    return TEST_END();
}
