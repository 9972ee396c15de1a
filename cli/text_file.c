#include "text_file.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Grows *buf so that at least one more byte than *n fits, doubling; -1 out of memory. */
static int grow(char **buf, size_t *cap, size_t n) {
    if (n + 1 < *cap) return 0;
    size_t c = *cap ? *cap * 2 : 65536;
    char *b = c > *cap ? realloc(*buf, c) : NULL;
    if (!b) return -1;
    *buf = b, *cap = c;
    return 0;
}

char *hr_text_file(const char *path, size_t max, size_t *len, hr_err *e) {
    struct stat st;
    if (!stat(path, &st) && S_ISDIR(st.st_mode)) return hr_errf(e, "'%s' is a directory", path), NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return hr_errf(e, "cannot read '%s': %s", path, strerror(errno)), NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0, got = 0;
    bool oom = false;
    do {
        if ((oom = grow(&buf, &cap, n) != 0)) break;
        size_t want = cap - n - 1;
        if (max && want > max + 1 - n) want = max + 1 - n; /* one byte over max tells it is over */
        n += got = fread(buf + n, 1, want, f);
    } while (got > 0 && (!max || n <= max));
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (!oom && !err && (!max || n <= max)) {
        buf[n] = 0;
        *len = n;
        return buf;
    }
    free(buf);
    if (oom) hr_errf(e, "cannot read '%s': out of memory", path);
    else if (err) hr_errf(e, "cannot read '%s': %s", path, strerror(err));
    else hr_errf(e, "'%s' is over the limit of %zu bytes", path, max);
    return NULL;
}
