/* The mixture-of-experts parts of the commands (moe_calibrate.c). */
#ifndef HR_MOE_CLI_H
#define HR_MOE_CLI_H
#include "sparse/calibrate.h"

/* hearth calibrate on a mixture of experts: routing and in-expert firing counts over the
 * tokens into the statistics file beside out; ReLU-family experts also get out, the model
 * with transposed expert down matrices (ffn_down_exps_t). */
int hr_calibrate_moe(hearth_model *m, const int32_t *toks, size_t n, const char *out, const hr_collect_opts *co, hr_err *e);
#endif
