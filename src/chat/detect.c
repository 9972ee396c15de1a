/* Template family from a GGUF tokenizer.chat_template text, and family names. Hearth does
 * not evaluate Jinja: each family's templates share literal markers that no other family
 * uses, so a substring search is both enough and robust to the many small variants. */
#include <string.h>
#include "chat/chat.h"

static const char *const names[HR_CHAT_COUNT] = {"chatml", "llama2", "llama3", "mistral", "falcon"};

/* strstr on a text that is not NUL-terminated. */
static bool has(const char *s, size_t len, const char *needle) {
    size_t n = strlen(needle);
    for (size_t i = 0; n <= len && i <= len - n; i++)
        if (s[i] == needle[0] && !memcmp(s + i, needle, n)) return true;
    return false;
}

hr_chat_tmpl hr_chat_detect(const char *tmpl, size_t len, bool *known) {
    bool ok = true;
    hr_chat_tmpl t = HR_CHAT_CHATML;
    if (!tmpl) ok = false;
    else if (has(tmpl, len, "<|im_start|>")) t = HR_CHAT_CHATML;
    else if (has(tmpl, len, "<|start_header_id|>")) t = HR_CHAT_LLAMA3;
    else if (has(tmpl, len, "[INST]")) t = has(tmpl, len, "<<SYS>>") ? HR_CHAT_LLAMA2 : HR_CHAT_MISTRAL;
    /* "User:" alone is shared with other families (DeepSeek, Vicuna-like); the assistant
     * name is Falcon's own. */
    else if (has(tmpl, len, "Falcon:")) t = HR_CHAT_FALCON;
    else ok = false;
    if (known) *known = ok;
    return t;
}

const char *hr_chat_name(hr_chat_tmpl t) { return (unsigned)t < HR_CHAT_COUNT ? names[t] : "unknown"; }

int hr_chat_from_name(const char *name) {
    for (int i = 0; name && i < HR_CHAT_COUNT; i++)
        if (!strcmp(name, names[i])) return i;
    return -1;
}

const char *hr_chat_names(void) { return "chatml, llama2, llama3, mistral, falcon"; }
