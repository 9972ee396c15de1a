/* GBNF parser and matcher: good and bad grammars with exact error positions, random input
 * that must never crash or hang, and strings each grammar must accept or reject, checked both
 * through single-token tests (allows/accept) and through the whole-vocabulary mask (apply),
 * whose trie walk is a separate code path. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "grammar/grammar.h"
#include "testutil.h"

/* ---- parser ---- */

static void parse_ok(const char *src) {
    hr_err e = {{0}};
    hr_grammar *g = hr_grammar_parse(src, strlen(src), NULL, &e);
    CHECKF(g != NULL, "%s\n--- %s", e.msg, src);
    hr_grammar_free(g);
}

static void parse_bad(const char *src, const char *msg) {
    hr_err e = {{0}};
    hr_grammar *g = hr_grammar_parse(src, strlen(src), NULL, &e);
    CHECKF(g == NULL, "accepted: %s", src);
    CHECKF(strstr(e.msg, msg) != NULL, "got '%s', want '%s'", e.msg, msg);
    hr_grammar_free(g);
}

static void test_parser(void) {
    parse_ok("root ::= \"a\"");
    parse_ok("root ::= \"a\" | \"b\" # comment\n\n# more\nx ::= [a-z]+");
    parse_ok("root ::= (\"a\"\n  | \"b\"\n  )* \"c\"? [^\\x00-\\x1F\"]{2,5} .{3} [0-9]{1,}\n");
    parse_ok("root ::= \"\\x41\\u00e9\\U0001F600\\n\\t\\r\\\\\\\"\\[\\]\\-\"");
    parse_ok("root ::= [\\]\\[a-] \"é\" [ぁ-ゟ]");
    parse_ok("root ::=\n  \"{\" ws (\n    \"x\"\n  )? \"}\"\nws ::= | \" \"\r\n");
    parse_ok("root ::= a\na ::= \"x\" a | \"y\""); /* right recursion is fine */
    parse_ok("root ::= \"a\"{0,3000}"); /* llama.cpp: a maximum over 2000 means none */
    parse_bad("root ::= \"a", "grammar:1:12: unterminated string literal");
    parse_bad("root ::= foo", "grammar:1:10: undefined rule 'foo'");
    parse_bad("root ::= \"a\"\n  x := y", "grammar:2:5: expected '::='");
    parse_bad("root ::= \"a\"\n  x ::= y", "grammar:2:9: undefined rule 'y'");
    parse_bad("root ::= (\"a\" | \"b\"", "grammar:1:10: unclosed '('");
    parse_bad("root ::= [a-z", "grammar:1:10: unterminated character class");
    parse_bad("root ::= \"\\q\"", "grammar:1:11: unknown escape '\\q'");
    parse_bad("root ::= \"\\x4g\"", "grammar:1:14: expected 2 hex digits");
    parse_bad("root ::= * \"a\"", "grammar:1:10: '*' has no item before it");
    parse_bad("root ::= \"a\"{3,2}", "grammar:1:13: repetition {3,2}: the maximum is below the minimum");
    parse_bad("root ::= \"a\"{2001}", "over the limit of 2000");
    parse_bad("root ::= (\"a\"{0,50}){0,50}", "repetition too large");
    parse_ok("root ::= (\"a\"{50}){40}");
    parse_bad("root ::= \"a\" )", "grammar:1:14: unexpected ')'");
    parse_bad("root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"", "grammar:2:1: rule 'expr' is left-recursive");
    parse_bad("root ::= e? root \"x\" | \"y\"\ne ::= \"z\"", "rule 'root' is left-recursive");
    parse_bad("root ::= \"a\" root", "grammar:1:1: rule 'root' can never complete");
    parse_bad("root ::= [b-a]", "can never complete");
    parse_bad("root ::= [^\\x00-\\U0010FFFF]", "can never complete");
    parse_bad("root ::= []", "grammar:1:10: empty character class");
    parse_bad("top ::= \"a\"", "no rule named 'root'");
    parse_bad("root ::= \"a\"\nroot ::= \"b\"", "grammar:2:1: rule 'root' is defined twice");
    parse_bad("root ::= <[12]>", "token references");
    parse_bad("ro_ot ::= \"a\"", "grammar:1:3: expected '::='");
    parse_bad("", "no rules");
    parse_bad("root ::= \"\xC3\"", "invalid UTF-8");
    parse_bad("root ::= \"é\" \"\\q", "grammar:1:15: unknown escape"); /* columns count characters */
    /* nesting and size limits instead of exhausting the stack */
    char *deep = malloc(20000);
    strcpy(deep, "root ::= ");
    for (int i = 0; i < 5000; i++) strcat(deep + 9 + i, "("), deep[10 + i] = 0;
    parse_bad(deep, "nested too deeply");
    free(deep);
    hr_err e = {{0}};
    hr_grammar *g = hr_grammar_parse("x ::= \"a\"", 9, "x", &e);
    CHECKF(g != NULL, "%s", e.msg);
    hr_grammar_free(g);
}

/* Random bytes and random mutations of a valid grammar: must return (a grammar or an error
 * with a position), never crash or hang. */
static void test_fuzz(void) {
    static const char *seed = "root ::= (item \",\")* item\nitem ::= [a-z]+ | \"\\\"\" [^\"]* \"\\\"\" | \"{\" ws \"}\" | x{2,4}\nx ::= \"é\"?\nws ::= [ \\t]*\n";
    static const char alphabet[] = "ab:=|()[]{}*+?.\"\\^-#\n \t,0129xuU_<>!";
    hr_rng r = {42};
    char buf[512];
    for (int it = 0; it < 4000; it++) {
        size_t n;
        if (it % 2) {
            n = (size_t)(hr_rng_next(&r) % 200);
            for (size_t i = 0; i < n; i++) buf[i] = alphabet[hr_rng_next(&r) % (sizeof alphabet - 1)];
        } else {
            n = strlen(seed);
            memcpy(buf, seed, n);
            for (int k = 0; k < 3; k++) {
                size_t at = (size_t)(hr_rng_next(&r) % n);
                uint64_t op = hr_rng_next(&r) % 3;
                if (op == 0) buf[at] = alphabet[hr_rng_next(&r) % (sizeof alphabet - 1)];
                else if (op == 1 && n > 1) memmove(buf + at, buf + at + 1, n - at - 1), n--;
                else if (n < sizeof buf - 1) memmove(buf + at + 1, buf + at, n - at), buf[at] = (char)(hr_rng_next(&r) & 0xFF), n++;
            }
        }
        hr_err e = {{0}};
        hr_grammar *g = hr_grammar_parse(buf, n, NULL, &e);
        if (!g) CHECKF(!strncmp(e.msg, "grammar", 7), "message '%s'", e.msg);
        hr_grammar_free(g);
    }
}

/* ---- matcher ---- */

/* A small SPM vocabulary: <unk> <s> </s>, the 256 byte tokens, then some multi-byte pieces. */
static const char *extra[] = {"ab", "abc", "{\"", "\"}", "true", "false", "▁the", "é", "\xC3", "ü\"", "12", "3.5", ",▁", "<tag>"};
#define N_EXTRA (int)(sizeof extra / sizeof *extra)
enum { T_EOS = 2, T_BYTE0 = 3, T_EXTRA = 3 + 256 };

static hr_tokenizer *make_tok(void) {
    int n = T_EXTRA + N_EXTRA;
    char **text = calloc((size_t)n, sizeof *text);
    float *scores = calloc((size_t)n, sizeof *scores);
    int32_t *types = calloc((size_t)n, sizeof *types);
    text[0] = "<unk>", text[1] = "<s>", text[2] = "</s>";
    types[0] = HR_TT_UNKNOWN, types[1] = HR_TT_CONTROL, types[2] = HR_TT_CONTROL;
    char (*bytes)[8] = malloc(256 * 8);
    for (int b = 0; b < 256; b++) snprintf(bytes[b], 8, "<0x%02X>", b), text[T_BYTE0 + b] = bytes[b], types[T_BYTE0 + b] = HR_TT_BYTE;
    for (int i = 0; i < N_EXTRA; i++) text[T_EXTRA + i] = (char *)extra[i], types[T_EXTRA + i] = HR_TT_NORMAL, scores[T_EXTRA + i] = -1.0f - (float)i;
    types[T_EXTRA + N_EXTRA - 1] = HR_TT_CONTROL; /* "<tag>": a control token, its text rendered */
    hr_vocab_desc d = {.kind = HR_TOK_SPM, .n = (uint32_t)n, .text = text, .scores = scores, .types = types,
                       .bos = 1, .eos = 2, .unk = 0, .pad = -1, .add_bos = true};
    hr_tokenizer *t = NULL;
    hr_err e = {{0}};
    CHECKF(hr_tok_new(&t, &d, &e) == 0, "%s", e.msg);
    free(text), free(scores), free(types), free(bytes);
    return t;
}

static int32_t find_extra(const char *piece) {
    for (int i = 0; i < N_EXTRA; i++)
        if (!strcmp(extra[i], piece)) return T_EXTRA + i;
    return -1;
}

/* apply() and allows() must agree on every token. */
static void check_consistent(hr_grammar_sampler *gs, const hr_tokenizer *tok, float *lg) {
    int32_t nv = hr_tok_n_vocab(tok), n_allowed = 0;
    for (int32_t i = 0; i < nv; i++) lg[i] = 0.0f;
    int32_t count = hr_grammar_sampler_apply(gs, lg);
    for (int32_t i = 0; i < nv; i++) {
        bool a = lg[i] == 0.0f;
        n_allowed += a;
        CHECKF(a == hr_grammar_sampler_allows(gs, i), "token %d: apply says %d, allows says %d", i, a, !a);
    }
    CHECK(count == n_allowed);
}

/* Feeds text as one token per byte (or the named multi-byte tokens), then asks for EOS.
 * Returns true if every token and the final EOS were allowed. */
static bool accepts_tokens(const char *gbnf, const int32_t *toks, int n, bool need_eos) {
    hr_err e = {{0}};
    hr_grammar *g = hr_grammar_parse(gbnf, strlen(gbnf), NULL, &e);
    CHECKF(g != NULL, "%s", e.msg);
    if (!g) return false;
    hr_tokenizer *tok = make_tok();
    hr_grammar_sampler *gs = hr_grammar_sampler_new(g, tok, &e);
    CHECKF(gs != NULL, "%s", e.msg);
    float *lg = malloc((size_t)hr_tok_n_vocab(tok) * sizeof *lg);
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        check_consistent(gs, tok, lg);
        ok = hr_grammar_sampler_allows(gs, toks[i]);
        if (ok) CHECKF(hr_grammar_sampler_accept(gs, toks[i], &e) == 0, "%s", e.msg);
        else CHECK(hr_grammar_sampler_accept(gs, toks[i], &e) < 0);
    }
    if (ok) check_consistent(gs, tok, lg);
    if (ok && need_eos) ok = hr_grammar_sampler_allows(gs, T_EOS) && hr_grammar_sampler_accept(gs, T_EOS, &e) == 0;
    if (ok && need_eos) CHECK(hr_grammar_sampler_done(gs));
    free(lg);
    hr_grammar_sampler_free(gs);
    hr_tok_free(tok);
    hr_grammar_free(g);
    return ok;
}

