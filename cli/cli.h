/* Subcommands of the hearth command. Each returns the process exit status:
 * 0 success, 1 runtime failure (bad model, I/O), 2 usage error (bad flags). */
#ifndef HR_CLI_H
#define HR_CLI_H
#include <stdbool.h>
#include <stdint.h>

int hr_cmd_run(int argc, char **argv);
int hr_cmd_perplexity(int argc, char **argv);
int hr_cmd_inspect(int argc, char **argv);
int hr_cmd_synth(int argc, char **argv);
int hr_cmd_tokenize(int argc, char **argv);
int hr_cmd_bench(int argc, char **argv);
int hr_cmd_calibrate(int argc, char **argv);
int hr_cmd_place(int argc, char **argv);
int hr_cmd_quantize(int argc, char **argv);
int hr_cmd_serve(int argc, char **argv);
int hr_cmd_chat(int argc, char **argv);
int hr_cmd_routing(int argc, char **argv);

/* Flag value parsing shared by subcommands. Each prints
 * "hearth <cmd>: <flag>: <problem>" to stderr and returns false on bad input. */
bool hr_arg_need(const char *cmd, int argc, char **argv, int i);      /* argv[i+1] exists */
bool hr_arg_long(const char *cmd, const char *flag, const char *v, long lo, long hi, long *out);
bool hr_arg_float(const char *cmd, const char *flag, const char *v, double lo, double hi, double *out);
bool hr_arg_u64(const char *cmd, const char *flag, const char *v, uint64_t *out);
/* Progress on stderr: a terminal gets each whole percentage redrawn in place; a log or a pipe
 * one plain line per 10% step (and 100%). Returns the line's prefix ("\r" on a terminal, else
 * ""), or NULL when pct is not to be printed; *last is the last one printed (start at -1);
 * force prints anyway (a new phase). End such a line with hr_progress_tty() ? "" : "\n". */
bool hr_progress_tty(void);
const char *hr_progress_step(int *last, int pct, bool force);
/* Usage error helper: prints message + "try 'hearth <cmd> --help'" and returns 2. */
int hr_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
#endif
