/* Logits of a token sequence in a fresh context, for the engine tests. */
#ifndef HR_TEST_EVAL_LOGITS_H
#define HR_TEST_EVAL_LOGITS_H
#include "hearth.h"

/* The n tokens' logits ([n][n_vocab] into out) in a new context of m with cp: one batched
 * evaluation when cp->n_batch > 1, else one token at a time; stats0 (may be NULL) gets layer
 * 0's FFN counters. Returns 0, or -1 with the message on stderr. */
int eval_logits(hearth_model *m, const hearth_ctx_params *cp, const int32_t *toks, int n, float *out,
                hearth_ffn_stats *stats0);
#endif
