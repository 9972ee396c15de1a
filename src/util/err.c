#include "err.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int hr_errf(hr_err *e, const char *fmt, ...) {
    if (!e) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int hr_errctx(hr_err *e, const char *fmt, ...) {
    if (!e) return -1;
    char prefix[256], old[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    /* Truncation of a long chain of contexts is acceptable. */
    size_t n = strlen(prefix);
    if (n > sizeof e->msg - 3) n = sizeof e->msg - 3;
    memcpy(e->msg, prefix, n);
    memcpy(e->msg + n, ": ", 2);
    size_t rest = sizeof e->msg - n - 3;
    size_t m = strnlen(old, rest);
    memcpy(e->msg + n + 2, old, m);
    e->msg[n + 2 + m] = 0;
    return -1;
}
