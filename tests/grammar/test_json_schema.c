/* JSON schema to GBNF: the JSON reader on good and bad text, then schemas converted,
 * parsed by the GBNF parser and run through the matcher byte by byte: instances that
 * satisfy the schema must be accepted and instances that violate it rejected; integer
 * ranges are checked against plain arithmetic over a window of numbers. Bad schemas must
 * give one clear error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "grammar/grammar.h"
#include "util/json.h"
#include "testutil.h"

/* ---- JSON reader ---- */

static void test_reader(void) {
    hr_err e = {{0}};
    const char *t = " {\"a\": [1, -2.5e3, true, false, null], \"b\\u00e9\\ud83d\\ude00\": \"x\\n\\\"\", \"a\": 7} ";
    hr_json_doc *d = hr_json_parse(t, strlen(t), NULL, &e);
    CHECKF(d, "%s", e.msg);
    if (d) {
        const hr_json *r = hr_json_root(d);
        CHECK(r->type == HR_JSON_OBJECT && r->n == 3);
        CHECK(hr_json_get(r, "a")->type == HR_JSON_NUMBER && hr_json_get(r, "a")->i == 7); /* last wins */
        const hr_json *a = &r->items[0];
        CHECK(a->type == HR_JSON_ARRAY && a->n == 5);
        CHECK(a->items[0].is_int && a->items[0].i == 1);
        CHECK(!a->items[1].is_int && a->items[1].num == -2500.0);
        CHECK(a->items[2].type == HR_JSON_BOOL && a->items[2].boolean && !a->items[3].boolean);
        CHECK(a->items[4].type == HR_JSON_NULL);
        CHECK(hr_json_is(&r->keys[1], "b\xC3\xA9\xF0\x9F\x98\x80"));
        CHECK(hr_json_is(&r->items[1], "x\n\""));
        size_t n;
        char *dump = hr_json_dump(r, &n);
        CHECKF(dump && !strcmp(dump, "{\"a\":[1,-2.5e3,true,false,null],\"b\xC3\xA9\xF0\x9F\x98\x80\":\"x\\n\\\"\",\"a\":7}"),
               "dump %s", dump);
        free(dump);
        hr_json_free(d);
    }
    /* NUL inside a string survives with its length */
    d = hr_json_parse("\"a\\u0000b\"", 10, NULL, &e);
    CHECK(d && hr_json_root(d)->len == 3 && hr_json_root(d)->str[1] == 0);
    hr_json_free(d);

    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"", "line 1, column 1: expected a value"},
        {"{\"a\" 1}", "line 1, column 6: expected ':'"},
        {"[1,\n 2,,3]", "line 2, column 4: expected a value"},
        {"{\"a\":1,}", "line 1, column 8: expected a string key"},
        {"[1 2]", "line 1, column 4: expected ',' or ']'"},
        {"\"abc", "unterminated string"},
        {"\"a\x01\"", "control character"},
        {"\"\\x\"", "unknown escape"},
        {"\"\\ud800\"", "high surrogate"},
        {"\"\\udc00\"", "low surrogate"},
        {"\"\\u12g4\"", "4 hex digits"},
        {"\"\xC3\x28\"", "invalid UTF-8"},
        {"\"\xED\xA0\x80\"", "invalid UTF-8"}, /* an encoded surrogate */
        {"01", "unexpected text"},
        {"-", "expected a digit"},
        {"1.", "after '.'"},
        {"1e+", "exponent"},
        {"tru", "expected a value"},
        {"{} x", "line 1, column 4: unexpected text after the value"},
        {"\"é\" x", "line 1, column 5"}, /* columns count characters */
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        d = hr_json_parse(bad[k].text, strlen(bad[k].text), NULL, &e);
        CHECKF(!d && strstr(e.msg, bad[k].msg) && !strncmp(e.msg, "invalid JSON at line ", 21), "'%s': %s",
               bad[k].text, d ? "parsed" : e.msg);
        hr_json_free(d);
    }
    /* depth and size limits */
    char deep[400];
    memset(deep, '[', 200), memset(deep + 200, ']', 200);
    hr_json_limits lim = {.max_depth = 64};
    d = hr_json_parse(deep, sizeof deep, &lim, &e);
    CHECKF(!d && strstr(e.msg, "nesting deeper than 64"), "%s", e.msg);
    lim.max_depth = 200;
    d = hr_json_parse(deep, sizeof deep, &lim, &e);
    CHECKF(d, "%s", e.msg);
    hr_json_free(d);
    lim.max_bytes = 100;
    d = hr_json_parse(deep, sizeof deep, &lim, &e);
    CHECKF(!d && strstr(e.msg, "over the limit"), "%s", e.msg);
}

