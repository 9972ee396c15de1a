/* The 2 MiB page hint over a model's bytes (gguf_pages.c): gguf_open's mapping and an
 * anonymous buffer carry the kernel's huge-page flag ("hg" in smaps' VmFlags), and
 * gguf_huge_bytes measures only the range it is given: 0 for a region in 4 KiB pages, -1 for
 * an address nothing maps, never more than the range. Whether the kernel then hands out
 * 2 MiB pages depends on its THP setting, the file system and what is already cached, so that
 * part is reported, not asserted. Linux only: elsewhere the test says it skips. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "formats/gguf.h"
#include "formats/types.h"
#include "testutil.h"

/* The VmFlags line of the smaps entry holding p, or "" when none. */
static void vmflags(const void *p, char *out, size_t cap) {
    out[0] = 0;
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return;
    char line[512];
    int in = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long a, b;
        char dash;
        if (sscanf(line, "%llx%c%llx ", &a, &dash, &b) == 3 && dash == '-')
            in = (uintptr_t)p >= a && (uintptr_t)p < b;
        else if (in && !strncmp(line, "VmFlags:", 8)) {
            snprintf(out, cap, "%s", line + 8);
            break;
        }
    }
    fclose(f);
}

static int has_flag(const char *flags, const char *flag) {
    char pad[600];
    snprintf(pad, sizeof pad, " %s ", flags);
    for (char *q = pad; *q; q++)
        if (*q == '\n') *q = ' ';
    char want[8];
    snprintf(want, sizeof want, " %s ", flag);
    return strstr(pad, want) != NULL;
}

/* The bracketed word of the THP setting: always, madvise, never; "" without THP. */
static void thp_mode(char *out, size_t cap) {
    out[0] = 0;
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f) return;
    char line[128] = "";
    if (fgets(line, sizeof line, f)) {
        char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
        if (a && b) snprintf(out, cap, "%.*s", (int)(b - a - 1), a + 1);
    }
    fclose(f);
}

static void test_anonymous(int always) {
    const size_t size = 8u << 20;
    char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    if (p == MAP_FAILED) return;
    char flags[512];
    vmflags(p, flags, sizeof flags);
    CHECKF(!has_flag(flags, "hg"), "flags before the hint: %s", flags);
    memset(p, 1, size);
    CHECKF(always || gguf_huge_bytes(p, size) == 0, "an unadvised region in 2 MiB pages: %lld",
           (long long)gguf_huge_bytes(p, size));
    gguf_advise_huge(p, size);
    vmflags(p, flags, sizeof flags);
    CHECKF(has_flag(flags, "hg"), "no huge-page flag after the hint: %s", flags);
    munmap(p, size);
    CHECK(gguf_huge_bytes(p, size) == -1); /* nothing maps it any more */
    /* Alone (a neighbour of the same flags would merge into its smaps entry). */
    char *q = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(q != MAP_FAILED);
    if (q != MAP_FAILED) {
        gguf_advise_huge(q, size);
        memset(q, 1, size);
        const int64_t h = gguf_huge_bytes(q, size);
        CHECKF(h >= 0 && h <= (int64_t)size, "%lld bytes in 2 MiB pages of %zu", (long long)h, size);
        printf("anonymous: %lld of %zu bytes in 2 MiB pages\n", (long long)h, size);
        munmap(q, size);
    }
}

static void test_file(void) {
    char path[256];
    hr_test_tmp(path, sizeof path, "pages.gguf");
    const uint64_t n = 1u << 20; /* 4 MiB of F32 */
    float *data = malloc(n * sizeof *data);
    CHECK(data != NULL);
    if (!data) return;
    for (uint64_t i = 0; i < n; i++) data[i] = (float)i;
    gguf_writer *w = gguf_writer_new(false);
    gguf_w_tensor(w, "t", HR_F32, 1, &n, data, n * sizeof *data);
    hr_err e = {{0}};
    CHECKF(gguf_w_write(w, path, &e) == 0, "%s", e.msg);
    gguf_writer_free(w);
    /* Written pages sit in the cache as they were written; dropped, the read through the
     * mapping below is what decides their size. */
    int fd = open(path, O_RDONLY);
    if (fd >= 0) fdatasync(fd), posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), close(fd);
    gguf_file f;
    CHECKF(gguf_open(&f, path, &e) == 0, "%s", e.msg);
    char flags[512];
    vmflags(f.base, flags, sizeof flags);
    CHECKF(has_flag(flags, "hg"), "gguf_open's mapping lacks the huge-page flag: %s", flags);
    volatile float s = 0;
    for (size_t o = 0; o < f.size; o += 4096) s += (float)((const unsigned char *)f.base)[o];
    (void)s;
    const int64_t h = gguf_huge_bytes(f.base, f.size);
    CHECKF(h >= 0 && h <= (int64_t)f.size, "%lld bytes in 2 MiB pages of %zu", (long long)h, f.size);
    printf("file: %lld of %zu bytes in 2 MiB pages\n", (long long)h, f.size);
    gguf_close(&f);
    remove(path);
    free(data);
}

int main(void) {
    if (access("/proc/self/smaps", R_OK)) {
        printf("skipped: no /proc/self/smaps (not Linux): the page hint is not observable here\n");
        return 0;
    }
    char mode[32];
    thp_mode(mode, sizeof mode);
    if (!mode[0]) {
        printf("skipped: this kernel has no transparent huge pages: the hint has nothing to ask for\n");
        return 0;
    }
    printf("THP mode: %s\n", mode);
    test_anonymous(!strcmp(mode, "always"));
    test_file();
    return TEST_END();
}
