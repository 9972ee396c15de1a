#include "text_file.h"
#include "grammar_opts.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"

int hr_grammar_flag(const char *cmd, int argc, char **argv, int *i, hr_run_opts *o) {
    const char *a = argv[*i];
    bool text = !strcmp(a, "--grammar"), file = !strcmp(a, "--grammar-file");
    /* only the commands that generate one text use it (the server takes grammars per request) */
    if ((!text && !file) || (strcmp(cmd, "run") && strcmp(cmd, "chat"))) return 0;
    if (!hr_arg_need(cmd, argc, argv, *i)) return -1;
    if ((text && o->grammar_file) || (file && o->grammar)) {
        fprintf(stderr, "hearth %s: give --grammar or --grammar-file, not both\n", cmd);
        return -1;
    }
    *(text ? &o->grammar : &o->grammar_file) = argv[++*i];
    return 1;
}

int hr_run_grammar_init(hr_run_grammar *rg, const hr_run_opts *o, const hearth_model *m, hr_err *e) {
    memset(rg, 0, sizeof *rg);
    if (!o->grammar && !o->grammar_file && !o->json_schema) return 0;
    size_t len = o->grammar ? strlen(o->grammar) : 0;
    char *text = o->grammar_file ? hr_text_file(o->grammar_file, (size_t)64 << 20, &len, e) : NULL;
    if (o->grammar_file && !text) return hr_errctx(e, "--grammar-file");
    if (o->json_schema && !(text = hr_run_schema_gbnf(o, e))) return -1; /* --json-schema: its GBNF */
    if (o->json_schema) len = strlen(text);
    hr_err pe = {{0}};
    rg->g = hr_grammar_parse(text ? text : o->grammar, len, NULL, &pe);
    free(text);
    rg->n_vocab = hearth_model_get_info(m)->n_vocab;
    if (rg->g) rg->gs = hr_grammar_sampler_new(rg->g, hearth_model_tokenizer(m), &pe);
    if (rg->gs) rg->work = malloc((size_t)rg->n_vocab * sizeof *rg->work);
    if (rg->work) return 0;
    hr_run_grammar_free(rg);
    /* "FILE:3:14: ..." for a file, as compilers name positions */
    if (o->grammar_file && !strncmp(pe.msg, "grammar:", 8) && pe.msg[8] >= '0' && pe.msg[8] <= '9')
        return hr_errf(e, "%s:%s", o->grammar_file, pe.msg + 8);
    return hr_errf(e, "%s", pe.msg[0] ? pe.msg : "grammar: out of memory");
}

void hr_run_grammar_free(hr_run_grammar *rg) {
    hr_grammar_sampler_free(rg->gs);
    hr_grammar_free(rg->g);
    free(rg->work);
    memset(rg, 0, sizeof *rg);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int32_t hr_run_grammar_sample(hr_run_grammar *rg, hr_sampler *s, const float *logits) {
    if (!rg->gs) return hr_sampler_sample(s, logits);
    double t0 = now_s();
    memcpy(rg->work, logits, (size_t)rg->n_vocab * sizeof *rg->work);
    int32_t n = hr_grammar_sampler_apply(rg->gs, rg->work);
    rg->seconds += now_s() - t0, rg->steps++;
    if (n <= 0) return -1;
    int32_t tok = hr_sampler_sample(s, rg->work);
    if (tok >= 0 && tok < rg->n_vocab && rg->work[tok] != -INFINITY) return tok;
    /* the chain never picks a masked token; should it, the best allowed one stands in */
    int32_t best = -1;
    for (int32_t t = 0; t < rg->n_vocab; t++)
        if (rg->work[t] != -INFINITY && (best < 0 || rg->work[t] > rg->work[best])) best = t;
    return best;
}

int hr_run_grammar_accept(hr_run_grammar *rg, int32_t tok, hr_err *e) {
    if (!rg->gs) return 0;
    double t0 = now_s();
    int rc = hr_grammar_sampler_accept(rg->gs, tok, e) ? -1 : hr_grammar_sampler_done(rg->gs) ? 1 : 0;
    rg->seconds += now_s() - t0;
    return rc;
}

void hr_run_grammar_report(const hr_run_grammar *rg, const char *cmd) {
    if (!rg->gs || !rg->steps) return;
    fprintf(stderr, "%s: grammar: %.3f ms/token (masking and advancing, %ld steps)\n", cmd, rg->seconds * 1e3 / (double)rg->steps, rg->steps);
}
