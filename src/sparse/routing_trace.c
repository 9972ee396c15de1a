/* Routing traces (routing_trace.h): writing as the engine routes, reading for the cache
 * simulator. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "routing_trace.h"

#define HR_RTRACE_MAGIC "hearth-routing-trace"
#define HR_RTRACE_MAX_EXPERT 65536

int hr_rtrace_create(const char *path, int32_t n_layer, int32_t n_expert, int32_t k, FILE **out, hr_err *e) {
    *out = NULL;
    FILE *f = fopen(path, "w");
    if (!f) return hr_errf(e, "cannot write the routing trace %s: %s", path, strerror(errno));
    if (fprintf(f, "%s 1\nn_layer %d n_expert %d n_expert_used %d\n", HR_RTRACE_MAGIC, n_layer, n_expert, k) < 0) {
        fclose(f);
        return hr_errf(e, "writing the routing trace %s failed", path);
    }
    *out = f;
    return 0;
}

int hr_rtrace_append(FILE *f, int32_t il, int32_t n_tok, int32_t k, const int32_t *sel, hr_err *e) {
    int bad = fprintf(f, "%d %d", il, n_tok) < 0;
    for (int64_t i = 0; i < (int64_t)n_tok * k && !bad; i++) bad = fprintf(f, " %d", sel[i]) < 0;
    bad |= fputc('\n', f) == EOF;
    return bad ? hr_errf(e, "writing the routing trace failed (disk full?)") : 0;
}

int hr_rtrace_init(hr_rtrace *t, int32_t n_layer, int32_t n_expert, int32_t k, hr_err *e) {
    memset(t, 0, sizeof *t);
    if (n_layer < 1 || n_expert < 1 || n_expert > HR_RTRACE_MAX_EXPERT || k < 1 || k > n_expert)
        return hr_errf(e, "routing trace: bad shape (%d layers, %d experts, %d used)", n_layer, n_expert, k);
    t->n_layer = n_layer, t->n_expert = n_expert, t->k = k;
    return 0;
}

/* Capacity doubling for the parallel record arrays and the id array. */
static int grow(hr_rtrace *t, int64_t more_ids, hr_err *e) {
    if (t->n_rec == t->rec_cap) {
        const size_t cap = t->rec_cap ? (size_t)t->rec_cap * 2 : 64;
        int32_t *l = realloc(t->layer, cap * sizeof *l);
        if (l) t->layer = l;
        int32_t *c = l ? realloc(t->n_tok, cap * sizeof *c) : NULL;
        if (c) t->n_tok = c;
        int64_t *o = c ? realloc(t->off, cap * sizeof *o) : NULL;
        if (!o) return hr_errf(e, "out of memory for the routing trace");
        t->off = o, t->rec_cap = (int64_t)cap;
    }
    if (t->n_ids + more_ids > t->ids_cap) {
        int64_t cap = t->ids_cap ? t->ids_cap : 256;
        while (cap < t->n_ids + more_ids) cap *= 2;
        int32_t *ids = realloc(t->ids, (size_t)cap * sizeof *ids);
        if (!ids) return hr_errf(e, "out of memory for the routing trace");
        t->ids = ids, t->ids_cap = cap;
    }
    return 0;
}

int hr_rtrace_add(hr_rtrace *t, int32_t il, int32_t n_tok, const int32_t *sel, hr_err *e) {
    if (il < 0 || il >= t->n_layer || n_tok < 1 || n_tok > (1 << 24))
        return hr_errf(e, "routing trace: record %lld: layer %d of %d, %d tokens", (long long)t->n_rec, il, t->n_layer, n_tok);
    const int64_t m = (int64_t)n_tok * t->k;
    for (int64_t i = 0; i < m; i++)
        if (sel[i] < 0 || sel[i] >= t->n_expert)
            return hr_errf(e, "routing trace: record %lld: expert %d outside [0, %d)", (long long)t->n_rec, sel[i], t->n_expert);
    if (grow(t, m, e)) return -1;
    t->layer[t->n_rec] = il, t->n_tok[t->n_rec] = n_tok, t->off[t->n_rec] = t->n_ids;
    memcpy(t->ids + t->n_ids, sel, (size_t)m * sizeof *sel);
    t->n_ids += m, t->n_rec++;
    return 0;
}

/* One record line: "<layer> <n_tok>" then n_tok x k ids, into sel (grown as needed). */
static int read_record(FILE *f, hr_rtrace *t, int32_t **sel, int64_t *cap, int *done, hr_err *e) {
    int il = 0, n = 0;
    const int got = fscanf(f, "%d %d", &il, &n);
    if (got == EOF) return *done = 1, 0;
    if (got != 2 || n < 1 || n > (1 << 24))
        return hr_errf(e, "routing trace: record %lld is malformed", (long long)t->n_rec + 1);
    const int64_t m = (int64_t)n * t->k;
    if (m > *cap) {
        int32_t *s = realloc(*sel, (size_t)m * sizeof *s);
        if (!s) return hr_errf(e, "out of memory reading the routing trace");
        *sel = s, *cap = m;
    }
    for (int64_t i = 0; i < m; i++)
        if (fscanf(f, "%d", &(*sel)[i]) != 1)
            return hr_errf(e, "routing trace: record %lld ends after %lld of %lld expert ids", (long long)t->n_rec + 1,
                           (long long)i, (long long)m);
    return hr_rtrace_add(t, il, n, *sel, e);
}

int hr_rtrace_read(const char *path, hr_rtrace *t, hr_err *e) {
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "r");
    if (!f) return hr_errf(e, "cannot open the routing trace %s: %s", path, strerror(errno));
    char magic[32] = {0};
    int ver = 0, nl = 0, ne = 0, k = 0;
    int rc = 0;
    if (fscanf(f, "%31s %d n_layer %d n_expert %d n_expert_used %d", magic, &ver, &nl, &ne, &k) != 5 ||
        strcmp(magic, HR_RTRACE_MAGIC) || ver != 1)
        rc = hr_errf(e, "%s is not a routing trace (hearth run --dump-routing writes them)", path);
    if (!rc) rc = hr_rtrace_init(t, nl, ne, k, e);
    int32_t *sel = NULL;
    int64_t cap = 0;
    for (int done = 0; !rc && !done;) rc = read_record(f, t, &sel, &cap, &done, e);
    free(sel);
    fclose(f);
    if (rc) hr_rtrace_free(t);
    return rc ? hr_errctx(e, "%s", path) : 0;
}

void hr_rtrace_free(hr_rtrace *t) {
    free(t->layer), free(t->n_tok), free(t->off), free(t->ids);
    memset(t, 0, sizeof *t);
}
