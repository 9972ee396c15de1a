/* The conversation of hearth chat: a list of messages, trimming from the oldest turn, and
 * saving and loading as JSON in the shape of an OpenAI chat request,
 *   {"messages": [{"role": "system", "content": "..."}, {"role": "user", ...}, ...]}
 * so a saved chat can be posted to hearth serve's /v1/chat/completions as it is. */
#ifndef HR_CHAT_CONV_H
#define HR_CHAT_CONV_H
#include <stdbool.h>
#include <stddef.h>
#include "chat/chat.h"

/* Roles are static strings ("system", "user", "assistant"); contents are owned. */
typedef struct hr_conv {
    hr_chat_msg *msgs;
    size_t n, cap;
} hr_conv;

/* Appends a copy of text[0..len). 0, or -1 out of memory. */
int hr_conv_push(hr_conv *cv, const char *role, const char *text, size_t len);
/* 1 when the first message is the system message (which trimming keeps), else 0. */
size_t hr_conv_first(const hr_conv *cv);
void hr_conv_remove(hr_conv *cv, size_t i);
/* Whether a turn can go while keeping the system message and the newest message. */
bool hr_conv_can_drop(const hr_conv *cv);
/* Drops the oldest turn (its user message and the replies up to the next user message);
 * returns the number of messages removed. */
size_t hr_conv_drop_turn(hr_conv *cv);
void hr_conv_truncate(hr_conv *cv, size_t keep);
void hr_conv_free(hr_conv *cv);

/* Writes the conversation as JSON. Bytes that are not valid UTF-8 are written as U+FFFD.
 * 0, or -1 with err (cap bytes) set. */
int hr_conv_save(const hr_conv *cv, const char *path, char *err, size_t cap);
/* Reads a conversation saved by hr_conv_save (or any JSON of that shape; a bare array of
 * messages too; other keys are ignored) into *out, which must be empty. Roles must be system,
 * user or assistant, the system message first if any. 0, or -1 with err set. */
int hr_conv_load(hr_conv *out, const char *path, char *err, size_t cap);
#endif
