/* A byte count for messages, in the unit that keeps it readable ("96 bytes", "12.5 KiB",
 * "3.2 MiB", "1.25 GiB"): a budget of a few MiB printed in GiB reads "0.000 GiB". */
#ifndef HR_SIZE_H
#define HR_SIZE_H
#include <stdint.h>
#include <stdio.h>

#define HR_SIZE_STR 24

static inline const char *hr_size_str(uint64_t b, char out[HR_SIZE_STR]) {
    if (b < 1024) snprintf(out, HR_SIZE_STR, "%llu bytes", (unsigned long long)b);
    else if (b < (1ull << 20)) snprintf(out, HR_SIZE_STR, "%.1f KiB", (double)b / 1024.0);
    else if (b < (1ull << 30)) snprintf(out, HR_SIZE_STR, "%.1f MiB", (double)b / 1048576.0);
    else snprintf(out, HR_SIZE_STR, "%.2f GiB", (double)b / 1073741824.0);
    return out;
}

#endif
