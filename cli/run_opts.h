/* Options shared by commands that load a model and generate (run, later chat/serve). */
#ifndef HR_RUN_OPTS_H
#define HR_RUN_OPTS_H
#include "hearth.h"
#include "sampler/sampler.h"

typedef struct hr_run_opts {
    const char *model, *prompt, *prompt_file, *dump;
    const char *force_tokens; /* run: "id id ...", fed instead of the sampled tokens */
    long n_predict;
    bool ignore_eos, verbose;
    hearth_model_params mp;
    hearth_ctx_params cp;
    hr_sampler_params sp;
    bool gpu_index_explicit;   /* --gpu-index given: -m does not set the default path */
    char gpu_index_buf[4096];  /* <model>.generated.gpuidx, the default cp.gpu_index_path */
} hr_run_opts;

/* Parses argv[i] (and its value) if it is a model/context/sampling flag.
 * Returns 1 if consumed (advancing *i), 0 if not one of these flags, -1 on a bad value. */
int hr_parse_common_flag(const char *cmd, int argc, char **argv, int *i, hr_run_opts *o);
void hr_print_common_help(void);
/* --ffn and --gpu values: 1 when parsed, -1 (a message printed) when not one of them. */
int hr_arg_ffn_mode(const char *cmd, const char *v, hearth_ffn_mode *out);
int hr_arg_gpu_mode(const char *cmd, const char *v, hearth_gpu_mode *out);
/* True for the GPU flags (--gpu, --vram-budget, -ngl, ...), which hr_parse_common_flag takes. */
bool hr_is_gpu_flag(const char *a);
/* Sets the default GPU index path from the model path (for commands that parse -m themselves). */
void hr_set_model_path(hr_run_opts *o, const char *model);
/* After context creation: with --gpu auto, the one line saying why no GPU is used (only in
 * builds with CUDA; without it auto means the CPU and says nothing). */
void hr_print_gpu_notice(const hearth_ctx *c, const hearth_ctx_params *cp);
/* The GPU plan (bytes per category, layers, FFN and activation shares) to stderr. */
void hr_print_gpu_plan(const hearth_ctx *c);
/* CPU/device overlap of the FFN split since the context was made, to stderr. */
void hr_print_gpu_overlap(const hearth_ctx *c);
/* Per-layer FFN activity table (after a run with --stats) to stderr. */
void hr_print_ffn_stats(const hearth_model *m, const hearth_ctx *c);
#endif
