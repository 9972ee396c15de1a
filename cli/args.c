#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "cli.h"

bool hr_arg_need(const char *cmd, int argc, char **argv, int i) {
    if (i + 1 < argc) return true;
    fprintf(stderr, "hearth %s: %s needs a value\n", cmd, argv[i]);
    return false;
}

bool hr_arg_long(const char *cmd, const char *flag, const char *v, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end) {
        fprintf(stderr, "hearth %s: %s: '%s' is not an integer\n", cmd, flag, v);
        return false;
    }
    if (x < lo || x > hi) {
        fprintf(stderr, "hearth %s: %s: %ld is out of range [%ld, %ld]\n", cmd, flag, x, lo, hi);
        return false;
    }
    *out = x;
    return true;
}

bool hr_arg_float(const char *cmd, const char *flag, const char *v, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || isnan(x)) {
        fprintf(stderr, "hearth %s: %s: '%s' is not a number\n", cmd, flag, v);
        return false;
    }
    if (x < lo || x > hi) {
        fprintf(stderr, "hearth %s: %s: %g is out of range [%g, %g]\n", cmd, flag, x, lo, hi);
        return false;
    }
    *out = x;
    return true;
}

bool hr_arg_u64(const char *cmd, const char *flag, const char *v, uint64_t *out) {
    char *end;
    errno = 0;
    if (*v == '-') {
        fprintf(stderr, "hearth %s: %s: '%s' must not be negative\n", cmd, flag, v);
        return false;
    }
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || end == v || *end) {
        fprintf(stderr, "hearth %s: %s: '%s' is not an unsigned integer\n", cmd, flag, v);
        return false;
    }
    *out = (uint64_t)x;
    return true;
}

int hr_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "hearth %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\ntry 'hearth %s --help'\n", cmd);
    return 2;
}

bool hr_progress_tty(void) { return isatty(STDERR_FILENO) == 1; }

const char *hr_progress_step(int *last, int pct, bool force) {
    const bool tty = hr_progress_tty();
    if (pct == *last && !force) return NULL;
    /* a log keeps every line: one per 10% step, and the end */
    if (!tty && !force && *last >= 0 && pct / 10 == *last / 10 && pct < 100) return NULL;
    *last = pct;
    return tty ? "\r" : "";
}
