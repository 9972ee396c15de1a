/* Error reporting: every fallible function takes an hr_err* (may be NULL),
 * returns a negative status on failure and leaves a one-line message in it.
 * Only the CLI prints. */
#ifndef HR_ERR_H
#define HR_ERR_H
#include <stddef.h>

/* Also defined, identically, by include/hearth.h. */
#ifndef HR_ERR_DEFINED
#define HR_ERR_DEFINED
typedef struct hr_err {
    char msg[512];
} hr_err;
#endif

/* Formats a message into e (if non-NULL) and returns -1, so callers can write
 * `return hr_errf(e, "...", ...);`. */
int hr_errf(hr_err *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Prefixes the existing message with context: "ctx: old message". Returns -1. */
int hr_errctx(hr_err *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
