/* Byte-string -> int32 hash map (open addressing). Keys are not copied: they must
 * outlive the map. The first value stored for a key wins, as with std::map::emplace. */
#ifndef HR_TOK_STRMAP_H
#define HR_TOK_STRMAP_H
#include <stddef.h>
#include <stdint.h>

typedef struct hr_strmap_slot {
    const char *key;
    uint32_t len;
    int32_t val;
} hr_strmap_slot;

typedef struct hr_strmap {
    hr_strmap_slot *slot;
    size_t cap; /* power of two */
    size_t n;
} hr_strmap;

int hr_strmap_init(hr_strmap *m, size_t expected); /* 0 or -1 (out of memory) */
void hr_strmap_free(hr_strmap *m);
/* Returns 1 if inserted, 0 if the key was present (value kept), -1 out of memory. */
int hr_strmap_put(hr_strmap *m, const char *key, size_t len, int32_t val);
/* The value, or -1 if absent. */
int32_t hr_strmap_get(const hr_strmap *m, const char *key, size_t len);

/* First occurrence of needle (nn > 0) in hay, or NULL (portable memmem). */
const char *hr_memfind(const char *hay, size_t n, const char *needle, size_t nn);

#endif
