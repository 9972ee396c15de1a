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
    snprintf(e->msg, sizeof e->msg, "%s: %s", prefix, old);
    return -1;
}
