/* A growable text buffer for the renderers. Allocation failure is sticky: appends after a
 * failure do nothing and oom stays set, so a renderer checks once at the end. */
#ifndef HR_CHAT_BUF_H
#define HR_CHAT_BUF_H
#include <stdbool.h>
#include <stddef.h>

typedef struct hr_chat_buf {
    char *p;
    size_t len, cap;
    bool oom;
} hr_chat_buf;

void hr_chat_buf_putn(hr_chat_buf *b, const char *s, size_t n);
void hr_chat_buf_put(hr_chat_buf *b, const char *s); /* NULL appends nothing */
/* Appends s without leading and trailing whitespace (Jinja's trim / Python's strip). */
void hr_chat_buf_put_trim(hr_chat_buf *b, const char *s);
#endif
