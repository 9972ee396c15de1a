/* --grammar / --grammar-file for the commands that generate (run, chat): loading the grammar,
 * and sampling among the tokens it allows (docs/grammar.md). */
#ifndef HR_GRAMMAR_OPTS_H
#define HR_GRAMMAR_OPTS_H
#include "grammar/grammar.h"
#include "run_opts.h"

/* The grammar of one generating command, or nothing (gs NULL) without the flags. */
typedef struct hr_run_grammar {
    hr_grammar *g;
    hr_grammar_sampler *gs;
    float *work; /* n_vocab logits masked by the grammar */
    int32_t n_vocab;
    double seconds; /* spent masking and advancing (the grammar's share of decode time) */
    long steps;
} hr_run_grammar;

/* --grammar TEXT, --grammar-file F: 1 consumed (advancing *i), 0 not one of them, -1 bad. */
int hr_grammar_flag(const char *cmd, int argc, char **argv, int *i, hr_run_opts *o);
/* Parses the grammar the flags name, for model m. 0 (also without the flags: then rg->gs is
 * NULL), or -1 with the message in e ("grammar:3:14: expected ')'", "FILE:3:14: ..."). */
int hr_run_grammar_init(hr_run_grammar *rg, const hr_run_opts *o, const hearth_model *m, hr_err *e);
void hr_run_grammar_free(hr_run_grammar *rg);
/* Samples the next token among those the grammar allows (greedy: their argmax, as llama.cpp);
 * without a grammar, plain hr_sampler_sample. -1 when the grammar allows no token. */
int32_t hr_run_grammar_sample(hr_run_grammar *rg, hr_sampler *s, const float *logits);
/* Advances the grammar over the chosen token. 1 when the text is now complete (stop), 0 to go
 * on, -1 with a message in e when the token is not allowed (a forced token). */
int hr_run_grammar_accept(hr_run_grammar *rg, int32_t tok, hr_err *e);
/* With --verbose: the grammar's time per token, to stderr. */
void hr_run_grammar_report(const hr_run_grammar *rg, const char *cmd);
#endif
