/* Routing traces: which experts each mixture-of-experts layer routed each token to, call
 * by call (hearth run --dump-routing FILE), so that expert-cache policies can be compared
 * offline on a real workload (trace_cache.h) without a GPU.
 *
 * Text, one record per evaluation of one layer, in the order the engine ran them:
 *   hearth-routing-trace 1
 *   n_layer L n_expert E n_expert_used K
 *   <layer> <n_tok> <expert> ... (n_tok x K ids: token by token, each in rank order)
 * A decoded token gives one record per MoE layer with n_tok 1; a prompt batch one per
 * layer with all its tokens. Text keeps it readable and diffable; a 100-token decode of
 * a 48-layer top-8 model is about 100 KB. */
#ifndef HR_ROUTING_TRACE_H
#define HR_ROUTING_TRACE_H
#include <stdint.h>
#include <stdio.h>
#include "util/err.h"

typedef struct hr_rtrace {
    int32_t n_layer, n_expert, k;
    int64_t n_rec;
    int32_t *layer, *n_tok;  /* [n_rec] */
    int64_t *off;            /* [n_rec] first id of each record in ids */
    int32_t *ids;            /* all records' ids, n_tok x k each */
    int64_t n_ids;
    int64_t rec_cap, ids_cap; /* allocated records, ids */
} hr_rtrace;

/* Opens path for writing and writes the header; *out: the stream (fclose it). */
int hr_rtrace_create(const char *path, int32_t n_layer, int32_t n_expert, int32_t k, FILE **out, hr_err *e);
/* Appends one record: layer il routed n_tok tokens to sel [n_tok][k]. */
int hr_rtrace_append(FILE *f, int32_t il, int32_t n_tok, int32_t k, const int32_t *sel, hr_err *e);
/* Reads a trace, checking the header, every layer and expert id and the record lengths. */
int hr_rtrace_read(const char *path, hr_rtrace *t, hr_err *e);
/* An empty trace of that shape, to which hr_rtrace_add appends (tests, synthetic traces). */
int hr_rtrace_init(hr_rtrace *t, int32_t n_layer, int32_t n_expert, int32_t k, hr_err *e);
int hr_rtrace_add(hr_rtrace *t, int32_t il, int32_t n_tok, const int32_t *sel, hr_err *e);
void hr_rtrace_free(hr_rtrace *t);
#endif
