/* Chat templates: turn a list of messages into the prompt text a chat model was trained
 * on. Hearth does not run Jinja; it recognises the common families from the GGUF's
 * tokenizer.chat_template text and renders them in C. The rendered text contains the
 * template's special tokens as text ("<|im_start|>", "[INST]", ...); tokenize it with
 * parse_special = true, and add_special = true so the model's BOS is added once (the
 * rendered text never starts with BOS; templates that repeat BOS between turns, like
 * Llama-2, contain the model's BOS text there). */
#ifndef HR_CHAT_H
#define HR_CHAT_H
#include <stdbool.h>
#include <stddef.h>
#include "util/err.h"

typedef enum hr_chat_tmpl {
    HR_CHAT_CHATML = 0, /* <|im_start|>role\n...<|im_end|>\n (Qwen2.5, Qwen3, ...); the default when nothing is recognised */
    HR_CHAT_LLAMA2,     /* [INST] <<SYS>>\n...\n<</SYS>>\n\n... [/INST] ... </s><s>[INST] ... */
    HR_CHAT_LLAMA3,     /* <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|> */
    HR_CHAT_MISTRAL,    /* [INST] ... [/INST]... </s>[INST] ... (no <<SYS>>; system folded into the first user turn) */
    HR_CHAT_FALCON,     /* "User: ...\nFalcon: ..." (system as plain first line) */
    /* The families below render as llama.cpp's llama_chat_apply_template does (same names). */
    HR_CHAT_PHI3,       /* <|user|>\n...<|end|>\n<|assistant|>\n */
    HR_CHAT_PHI4,       /* <|im_start|>user<|im_sep|>...<|im_end|> */
    HR_CHAT_GEMMA,      /* <start_of_turn>user\n...<end_of_turn>\n<start_of_turn>model\n (system into the first user turn) */
    HR_CHAT_MISTRAL_V1, /* " [INST] ... [/INST] ...</s>" */
    HR_CHAT_MISTRAL_V3, /* [INST] ...[/INST] ...</s> */
    HR_CHAT_MISTRAL_V3_TEKKEN, /* [INST]...[/INST]...</s> */
    HR_CHAT_MISTRAL_V7, /* [SYSTEM_PROMPT] ...[/SYSTEM_PROMPT][INST] ...[/INST] ...</s> */
    HR_CHAT_MISTRAL_V7_TEKKEN, /* as v7 without the spaces */
    HR_CHAT_DEEPSEEK,   /* deepseek-coder: ### Instruction:\n...\n### Response:\n...\n<|EOT|>\n */
    HR_CHAT_DEEPSEEK2,  /* User: ...\n\nAssistant: ...<｜end▁of▁sentence｜> */
    HR_CHAT_DEEPSEEK3,  /* V3, R1 and its distills: <｜User｜>...<｜Assistant｜>...<｜end▁of▁sentence｜> */
    HR_CHAT_COMMAND_R,  /* <|START_OF_TURN_TOKEN|><|USER_TOKEN|>...<|END_OF_TURN_TOKEN|> */
    HR_CHAT_FALCON3,
    HR_CHAT_ZEPHYR,
    HR_CHAT_MONARCH,
    HR_CHAT_ORION,
    HR_CHAT_OPENCHAT,
    HR_CHAT_VICUNA,
    HR_CHAT_VICUNA_ORCA,
    HR_CHAT_EXAONE3,    /* also EXAONE 4 (same text for system, user, assistant) */
    HR_CHAT_EXAONE_MOE,
    HR_CHAT_GRANITE,    /* Granite 3.x, 4.0, 4.1 (same text for system, user, assistant) */
    HR_CHAT_LLAMA4,
    HR_CHAT_MINICPM,
    HR_CHAT_CHATGLM3,
    HR_CHAT_CHATGLM4,
    HR_CHAT_GLMEDGE,
    HR_CHAT_MEGREZ,
    HR_CHAT_GIGACHAT,
    HR_CHAT_YANDEX,
    HR_CHAT_RWKV_WORLD,
    HR_CHAT_SMOLVLM,
    HR_CHAT_DOTS1,
    HR_CHAT_GPT_OSS,
    HR_CHAT_KIMI_K2,
    HR_CHAT_SEED_OSS,
    HR_CHAT_GROK2,
    HR_CHAT_SOLAR_OPEN,
    HR_CHAT_BAILING,
    HR_CHAT_BAILING_THINK,
    HR_CHAT_BAILING2,
    HR_CHAT_HUNYUAN_MOE,
    HR_CHAT_HUNYUAN_DENSE,
    HR_CHAT_HUNYUAN_VL,
    HR_CHAT_PANGU_EMBED,
    HR_CHAT_COUNT
} hr_chat_tmpl;

typedef struct hr_chat_msg {
    const char *role;    /* "system", "user", "assistant" */
    const char *content;
} hr_chat_msg;

/* The family of a GGUF chat template text (tokenizer.chat_template); *known is set to
 * false (and ChatML returned) when the text is absent (NULL) or not recognised. */
hr_chat_tmpl hr_chat_detect(const char *tmpl, size_t len, bool *known);
const char *hr_chat_name(hr_chat_tmpl t);      /* "chatml", "llama2", "llama3", "mistral", "falcon", "gemma", ... */
/* A family name or one of its aliases ("exaone4", "granite-4.0", ...); -1 if unknown. */
int hr_chat_from_name(const char *name);
/* Comma-separated list of names, for --help and error messages. */
const char *hr_chat_names(void);

/* Renders msgs into *out (malloc'ed, NUL-terminated). add_assistant: end with the header
 * that starts the assistant's reply. bos/eos: the model's BOS and EOS token texts (used by
 * templates that repeat them between turns; may be "" ). Errors: unknown role, a system
 * message that is not first, an empty list. */
int hr_chat_render(hr_chat_tmpl t, const hr_chat_msg *msgs, size_t n, bool add_assistant, const char *bos,
                   const char *eos, char **out, hr_err *e);

/* Texts that end an assistant turn in this template (besides the model's end-of-generation
 * tokens), NULL-terminated; generation stops before them. E.g. "<|im_end|>", "\nUser:". */
const char *const *hr_chat_stops(hr_chat_tmpl t);

/* Streaming stop detection over the reply generated so far (text, len bytes). Returns how
 * many leading bytes may be shown: with a stop text inside, the offset of the earliest one
 * (and *stopped = true); otherwise len minus the longest tail that could still grow into a
 * stop text (*stopped = false). */
size_t hr_chat_stop_scan(const char *const *stops, const char *text, size_t len, bool *stopped);

/* Exact formats (bos/eos: the texts passed to hr_chat_render; the leading BOS the published
 * templates print is left out, the tokenizer adds it):
 *   chatml   <|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\nA<|im_end|>\n
 *            add_assistant: <|im_start|>assistant\n
 *   llama3   <|start_header_id|>user<|end_header_id|>\n\nU<|eot_id|> per message (content trimmed)
 *            add_assistant: <|start_header_id|>assistant<|end_header_id|>\n\n
 *   llama2   [INST] <<SYS>>\nS\n<</SYS>>\n\nU [/INST] A eos bos[INST] U2 [/INST]   (U and A stripped;
 *            add_assistant adds nothing: the reply follows "[/INST]")
 *   mistral  [INST] S\n\nU [/INST]A eos[INST] U2 [/INST]   (v0.1; add_assistant adds nothing)
 *   falcon   System: S\nUser: U\nFalcon: A\nUser: U2   add_assistant: \nFalcon:   (Falcon-180B-chat)
 * The other families: one row each in src/chat/families.c (docs/chat.md lists them). */
#endif
