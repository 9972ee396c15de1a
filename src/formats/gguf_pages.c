/* The pages a model's bytes live in: the 2 MiB page hint, and how much of it took. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gguf.h"

/* Decode reads every weight once per token, fetching rows ahead in software, and a sparse FFN
 * jumps between rows of 2-5 KiB: over 4 KiB pages every page is a new TLB entry, and decode
 * measured up to 1.66x slower than over 2 MiB pages (docs/performance.md, "2 MiB pages for the
 * mapped weights"). Asked for them, Linux (6.x, on file systems with large folios such as ext4
 * and xfs) fills the page cache through this mapping in 2 MiB folios and maps them whole, so
 * resident memory is unchanged; pages already cached stay as they are, and an anonymous buffer
 * (--no-mmap) gets transparent huge pages. Only for files that fit in RAM: past that, 2 MiB
 * read-ahead per fault would only add to the thrashing. A hint; failure is harmless. */
void gguf_advise_huge(void *base, size_t size) {
#ifdef MADV_HUGEPAGE
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0 && size / (size_t)page <= (size_t)pages) (void)madvise(base, size, MADV_HUGEPAGE);
#else
    (void)base, (void)size;
#endif
}

/* Sums FilePmdMapped and AnonHugePages over the smaps entries that overlap the range. smaps
 * counts per mapping, and the kernel merges neighbouring anonymous mappings of equal flags
 * into one, so the sum is capped at the range's size (a file's mapping is its own entry). */
int64_t gguf_huge_bytes(const void *base, size_t size) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    const uintptr_t lo = (uintptr_t)base, hi = lo + size;
    char line[512];
    int in = 0, seen = 0;
    int64_t kb = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long a, b, v;
        char dash;
        if (sscanf(line, "%llx%c%llx ", &a, &dash, &b) == 3 && dash == '-') {
            in = a < hi && b > lo;
            seen |= in;
        } else if (in && (sscanf(line, "FilePmdMapped: %llu kB", &v) == 1 || sscanf(line, "AnonHugePages: %llu kB", &v) == 1)) {
            kb += (int64_t)v;
        }
    }
    fclose(f);
    if (!seen) return -1;
    return kb * 1024 < (int64_t)size ? kb * 1024 : (int64_t)size;
}
