/* Rendering against the published formats. The expected strings are written out by hand
 * from each family's template (Hugging Face tokenizer_config.json chat_template), with the
 * leading BOS left out because the tokenizer adds it. */
#include <stdlib.h>
#include <string.h>
#include "chat/chat.h"
#include "testutil.h"

static const hr_chat_msg with_sys[] = {
    {"system", "You are terse."}, {"user", "Hi"}, {"assistant", "Hello."}, {"user", "Who?"}};
/* Surrounding whitespace: kept by ChatML, Mistral and Falcon; trimmed by Llama-2 and Llama-3. */
static const hr_chat_msg no_sys[] = {{"user", " Hi \n"}, {"assistant", " Hello. "}, {"user", "Who?"}};

static void expect(hr_chat_tmpl t, const hr_chat_msg *m, size_t n, bool add, const char *want) {
    hr_err e = {{0}};
    char *out = NULL;
    int rc = hr_chat_render(t, m, n, add, "<s>", "</s>", &out, &e);
    CHECKF(rc == 0, "%s: %s", hr_chat_name(t), e.msg);
    CHECKF(out && !strcmp(out, want), "%s (%zu messages, add_assistant %d):\n got: [%s]\nwant: [%s]",
           hr_chat_name(t), n, add, out ? out : "(null)", want);
    free(out);
}

static void chatml(void) {
    expect(HR_CHAT_CHATML, with_sys, 4, true,
           "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
           "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nWho?<|im_end|>\n<|im_start|>assistant\n");
    expect(HR_CHAT_CHATML, no_sys, 3, false,
           "<|im_start|>user\n Hi \n<|im_end|>\n<|im_start|>assistant\n Hello. <|im_end|>\n"
           "<|im_start|>user\nWho?<|im_end|>\n");
}

static void llama3(void) {
    expect(HR_CHAT_LLAMA3, with_sys, 4, true,
           "<|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>"
           "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
           "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
           "<|start_header_id|>user<|end_header_id|>\n\nWho?<|eot_id|>"
           "<|start_header_id|>assistant<|end_header_id|>\n\n");
    expect(HR_CHAT_LLAMA3, no_sys, 3, false,
           "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
           "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
           "<|start_header_id|>user<|end_header_id|>\n\nWho?<|eot_id|>");
}

/* The reply follows "[/INST]": Llama-2 and Mistral have no assistant header, so
 * add_assistant changes nothing. */
static void llama2(void) {
    const char *sys = "[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nHi [/INST] Hello. </s><s>[INST] Who? [/INST]";
    expect(HR_CHAT_LLAMA2, with_sys, 4, true, sys);
    expect(HR_CHAT_LLAMA2, with_sys, 4, false, sys);
    expect(HR_CHAT_LLAMA2, no_sys, 3, true, "[INST] Hi [/INST] Hello. </s><s>[INST] Who? [/INST]");
    expect(HR_CHAT_LLAMA2, with_sys, 2, true, "[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nHi [/INST]");
    /* A finished exchange ends with EOS; the next user turn would start with BOS. */
    expect(HR_CHAT_LLAMA2, no_sys, 2, false, "[INST] Hi [/INST] Hello. </s>");
}

static void mistral(void) {
    const char *sys = "[INST] You are terse.\n\nHi [/INST]Hello.</s>[INST] Who? [/INST]";
    expect(HR_CHAT_MISTRAL, with_sys, 4, true, sys);
    expect(HR_CHAT_MISTRAL, with_sys, 4, false, sys);
    expect(HR_CHAT_MISTRAL, no_sys, 3, true, "[INST]  Hi \n [/INST] Hello. </s>[INST] Who? [/INST]");
    expect(HR_CHAT_MISTRAL, with_sys, 1, true, "[INST] You are terse. [/INST]");
}

static void falcon(void) {
    expect(HR_CHAT_FALCON, with_sys, 4, true, "System: You are terse.\nUser: Hi\nFalcon: Hello.\nUser: Who?\nFalcon:");
    expect(HR_CHAT_FALCON, with_sys, 4, false, "System: You are terse.\nUser: Hi\nFalcon: Hello.\nUser: Who?");
    expect(HR_CHAT_FALCON, no_sys + 2, 1, true, "User: Who?\nFalcon:");
}

/* Families added after the first five, written out from their formats (chat.test_conform
 * checks every family against llama.cpp's renderer as well). */
