#include "eval_logits.h"

#include <stdio.h>
#include <string.h>

int eval_logits(hearth_model *m, const hearth_ctx_params *cp, const int32_t *toks, int n, float *out,
                hearth_ffn_stats *stats0) {
    hr_err e;
    hearth_ctx *c = hearth_ctx_new(m, cp, &e);
    if (!c) return fprintf(stderr, "ctx: %s\n", e.msg), -1;
    const int nv = hearth_model_get_info(m)->n_vocab;
    int rc = 0;
    if (cp->n_batch > 1) {
        rc = hearth_eval(c, toks, n, 0, true, &e);
        for (int t = 0; !rc && t < n; t++) memcpy(out + t * nv, hearth_logits(c, t), sizeof(float) * (size_t)nv);
    } else {
        for (int t = 0; !rc && t < n; t++) {
            rc = hearth_eval(c, &toks[t], 1, t, false, &e);
            if (!rc) memcpy(out + t * nv, hearth_logits(c, -1), sizeof(float) * (size_t)nv);
        }
    }
    if (rc) fprintf(stderr, "eval: %s\n", e.msg);
    if (stats0) hearth_ctx_ffn_stats(c, 0, stats0);
    hearth_ctx_free(c);
    return rc;
}
