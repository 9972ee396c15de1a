/* Rendering of each template family: the table's fixed formats (families.c) and the
 * families that move text between messages. Llama-2, Mistral v0.1 and Falcon-180B follow
 * the published Jinja templates character for character; the others follow llama.cpp's
 * built-in renderer. The leading BOS templates print is left to the tokenizer. */
#include <stdlib.h>
#include <string.h>
#include "chat/chat.h"
#include "chat/chat_buf.h"
#include "chat/families.h"

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

/* The families with a fixed text around each message (families.c). */
static void render_fixed(hr_chat_buf *b, const render_args *a, const hr_chat_fixed *f) {
    hr_chat_buf_put(b, f->begin);
    if (!is_role(&a->msgs[0], "system")) hr_chat_buf_put(b, f->begin_no_sys);
    for (size_t i = 0; i < a->n; i++) {
        const hr_chat_msg *m = &a->msgs[i];
        const hr_chat_role_fmt *r = is_role(m, "system") ? &f->sys : is_role(m, "user") ? &f->user : &f->asst;
        if (r->skip) continue;
        if (i) hr_chat_buf_put(b, f->sep);
        hr_chat_buf_put(b, r->pre);
        if (r->trim) hr_chat_buf_put_trim(b, m->content);
        else hr_chat_buf_put(b, m->content);
        hr_chat_buf_put(b, r->post);
    }
    if (a->add_assistant) hr_chat_buf_put(b, f->gen);
}

/* Gemma has no system role: the system text (trimmed) opens the first user turn, followed
 * by a blank line; the assistant is "model". */
static void render_gemma(hr_chat_buf *b, const render_args *a) {
    const char *sys = NULL;
    for (size_t i = 0; i < a->n; i++) {
        const hr_chat_msg *m = &a->msgs[i];
        if (is_role(m, "system")) {
            sys = m->content;
            continue;
        }
        bool model = is_role(m, "assistant");
        hr_chat_buf_put(b, model ? "<start_of_turn>model\n" : "<start_of_turn>user\n");
        /* An all-blank system text is dropped, as an empty one is. */
        size_t before = b->len;
        if (sys && !model) hr_chat_buf_put_trim(b, sys);
        if (b->len > before) hr_chat_buf_put(b, "\n\n");
        if (!model) sys = NULL;
        hr_chat_buf_put_trim(b, m->content);
        hr_chat_buf_put(b, "<end_of_turn>\n");
    }
    if (a->add_assistant) hr_chat_buf_put(b, "<start_of_turn>model\n");
}

/* Orion-14B-Chat: the system text opens the first user turn; the template itself prints
 * EOS after each "Assistant: " prompt, so there is no separate generation prompt. */
static void render_orion(hr_chat_buf *b, const render_args *a) {
    const char *sys = NULL;
    for (size_t i = 0; i < a->n; i++) {
        const hr_chat_msg *m = &a->msgs[i];
        if (is_role(m, "system")) sys = m->content;
        else if (is_role(m, "user")) {
            hr_chat_buf_put(b, "Human: ");
            if (sys && *sys) {
                hr_chat_buf_put(b, sys);
                hr_chat_buf_put(b, "\n\n");
            }
            sys = NULL;
            hr_chat_buf_put(b, m->content);
            hr_chat_buf_put(b, "\n\nAssistant: </s>");
        } else {
            hr_chat_buf_put(b, m->content);
            hr_chat_buf_put(b, "</s>");
        }
    }
}

/* Mistral's v1 / v3 / v3-tekken formats: one [INST] opens each turn, holding the system
 * text (if any) and the user text; the reply closes the turn with </s>. They differ only in
 * spaces, and v3 trims the replies. */
static void render_mistral_turns(hr_chat_buf *b, const render_args *a, hr_chat_tmpl t) {
    const char *lead = t == HR_CHAT_MISTRAL_V1 ? " " : "", *trail = t == HR_CHAT_MISTRAL_V3_TEKKEN ? "" : " ";
    bool in_turn = false;
    for (size_t i = 0; i < a->n; i++) {
        const hr_chat_msg *m = &a->msgs[i];
        if (!in_turn) {
            hr_chat_buf_put(b, lead);
            hr_chat_buf_put(b, "[INST]");
            hr_chat_buf_put(b, trail);
            in_turn = true;
        }
        if (is_role(m, "system")) {
            hr_chat_buf_put(b, m->content);
            hr_chat_buf_put(b, "\n\n");
        } else if (is_role(m, "user")) {
            hr_chat_buf_put(b, m->content);
            hr_chat_buf_put(b, lead);
            hr_chat_buf_put(b, "[/INST]");
        } else {
            hr_chat_buf_put(b, trail);
            if (t == HR_CHAT_MISTRAL_V3) hr_chat_buf_put_trim(b, m->content);
            else hr_chat_buf_put(b, m->content);
            hr_chat_buf_put(b, "</s>");
            in_turn = false;
        }
    }
}

/* RWKV "world" models: "\n\n" ends every turn (it is their end-of-turn token), and the
 * assistant prompt follows a final user message whatever add_assistant says. */
static void render_rwkv(hr_chat_buf *b, const render_args *a) {
    for (size_t i = 0; i < a->n; i++) {
        const hr_chat_msg *m = &a->msgs[i];
        bool user = is_role(m, "user");
        hr_chat_buf_put(b, is_role(m, "system") ? "System: " : user ? "User: " : "Assistant: ");
        hr_chat_buf_put_trim(b, m->content);
        hr_chat_buf_put(b, "\n\n");
        if (user && i + 1 == a->n) hr_chat_buf_put(b, "Assistant:");
    }
}

static void render_own(hr_chat_buf *b, const render_args *a, hr_chat_tmpl t) {
    switch (t) {
    case HR_CHAT_LLAMA2: render_llama2(b, a); break;
    case HR_CHAT_MISTRAL: render_mistral(b, a); break;
    case HR_CHAT_GEMMA: render_gemma(b, a); break;
    case HR_CHAT_ORION: render_orion(b, a); break;
    case HR_CHAT_RWKV_WORLD: render_rwkv(b, a); break;
    case HR_CHAT_MISTRAL_V1:
    case HR_CHAT_MISTRAL_V3:
    case HR_CHAT_MISTRAL_V3_TEKKEN: render_mistral_turns(b, a, t); break;
    default: break; /* every family has a fixed format or a case here (test_render checks) */
    }
}

int hr_chat_render(hr_chat_tmpl t, const hr_chat_msg *msgs, size_t n, bool add_assistant, const char *bos,
                   const char *eos, char **out, hr_err *e) {
    *out = NULL;
    if ((unsigned)t >= HR_CHAT_COUNT) return hr_errf(e, "chat: unknown template family %d", (int)t);
    if (check_msgs(msgs, n, e)) return -1;
    render_args a = {msgs, n, add_assistant, bos ? bos : "", eos ? eos : ""};
    hr_chat_buf b = {0};
    hr_chat_buf_put(&b, ""); /* so that an empty rendering is still a string */
    const hr_chat_fixed *f = hr_chat_family_of(t)->fixed;
    if (f) render_fixed(&b, &a, f);
    else render_own(&b, &a, t);
    if (b.oom) {
        free(b.p);
        return hr_errf(e, "chat: out of memory rendering %zu messages", n);
    }
    *out = b.p;
    return 0;
}
