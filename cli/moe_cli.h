/* The mixture-of-experts parts of the commands (moe_calibrate.c). */
#ifndef HR_MOE_CLI_H
#define HR_MOE_CLI_H
#include <stdbool.h>
#include "sparse/calibrate.h"

/* hearth calibrate on a mixture of experts: routing and in-expert firing counts over the
 * tokens into the statistics file beside out; ReLU-family experts also get out, the model
 * with transposed expert down matrices (ffn_down_exps_t). */
typedef struct hr_moe_cal_opts {
    double recall;        /* predictors: recall target, held out */
    int32_t max_rank, epochs, threads;
    int64_t pairs;        /* pairs kept per expert */
    uint64_t seed;
    bool no_predictors;   /* counts and the transposed-down file only */
    bool verbose;         /* one line per expert: kept (rank, quality, bytes) or why skipped */
} hr_moe_cal_opts;

/* ... and, for ReLU-family experts, one predictor per expert where it pays (moe_pred.h). */
int hr_calibrate_moe(hearth_model *m, const int32_t *toks, size_t n, const char *out, const hr_collect_opts *co, const hr_moe_cal_opts *po,
                     hr_err *e);
#endif
