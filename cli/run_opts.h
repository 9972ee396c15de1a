/* Options shared by commands that load a model and generate (run, later chat/serve). */
#ifndef HR_RUN_OPTS_H
#define HR_RUN_OPTS_H
#include <stdio.h>

#include "hearth.h"
#include "sampler/sampler.h"

typedef struct hr_run_opts {
    const char *model, *prompt, *prompt_file, *dump;
    const char *force_tokens; /* run: "id id ...", fed instead of the sampled tokens */
    const char *grammar, *grammar_file; /* --grammar TEXT, --grammar-file F (cli/grammar_opts.c) */
    const char *json_schema;  /* -j/--json-schema TEXT|@FILE, or the F of -jf/--json-schema-file F */
    bool json_schema_file;    /* json_schema names a file (-jf) */
    long n_predict;
    bool ignore_eos, verbose;
    hearth_model_params mp;
    hearth_ctx_params cp;
    hr_sampler_params sp;
    bool gpu_index_explicit;   /* --gpu-index given: -m does not set the default path */
    char gpu_index_buf[4096];  /* <model>.generated.gpuidx, the default cp.gpu_index_path */
    /* llama.cpp habits (hr_parse_common_flag) */
    bool seed_set;             /* -s/--seed given (not -1, which means a random seed) */
    bool gpu_asked;            /* a flag that only means something with a GPU (-ngl N > 0,
                                  --vram-budget, --gpu-device, --gpu cuda/standin, ...): a CUDA build
                                  without a usable GPU then says so even without --verbose */
    bool gpu_mode_set;         /* --gpu given */
    bool ngl_zero;             /* -ngl 0: nothing on the GPU (--gpu off) */
    int32_t batch_flag, ubatch_flag; /* -b and -ub as given (0: not given); n_batch is the smaller */
    int32_t threads_batch;     /* -tb (0: not given); Hearth has one pool of -t threads */
    int flash_attn;            /* -fa: -1 auto, 0 off, 1 on; accepted, changes nothing (see help) */
    bool no_repack;            /* -nr/--no-repack: no FFN bundles (hr_run_model_params) */
} hr_run_opts;

/* The load parameters o asks for: o->mp, with the FFN rows bundled (ffn_bundle) unless
 * --no-repack, a mode other than auto or predicted, or where layers may go to a GPU (a CUDA
 * build without --gpu off / -ngl 0). */
hearth_model_params hr_run_model_params(const hr_run_opts *o);
/* "LABEL N of L layers' FFN rows bundled ..." on f when the model has bundles (run -v, bench). */
void hr_print_repack(FILE *f, const char *label, const hearth_model *m);

/* The GBNF of --json-schema / --json-schema-file (malloc'd); NULL with "json schema: ..." in e. */
char *hr_run_schema_gbnf(const hr_run_opts *o, hr_err *e);
/* Parses argv[i] (and its value) if it is a model/context/sampling flag.
 * Returns 1 if consumed (advancing *i), 0 if not one of these flags, -1 on a bad value. */
int hr_parse_common_flag(const char *cmd, int argc, char **argv, int *i, hr_run_opts *o);
/* What to add after "N MiB in 2 MiB pages" (hearth run -v, hearth bench): a hint to use
 * --no-mmap when under half of the file got them, else "". */
const char *hr_pages_hint(int64_t huge, uint64_t file_bytes);
void hr_print_common_help(void);
/* --ffn and --gpu values: 1 when parsed, -1 (a message printed) when not one of them. */
int hr_arg_ffn_mode(const char *cmd, const char *v, hearth_ffn_mode *out);
int hr_arg_gpu_mode(const char *cmd, const char *v, hearth_gpu_mode *out);
/* True for the GPU flags (--gpu, --vram-budget, -ngl, ...), which hr_parse_common_flag takes. */
bool hr_is_gpu_flag(const char *a);
/* Sets the default GPU index path from the model path (for commands that parse -m themselves). */
void hr_set_model_path(hr_run_opts *o, const char *model);
/* After context creation: with --gpu auto, the one line saying why no GPU is used (only in
 * builds with CUDA; without it auto means the CPU and says nothing). hr_print_gpu_notice
 * says it only when a GPU was asked for by cp's fields (a budget, a device index, -ngl);
 * hr_gpu_notice also for o->verbose and o->gpu_asked. Once per process: each command makes one
 * context, and --verbose's GPU plan leaves out what the notice said. */
void hr_print_gpu_notice(const hearth_ctx *c, const hearth_ctx_params *cp);
bool hr_gpu_notice(const hearth_ctx *c, const hr_run_opts *o); /* true: printed */
/* The model's load warnings (hearth_model_notices), one "hearth CMD: warning: ..." line each. */
void hr_print_model_notices(const char *cmd, const hearth_model *m);
/* Context size checks before hearth_ctx_new, with n_seq sequences of cp->n_ctx each: a warning
 * when it exceeds the model's training context, an error (-1, printed) when the host KV cache
 * alone needs more than the machine's RAM. */
int hr_check_ctx_size(const char *cmd, const hearth_model *m, const hearth_ctx_params *cp);
/* hearth run/chat/serve --version, hearth --version */
void hr_print_version(void);
/* Prints the GPUs a context could use (or why there are none); returns the exit code. */
int hr_list_devices(void);
/* The GPU plan (bytes per category, layers, FFN and activation shares) to stderr. */
/* On stderr, when HEARTH_KERNELS names a table the context did not get (unknown, or the CPU
 * lacks it): which one runs instead. */
void hr_warn_kernels(const hearth_ctx *c);
void hr_print_gpu_plan(const hearth_ctx *c);
/* CPU/device overlap of the FFN split since the context was made, to stderr. */
void hr_print_gpu_overlap(const hearth_ctx *c);
/* Per-layer FFN activity table (after a run with --stats) to stderr. */
void hr_print_ffn_stats(const hearth_model *m, const hearth_ctx *c);
#endif