/* ---- matching ---- */

/* An SPM vocabulary of the 256 byte tokens: byte b is token 3 + b, end of text 2. */
enum { T_EOS = 2, T_BYTE0 = 3 };

static hr_tokenizer *make_tok(void) {
    int n = T_BYTE0 + 256;
    char *text[T_BYTE0 + 256], bytes[256][8];
    float scores[T_BYTE0 + 256] = {0};
    int32_t types[T_BYTE0 + 256];
    text[0] = "<unk>", text[1] = "<s>", text[2] = "</s>";
    types[0] = HR_TT_UNKNOWN, types[1] = HR_TT_CONTROL, types[2] = HR_TT_CONTROL;
    for (int b = 0; b < 256; b++) snprintf(bytes[b], 8, "<0x%02X>", b), text[T_BYTE0 + b] = bytes[b], types[T_BYTE0 + b] = HR_TT_BYTE;
    hr_vocab_desc d = {.kind = HR_TOK_SPM, .n = (uint32_t)n, .text = text, .scores = scores, .types = types,
                       .bos = 1, .eos = 2, .unk = 0, .pad = -1, .add_bos = true};
    hr_tokenizer *t = NULL;
    hr_err e = {{0}};
    CHECKF(hr_tok_new(&t, &d, &e) == 0, "%s", e.msg);
    return t;
}

typedef struct {
    hr_grammar *g;
    hr_grammar_sampler *gs;
    char *gbnf;
} compiled;

static bool compile(const hr_tokenizer *tok, const char *schema, compiled *out) {
    hr_err e = {{0}};
    memset(out, 0, sizeof *out);
    out->gbnf = hr_json_schema_to_gbnf(schema, strlen(schema), &e);
    CHECKF(out->gbnf, "schema %s: %s", schema, e.msg);
    if (!out->gbnf) return false;
    out->g = hr_grammar_parse(out->gbnf, strlen(out->gbnf), NULL, &e);
    CHECKF(out->g, "schema %s gave a grammar that does not parse: %s\n%s", schema, e.msg, out->gbnf);
    if (!out->g) return false;
    out->gs = hr_grammar_sampler_new(out->g, tok, &e);
    CHECKF(out->gs, "%s", e.msg);
    return out->gs != NULL;
}

static void release(compiled *c) {
    hr_grammar_sampler_free(c->gs);
    hr_grammar_free(c->g);
    free(c->gbnf);
}

/* Whether the grammar takes text byte by byte and then may end. */
static bool accepts(compiled *c, const char *text, size_t n) {
    hr_grammar_sampler_reset(c->gs);
    hr_err e = {{0}};
    for (size_t k = 0; k < n; k++) {
        int32_t t = T_BYTE0 + (unsigned char)text[k];
        if (!hr_grammar_sampler_allows(c->gs, t)) return false;
        if (hr_grammar_sampler_accept(c->gs, t, &e) < 0) return false;
    }
    return hr_grammar_sampler_allows(c->gs, T_EOS);
}

#define ACC(c, text) accepts(c, text, strlen(text))

#define MAX_CASES 16
typedef struct {
    const char *schema;
    const char *good[MAX_CASES];
    const char *bad[MAX_CASES];
} schema_case;

