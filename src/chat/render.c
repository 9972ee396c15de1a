/* Rendering of each template family, following the published Jinja templates character
 * for character, except that the leading BOS they print is left to the tokenizer. */
#include <stdlib.h>
#include <string.h>
#include "chat/chat.h"
#include "chat/chat_buf.h"

typedef struct render_args {
    const hr_chat_msg *msgs;
    size_t n;
    bool add_assistant;
    const char *bos, *eos;
} render_args;

static int check_msgs(const hr_chat_msg *msgs, size_t n, hr_err *e) {
    if (!msgs || n == 0) return hr_errf(e, "chat: no messages to render");
    for (size_t i = 0; i < n; i++) {
        const char *r = msgs[i].role;
        if (!r || (strcmp(r, "system") && strcmp(r, "user") && strcmp(r, "assistant")))
            return hr_errf(e, "chat: message %zu: unknown role '%s' (system, user, assistant)", i + 1, r ? r : "(none)");
        if (!strcmp(r, "system") && i > 0)
            return hr_errf(e, "chat: message %zu: a system message must be the first message", i + 1);
        if (!msgs[i].content) return hr_errf(e, "chat: message %zu has no content", i + 1);
    }
    return 0;
}

static bool is_role(const hr_chat_msg *m, const char *role) { return !strcmp(m->role, role); }

/* <|im_start|>role\ncontent<|im_end|>\n */
static void render_chatml(hr_chat_buf *b, const render_args *a) {
    for (size_t i = 0; i < a->n; i++) {
        hr_chat_buf_put(b, "<|im_start|>");
        hr_chat_buf_put(b, a->msgs[i].role);
        hr_chat_buf_put(b, "\n");
        hr_chat_buf_put(b, a->msgs[i].content);
        hr_chat_buf_put(b, "<|im_end|>\n");
    }
    if (a->add_assistant) hr_chat_buf_put(b, "<|im_start|>assistant\n");
}

/* Meta's template trims every message's content. */
static void render_llama3(hr_chat_buf *b, const render_args *a) {
    for (size_t i = 0; i < a->n; i++) {
        hr_chat_buf_put(b, "<|start_header_id|>");
        hr_chat_buf_put(b, a->msgs[i].role);
        hr_chat_buf_put(b, "<|end_header_id|>\n\n");
        hr_chat_buf_put_trim(b, a->msgs[i].content);
        hr_chat_buf_put(b, "<|eot_id|>");
    }
    if (a->add_assistant) hr_chat_buf_put(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

/* The first message after a system message carries the system text: the published
 * Llama-2 and Mistral templates have no turn of their own for it. A system message with
 * nothing after it is rendered as an empty user turn rather than dropped. */
static void fold_system(hr_chat_buf *tmp, const char *pre, const char *sys, const char *mid, const char *content) {
    tmp->len = 0;
    hr_chat_buf_put(tmp, "");
    hr_chat_buf_put(tmp, pre);
    hr_chat_buf_put(tmp, sys);
    hr_chat_buf_put(tmp, mid);
    hr_chat_buf_put(tmp, content);
}

/* [INST] <<SYS>>\nsys\n<</SYS>>\n\nuser [/INST] reply </s><s>[INST] user [/INST]
 * (content.strip() applies to the user text with the system block in front). */
static void render_llama2(hr_chat_buf *b, const render_args *a) {
    const char *sys = is_role(&a->msgs[0], "system") ? a->msgs[0].content : NULL;
    size_t first = sys ? 1 : 0;
    hr_chat_buf tmp = {0};
    for (size_t i = first; i < a->n || (sys && i == first); i++) {
        bool user = i >= a->n || is_role(&a->msgs[i], "user");
        const char *content = i < a->n ? a->msgs[i].content : "";
        if (sys && i == first) fold_system(&tmp, "<<SYS>>\n", sys, "\n<</SYS>>\n\n", content);
        else fold_system(&tmp, NULL, NULL, NULL, content);
        if (user) {
            if (b->len) hr_chat_buf_put(b, a->bos);
            hr_chat_buf_put(b, "[INST] ");
            hr_chat_buf_put_trim(b, tmp.oom ? "" : tmp.p);
            hr_chat_buf_put(b, " [/INST]");
        } else {
            hr_chat_buf_put(b, " ");
            hr_chat_buf_put_trim(b, tmp.oom ? "" : tmp.p);
            hr_chat_buf_put(b, " ");
            hr_chat_buf_put(b, a->eos);
        }
    }
    b->oom |= tmp.oom;
    free(tmp.p);
}

/* Mistral-7B-Instruct v0.1: [INST] user [/INST]reply</s>[INST] user [/INST]
 * (BOS only once, at the start; the system text goes before the first user text). */
static void render_mistral(hr_chat_buf *b, const render_args *a) {
    const char *sys = is_role(&a->msgs[0], "system") ? a->msgs[0].content : NULL;
    size_t first = sys ? 1 : 0;
    hr_chat_buf tmp = {0};
    for (size_t i = first; i < a->n || (sys && i == first); i++) {
        bool user = i >= a->n || is_role(&a->msgs[i], "user");
        const char *content = i < a->n ? a->msgs[i].content : NULL;
        if (sys && i == first) fold_system(&tmp, NULL, sys, content ? "\n\n" : NULL, content);
        else fold_system(&tmp, NULL, NULL, NULL, content);
        const char *text = tmp.oom ? "" : tmp.p;
        if (user) {
            hr_chat_buf_put(b, "[INST] ");
            hr_chat_buf_put(b, text);
            hr_chat_buf_put(b, " [/INST]");
        } else {
            hr_chat_buf_put(b, text);
            hr_chat_buf_put(b, a->eos);
        }
    }
    b->oom |= tmp.oom;
    free(tmp.p);
}

/* Falcon-180B-chat: one "Role: content" line per message, joined by newlines. */
static void render_falcon(hr_chat_buf *b, const render_args *a) {
    for (size_t i = 0; i < a->n; i++) {
        const char *r = a->msgs[i].role;
        if (i) hr_chat_buf_put(b, "\n");
        hr_chat_buf_put(b, !strcmp(r, "system") ? "System: " : !strcmp(r, "user") ? "User: " : "Falcon: ");
        hr_chat_buf_put(b, a->msgs[i].content);
    }
    if (a->add_assistant) hr_chat_buf_put(b, "\nFalcon:");
}

int hr_chat_render(hr_chat_tmpl t, const hr_chat_msg *msgs, size_t n, bool add_assistant, const char *bos,
                   const char *eos, char **out, hr_err *e) {
    *out = NULL;
    if ((unsigned)t >= HR_CHAT_COUNT) return hr_errf(e, "chat: unknown template family %d", (int)t);
    if (check_msgs(msgs, n, e)) return -1;
    render_args a = {msgs, n, add_assistant, bos ? bos : "", eos ? eos : ""};
    hr_chat_buf b = {0};
    hr_chat_buf_put(&b, ""); /* so that an empty rendering is still a string */
    switch (t) {
    case HR_CHAT_CHATML: render_chatml(&b, &a); break;
    case HR_CHAT_LLAMA2: render_llama2(&b, &a); break;
    case HR_CHAT_LLAMA3: render_llama3(&b, &a); break;
    case HR_CHAT_MISTRAL: render_mistral(&b, &a); break;
    default: render_falcon(&b, &a); break;
    }
    if (b.oom) {
        free(b.p);
        return hr_errf(e, "chat: out of memory rendering %zu messages", n);
    }
    *out = b.p;
    return 0;
}
