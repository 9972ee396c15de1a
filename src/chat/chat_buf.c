#include "chat/chat_buf.h"
#include <stdlib.h>
#include <string.h>

void hr_chat_buf_putn(hr_chat_buf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p, b->cap = cap;
    }
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

void hr_chat_buf_put(hr_chat_buf *b, const char *s) {
    if (s) hr_chat_buf_putn(b, s, strlen(s));
}

/* Python's str.strip() and Jinja's trim remove the same ASCII whitespace set for the
 * texts that matter here. */
static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

void hr_chat_buf_put_trim(hr_chat_buf *b, const char *s) {
    if (!s) return;
    size_t n = strlen(s), i = 0;
    while (i < n && is_space(s[i])) i++;
    while (n > i && is_space(s[n - 1])) n--;
    hr_chat_buf_putn(b, s + i, n - i);
}
