/* One row per template family: its names, its stop texts and, for the families whose format
 * is a fixed text around each message, that text. Detection, rendering and stops read the
 * same row, so adding a family is one row here (plus its marker in detect.c). */
#ifndef HR_CHAT_FAMILIES_H
#define HR_CHAT_FAMILIES_H
#include <stdbool.h>
#include "chat/chat.h"

/* How one role's message is written: pre + content (trimmed when trim) + post; skip drops
 * the message (a family with no place for that role). */
typedef struct hr_chat_role_fmt {
    const char *pre, *post;
    bool trim, skip;
} hr_chat_role_fmt;

/* A family whose rendering is: begin (always), begin_no_sys (only without a system
 * message), then per message [sep unless first] + its role's format, then gen when the
 * assistant's reply is to follow. Families that move text between messages (Gemma, Orion,
 * Llama-2, the Mistral turn formats, RWKV) have no such spec and a renderer of their own. */
typedef struct hr_chat_fixed {
    const char *begin, *begin_no_sys, *sep;
    hr_chat_role_fmt sys, user, asst;
    const char *gen;
} hr_chat_fixed;

typedef struct hr_chat_family {
    const char *name;
    const char *aliases[3];     /* other names --chat-template accepts, NULL-padded */
    const char *const *stops;   /* NULL-terminated */
    const hr_chat_fixed *fixed; /* NULL: a renderer of its own in render.c */
} hr_chat_family;

/* The row of family t (t < HR_CHAT_COUNT). */
const hr_chat_family *hr_chat_family_of(hr_chat_tmpl t);
#endif