static const schema_case CASES[] = {
    {"{\"type\": \"string\"}", {"\"\"", "\"abc\"", "\"a\\\"b\\\\c\\u00e9\"", "\"\xC3\xA9\xE2\x82\xAC\""},
     {"abc", "\"a", "\"a\nb\"", "\"\\x\"", "\"\\u12\"", " \"a\"", "1"}},
    {"{\"type\": \"integer\"}", {"0", "-7", "1234567890123456"}, {"01", "-0x", "1.5", "1e3", "\"1\"", "12345678901234567"}},
    {"{\"type\": \"number\"}", {"0", "-1.25", "3e10", "2.5E-3", "7"}, {".5", "1.", "--1", "1e", "+1"}},
    {"{\"type\": \"boolean\"}", {"true", "false"}, {"True", "1", "null"}},
    {"{\"type\": \"null\"}", {"null"}, {"nul", "0", "\"null\""}},
    {"{\"type\": [\"string\", \"null\"]}", {"\"x\"", "null"}, {"1", "true"}},
    {"{\"type\": [\"integer\", \"string\"], \"minimum\": 3}", {"3", "99", "\"ab\""}, {"2", "-1", "null"}},
    {"{\"enum\": [\"red\", 2, null, {\"a\": [1]}]}", {"\"red\"", "2", "null", "{\"a\":[1]}"},
     {"\"blue\"", "3", "{\"a\": [1]}", "\"red\" "}},
    {"{\"type\": \"string\", \"enum\": [\"a\", 1, \"b\"]}", {"\"a\"", "\"b\""}, {"1"}},
    {"{\"const\": \"fixed \\\"q\\\"\\n\"}", {"\"fixed \\\"q\\\"\\n\""}, {"\"fixed\"", "\"fixed \\\"q\\\"\""}},
    /* objects: required in order, optional ones may be left out */
    {"{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}, \"age\": {\"type\": \"integer\"}},"
     " \"required\": [\"name\", \"age\"]}",
     {"{\"name\":\"Al\",\"age\":3}", "{ \"name\" : \"Al\",\n  \"age\": 3 }", "{\"name\":\"\",\"age\":-1}"},
     {"{\"age\":3,\"name\":\"Al\"}", "{\"name\":\"Al\"}", "{\"name\":\"Al\",\"age\":3,\"x\":1}", "{}",
      "{\"name\":\"Al\",\"age\":\"3\"}", "{\"name\":\"Al\",   \"age\":3}" /* more than one space */}},
    {"{\"properties\": {\"a\": {\"type\": \"integer\"}, \"b\": {\"type\": \"boolean\"}, \"c\": {\"type\": \"null\"}},"
     " \"required\": [\"b\"]}",
     {"{\"b\":true}", "{\"b\":true,\"a\":1}", "{\"b\":true,\"c\":null}", "{\"b\":false,\"a\":1,\"c\":null}"},
     {"{}", "{\"a\":1,\"b\":true}", "{\"b\":true,\"c\":null,\"a\":1}", "{\"b\":true,}", "{\"b\":true,\"d\":1}"}},
    {"{\"properties\": {\"a\": {\"type\": \"integer\"}, \"b\": {\"type\": \"integer\"}}}",
     {"{}", "{\"a\":1}", "{\"b\":2}", "{\"a\":1,\"b\":2}"}, {"{\"b\":2,\"a\":1}", "{\"a\":1,}", "{,}"}},
    {"{\"type\": \"object\"}", {"{}", "{\"x\":[1,{\"y\":null}],\"z\":\"s\"}"}, {"[]", "{\"x\"}", "{1:2}"}},
    {"{\"type\": \"object\", \"additionalProperties\": {\"type\": \"integer\"}}", {"{}", "{\"a\":1,\"b\":2}"},
     {"{\"a\":\"x\"}", "{\"a\":1,}"}},
    {"{\"type\": \"object\", \"properties\": {\"id\": {\"type\": \"integer\"}}, \"required\": [\"id\"],"
     " \"additionalProperties\": true}",
     {"{\"id\":1}", "{\"id\":1,\"x\":\"y\"}", "{\"id\":1,\"i\":2,\"idx\":[]}", "{\"id\":1,\"\":0}"},
     {"{\"x\":1}", "{\"id\":1,\"id\":2}", "{\"id\":1,\"x\"}"}},
    {"{\"type\": \"object\", \"properties\": {\"ab\": {\"type\": \"null\"}, \"abc\": {\"type\": \"null\"}},"
     " \"additionalProperties\": {\"type\": \"boolean\"}}",
     {"{}", "{\"ab\":null}", "{\"a\":true}", "{\"abcd\":false}", "{\"b\":true}", "{\"ab\":null,\"abc\":null,\"x\":true}"},
     {"{\"ab\":true}", "{\"abc\":true}", "{\"x\":null}"}},
    {"{\"properties\": {\"\": {\"type\": \"integer\"}, \"root\": {\"type\": \"null\"}}, \"required\": [\"\"]}",
     {"{\"\":1}", "{\"\":1,\"root\":null}"}, {"1", "{}", "{\"root\":null}"}},
    {"{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"null\"}}, \"additionalProperties\": false}",
     {"{}", "{\"a\":null}"}, {"{\"b\":null}"}},
    /* arrays */
    {"{\"type\": \"array\", \"items\": {\"type\": \"integer\"}}", {"[]", "[1]", "[1,2, 3]", "[ 1 ]"}, {"[1,]", "[\"a\"]", "[,1]"}},
    {"{\"type\": \"array\", \"items\": {\"type\": \"boolean\"}, \"minItems\": 2, \"maxItems\": 3}",
     {"[true,false]", "[true,false,true]"}, {"[]", "[true]", "[true,true,true,true]"}},
    {"{\"type\": \"array\", \"minItems\": 1}", {"[1]", "[\"a\",{}]"}, {"[]"}},
    {"{\"type\": \"array\", \"maxItems\": 0}", {"[]"}, {"[1]"}},
    {"{\"type\": \"array\", \"prefixItems\": [{\"type\": \"string\"}, {\"type\": \"integer\"}]}",
     {"[\"a\",1]"}, {"[\"a\"]", "[1,\"a\"]", "[\"a\",1,2]"}},
    {"{\"type\": \"array\", \"items\": [{\"type\": \"null\"}, {\"type\": \"boolean\"}]}", {"[null,true]"}, {"[null]"}},
    {"{\"type\": \"array\", \"items\": {\"type\": \"array\", \"items\": {\"type\": \"integer\"}, \"maxItems\": 1}}",
     {"[[],[1],[2]]"}, {"[[1,2]]"}},
    /* strings */
    {"{\"type\": \"string\", \"minLength\": 2, \"maxLength\": 3}", {"\"ab\"", "\"abc\"", "\"\\u00e9\\n\""},
     {"\"a\"", "\"abcd\"", "\"\""}},
    {"{\"type\": \"string\", \"maxLength\": 1}", {"\"\"", "\"x\""}, {"\"xy\""}},
    {"{\"minLength\": 1}", {"\"x\""}, {"\"\"", "1"}},
    {"{\"type\": \"string\", \"format\": \"date\"}", {"\"2024-02-29\"", "\"1999-12-31\""},
     {"\"2024-13-01\"", "\"2024-00-10\"", "\"2024-1-1\"", "\"2024-01-32\""}},
    {"{\"type\": \"string\", \"format\": \"time\"}", {"\"23:59:59Z\"", "\"01:02:03.456+05:30\""},
     {"\"24:00:00Z\"", "\"12:00:00\"", "\"12:60:00Z\""}},
    {"{\"type\": \"string\", \"format\": \"date-time\"}", {"\"2024-05-06T07:08:09Z\""}, {"\"2024-05-06 07:08:09Z\""}},
    {"{\"type\": \"string\", \"format\": \"uuid\"}", {"\"123e4567-e89b-12d3-a456-426614174000\""},
     {"\"123e4567e89b12d3a456426614174000\"", "\"123e4567-e89b-12d3-a456-42661417400g\""}},
    /* alternatives, references, allOf */
    {"{\"anyOf\": [{\"type\": \"integer\"}, {\"type\": \"array\", \"items\": {\"type\": \"string\"}}]}",
     {"5", "[\"a\"]", "[]"}, {"\"a\"", "[1]"}},
    {"{\"oneOf\": [{\"const\": 1}, {\"const\": \"one\"}], \"description\": \"d\"}", {"1", "\"one\""}, {"2"}},
    {"{\"$defs\": {\"pt\": {\"type\": \"object\", \"properties\": {\"x\": {\"type\": \"integer\"}}, \"required\": [\"x\"]}},"
     " \"type\": \"array\", \"items\": {\"$ref\": \"#/$defs/pt\"}}",
     {"[{\"x\":1},{\"x\":2}]"}, {"[{\"y\":1}]"}},
    {"{\"definitions\": {\"s\": {\"type\": \"string\"}}, \"properties\": {\"a\": {\"$ref\": \"#/definitions/s\"},"
     " \"b\": {\"$ref\": \"#/definitions/s\"}}, \"required\": [\"a\", \"b\"]}",
     {"{\"a\":\"x\",\"b\":\"y\"}"}, {"{\"a\":1,\"b\":\"y\"}"}},
    /* recursion through an array: a tree */
    {"{\"type\": \"object\", \"properties\": {\"v\": {\"type\": \"integer\"}, \"kids\": {\"type\": \"array\","
     " \"items\": {\"$ref\": \"#\"}}}, \"required\": [\"v\"]}",
     {"{\"v\":1}", "{\"v\":1,\"kids\":[{\"v\":2},{\"v\":3,\"kids\":[]}]}"}, {"{\"v\":1,\"kids\":[{}]}"}},
    {"{\"allOf\": [{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}}, \"required\": [\"a\"]},"
     " {\"properties\": {\"b\": {\"type\": \"string\"}}}]}",
     {"{\"a\":1}", "{\"a\":1,\"b\":\"x\"}"}, {"{\"b\":\"x\"}", "{\"a\":1,\"c\":2}"}},
    /* integer bounds */
    {"{\"type\": \"integer\", \"minimum\": -5, \"exclusiveMaximum\": 10}", {"-5", "0", "9"}, {"-6", "10", "-0"}},
    {"{\"type\": \"integer\", \"minimum\": 1.5, \"maximum\": 3.5}", {"2", "3"}, {"1", "4"}},
    {"true", {"1", "{\"a\":[]}", "\"s\""}, {"", "nope"}},
    {"{\"title\": \"t\", \"$schema\": \"x\", \"examples\": [1], \"default\": 2, \"x-extension\": 1}", {"1", "[]"}, {""}},
};

