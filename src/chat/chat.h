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
    HR_CHAT_CHATML = 0, /* <|im_start|>role\n...<|im_end|>\n ; the default when nothing is recognised */
    HR_CHAT_LLAMA2,     /* [INST] <<SYS>>\n...\n<</SYS>>\n\n... [/INST] ... </s><s>[INST] ... */
    HR_CHAT_LLAMA3,     /* <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|> */
    HR_CHAT_MISTRAL,    /* [INST] ... [/INST]... </s>[INST] ... (no <<SYS>>; system folded into the first user turn) */
    HR_CHAT_FALCON,     /* "User: ...\nFalcon: ..." (system as plain first line) */
    HR_CHAT_COUNT
} hr_chat_tmpl;

typedef struct hr_chat_msg {
    const char *role;    /* "system", "user", "assistant" */
    const char *content;
} hr_chat_msg;

/* The family of a GGUF chat template text (tokenizer.chat_template); *known is set to
 * false (and ChatML returned) when the text is absent (NULL) or not recognised. */
hr_chat_tmpl hr_chat_detect(const char *tmpl, size_t len, bool *known);
const char *hr_chat_name(hr_chat_tmpl t);      /* "chatml", "llama2", "llama3", "mistral", "falcon" */
int hr_chat_from_name(const char *name);       /* -1 if unknown */
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
 *   falcon   System: S\nUser: U\nFalcon: A\nUser: U2   add_assistant: \nFalcon:   (Falcon-180B-chat) */
#endif
