/* Tool calls (server/tools.h): rendering against the published templates' text written out
 * by hand, and against hr_chat_render when no tool is involved; Python-style JSON; the
 * reply parser on each family's call format, on near misses (unknown tools, broken JSON) and
 * on plain replies; the stream hold-back against the whole-reply parse at every cut; the
 * forced-call grammar run byte by byte over a byte-level vocabulary. */
#include <stdlib.h>
#include <string.h>
#include "grammar/grammar.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"
#include "tools.h"

static const char TOOLS[] =
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Weather of a city\","
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},\"days\":{\"type\":\"integer\"}},"
    "\"required\":[\"city\"]}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"now\"}}]";

static const char TOOL_CONV[] =
    "[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"Weather in Paris?\"},"
    "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"abcDEF123\",\"type\":\"function\","
    "\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}]},"
    "{\"role\":\"tool\",\"tool_call_id\":\"abcDEF123\",\"content\":\"{\\\"temp\\\": 21}\"},"
    "{\"role\":\"user\",\"content\":\"Thanks\"}]";

static char *render(hr_chat_tmpl t, const char *tools, const char *choice, const char *conv, hr_tool_spec **spec,
                    hr_apierr *ae) {
    char body[4096];
    snprintf(body, sizeof body, "{\"messages\":%s%s%s%s%s}", conv, tools ? ",\"tools\":" : "", tools ? tools : "",
             choice ? ",\"tool_choice\":" : "", choice ? choice : "");
    cJSON *root = cJSON_Parse(body);
    CHECK(root != NULL);
    hr_tools_req tr;
    char *out = NULL;
    *spec = NULL;
    if (!hr_tools_parse(root, &tr, ae)) hr_tools_render(t, &tr, cJSON_GetObjectItem(root, "messages"), "<s>", "</s>", &out, spec, ae);
    cJSON_Delete(root);
    return out;
}

static void expect_render(hr_chat_tmpl t, const char *choice, const char *want) {
    hr_tool_spec *spec;
    hr_apierr ae = {0};
    char *got = render(t, TOOLS, choice, TOOL_CONV, &spec, &ae);
    CHECKF(got && !strcmp(got, want), "%s:\n got  %s\n want %s\n (%s)", hr_chat_name(t), got ? got : "(null)", want, ae.msg);
    CHECK(spec && spec->n_names == 2 && !strcmp(spec->names[1], "now"));
    free(got);
    hr_tool_spec_free(spec);
}