static void newer(void) {
    expect(HR_CHAT_GEMMA, with_sys, 4, true,
           "<start_of_turn>user\nYou are terse.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n"
           "<start_of_turn>user\nWho?<end_of_turn>\n<start_of_turn>model\n");
    expect(HR_CHAT_GEMMA, no_sys, 3, false,
           "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n<start_of_turn>user\nWho?<end_of_turn>\n");
    expect(HR_CHAT_PHI3, with_sys, 4, true,
           "<|system|>\nYou are terse.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\nHello.<|end|>\n<|user|>\nWho?<|end|>\n<|assistant|>\n");
    expect(HR_CHAT_PHI4, with_sys, 2, true,
           "<|im_start|>system<|im_sep|>You are terse.<|im_end|><|im_start|>user<|im_sep|>Hi<|im_end|><|im_start|>assistant<|im_sep|>");
    expect(HR_CHAT_DEEPSEEK3, with_sys, 4, true,
           "You are terse.\n\n<｜User｜>Hi<｜Assistant｜>Hello.<｜end▁of▁sentence｜><｜User｜>Who?<｜Assistant｜>");
    expect(HR_CHAT_MISTRAL_V7, with_sys, 4, true,
           "[SYSTEM_PROMPT] You are terse.[/SYSTEM_PROMPT][INST] Hi[/INST] Hello.</s>[INST] Who?[/INST]");
    expect(HR_CHAT_MISTRAL_V7_TEKKEN, with_sys, 4, true,
           "[SYSTEM_PROMPT]You are terse.[/SYSTEM_PROMPT][INST]Hi[/INST]Hello.</s>[INST]Who?[/INST]");
    expect(HR_CHAT_MISTRAL_V3, no_sys, 3, true, "[INST]  Hi \n[/INST] Hello.</s>[INST] Who?[/INST]");
    expect(HR_CHAT_MISTRAL_V3_TEKKEN, with_sys, 4, true, "[INST]You are terse.\n\nHi[/INST]Hello.</s>[INST]Who?[/INST]");
    expect(HR_CHAT_COMMAND_R, no_sys, 2, true,
           "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hi<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>Hello."
           "<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>");
    /* Reasoning tags in a reply are the model's own text: passed through as written. */
    const hr_chat_msg think[] = {{"user", "2+2?"}, {"assistant", "<think>\nadd\n</think>\n\n4"}};
    expect(HR_CHAT_CHATML, think, 2, true,
           "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n<think>\nadd\n</think>\n\n4<|im_end|>\n"
           "<|im_start|>assistant\n");
}

/* Every family renders every message's text and has stop texts (a family added without
 * a format or a renderer would render nothing). Yandex alone has no place for a system text. */
static void every_family(void) {
    for (int t = 0; t < HR_CHAT_COUNT; t++) {
        hr_err e = {{0}};
        char *out = NULL;
        int rc = hr_chat_render((hr_chat_tmpl)t, with_sys, 4, true, "<s>", "</s>", &out, &e);
        CHECKF(rc == 0 && out, "%s: %s", hr_chat_name((hr_chat_tmpl)t), e.msg);
        for (size_t i = t == HR_CHAT_YANDEX ? 1 : 0; out && i < 4; i++)
            CHECKF(strstr(out, with_sys[i].content) != NULL, "%s lacks '%s': [%s]", hr_chat_name((hr_chat_tmpl)t),
                   with_sys[i].content, out);
        CHECKF(hr_chat_stops((hr_chat_tmpl)t)[0] != NULL, "%s has no stop text", hr_chat_name((hr_chat_tmpl)t));
        free(out);
    }
}

/* BOS/EOS come from the caller (a Llama-2 model's texts, or none at all). */
static void special_texts(void) {
    hr_err e = {{0}};
    char *out = NULL;
    CHECK(hr_chat_render(HR_CHAT_LLAMA2, no_sys, 3, true, "", NULL, &out, &e) == 0);
    CHECKF(out && !strcmp(out, "[INST] Hi [/INST] Hello. [INST] Who? [/INST]"), "got [%s]", out ? out : "");
    free(out);
    CHECK(hr_chat_render(HR_CHAT_MISTRAL, no_sys, 3, true, "<B>", "<E>", &out, &e) == 0);
    CHECKF(out && !strcmp(out, "[INST]  Hi \n [/INST] Hello. <E>[INST] Who? [/INST]"), "got [%s]", out ? out : "");
    free(out);
}

static void expect_error(hr_chat_tmpl t, const hr_chat_msg *m, size_t n, const char *part) {
    hr_err e = {{0}};
    char *out = (char *)"untouched";
    CHECKF(hr_chat_render(t, m, n, true, "<s>", "</s>", &out, &e) == -1, "%s accepted", part);
    CHECK(out == NULL);
    CHECKF(strstr(e.msg, part) != NULL, "message '%s' lacks '%s'", e.msg, part);
}

static void errors(void) {
    const hr_chat_msg tool[] = {{"user", "a"}, {"tool", "b"}};
    const hr_chat_msg late_sys[] = {{"user", "a"}, {"system", "b"}};
    const hr_chat_msg no_role[] = {{NULL, "a"}};
    const hr_chat_msg no_content[] = {{"user", NULL}};
    for (int t = 0; t < HR_CHAT_COUNT; t++) {
        expect_error((hr_chat_tmpl)t, tool, 2, "unknown role 'tool'");
        expect_error((hr_chat_tmpl)t, late_sys, 2, "system message must be the first");
        expect_error((hr_chat_tmpl)t, with_sys, 0, "no messages");
        expect_error((hr_chat_tmpl)t, NULL, 3, "no messages");
        expect_error((hr_chat_tmpl)t, no_role, 1, "unknown role");
        expect_error((hr_chat_tmpl)t, no_content, 1, "no content");
    }
    expect_error(HR_CHAT_COUNT, with_sys, 4, "unknown template");
}

int main(void) {
    chatml();
    llama3();
    llama2();
    mistral();
    falcon();
    newer();
    every_family();
    special_texts();
    errors();
    return TEST_END();
}
