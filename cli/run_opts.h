/* Options shared by commands that load a model and generate (run, later chat/serve). */
#ifndef HR_RUN_OPTS_H
#define HR_RUN_OPTS_H
#include "hearth.h"
#include "sampler/sampler.h"

typedef struct hr_run_opts {
    const char *model, *prompt, *prompt_file, *dump;
    long n_predict;
    bool ignore_eos, verbose;
    hearth_model_params mp;
    hearth_ctx_params cp;
    hr_sampler_params sp;
} hr_run_opts;

/* Parses argv[i] (and its value) if it is a model/context/sampling flag.
 * Returns 1 if consumed (advancing *i), 0 if not one of these flags, -1 on a bad value. */
int hr_parse_common_flag(const char *cmd, int argc, char **argv, int *i, hr_run_opts *o);
void hr_print_common_help(void);
/* Per-layer FFN activity table (after a run with --stats) to stderr. */
void hr_print_ffn_stats(const hearth_model *m, const hearth_ctx *c);
#endif