static bool accepts(const char *gbnf, const char *text) {
    int32_t toks[256];
    int n = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p && n < 256; p++) toks[n++] = T_BYTE0 + *p;
    return accepts_tokens(gbnf, toks, n, true);
}

static bool accepts_prefix(const char *gbnf, const char *text) {
    int32_t toks[256];
    int n = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p && n < 256; p++) toks[n++] = T_BYTE0 + *p;
    return accepts_tokens(gbnf, toks, n, false);
}

#define YES(g, s) CHECKF(accepts(g, s), "'%s' should match %s", s, g)
#define NO(g, s) CHECKF(!accepts(g, s), "'%s' should not match %s", s, g)

static const char *json =
    "root   ::= object\n"
    "value  ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n"
    "object ::= \"{\" ws ( string \":\" ws value (\",\" ws string \":\" ws value)* )? \"}\" ws\n"
    "array  ::= \"[\" ws ( value (\",\" ws value)* )? \"]\" ws\n"
    "string ::= \"\\\"\" ( [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\bfnrt] | \"u\" [0-9a-fA-F]{4}) )* \"\\\"\" ws\n"
    "number ::= (\"-\"? ([0-9] | [1-9] [0-9]{0,15})) (\".\" [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws\n"
    "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n";

static void test_matcher(void) {
    YES("root ::= \"abc\"", "abc");
    NO("root ::= \"abc\"", "ab");
    NO("root ::= \"abc\"", "abcd");
    YES("root ::= [a-c]+ \"!\"", "abcab!");
    NO("root ::= [a-c]+ \"!\"", "!");
    YES("root ::= [^a-c]{2}", "xy");
    NO("root ::= [^a-c]{2}", "xa");
    YES("root ::= \"a\"{2,3}", "aaa");
    NO("root ::= \"a\"{2,3}", "a");
    NO("root ::= \"a\"{2,3}", "aaaa");
    YES("root ::= \"a\"{2,}", "aaaaaaa");
    YES("root ::= \"x\" \"y\"? \"z\"*", "x");
    YES("root ::= \"x\" \"y\"? \"z\"*", "xyzzz");
    NO("root ::= \"x\" \"y\"? \"z\"*", "xyy");
    YES("root ::= . . .", "aé!");     /* '.' is one code point, not one byte */
    NO("root ::= . .", "aé!");
    YES("root ::= [à-ÿ]", "é");
    NO("root ::= [à-ÿ]", "a");
    YES("root ::= \"\\U0001F600\"", "\xF0\x9F\x98\x80");
    YES("root ::= item+\nitem ::= \"- \" [^\\r\\n]+ \"\\n\"", "- one\n- two\n");
    NO("root ::= item+\nitem ::= \"- \" [^\\r\\n]+ \"\\n\"", "- one\n-two\n");
    YES("root ::= a\na ::= \"(\" a \")\" | \"\"", "((()))");
    NO("root ::= a\na ::= \"(\" a \")\" | \"\"", "(()");
    YES(json, "{\"a\": [1, 2.5e3, true, null, \"x\\u00e9\"], \"b\": {}}");
    YES(json, "{ }");
    NO(json, "{\"a\" 1}");
    NO(json, "[1]");
    NO(json, "{\"a\": 01}");
    YES(json, "{\"k\": \"é ü\"}");
    /* tokens spanning several elements, and partial UTF-8 across tokens */
    int32_t ab = find_extra("ab"), abc = find_extra("abc"), e_ = find_extra("é"), c3 = find_extra("\xC3"), tr = find_extra("true");
    int32_t seq1[] = {abc};
    CHECK(accepts_tokens("root ::= \"a\" \"b\" [c-d]", seq1, 1, true));
    int32_t seq2[] = {ab, T_BYTE0 + 'c'};
    CHECK(accepts_tokens("root ::= \"a\" \"b\" [c-d]", seq2, 2, true));
    int32_t seq3[] = {c3, T_BYTE0 + 0xA9}; /* é as two tokens */
    CHECK(accepts_tokens("root ::= \"é\"", seq3, 2, true));
    int32_t seq4[] = {c3};
    CHECK(accepts_tokens("root ::= \"ü\"", seq4, 1, false));
    CHECK(!accepts_tokens("root ::= \"a\"", seq4, 1, false));
    int32_t seq5[] = {c3, T_BYTE0 + 'a'}; /* a broken continuation is refused */
    CHECK(!accepts_tokens("root ::= . .", seq5, 2, false));
    int32_t seq6[] = {e_};
    CHECK(accepts_tokens("root ::= [^a]", seq6, 1, true));
    int32_t seq7[] = {tr};
    CHECK(!accepts_tokens("root ::= \"tru\"", seq7, 1, false));
    CHECK(accepts_tokens("root ::= \"true\" \"!\"", seq7, 1, false));
    /* control tokens are matched by their text, as llama.cpp does */
    int32_t seq8[] = {find_extra("<tag>")};
    CHECK(accepts_tokens("root ::= \"<tag>\"", seq8, 1, true));
    /* prefix: an incomplete text is allowed, but EOS is not */
    CHECK(accepts_prefix("root ::= \"abc\"", "ab"));
    CHECK(!accepts("root ::= \"abc\"", "ab"));
}

