/* The line editor's history kept in a file across chats (ollama keeps its REPL's so): one
 * entry per line, '\' and control characters escaped, appended as each line enters the
 * history, so concurrent chats interleave rather than overwrite each other. Reading keeps the
 * newest HR_LE_HISTORY_MAX entries; a file grown past twice that is rewritten with them. The
 * file is created readable by its owner only: it holds what the user typed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lineedit.h"

/* s with '\' as "\\", newline "\n", carriage return "\r", other control bytes "\xHH". */
static char *encode(const char *s) {
    char *o = malloc(strlen(s) * 4 + 2), *p = o;
    if (!o) return NULL;
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c == '\\') *p++ = '\\', *p++ = '\\';
        else if (c == '\n') *p++ = '\\', *p++ = 'n';
        else if (c == '\r') *p++ = '\\', *p++ = 'r';
        else if (c < 0x20 || c == 0x7f) p += sprintf(p, "\\x%02x", c);
        else *p++ = (char)c;
    }
    *p++ = '\n', *p = 0;
    return o;
}

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* encode's inverse in place; an unknown escape stays as written. */
static void decode(char *s) {
    char *o = s;
    for (; *s; s++) {
        if (*s != '\\' || !s[1]) { *o++ = *s; continue; }
        if (s[1] == '\\' || s[1] == 'n' || s[1] == 'r') {
            *o++ = s[1] == 'n' ? '\n' : s[1] == 'r' ? '\r' : '\\';
            s++;
        } else if (s[1] == 'x' && hexval(s[2]) >= 0 && hexval(s[3]) >= 0) {
            *o++ = (char)(hexval(s[2]) * 16 + hexval(s[3]));
            s += 3;
        } else {
            *o++ = *s;
        }
    }
    *o = 0;
}

/* The directories above path, made 0700 where missing (mkdir -p). */
static int make_parents(const char *path) {
    char *d = strdup(path);
    if (!d) return -1;
    for (char *p = d + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(d, 0700) && errno != EEXIST) {
            free(d);
            return -1;
        }
        *p = '/';
    }
    free(d);
    return 0;
}

/* Reads path's entries into the history; *lines: how many the file holds. */
static int load(hr_lineedit *le, FILE *f, size_t *lines) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t k;
    *lines = 0;
    while ((k = getline(&line, &cap, f)) >= 0) {
        while (k > 0 && (line[k - 1] == '\n' || line[k - 1] == '\r')) line[--k] = 0;
        decode(line);
        (*lines)++;
        if (*line && hr_le_history_add(le, line)) {
            free(line);
            return -1;
        }
    }
    free(line);
    return 0;
}

/* path rewritten with the history's entries (a temporary file renamed over it, so a reader
 * sees the old file or the new one, never a part). */
static int rewrite(const hr_lineedit *le, const char *path) {
    const size_t n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (!tmp) return -1;
    snprintf(tmp, n, "%s.%ld.tmp", path, (long)getpid()); /* two chats starting at once: each its own */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600), ok = fd >= 0;
    for (size_t i = 0; ok && i < le->n_hist; i++) {
        char *e = encode(le->hist[i]);
        ok = e && write(fd, e, strlen(e)) == (ssize_t)strlen(e);
        free(e);
    }
    if (fd >= 0 && close(fd)) ok = 0;
    if (ok && rename(tmp, path)) ok = 0;
    if (!ok) unlink(tmp);
    free(tmp);
    return ok ? 0 : -1;
}

int hr_le_history_persist(hr_lineedit *le, const char *path, char *err, size_t cap) {
    if (make_parents(path)) {
        snprintf(err, cap, "cannot create the directory of %s: %s", path, strerror(errno));
        return -1;
    }
    const int fd = open(path, O_RDONLY | O_CREAT, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        snprintf(err, cap, "cannot open %s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    size_t lines = 0;
    const int r = load(le, f, &lines);
    fclose(f);
    if (r) {
        snprintf(err, cap, "out of memory reading %s", path);
        return -1;
    }
    if (lines > 2 * HR_LE_HISTORY_MAX && rewrite(le, path)) {
        snprintf(err, cap, "cannot rewrite %s: %s", path, strerror(errno));
        return -1;
    }
    if (!(le->hist_path = strdup(path))) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    return 0;
}

int hr_le_history_append(const hr_lineedit *le, const char *line) {
    if (!le->hist_path) return 0;
    char *e = encode(line);
    if (!e) return -1;
    const int fd = open(le->hist_path, O_WRONLY | O_APPEND | O_CREAT, 0600);
    const size_t n = strlen(e);
    /* one write per entry: O_APPEND keeps concurrent chats' entries whole */
    const int ok = fd >= 0 && write(fd, e, n) == (ssize_t)n;
    if (fd >= 0) close(fd);
    free(e);
    return ok ? 0 : -1;
}
