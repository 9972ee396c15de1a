/* The family table. Texts of the families after Falcon follow llama.cpp's built-in renderer
 * (src/llama-chat.cpp of the version node-llama-cpp 3.22.1 bundles), which the conformance
 * test compares byte for byte; the five first families follow the published Hugging Face
 * templates (render.c). Stop texts: the marker that ends an assistant turn, and where a model
 * may run on without it, the marker that starts the next user turn. */
#include <stddef.h>
#include "chat/families.h"

#define STOPS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define ROLE(p, q) {p, q, false, false}
#define TRIM(p, q) {p, q, true, false}
#define SKIP {NULL, NULL, false, true}
#define FIXED(...) (&(const hr_chat_fixed){__VA_ARGS__})

/* Families whose messages all have the same shape, "<pre>role<mid>content<post>". */
#define SAME(a, b, c, tr)                                                                      \
    .sys = {a "system" b, c, tr, false}, .user = {a "user" b, c, tr, false},                 \
    .asst = {a "assistant" b, c, tr, false}
#define GEN_SAME(a, b) .gen = a "assistant" b

/* DeepSeek's and Hunyuan's markers are written with fullwidth bars (U+FF5C) and U+2581. */

static const hr_chat_family families[HR_CHAT_COUNT] = {
    [HR_CHAT_CHATML] = {"chatml", {0}, STOPS("<|im_end|>"), FIXED(SAME("<|im_start|>", "\n", "<|im_end|>\n", false), GEN_SAME("<|im_start|>", "\n"))},
    [HR_CHAT_LLAMA2] = {"llama2", {0}, STOPS("</s>", "[INST]"), NULL},
    [HR_CHAT_LLAMA3] = {"llama3", {0}, STOPS("<|eot_id|>"),
                        FIXED(SAME("<|start_header_id|>", "<|end_header_id|>\n\n", "<|eot_id|>", true), GEN_SAME("<|start_header_id|>", "<|end_header_id|>\n\n"))},
    [HR_CHAT_MISTRAL] = {"mistral", {0}, STOPS("</s>", "[INST]"), NULL},
    [HR_CHAT_FALCON] = {"falcon", {0}, STOPS("\nUser:"),
                        FIXED(.sep = "\n", .sys = ROLE("System: ", NULL), .user = ROLE("User: ", NULL),
                              .asst = ROLE("Falcon: ", NULL), .gen = "\nFalcon:")},
    [HR_CHAT_PHI3] = {"phi3", {0}, STOPS("<|end|>", "<|user|>"), FIXED(SAME("<|", "|>\n", "<|end|>\n", false), GEN_SAME("<|", "|>\n"))},
    [HR_CHAT_PHI4] = {"phi4", {0}, STOPS("<|im_end|>"), FIXED(SAME("<|im_start|>", "<|im_sep|>", "<|im_end|>", false), GEN_SAME("<|im_start|>", "<|im_sep|>"))},
    [HR_CHAT_GEMMA] = {"gemma", {0}, STOPS("<end_of_turn>", "<start_of_turn>"), NULL},
    [HR_CHAT_MISTRAL_V1] = {"mistral-v1", {0}, STOPS("</s>", "[INST]"), NULL},
    [HR_CHAT_MISTRAL_V3] = {"mistral-v3", {0}, STOPS("</s>", "[INST]"), NULL},
    [HR_CHAT_MISTRAL_V3_TEKKEN] = {"mistral-v3-tekken", {0}, STOPS("</s>", "[INST]"), NULL},
    [HR_CHAT_MISTRAL_V7] = {"mistral-v7", {0}, STOPS("</s>", "[INST]"),
                            FIXED(.sys = ROLE("[SYSTEM_PROMPT] ", "[/SYSTEM_PROMPT]"), .user = ROLE("[INST] ", "[/INST]"),
                                  .asst = ROLE(" ", "</s>"))},
    [HR_CHAT_MISTRAL_V7_TEKKEN] = {"mistral-v7-tekken", {0}, STOPS("</s>", "[INST]"),
                                   FIXED(.sys = ROLE("[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]"),
                                         .user = ROLE("[INST]", "[/INST]"), .asst = ROLE("", "</s>"))},
    [HR_CHAT_DEEPSEEK] = {"deepseek", {0}, STOPS("<|EOT|>", "### Instruction:"),
                          FIXED(.sys = ROLE("", ""), .user = ROLE("### Instruction:\n", "\n"),
                                .asst = ROLE("### Response:\n", "\n<|EOT|>\n"), .gen = "### Response:\n")},
    [HR_CHAT_DEEPSEEK2] = {"deepseek2", {0}, STOPS("<｜end▁of▁sentence｜>", "\n\nUser:"),
                           FIXED(.sys = ROLE("", "\n\n"), .user = ROLE("User: ", "\n\n"),
                                 .asst = ROLE("Assistant: ", "<｜end▁of▁sentence｜>"),
                                 .gen = "Assistant:")},
    [HR_CHAT_DEEPSEEK3] = {"deepseek3", {0}, STOPS("<｜end▁of▁sentence｜>", "<｜User｜>"),
                           FIXED(.sys = ROLE("", "\n\n"), .user = ROLE("<｜User｜>", ""),
                                 .asst = ROLE("<｜Assistant｜>", "<｜end▁of▁sentence｜>"),
                                 .gen = "<｜Assistant｜>")},
    [HR_CHAT_COMMAND_R] = {"command-r", {0}, STOPS("<|END_OF_TURN_TOKEN|>"),
                           FIXED(.sys = TRIM("<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>", "<|END_OF_TURN_TOKEN|>"),
                                 .user = TRIM("<|START_OF_TURN_TOKEN|><|USER_TOKEN|>", "<|END_OF_TURN_TOKEN|>"),
                                 .asst = TRIM("<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>", "<|END_OF_TURN_TOKEN|>"),
                                 .gen = "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>")},
    [HR_CHAT_FALCON3] = {"falcon3", {0}, STOPS("<|endoftext|>", "<|user|>"), FIXED(SAME("<|", "|>\n", "\n", false), GEN_SAME("<|", "|>\n"))},
    [HR_CHAT_ZEPHYR] = {"zephyr", {0}, STOPS("<|endoftext|>", "<|user|>"),
                        FIXED(SAME("<|", "|>\n", "<|endoftext|>\n", false), GEN_SAME("<|", "|>\n"))},
    /* AlphaMonarch repeats the literal "<s>" (not the model's BOS text) before each message. */
    [HR_CHAT_MONARCH] = {"monarch", {0}, STOPS("</s>"),
                         FIXED(.sep = "<s>", SAME("", "\n", "</s>\n", false), .gen = "<s>assistant\n")},
    [HR_CHAT_ORION] = {"orion", {0}, STOPS("</s>"), NULL},
    [HR_CHAT_OPENCHAT] = {"openchat", {0}, STOPS("<|end_of_turn|>"),
                          FIXED(.sys = ROLE("", "<|end_of_turn|>"), .user = ROLE("GPT4 Correct User: ", "<|end_of_turn|>"),
                                .asst = ROLE("GPT4 Correct Assistant: ", "<|end_of_turn|>"),
                                .gen = "GPT4 Correct Assistant:")},
    [HR_CHAT_VICUNA] = {"vicuna", {0}, STOPS("</s>", "\nUSER:"),
                        FIXED(.sys = ROLE("", "\n\n"), .user = ROLE("USER: ", "\n"), .asst = ROLE("ASSISTANT: ", "</s>\n"),
                              .gen = "ASSISTANT:")},
    [HR_CHAT_VICUNA_ORCA] = {"vicuna-orca", {0}, STOPS("</s>", "\nUSER:"),
                             FIXED(.sys = ROLE("SYSTEM: ", "\n"), .user = ROLE("USER: ", "\n"),
                                   .asst = ROLE("ASSISTANT: ", "</s>\n"), .gen = "ASSISTANT:")},
    [HR_CHAT_EXAONE3] = {"exaone3", {"exaone4"}, STOPS("[|endofturn|]"),
                         FIXED(.sys = TRIM("[|system|]", "[|endofturn|]\n"), .user = TRIM("[|user|]", "\n"),
                               .asst = TRIM("[|assistant|]", "[|endofturn|]\n"), .gen = "[|assistant|]")},
    [HR_CHAT_EXAONE_MOE] = {"exaone-moe", {0}, STOPS("<|endofturn|>"),
                            FIXED(SAME("<|", "|>\n", "<|endofturn|>\n", true), GEN_SAME("<|", "|>\n"))},
    [HR_CHAT_GRANITE] = {"granite", {"granite-4.0", "granite-4.1"}, STOPS("<|end_of_text|>"),
                         FIXED(SAME("<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>\n", false), GEN_SAME("<|start_of_role|>", "<|end_of_role|>"))},
    [HR_CHAT_LLAMA4] = {"llama4", {0}, STOPS("<|eot|>"), FIXED(SAME("<|header_start|>", "<|header_end|>\n\n", "<|eot|>", true), GEN_SAME("<|header_start|>", "<|header_end|>\n\n"))},
    [HR_CHAT_MINICPM] = {"minicpm", {0}, STOPS("<用户>"),
                         FIXED(.sys = TRIM("", ""), .user = TRIM("<用户>", "<AI>"), .asst = TRIM("", ""))},
    [HR_CHAT_CHATGLM3] = {"chatglm3", {0}, STOPS("<|user|>", "<|observation|>"),
                          FIXED(.begin = "[gMASK]sop", SAME("<|", "|>\n ", "", false), .gen = "<|assistant|>")},
    [HR_CHAT_CHATGLM4] = {"chatglm4", {0}, STOPS("<|user|>", "<|observation|>"),
                          FIXED(.begin = "[gMASK]<sop>", SAME("<|", "|>\n", "", false), GEN_SAME("<|", "|>\n"))},
    [HR_CHAT_GLMEDGE] = {"glmedge", {0}, STOPS("<|user|>", "<|observation|>"),
                         FIXED(SAME("<|", "|>\n", "", false), .gen = "<|assistant|>")},
    [HR_CHAT_MEGREZ] = {"megrez", {0}, STOPS("<|turn_end|>"), FIXED(SAME("<|role_start|>", "<|role_end|>", "<|turn_end|>", false), GEN_SAME("<|role_start|>", "<|role_end|>"))},
    [HR_CHAT_GIGACHAT] = {"gigachat", {0}, STOPS("<|message_sep|>"),
                          FIXED(.begin = "<s>", .sys = ROLE("", "<|message_sep|>"),
                                .user = ROLE("user<|role_sep|>", "<|message_sep|>available functions<|role_sep|>[]<|message_sep|>"),
                                .asst = ROLE("assistant<|role_sep|>", "<|message_sep|>"), .gen = "assistant<|role_sep|>")},
    /* YandexGPT has no system role; "\n\n" ends a turn there. */
    [HR_CHAT_YANDEX] = {"yandex", {0}, STOPS("\n\n"),
                        FIXED(.sys = SKIP,
                              .user = ROLE(" Пользовате"
                                           "ль: ", "\n\n"),
                              .asst = ROLE(" Ассистент: ", "\n\n"),
                              .gen = " Ассистент:[SEP]")},
    [HR_CHAT_RWKV_WORLD] = {"rwkv-world", {0}, STOPS("\n\n"), NULL},
    /* SmolVLM prints <|im_start|> once as its BOS; its turns are not ChatML. */
    [HR_CHAT_SMOLVLM] = {"smolvlm", {0}, STOPS("<end_of_utterance>"),
                         FIXED(.begin = "<|im_start|>", .sys = ROLE("", "\n\n"), .user = ROLE("User: ", "<end_of_utterance>\n"),
                               .asst = ROLE("Assistant: ", "<end_of_utterance>\n"), .gen = "Assistant:")},
    [HR_CHAT_DOTS1] = {"dots1", {0}, STOPS("<|endofresponse|>"),
                       FIXED(.sys = ROLE("<|system|>", "<|endofsystem|>"), .user = ROLE("<|userprompt|>", "<|endofuserprompt|>"),
                             .asst = ROLE("<|response|>", "<|endofresponse|>"), .gen = "<|response|>")},
    /* gpt-oss ends its analysis channel with <|end|> and goes on to the final channel, so
     * only <|return|> and <|call|> end its turn. */
    [HR_CHAT_GPT_OSS] = {"gpt-oss", {0}, STOPS("<|return|>", "<|call|>"),
                         FIXED(.sys = ROLE("<|start|>system<|message|>", "<|end|>"),
                               .user = ROLE("<|start|>user<|message|>", "<|end|>"),
                               .asst = ROLE("<|start|>assistant<|message|>", "<|return|>"), .gen = "<|start|>assistant")},
    [HR_CHAT_KIMI_K2] = {"kimi-k2", {0}, STOPS("<|im_end|>"),
                         FIXED(.sys = ROLE("<|im_system|>system<|im_middle|>", "<|im_end|>"),
                               .user = ROLE("<|im_user|>user<|im_middle|>", "<|im_end|>"),
                               .asst = ROLE("<|im_assistant|>assistant<|im_middle|>", "<|im_end|>"),
                               .gen = "<|im_assistant|>assistant<|im_middle|>")},
    [HR_CHAT_SEED_OSS] = {"seed_oss", {0}, STOPS("<seed:eos>"),
                          FIXED(.sys = ROLE("<seed:bos>system\n", "<seed:eos>"), .user = ROLE("<seed:bos>user\n", "<seed:eos>"),
                                .asst = TRIM("<seed:bos>assistant\n", "<seed:eos>"), .gen = "<seed:bos>assistant\n")},
    [HR_CHAT_GROK2] = {"grok-2", {0}, STOPS("<|separator|>"),
                       FIXED(.sys = TRIM("System: ", "<|separator|>\n\n"), .user = TRIM("Human: ", "<|separator|>\n\n"),
                             .asst = ROLE("Assistant: ", "<|separator|>\n\n"), .gen = "Assistant:")},
    [HR_CHAT_SOLAR_OPEN] = {"solar-open", {0}, STOPS("<|end|>"),
                            FIXED(SAME("<|begin|>", "<|content|>", "<|end|>", false), .gen = "<|begin|>assistant")},
    [HR_CHAT_BAILING] = {"bailing", {0}, STOPS("<role>HUMAN</role>"),
                         FIXED(.sys = ROLE("<role>SYSTEM</role>", ""), .user = ROLE("<role>HUMAN</role>", ""),
                               .asst = ROLE("<role>ASSISTANT</role>", ""), .gen = "<role>ASSISTANT</role>")},
    [HR_CHAT_BAILING_THINK] = {"bailing-think", {0}, STOPS("<role>HUMAN</role>"),
                               FIXED(.sys = ROLE("<role>SYSTEM</role>", ""), .user = ROLE("<role>HUMAN</role>", ""),
                               .asst = ROLE("<role>ASSISTANT</role>", ""), .gen = "<role>ASSISTANT</role><think>")},
    [HR_CHAT_BAILING2] = {"bailing2", {0}, STOPS("<|role_end|>"),
                          FIXED(.begin_no_sys = "<role>SYSTEM</role>detailed thinking off<|role_end|>",
                                .sys = ROLE("<role>SYSTEM</role>", "<|role_end|>"), .user = ROLE("<role>HUMAN</role>", "<|role_end|>"),
                                .asst = ROLE("<role>ASSISTANT</role>", "<|role_end|>"), .gen = "<role>ASSISTANT</role>")},
    [HR_CHAT_HUNYUAN_MOE] = {"hunyuan-moe", {0}, STOPS("<|eos|>"),
                             FIXED(.sys = ROLE("<|startoftext|>", "<|extra_4|>"), .user = ROLE("<|startoftext|>", "<|extra_0|>"),
                                   .asst = ROLE("", "<|eos|>"))},
    [HR_CHAT_HUNYUAN_DENSE] = {"hunyuan-dense", {0}, STOPS("<｜hy_place▁holder▁no▁" "2｜>"),
                               FIXED(.sys = ROLE("", "<｜hy_place▁holder▁no▁" "3｜>"),
                                     .user = ROLE("<｜hy_User｜>", "<｜hy_Assistant｜>"),
                                     .asst = ROLE("<｜hy_Assistant｜>",
                                                  "<｜hy_place▁holder▁no▁" "2｜>"))},
    [HR_CHAT_HUNYUAN_VL] = {"hunyuan-vl", {0}, STOPS("<｜hy_Assistant｜>"),
                            FIXED(.begin = "<｜hy_begin▁of▁sentence｜>",
                                  .sys = ROLE("", "<｜hy_place▁holder▁no▁" "3｜>"),
                                  .user = ROLE("", "<｜hy_User｜>"), .asst = ROLE("", "<｜hy_Assistant｜>"))},
    [HR_CHAT_PANGU_EMBED] = {"pangu-embedded", {0}, STOPS("[unused10]"),
                             FIXED(.begin_no_sys = "[unused9]系统：[unused10]",
                                   .sys = ROLE("[unused9]系统：", "[unused10]"),
                                   .user = ROLE("[unused9]用户：", "[unused10]"),
                                   .asst = ROLE("[unused9]助手：", "[unused10]"),
                                   .gen = "[unused9]助手：")},
};

const hr_chat_family *hr_chat_family_of(hr_chat_tmpl t) { return &families[t]; }
