/* Template family from a GGUF tokenizer.chat_template text, and family names. Hearth does
 * not evaluate Jinja: each family's templates share literal markers, so a substring search
 * is both enough and robust to the many small variants. The markers and their order are
 * llama.cpp's (llm_chat_detect_template), so that a model gets the same family in both:
 * several families share markers (<|im_start|>, <|user|>, [INST]), and the order decides. */
#include <string.h>
#include "chat/chat.h"
#include "chat/families.h"

typedef struct text {
    const char *s;
    size_t len;
} text;

/* strstr on a text that is not NUL-terminated. */
static bool has(text t, const char *needle) {
    size_t n = strlen(needle);
    for (size_t i = 0; n <= t.len && i <= t.len - n; i++)
        if (t.s[i] == needle[0] && !memcmp(t.s + i, needle, n)) return true;
    return false;
}

static bool has2(text t, const char *a, const char *b) { return has(t, a) && has(t, b); }

/* [INST] templates: Mistral's official v7 / v1 / v3 / v3-tekken, else Llama-2's, where
 * Hearth keeps the published Hugging Face formats (llama2 with <<SYS>>, mistral without). */
static int detect_inst(text t) {
    if (has(t, "[SYSTEM_PROMPT]")) return HR_CHAT_MISTRAL_V7;
    if (has(t, "' [INST] ' + system_message") || has(t, "[AVAILABLE_TOOLS]")) {
        if (has(t, " [INST]")) return HR_CHAT_MISTRAL_V1;
        return has(t, "\"[INST]\"") ? HR_CHAT_MISTRAL_V3_TEKKEN : HR_CHAT_MISTRAL_V3;
    }
    return has(t, "<<SYS>>") ? HR_CHAT_LLAMA2 : HR_CHAT_MISTRAL;
}

/* The families whose markers llama.cpp tests first. */
static int detect_early(text t) {
    if (has(t, "<|im_start|>"))
        return has(t, "<|im_sep|>") ? HR_CHAT_PHI4 : has(t, "<end_of_utterance>") ? HR_CHAT_SMOLVLM : HR_CHAT_CHATML;
    if ((t.len >= 7 && !memcmp(t.s, "mistral", 7)) || has(t, "[INST]")) return detect_inst(t);
    if (has2(t, "<|assistant|>", "<|end|>")) return HR_CHAT_PHI3;
    if (has(t, "[gMASK]<sop>")) return HR_CHAT_CHATGLM4;
    if (has2(t, "<|assistant|>", "<|user|>")) {
        if (has(t, "<|tool_declare|>")) return HR_CHAT_EXAONE_MOE;
        return has(t, "</s>") ? HR_CHAT_FALCON3 : HR_CHAT_GLMEDGE;
    }
    if (has2(t, "<|{{ item['role'] }}|>", "<|begin_of_image|>")) return HR_CHAT_GLMEDGE;
    if (has2(t, "<|user|>", "<|endoftext|>")) return HR_CHAT_ZEPHYR;
    if (has(t, "bos_token + message['role']")) return HR_CHAT_MONARCH;
    if (has(t, "<start_of_turn>")) return HR_CHAT_GEMMA;
    if (has(t, "'\\n\\nAssistant: ' + eos_token")) return HR_CHAT_ORION;
    if (has(t, "GPT4 Correct ")) return HR_CHAT_OPENCHAT;
    if (has2(t, "USER: ", "ASSISTANT: ")) return has(t, "SYSTEM: ") ? HR_CHAT_VICUNA_ORCA : HR_CHAT_VICUNA;
    if (has2(t, "### Instruction:", "<|EOT|>")) return HR_CHAT_DEEPSEEK;
    if (has2(t, "<|START_OF_TURN_TOKEN|>", "<|USER_TOKEN|>")) return HR_CHAT_COMMAND_R;
    if (has2(t, "<|start_header_id|>", "<|end_header_id|>")) return HR_CHAT_LLAMA3;
    return -1;
}

