#include "strmap.h"
#include <stdlib.h>
#include <string.h>
#include "formats/gguf.h"

/* FNV-1a, then a multiplicative finalizer: FNV's low bits (the slot index) mix poorly on
 * its own, which made probe runs long on 500k-merge vocabularies. */
static uint64_t hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    h ^= h >> 32;
    h *= 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}

int hr_strmap_init(hr_strmap *m, size_t expected) {
    size_t cap = 16;
    if (expected > SIZE_MAX / (4 * sizeof *m->slot)) return -1;
    while (cap < expected * 2 + 2) cap *= 2;
    /* A 128k-token vocabulary's merges fill a 16 MiB table whose every page is touched at
     * random: in 4 KiB pages that was 4096 page faults per load, about 40% of `hearth
     * tokenize`'s time on the project's 2-core machine; in 2 MiB pages it took 0.25 s, not 0.44 s. */
    const size_t bytes = cap * sizeof *m->slot, huge = (size_t)2 << 20;
    if (bytes >= 2 * huge) {
        m->slot = aligned_alloc(huge, (bytes + huge - 1) & ~(huge - 1));
        if (m->slot) gguf_advise_huge(m->slot, bytes), memset(m->slot, 0, bytes);
    } else
        m->slot = calloc(cap, sizeof *m->slot);
    m->cap = cap;
    m->n = 0;
    return m->slot ? 0 : -1;
}

void hr_strmap_free(hr_strmap *m) {
    free(m->slot);
    m->slot = NULL;
    m->cap = m->n = 0;
}

static hr_strmap_slot *find(const hr_strmap *m, const char *key, size_t len) {
    size_t mask = m->cap - 1, i = (size_t)hash(key, len) & mask;
    for (;; i = (i + 1) & mask) {
        hr_strmap_slot *s = &m->slot[i];
        if (!s->key || (s->len == len && !memcmp(s->key, key, len))) return s;
    }
}

static int grow(hr_strmap *m) {
    hr_strmap old = *m;
    if (hr_strmap_init(m, old.cap) != 0) {
        *m = old;
        return -1;
    }
    for (size_t i = 0; i < old.cap; i++)
        if (old.slot[i].key) *find(m, old.slot[i].key, old.slot[i].len) = old.slot[i];
    m->n = old.n;
    free(old.slot);
    return 0;
}

int hr_strmap_put(hr_strmap *m, const char *key, size_t len, int32_t val) {
    if ((m->n + 1) * 2 > m->cap && grow(m) != 0) return -1;
    hr_strmap_slot *s = find(m, key, len);
    if (s->key) return 0;
    s->key = key ? key : "";
    s->len = (uint32_t)len;
    s->val = val;
    m->n++;
    return 1;
}

int32_t hr_strmap_get(const hr_strmap *m, const char *key, size_t len) {
    if (!m->cap) return -1;
    const hr_strmap_slot *s = find(m, key, len);
    return s->key ? s->val : -1;
}

const char *hr_memfind(const char *hay, size_t n, const char *needle, size_t nn) {
    if (nn == 0 || nn > n) return NULL;
    const char *end = hay + (n - nn);
    for (const char *p = hay; p <= end; p++) {
        p = memchr(p, needle[0], (size_t)(end - p) + 1);
        if (!p) return NULL;
        if (!memcmp(p, needle, nn)) return p;
    }
    return NULL;
}