static void test_cases(const hr_tokenizer *tok) {
    for (size_t k = 0; k < sizeof CASES / sizeof *CASES; k++) {
        const schema_case *sc = &CASES[k];
        compiled c;
        if (compile(tok, sc->schema, &c)) {
            for (int i = 0; i < MAX_CASES && sc->good[i]; i++)
                CHECKF(accepts(&c, sc->good[i], strlen(sc->good[i])), "schema %s should take %s\n%s", sc->schema,
                       sc->good[i], c.gbnf);
            for (int i = 0; i < MAX_CASES && sc->bad[i]; i++)
                CHECKF(!accepts(&c, sc->bad[i], strlen(sc->bad[i])), "schema %s should refuse %s\n%s", sc->schema,
                       sc->bad[i], c.gbnf);
        }
        release(&c);
    }
}

/* Integer ranges against arithmetic: every number in a window, and the edges of the bounds. */
static void test_int_ranges(const hr_tokenizer *tok) {
    static const struct {
        bool has_lo, has_hi;
        long lo, hi;
    } R[] = {
        {1, 1, 0, 9},      {1, 1, 0, 10},     {1, 1, 7, 7},        {1, 1, 3, 1234},    {1, 1, 10, 99},
        {1, 1, 19, 301},   {1, 1, -57, 230},  {1, 1, -300, -21},   {1, 1, 100, 1000},  {1, 1, 999, 1001},
        {1, 0, 0, 0},      {1, 0, 5, 0},      {1, 0, 47, 0},       {1, 0, -12, 0},     {1, 0, 1000, 0},
        {0, 1, 0, 0},      {0, 1, 0, 77},     {0, 1, 0, -3},       {0, 1, 0, -250},    {1, 1, -1, 0},
        {1, 1, 123456789, 123457000},
    };
    for (size_t k = 0; k < sizeof R / sizeof *R; k++) {
        char schema[200];
        int n = snprintf(schema, sizeof schema, "{\"type\": \"integer\"");
        if (R[k].has_lo) n += snprintf(schema + n, sizeof schema - (size_t)n, ", \"minimum\": %ld", R[k].lo);
        if (R[k].has_hi) n += snprintf(schema + n, sizeof schema - (size_t)n, ", \"maximum\": %ld", R[k].hi);
        snprintf(schema + n, sizeof schema - (size_t)n, "}");
        compiled c;
        if (compile(tok, schema, &c)) {
            long base = R[k].has_lo ? R[k].lo : R[k].has_hi ? R[k].hi : 0;
            int bad = 0;
            for (long x = base - 1100; x <= base + 1100 && bad < 5; x++) {
                char t[32];
                int len = snprintf(t, sizeof t, "%ld", x);
                bool want = (!R[k].has_lo || x >= R[k].lo) && (!R[k].has_hi || x <= R[k].hi);
                bool got = accepts(&c, t, (size_t)len);
                CHECKF(got == want, "%s: %s %s\n%s", schema, t, want ? "refused" : "taken", c.gbnf);
                bad += got != want;
            }
            /* never leading zeros or "-0" */
            CHECK(!ACC(&c, "-0") && !ACC(&c, "00") && !ACC(&c, "012"));
        }
        release(&c);
    }
}

