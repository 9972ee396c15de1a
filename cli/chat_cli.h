/* The interactive chat of `hearth chat`, callable by other subcommands (`hearth run -i` /
 * `-cnv`, as llama-cli's conversation mode). */
#ifndef HR_CHAT_CLI_H
#define HR_CHAT_CLI_H
#include <stdbool.h>
#include "run_opts.h"

#define HR_CHAT_MAX_REVERSE 16

typedef struct hr_chat_opts {
    hr_run_opts run;             /* model, context, sampling; run.n_predict: most tokens per reply */
    const char *tmpl_name;       /* --chat-template, or NULL: detected from the model */
    const char *system;          /* the system message, or NULL */
    const char *first_message;   /* sent as the first user message (run -cnv -p TEXT), or NULL */
    const char *first_file;      /* -f: the first user message is this file's text */
    const char *system_file;     /* -sysf: the system message is this file's text */
    const char *reverse[HR_CHAT_MAX_REVERSE + 1]; /* extra stop texts (-r), NULL-terminated */
    const char *dump_prompt;     /* tests: each turn's rendered prompt is written here */
    int color;                   /* -1 auto (a terminal without NO_COLOR), 0 off, 1 on */
    const char *history_file;    /* --history-file, or NULL: $XDG_STATE_HOME/hearth/chat_history */
    bool no_history;             /* --no-history: the typed lines are not kept across chats */
} hr_chat_opts;

/* Defaults: -n 256, a random seed, the library's model, context and sampler defaults. */
void hr_chat_opts_init(hr_chat_opts *o);
/* Runs the chat until /exit, Ctrl-D, end of input or a fatal error; returns the exit status
 * (0, 1 runtime failure, 2 bad template name). Prints its own errors as "hearth chat: ...". */
int hr_chat_main(const hr_chat_opts *o);
#endif