static void test_render_tools(void) {
    expect_render(HR_CHAT_CHATML, NULL,
        "<|im_start|>system\nBe brief.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
        "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Weather of a city\", "
        "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": {\"type\": \"integer\"}}, "
        "\"required\": [\"city\"]}}}\n"
        "{\"type\": \"function\", \"function\": {\"name\": \"now\"}}\n</tools>\n\n"
        "For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n"
        "<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"
        "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
        "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\n{\"temp\": 21}\n</tool_response><|im_end|>\n"
        "<|im_start|>user\nThanks<|im_end|>\n<|im_start|>assistant\n");
    expect_render(HR_CHAT_LLAMA3, NULL,
        "<|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\nCutting Knowledge Date: December 2023\n"
        "Today Date: 26 Jul 2024\n\nYou have access to the following functions. To call a function, please respond with JSON "
        "for a function call.Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and "
        "its value}.Do not use variables.\n\n"
        "{\n    \"type\": \"function\",\n    \"function\": {\n        \"name\": \"get_weather\",\n        \"description\": "
        "\"Weather of a city\",\n        \"parameters\": {\n            \"type\": \"object\",\n            \"properties\": {\n"
        "                \"city\": {\n                    \"type\": \"string\"\n                },\n                \"days\": {\n"
        "                    \"type\": \"integer\"\n                }\n            },\n            \"required\": [\n"
        "                \"city\"\n            ]\n        }\n    }\n}\n\n"
        "{\n    \"type\": \"function\",\n    \"function\": {\n        \"name\": \"now\"\n    }\n}\n\n"
        "Be brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWeather in Paris?<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|eot_id|>"
        "<|start_header_id|>ipython<|end_header_id|>\n\n\"{\\\"temp\\\": 21}\"<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nThanks<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
    /* Mistral Nemo's published template (the system text in the last user turn). */
    expect_render(HR_CHAT_MISTRAL_V3_TEKKEN, "\"required\"",
        "[INST]Weather in Paris?[/INST][TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, "
        "\"id\": \"abcDEF123\"}]</s>[TOOL_RESULTS]{\"content\": {\"temp\": 21}, \"call_id\": \"abcDEF123\"}[/TOOL_RESULTS]"
        "[AVAILABLE_TOOLS][{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Weather of a city\", "
        "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": {\"type\": \"integer\"}}, "
        "\"required\": [\"city\"]}}}, {\"type\": \"function\", \"function\": {\"name\": \"now\"}}][/AVAILABLE_TOOLS]"
        "[INST]Be brief.\n\nThanks[/INST][TOOL_CALLS]");
}

/* Without tools or tool turns the tool renderer prints what hr_chat_render prints. */
static void test_render_plain(void) {
    static const hr_chat_tmpl fams[] = {HR_CHAT_CHATML, HR_CHAT_LLAMA3, HR_CHAT_MISTRAL, HR_CHAT_MISTRAL_V1,
                                        HR_CHAT_MISTRAL_V3, HR_CHAT_MISTRAL_V3_TEKKEN, HR_CHAT_MISTRAL_V7, HR_CHAT_MISTRAL_V7_TEKKEN};
    static const hr_chat_msg conv[] = {{"system", "Sys "}, {"user", " Hello"}, {"assistant", " Hi there "}, {"user", "Again"}};
    static const char conv_json[] = "[{\"role\":\"system\",\"content\":\"Sys \"},{\"role\":\"user\",\"content\":\" Hello\"},"
                                    "{\"role\":\"assistant\",\"content\":\" Hi there \"},{\"role\":\"user\",\"content\":\"Again\"}]";
    for (size_t f = 0; f < sizeof fams / sizeof fams[0]; f++)
        for (size_t first = 0; first < 2; first++) {
            hr_err e = {{0}};
            char *want = NULL, *got, json[1024];
            CHECK(!hr_chat_render(fams[f], conv + first, 4 - first, true, "<s>", "</s>", &want, &e));
            /* the same conversation without its system message */
            snprintf(json, sizeof json, "%s", conv_json);
            if (first) snprintf(json, sizeof json, "[%s", strchr(conv_json + 1, '}') + 2);
            hr_tool_spec *spec;
            hr_apierr ae = {0};
            got = render(fams[f], NULL, NULL, json, &spec, &ae);
            CHECKF(got && want && !strcmp(got, want), "%s (system %s):\n got  %s\n want %s %s", hr_chat_name(fams[f]),
                   first ? "no" : "yes", got ? got : "(null)", want ? want : "(null)", ae.msg);
            CHECK(spec == NULL);
            free(got), free(want);
        }
}

static void test_render_errors(void) {
    static const struct { hr_chat_tmpl t; const char *tools, *choice, *conv, *msg; } cases[] = {
        {HR_CHAT_GEMMA, TOOLS, NULL, "[{\"role\":\"user\",\"content\":\"x\"}]", "'gemma' has no tool-call format"},
        {HR_CHAT_CHATML, "[{\"type\":\"code\"}]", NULL, "[{\"role\":\"user\",\"content\":\"x\"}]", "tools[0]: only"},
        {HR_CHAT_CHATML, "[{\"type\":\"function\",\"function\":{\"name\":\"a b\"}}]", NULL, "[]", "tools[0].function.name"},
        {HR_CHAT_CHATML, TOOLS, "{\"type\":\"function\",\"function\":{\"name\":\"nope\"}}", "[]", "'nope', which is not in 'tools'"},
        {HR_CHAT_CHATML, NULL, "\"required\"", "[]", "needs 'tools'"},
        {HR_CHAT_CHATML, TOOLS, "\"sometimes\"", "[]", "'tool_choice' must be"},
        {HR_CHAT_CHATML, TOOLS, NULL, "[{\"role\":\"tool\",\"content\":\"x\"}]", "needs a string 'tool_call_id'"},
        {HR_CHAT_CHATML, TOOLS, NULL,
         "[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":\"{bad\"}}]}]", "must be a JSON object"},
        {HR_CHAT_CHATML, TOOLS, NULL, "[{\"role\":\"robot\",\"content\":\"x\"}]", "unknown role 'robot'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hr_tool_spec *spec;
        hr_apierr ae = {0};
        char *got = render(cases[i].t, cases[i].tools, cases[i].choice, cases[i].conv, &spec, &ae);
        CHECKF(!got && ae.status == 400 && strstr(ae.msg, cases[i].msg), "case %zu: status %d '%s'", i, ae.status, ae.msg);
        free(got);
        hr_tool_spec_free(spec);
    }
}

static void test_json_py(void) {
    cJSON *v = cJSON_Parse("{\"a\":[1,2.5,\"x\\n\\u0001\\\"é\"],\"b\":{},\"c\":[],\"d\":null,\"e\":-3e-7}");
    char *s = hr_json_py(v, 0), *p = hr_json_py(v, 2);
    CHECKF(!strcmp(s, "{\"a\": [1, 2.5, \"x\\n\\u0001\\\"é\"], \"b\": {}, \"c\": [], \"d\": null, \"e\": -2.9999999999999999e-07}") ||
               !strcmp(s, "{\"a\": [1, 2.5, \"x\\n\\u0001\\\"é\"], \"b\": {}, \"c\": [], \"d\": null, \"e\": -3e-07}"),
           "%s", s);
    CHECKF(!strcmp(p, "{\n  \"a\": [\n    1,\n    2.5,\n    \"x\\n\\u0001\\\"é\"\n  ],\n  \"b\": {},\n  \"c\": [],\n  \"d\": null,\n  \"e\": -3e-07\n}"),
           "%s", p);
    free(s), free(p);
    cJSON_Delete(v);
}

static hr_tool_spec *spec_of(hr_tool_fmt fmt, const char *prefix) {
    hr_tools_req tr = {0};
    cJSON *t = cJSON_Parse(TOOLS);
    tr.tools = t, tr.n_tools = cJSON_GetArraySize(t);
    hr_tool_spec *sp = NULL;
    CHECK(!hr_tool_spec_new(&tr, fmt, prefix, &sp));
    cJSON_Delete(t);
    return sp;
}

typedef struct reply_case {
    hr_tool_fmt fmt;
    const char *prefix, *text, *content; /* content NULL: none */
    int n;
    const char *name0, *args0, *id0;
} reply_case;

static const reply_case REPLIES[] = {
    {HR_TOOLFMT_HERMES, "", "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
     "Let me check.", 1, "get_weather", "{\"city\":\"Paris\"}", NULL},
    {HR_TOOLFMT_HERMES, "", "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>\n<tool_call>{\"name\":\"get_weather\","
     "\"arguments\":\"{\\\"city\\\":\\\"Rome\\\"}\"}", NULL, 2, "now", "{}", NULL},
    {HR_TOOLFMT_HERMES, "", "<tool_call>\n{\"name\": \"rm_rf\", \"arguments\": {}}\n</tool_call>",
     "<tool_call>\n{\"name\": \"rm_rf\", \"arguments\": {}}\n</tool_call>", 0, NULL, NULL, NULL},
    {HR_TOOLFMT_HERMES, "", "<tool_call>\n{\"name\": \"now\", \"argu", "<tool_call>\n{\"name\": \"now\", \"argu", 0, NULL, NULL, NULL},
    {HR_TOOLFMT_HERMES, "", "In the beginning <tool", "In the beginning <tool", 0, NULL, NULL, NULL},
    {HR_TOOLFMT_HERMES, "", "   ", "   ", 0, NULL, NULL, NULL},
    {HR_TOOLFMT_HERMES, "", " \n<tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call>\n", NULL, 1, "now", "{}", NULL},
    {HR_TOOLFMT_LLAMA3, "", " <|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\", \"days\": 2}}",
     NULL, 1, "get_weather", "{\"city\":\"Oslo\",\"days\":2}", NULL},
    {HR_TOOLFMT_LLAMA3, "", "{\"name\": \"now\", \"parameters\": {}}; {\"name\": \"now\", \"arguments\": {}}", NULL, 2, "now", "{}", NULL},
    {HR_TOOLFMT_LLAMA3, "", "{\"answer\": 42}", "{\"answer\": 42}", 0, NULL, NULL, NULL},
    {HR_TOOLFMT_LLAMA3, "", "The weather is fine {\"name\": \"now\", \"parameters\": {}}",
     "The weather is fine {\"name\": \"now\", \"parameters\": {}}", 0, NULL, NULL, NULL},
    {HR_TOOLFMT_MISTRAL, "", "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lima\"}, \"id\": \"a1b2c3d4e\"}]",
     NULL, 1, "get_weather", "{\"city\":\"Lima\"}", "a1b2c3d4e"},
    {HR_TOOLFMT_MISTRAL, "", "Sure[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Kyiv\"}[TOOL_CALLS]now[ARGS]{}", "Sure", 2,
     "get_weather", "{\"city\":\"Kyiv\"}", NULL},
    {HR_TOOLFMT_MISTRAL, "[TOOL_CALLS]", "[{\"name\": \"now\", \"arguments\": {}}]", NULL, 1, "now", "{}", NULL},
    {HR_TOOLFMT_MISTRAL, "[TOOL_CALLS]", "[{\"name\": \"now\", \"argum", "[{\"name\": \"now\", \"argum", 0, NULL, NULL, NULL},
};

static void test_reply(void) {
    for (size_t i = 0; i < sizeof REPLIES / sizeof REPLIES[0]; i++) {
        const reply_case *c = &REPLIES[i];
        hr_tool_spec *sp = spec_of(c->fmt, c->prefix);
        char *content;
        hr_tool_call *calls;
        int n;
        CHECK(!hr_tool_reply_parse(sp, c->text, strlen(c->text), &content, &calls, &n));
        CHECKF(n == c->n, "case %zu: %d calls", i, n);
        CHECKF(c->content ? content && !strcmp(content, c->content) : !content, "case %zu: content '%s'", i, content ? content : "(null)");
        if (n && c->n) {
            CHECKF(!strcmp(calls[0].name, c->name0) && !strcmp(calls[0].arguments, c->args0), "case %zu: %s %s", i, calls[0].name,
                   calls[0].arguments);
            CHECKF(c->id0 ? calls[0].id && !strcmp(calls[0].id, c->id0) : !calls[0].id, "case %zu: id", i);
        }
        /* Streaming: at every cut, what is safe to send is a prefix of the final content. */
        size_t len = strlen(c->text), sent = 0;
        for (size_t cut = 0; cut <= len; cut++) {
            bool held, held2;
            size_t safe = hr_tool_stream_safe(sp, c->text, cut, 0, &held);
            CHECKF(safe <= cut && (safe == cut || held), "case %zu cut %zu: safe %zu", i, cut, safe);
            /* searching on from what went out already gives the same answer */
            CHECKF(hr_tool_stream_safe(sp, c->text, cut, sent, &held2) == safe && held2 == held, "case %zu cut %zu: from %zu", i, cut, sent);
            if (safe > sent) sent = safe;
        }
        size_t clen = content ? strlen(content) : 0;
        CHECKF(sent <= clen && !memcmp(c->text, content ? content : "", sent), "case %zu: sent %zu bytes not a prefix", i, sent);
        free(content);
        hr_tool_calls_free(calls, n);
        hr_tool_spec_free(sp);
    }
}

/* The forced-call grammar accepts the calls it is meant for and rejects near misses, run over
 * a byte-level vocabulary one byte per token. */
static bool grammar_accepts(const hr_grammar *g, const hr_tokenizer *tok, const int32_t *byte_tok, const char *text) {
    hr_err e = {{0}};
    hr_grammar_sampler *gs = hr_grammar_sampler_new(g, tok, &e);
    CHECKF(gs != NULL, "%s", e.msg);
    if (!gs) return false;
    bool ok = true;
    for (const unsigned char *p = (const unsigned char *)text; *p && ok; p++)
        ok = byte_tok[*p] >= 0 && hr_grammar_sampler_allows(gs, byte_tok[*p]) && !hr_grammar_sampler_accept(gs, byte_tok[*p], &e);
    ok = ok && hr_grammar_sampler_allows(gs, hr_tok_eos(tok));
    hr_grammar_sampler_free(gs);
    return ok;
}

static void test_grammar(void) {
    hr_vocab_desc d;
    hr_err e = {{0}};
    hr_tokenizer *tok = NULL;
    CHECK(!hr_vocab_synth(HR_TOK_BPE, 400, &d, &e) && !hr_tok_new(&tok, &d, &e));
    if (!tok) return;
    int32_t byte_tok[256];
    for (int i = 0; i < 256; i++) byte_tok[i] = -1;
    for (int32_t id = 0; id < hr_tok_n_vocab(tok); id++) {
        char buf[16];
        if (hr_tok_piece(tok, id, false, buf, sizeof buf) == 1 && byte_tok[(unsigned char)buf[0]] < 0) byte_tok[(unsigned char)buf[0]] = id;
    }
    static const struct { hr_tool_fmt fmt; const char *choice, *good, *bad; } cases[] = {
        {HR_TOOLFMT_HERMES, "{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}}",
         "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>",
         "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"},
        {HR_TOOLFMT_HERMES, "\"required\"", "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>",
         "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"days\": 3}}\n</tool_call>"},
        {HR_TOOLFMT_LLAMA3, "\"required\"", "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Rome\"}}",
         "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}"},
        {HR_TOOLFMT_MISTRAL, "\"required\"", "[{\"name\": \"now\", \"arguments\": {}}]", "{\"name\": \"now\", \"arguments\": {}}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char body[2048];
        snprintf(body, sizeof body, "{\"tools\":%s,\"tool_choice\":%s}", TOOLS, cases[i].choice);
        cJSON *root = cJSON_Parse(body);
        hr_tools_req tr;
        hr_apierr ae = {0};
        CHECK(!hr_tools_parse(root, &tr, &ae));
        hr_tool_spec *sp = NULL;
        CHECK(!hr_tool_spec_new(&tr, cases[i].fmt, "", &sp));
        const char *start = NULL;
        char *gbnf = hr_tools_grammar(&tr, sp, &start, &ae);
        CHECKF(gbnf != NULL, "case %zu: %s", i, ae.msg);
        hr_grammar *g = gbnf ? hr_grammar_parse(gbnf, strlen(gbnf), start, &e) : NULL;
        CHECKF(g != NULL, "case %zu: %s\n%s", i, e.msg, gbnf ? gbnf : "");
        if (g) {
            CHECKF(grammar_accepts(g, tok, byte_tok, cases[i].good), "case %zu: rejects %s", i, cases[i].good);
            CHECKF(!grammar_accepts(g, tok, byte_tok, cases[i].bad), "case %zu: accepts %s", i, cases[i].bad);
            hr_grammar_free(g);
        }
        free(gbnf);
        hr_tool_spec_free(sp);
        cJSON_Delete(root);
    }
    hr_tok_free(tok);
    hr_vocab_free(&d);
}

int main(void) {
    test_render_tools();
    test_render_plain();
    test_render_errors();
    test_json_py();
    test_reply();
    test_grammar();
    return TEST_END();
}