static int detect_late(text t) {
    if (has(t, "[gMASK]sop")) return HR_CHAT_CHATGLM3;
    if (has(t, "<用户>")) return HR_CHAT_MINICPM;
    if (has(t, "'Assistant: ' + message['content'] + eos_token")) return HR_CHAT_DEEPSEEK2;
    if (has2(t, "<｜Assistant｜>", "<｜User｜>") && has(t, "<｜end▁of▁sentence｜>")) return HR_CHAT_DEEPSEEK3;
    if (has2(t, "[|system|]", "[|assistant|]") && has(t, "[|endofturn|]")) return HR_CHAT_EXAONE3;
    if (has(t, "rwkv-world") || has(t, "{{- 'User: ' + message['content']|trim + '\\n\\n' -}}")) return HR_CHAT_RWKV_WORLD;
    if (has(t, "<|start_of_role|>")) return HR_CHAT_GRANITE;
    if (has(t, "message['role'] + additional_special_tokens[0] + message['content'] + additional_special_tokens[1]"))
        return HR_CHAT_GIGACHAT;
    if (has(t, "<|role_start|>")) return HR_CHAT_MEGREZ;
    if (has(t, " Ассистент:")) return HR_CHAT_YANDEX;
    if (has2(t, "<role>ASSISTANT</role>", "'HUMAN'")) return HR_CHAT_BAILING;
    if (has2(t, "<role>ASSISTANT</role>", "\"HUMAN\"") && has(t, "<think>")) return HR_CHAT_BAILING_THINK;
    if (has2(t, "<role>ASSISTANT</role>", "<role>HUMAN</role>") && has(t, "<|role_end|>")) return HR_CHAT_BAILING2;
    if (has2(t, "<|header_start|>", "<|header_end|>")) return HR_CHAT_LLAMA4;
    if (has(t, "<|endofuserprompt|>")) return HR_CHAT_DOTS1;
    if (has2(t, "<|extra_0|>", "<|extra_4|>")) return HR_CHAT_HUNYUAN_MOE;
    if (has2(t, "<|start|>", "<|channel|>")) return HR_CHAT_GPT_OSS;
    if (has2(t, "<｜hy_Assistant｜>", "<｜hy_begin▁of▁sentence｜>")) return HR_CHAT_HUNYUAN_VL;
    if (has2(t, "<｜hy_Assistant｜>", "<｜hy_place▁holder▁no▁3｜>")) return HR_CHAT_HUNYUAN_DENSE;
    if (has(t, "<|im_assistant|>assistant<|im_middle|>")) return HR_CHAT_KIMI_K2;
    if (has(t, "<seed:bos>")) return HR_CHAT_SEED_OSS;
    if (has(t, "'Assistant: '  + message['content'] + '<|separator|>")) return HR_CHAT_GROK2;
    if (has(t, "[unused9]系统：[unused10]")) return HR_CHAT_PANGU_EMBED;
    if (has2(t, "<|begin|>", "<|end|>") && has(t, "<|content|>")) return HR_CHAT_SOLAR_OPEN;
    /* Falcon-180B-chat; "User:" alone is shared with other families (DeepSeek-V2, RWKV). */
    if (has(t, "Falcon:")) return HR_CHAT_FALCON;
    return -1;
}

/* A template text that is exactly a family name (llama.cpp accepts those too). */
static int detect_name(text t) {
    char name[32];
    if (t.len == 0 || t.len >= sizeof name) return -1;
    memcpy(name, t.s, t.len);
    name[t.len] = 0;
    return hr_chat_from_name(name);
}

hr_chat_tmpl hr_chat_detect(const char *tmpl, size_t len, bool *known) {
    text t = {tmpl, tmpl ? len : 0};
    int f = tmpl ? detect_name(t) : -1;
    if (tmpl && f < 0) f = detect_early(t);
    if (tmpl && f < 0) f = detect_late(t);
    if (known) *known = f >= 0;
    return f >= 0 ? (hr_chat_tmpl)f : HR_CHAT_CHATML;
}

const char *hr_chat_name(hr_chat_tmpl t) { return (unsigned)t < HR_CHAT_COUNT ? hr_chat_family_of(t)->name : "unknown"; }

int hr_chat_from_name(const char *name) {
    for (int i = 0; name && i < HR_CHAT_COUNT; i++) {
        const hr_chat_family *f = hr_chat_family_of((hr_chat_tmpl)i);
        if (!strcmp(name, f->name)) return i;
        for (size_t k = 0; k < sizeof f->aliases / sizeof f->aliases[0] && f->aliases[k]; k++)
            if (!strcmp(name, f->aliases[k])) return i;
    }
    return -1;
}

const char *hr_chat_names(void) {
    return "chatml, llama2, llama3, mistral, falcon, phi3, phi4, gemma, mistral-v1, mistral-v3, mistral-v3-tekken, "
           "mistral-v7, mistral-v7-tekken, deepseek, deepseek2, deepseek3, command-r, falcon3, zephyr, monarch, orion, "
           "openchat, vicuna, vicuna-orca, exaone3, exaone-moe, granite, llama4, minicpm, chatglm3, chatglm4, glmedge, "
           "megrez, gigachat, yandex, rwkv-world, smolvlm, dots1, gpt-oss, kimi-k2, seed_oss, grok-2, solar-open, "
           "bailing, bailing-think, bailing2, hunyuan-moe, hunyuan-dense, hunyuan-vl, pangu-embedded";
}