/* done(), reset() and greedy choice among allowed tokens. */
static void test_state(void) {
    hr_err e = {{0}};
    const char *src = "root ::= \"ab\" | \"a\" \"c\"+";
    hr_grammar *g = hr_grammar_parse(src, strlen(src), NULL, &e);
    hr_tokenizer *tok = make_tok();
    hr_grammar_sampler *gs = hr_grammar_sampler_new(g, tok, &e);
    int32_t nv = hr_tok_n_vocab(tok);
    float *lg = malloc((size_t)nv * sizeof *lg);
    for (int round = 0; round < 2; round++) {
        CHECK(!hr_grammar_sampler_done(gs));
        CHECK(hr_grammar_sampler_accept(gs, T_BYTE0 + 'a', &e) == 0);
        CHECK(!hr_grammar_sampler_done(gs));
        CHECK(!hr_grammar_sampler_allows(gs, T_EOS));
        CHECK(hr_grammar_sampler_accept(gs, T_BYTE0 + 'b', &e) == 0);
        CHECK(hr_grammar_sampler_done(gs)); /* nothing can follow "ab" */
        for (int32_t i = 0; i < nv; i++) lg[i] = 1.0f;
        CHECK(hr_grammar_sampler_apply(gs, lg) == 1 && lg[T_EOS] == 1.0f); /* only EOS */
        CHECK(hr_grammar_sampler_accept(gs, T_BYTE0 + 'c', &e) < 0);
        CHECK(strstr(e.msg, "not allowed") != NULL);
        hr_grammar_sampler_reset(gs);
    }
    CHECK(hr_grammar_sampler_accept(gs, T_BYTE0 + 'a', &e) == 0);
    CHECK(hr_grammar_sampler_accept(gs, T_BYTE0 + 'c', &e) == 0);
    CHECK(!hr_grammar_sampler_done(gs) && hr_grammar_sampler_allows(gs, T_EOS));
    CHECK(hr_grammar_sampler_error(gs) == NULL);
    free(lg);
    hr_grammar_sampler_free(gs);
    hr_tok_free(tok);
    hr_grammar_free(g);
}

/* A grammar with exponentially many parses must stay bounded, never hang. */
static void test_ambiguous(void) {
    hr_err e = {{0}};
    const char *src = "root ::= x*\nx ::= \"a\" | \"a\" \"a\" | \"a\" \"a\" \"a\"";
    hr_grammar *g = hr_grammar_parse(src, strlen(src), NULL, &e);
    hr_tokenizer *tok = make_tok();
    hr_grammar_sampler *gs = hr_grammar_sampler_new(g, tok, &e);
    float *lg = malloc((size_t)hr_tok_n_vocab(tok) * sizeof *lg);
    for (int i = 0; i < 200; i++) {
        CHECK(hr_grammar_sampler_apply(gs, lg) > 0);
        CHECK(hr_grammar_sampler_accept(gs, T_BYTE0 + 'a', &e) == 0);
    }
    free(lg);
    hr_grammar_sampler_free(gs);
    hr_tok_free(tok);
    hr_grammar_free(g);
}

int main(void) {
    test_parser();
    test_fuzz();
    test_matcher();
    test_state();
    test_ambiguous();
    return TEST_END();
}