/* ---- bad schemas ---- */

static void test_errors(void) {
    static const struct {
        const char *schema, *msg;
    } bad[] = {
        {"{\"type\": \"string\", \"pattern\": \"^a$\"}", "json schema: 'pattern' is not supported"},
        {"{\"type\": \"object\", \"patternProperties\": {}}", "json schema: 'patternProperties' is not supported"},
        {"{\"properties\": {\"a\": {\"not\": {}}}}", "json schema: 'not' is not supported (at #/properties/a)"},
        {"{\"type\": \"array\", \"uniqueItems\": true}", "'uniqueItems' is not supported"},
        {"{\"type\": \"number\", \"minimum\": 0}", "supported only for \"type\": \"integer\""},
        {"{\"minimum\": 0}", "need \"type\": \"integer\""},
        {"{\"type\": \"string\", \"format\": \"email\"}", "format 'email' is not supported"},
        {"{\"type\": \"strin\"}", "type 'strin' is unknown"},
        {"{\"type\": 5}", "'type' must be a string"},
        {"{\"type\": []}", "'type' must be a string or a non-empty array"},
        {"{\"enum\": []}", "'enum' must be a non-empty array"},
        {"{\"type\": \"integer\", \"enum\": [\"a\"]}", "no value of 'enum' can validate"},
        {"{\"type\": \"integer\", \"minimum\": 5, \"maximum\": 4}", "no integer lies between"},
        {"{\"type\": \"string\", \"minLength\": 5, \"maxLength\": 4}", "'minLength' 5 is above 'maxLength' 4"},
        {"{\"type\": \"array\", \"maxItems\": -1}", "'maxItems' must be a non-negative integer"},
        {"{\"type\": \"array\", \"maxItems\": 100000000}", "over the limit"},
        {"{\"properties\": {\"a\": {}}, \"required\": [\"b\"]}", "required property 'b' is not in 'properties'"},
        {"{\"properties\": {\"a\": {}}, \"required\": \"a\"}", "'required' must be an array of strings"},
        {"{\"properties\": []}", "'properties' must be an object"},
        {"{\"$ref\": \"#/$defs/nope\"}", "$ref '#/$defs/nope' does not resolve"},
        {"{\"$ref\": \"http://example.com/s.json\"}", "is not supported (only references inside the schema"},
        {"{\"$ref\": \"#\"}", "refers back to itself without consuming input"},
        {"{\"$defs\": {\"a\": {\"$ref\": \"#/$defs/b\"}, \"b\": {\"$ref\": \"#/$defs/a\"}}, \"$ref\": \"#/$defs/a\"}",
         "refers back to itself"},
        {"{\"$defs\": {\"a\": {\"anyOf\": [{\"$ref\": \"#/$defs/a\"}, {\"type\": \"null\"}]}}, \"$ref\": \"#/$defs/a\"}",
         "refers back to itself"},
        {"{\"$ref\": \"#\", \"minLength\": 1}", "'minLength' next to '$ref' is not supported"},
        {"{\"anyOf\": [{}], \"type\": \"string\"}", "'type' next to 'anyOf' is not supported"},
        {"{\"anyOf\": []}", "'anyOf' must be a non-empty array"},
        {"{\"allOf\": [{\"type\": \"string\"}]}", "'allOf' is supported only for objects"},
        {"false", "a false schema accepts nothing"},
        {"[1]", "a schema must be an object or a boolean"},
        {"{\"type\": \"object\", \"properties\": {\"a\": 1}}", "a schema must be an object or a boolean (at #/properties/a)"},
        {"{\"type\": \"string\",}", "json schema: invalid JSON at line 1, column 19: expected a string key"},
        {"{\"type\":\n \"string\"", "json schema: invalid JSON at line 2, column 10: expected ',' or '}'"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        hr_err e = {{0}};
        char *g = hr_json_schema_to_gbnf(bad[k].schema, strlen(bad[k].schema), &e);
        CHECKF(!g && strstr(e.msg, bad[k].msg) && !strncmp(e.msg, "json schema: ", 13), "%s: %s", bad[k].schema,
               g ? g : e.msg);
        free(g);
    }

    /* deep nesting: JSON depth, then schema depth within the JSON limit */
    size_t cap = 1 << 16;
    char *s = malloc(cap);
    size_t n = 0;
    for (int k = 0; k < 300; k++) n += (size_t)snprintf(s + n, cap - n, "{\"items\":");
    n += (size_t)snprintf(s + n, cap - n, "{}");
    for (int k = 0; k < 300; k++) s[n++] = '}';
    hr_err e = {{0}};
    char *g = hr_json_schema_to_gbnf(s, n, &e);
    CHECKF(!g && strstr(e.msg, "nesting deeper than"), "%s", g ? "converted" : e.msg);
    free(g);
    /* a $ref chain longer than the visit depth: each definition refers to the next */
    n = (size_t)snprintf(s, cap, "{\"$ref\": \"#/$defs/d0\", \"$defs\": {");
    for (int k = 0; k < 200; k++) n += (size_t)snprintf(s + n, cap - n, "%s\"d%d\": {\"$ref\": \"#/$defs/d%d\"}", k ? "," : "", k, k + 1);
    n += (size_t)snprintf(s + n, cap - n, ", \"d200\": {\"type\": \"null\"}}}");
    g = hr_json_schema_to_gbnf(s, n, &e);
    CHECKF(!g && strstr(e.msg, "nested deeper than"), "%s", g ? "converted" : e.msg);
    free(g);
    free(s);

    /* size limit on the schema text */
    size_t big = (2u << 20) + 10;
    s = malloc(big);
    memset(s, ' ', big);
    memcpy(s, "{}", 2);
    g = hr_json_schema_to_gbnf(s, big, &e);
    CHECKF(!g && strstr(e.msg, "over the limit"), "%s", g ? "converted" : e.msg);
    free(g);
    free(s);
}

/* Random mutations of the case schemas: a grammar that parses, or one error; never a crash. */
static void test_fuzz(void) {
    hr_rng r = {12345};
    static const char alphabet[] = "{}[]\":,0123456789-.eE tfnulrsaeinbjcpqyx\\$#/";
    char buf[1024];
    for (int it = 0; it < 3000; it++) {
        const char *src = CASES[hr_rng_next(&r) % (sizeof CASES / sizeof *CASES)].schema;
        size_t n = strlen(src);
        if (n >= sizeof buf) continue;
        memcpy(buf, src, n);
        for (int m = 0, k = 1 + (int)(hr_rng_next(&r) % 3); m < k && n; m++) {
            size_t at = hr_rng_next(&r) % n;
            switch (hr_rng_next(&r) % 3) {
            case 0: buf[at] = alphabet[hr_rng_next(&r) % (sizeof alphabet - 1)]; break;
            case 1: memmove(buf + at, buf + at + 1, n - at - 1), n--; break;
            default:
                if (n + 1 < sizeof buf) memmove(buf + at + 1, buf + at, n - at), buf[at] = alphabet[hr_rng_next(&r) % (sizeof alphabet - 1)], n++;
            }
        }
        hr_err e = {{0}};
        char *g = hr_json_schema_to_gbnf(buf, n, &e);
        if (!g) {
            CHECKF(!strncmp(e.msg, "json schema: ", 13), "'%.*s': %s", (int)n, buf, e.msg);
            continue;
        }
        hr_grammar *gr = hr_grammar_parse(g, strlen(g), NULL, &e);
        CHECKF(gr, "'%.*s' gave a grammar that does not parse: %s\n%s", (int)n, buf, e.msg, g);
        hr_grammar_free(gr);
        free(g);
    }
}

/* The grammar of response_format json_object is the one {"type": "object"} gives, and a
 * wide object converts quickly (optional properties chain as rules, not as copies). */
static void test_misc(const hr_tokenizer *tok) {
    hr_err e = {{0}};
    char *g = hr_json_schema_to_gbnf("{\"type\":\"object\"}", 17, &e);
    CHECKF(g && !strcmp(g, hr_gbnf_json_object()), "%s", g ? g : e.msg);
    free(g);
    hr_grammar *gr = hr_grammar_parse(hr_gbnf_json_object(), strlen(hr_gbnf_json_object()), NULL, &e);
    CHECKF(gr, "%s", e.msg);
    hr_grammar_free(gr);

    size_t cap = 1 << 20, n = 0;
    char *s = malloc(cap);
    n += (size_t)snprintf(s, cap, "{\"type\":\"object\",\"properties\":{");
    for (int k = 0; k < 300; k++) n += (size_t)snprintf(s + n, cap - n, "%s\"p%d\":{\"type\":\"integer\"}", k ? "," : "", k);
    n += (size_t)snprintf(s + n, cap - n, "},\"additionalProperties\":{\"type\":\"string\"}}");
    compiled c;
    if (compile(tok, s, &c)) {
        CHECK(ACC(&c, "{\"p7\":1,\"p250\":2,\"zz\":\"s\"}"));
        CHECK(!ACC(&c, "{\"p250\":2,\"p7\":1}"));
        CHECK(!ACC(&c, "{\"p7\":\"s\"}"));
    }
    release(&c);
    free(s);

    /* non-ASCII property names in the key exclusion */
    compiled u;
    if (compile(tok, "{\"properties\": {\"\xC3\xA9t\xC3\xA9\": {\"type\": \"null\"}}, \"additionalProperties\": {\"type\": \"integer\"}}", &u)) {
        CHECK(ACC(&u, "{\"\xC3\xA9t\xC3\xA9\":null}"));
        CHECK(ACC(&u, "{\"\xC3\xA9t\":1}"));
        CHECK(!ACC(&u, "{\"\xC3\xA9t\xC3\xA9\":1}"));
    }
    release(&u);
}

int main(void) {
    test_reader();
    hr_tokenizer *tok = make_tok();
    if (tok) {
        test_cases(tok);
        test_int_ranges(tok);
        test_misc(tok);
    }
    test_errors();
    test_fuzz();
    hr_tok_free(tok);
    return TEST_END();
}
