/* Template family detection on real template texts (as stored in GGUF files), names. */
#include <string.h>
#include "chat/chat.h"
#include "testutil.h"

static const char chatml[] =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

static const char llama3[] =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + "
    "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";

static const char llama2[] =
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
    "messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}"
    "{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + "
    "'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}"
    "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}";

static const char mistral[] =
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}"
    "{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}";

static const char falcon[] =
    "{% for message in messages %}{% if not loop.first %}{{ '\\n' }}{% endif %}{% if message['role'] == 'system' %}"
    "{{ 'System: ' }}{% elif message['role'] == 'user' %}{{ 'User: ' }}{% elif message['role'] == 'assistant' %}"
    "{{ 'Falcon: ' }}{% endif %}{{ message['content'] }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '\\n' + 'Falcon:' }}{% endif %}";

static const char gemma[] =
    "{{ bos_token }}{% for message in messages %}{{ '<start_of_turn>' + message['role'] + '\\n' + "
    "message['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}"
    "{{'<start_of_turn>model\\n'}}{% endif %}";

/* Hand-written snippets in the style of each family's published template (the real texts are
 * checked against llama.cpp's detection in chat.test_conform). */
static const char phi3[] = "{% for message in messages %}{{'<|' + message['role'] + '|>\\n' + message['content'] + "
                           "'<|end|>\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}";
static const char phi4[] = "{% for m in messages %}{{'<|im_start|>' + m['role'] + '<|im_sep|>' + m['content'] + '<|im_end|>'}}"
                           "{% endfor %}";
static const char deepseek_r1[] = "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}{{'<｜User｜>' + m['content']}}"
                                  "{% else %}{{'<｜Assistant｜>' + m['content'] + '<｜end▁of▁sentence｜>'}}{% endif %}{% endfor %}";
static const char mistral_v7[] = "{{ bos_token }}{% if system %}{{ '[SYSTEM_PROMPT]' + system + '[/SYSTEM_PROMPT]' }}{% endif %}"
                                 "{{ '[INST]' + content + '[/INST]' }}";
static const char mistral_v3t[] = "{%- if tools %}[AVAILABLE_TOOLS]{% endif %}{{- \"[INST]\" + message[\"content\"] + \"[/INST]\" }}";
static const char mistral_v3[] = "{%- if tools %}[AVAILABLE_TOOLS]{% endif %}{{- '[INST] ' + message['content'] + '[/INST]' }}";
static const char command_r[] = "{{ '<|START_OF_TURN_TOKEN|><|USER_TOKEN|>' + message['content'] + '<|END_OF_TURN_TOKEN|>' }}";
/* A Qwen3-style ChatML template that also mentions <think> and tools stays ChatML. */
static const char qwen3[] = "{%- if tools %}{{- '<|im_start|>system\\n# Tools' }}{%- endif %}{{- '<|im_start|>' + message.role + "
                            "'\\n<think>\\n' }}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

/* MiniMax's markers: llama.cpp does not know this family either. */
static const char unknown[] = "{{- ']~!b[' + ']~b]' + message.role + '\\n' + message.content + '[e~[' }}";

static void expect(const char *text, size_t len, hr_chat_tmpl want, bool want_known) {
    bool known = !want_known;
    hr_chat_tmpl t = hr_chat_detect(text, len, &known);
    CHECKF(t == want && known == want_known, "got %s known=%d, want %s known=%d", hr_chat_name(t), known,
           hr_chat_name(want), want_known);
}

/* How many comma-separated items of list equal name. */
static int name_count(const char *list, const char *name) {
    int c = 0;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        c += len == n && !memcmp(p, name, n);
        p += len;
        while (*p == ',' || *p == ' ') p++;
    }
    return c;
}

int main(void) {
    expect(chatml, strlen(chatml), HR_CHAT_CHATML, true);
    expect(llama3, strlen(llama3), HR_CHAT_LLAMA3, true);
    expect(llama2, strlen(llama2), HR_CHAT_LLAMA2, true);
    expect(mistral, strlen(mistral), HR_CHAT_MISTRAL, true);
    expect(falcon, strlen(falcon), HR_CHAT_FALCON, true);
    expect(gemma, strlen(gemma), HR_CHAT_GEMMA, true);
    expect(phi3, strlen(phi3), HR_CHAT_PHI3, true);
    expect(phi4, strlen(phi4), HR_CHAT_PHI4, true);
    expect(deepseek_r1, strlen(deepseek_r1), HR_CHAT_DEEPSEEK3, true);
    expect(mistral_v7, strlen(mistral_v7), HR_CHAT_MISTRAL_V7, true);
    expect(mistral_v3t, strlen(mistral_v3t), HR_CHAT_MISTRAL_V3_TEKKEN, true);
    expect(mistral_v3, strlen(mistral_v3), HR_CHAT_MISTRAL_V3, true);
    expect(command_r, strlen(command_r), HR_CHAT_COMMAND_R, true);
    expect(qwen3, strlen(qwen3), HR_CHAT_CHATML, true);
    /* A template text that is a family name selects it. */
    expect("gemma", 5, HR_CHAT_GEMMA, true);
    expect("granite-4.0", 11, HR_CHAT_GRANITE, true);
    /* Absent, empty, garbage, a family Hearth does not know: ChatML, not known. */
    expect(NULL, 0, HR_CHAT_CHATML, false);
    expect("", 0, HR_CHAT_CHATML, false);
    expect("\xff\xfe garbage {{ }}", 15, HR_CHAT_CHATML, false);
    expect(unknown, strlen(unknown), HR_CHAT_CHATML, false);
    /* The length bounds the search: a marker past len is not seen (texts are not NUL-terminated). */
    expect(llama3, 20, HR_CHAT_CHATML, false);
    CHECK(hr_chat_detect(chatml, strlen(chatml), NULL) == HR_CHAT_CHATML); /* known may be NULL */

    /* Names round trip, and the list names every family, each once. */
    const char *list = hr_chat_names();
    for (int t = 0; t < HR_CHAT_COUNT; t++) {
        CHECKF(hr_chat_from_name(hr_chat_name((hr_chat_tmpl)t)) == t, "family %d", t);
        CHECKF(name_count(list, hr_chat_name((hr_chat_tmpl)t)) == 1, "%s not once in '%s'", hr_chat_name((hr_chat_tmpl)t), list);
    }
    CHECK(!strcmp(hr_chat_name(HR_CHAT_LLAMA2), "llama2"));
    CHECK(!strcmp(hr_chat_name(HR_CHAT_MISTRAL), "mistral"));
    CHECK(hr_chat_from_name("ChatML") == -1);
    CHECK(hr_chat_from_name("vicuna") == HR_CHAT_VICUNA);
    CHECK(hr_chat_from_name("exaone4") == HR_CHAT_EXAONE3);
    CHECK(hr_chat_from_name("qwen") == -1);
    CHECK(hr_chat_from_name("") == -1);
    CHECK(hr_chat_from_name(NULL) == -1);
    return TEST_END();
}
