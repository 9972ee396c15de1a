/* hearth perplexity: llama.cpp's method. The text is tokenized once (with BOS), cut into
 * chunks of n_ctx tokens whose first token becomes BOS; each chunk is evaluated from an
 * empty cache and only its second half is scored, so every scored token sees at least
 * n_ctx/2 tokens of context. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "text_file.h"
#include "cli.h"
#include "run_opts.h"

static void help(void) {
    printf("usage: hearth perplexity -m MODEL.gguf -f TEXT [-c 512] [--chunks N] [flags]\n\n"
           "Perplexity of a text file, computed as llama.cpp's perplexity tool does.\n"
           "Needs at least 2 * n_ctx tokens of text.\n\n"
           "  -f, --file FILE           text to score\n"
           "  --chunks N                score at most N chunks (default: all)\n");
    hr_print_common_help();
}

/* Sum of -log p(target) over rows, in double as llama.cpp does. */
static double chunk_nll(const hearth_ctx *c, int32_t n_vocab, const int32_t *targets, int32_t first, int32_t n_ctx) {
    double nll = 0;
    for (int32_t j = first; j < n_ctx - 1; j++) {
        const float *l = hearth_logits(c, j);
        float max = l[0];
        for (int32_t v = 1; v < n_vocab; v++) max = l[v] > max ? l[v] : max;
        double sum = 0;
        for (int32_t v = 0; v < n_vocab; v++) sum += exp((double)(l[v] - max));
        nll -= (double)(l[targets[j + 1]] - max) - log(sum);
    }
    return nll;
}

static int score(hearth_model *m, hearth_ctx *c, const int32_t *toks, size_t n, long max_chunks) {
    const int32_t n_ctx = hearth_ctx_n_ctx(c), first = n_ctx / 2, n_vocab = hearth_model_get_info(m)->n_vocab;
    if (n < 2 * (size_t)n_ctx) {
        fprintf(stderr, "hearth perplexity: need at least %d tokens for a context of %d, the text has %zu\n", 2 * n_ctx, n_ctx, n);
        return 1;
    }
    long n_chunks = (long)(n / (size_t)n_ctx);
    if (max_chunks > 0 && max_chunks < n_chunks) n_chunks = max_chunks;
    int32_t *buf = malloc(sizeof(int32_t) * (size_t)n_ctx);
    if (!buf) return 1;
    double nll = 0, nll2 = 0;
    long count = 0;
    hr_err e = {{0}};
    fprintf(stderr, "perplexity: %zu tokens, %ld chunks of %d\n", n, n_chunks, n_ctx);
    for (long k = 0; k < n_chunks; k++) {
        memcpy(buf, toks + k * n_ctx, sizeof(int32_t) * (size_t)n_ctx);
        if (hearth_token_bos(m) >= 0) buf[0] = hearth_token_bos(m);
        if (hearth_eval(c, buf, n_ctx, 0, true, &e)) {
            fprintf(stderr, "hearth perplexity: %s\n", e.msg);
            free(buf);
            return 1;
        }
        double v = chunk_nll(c, n_vocab, toks + k * n_ctx, first, n_ctx);
        nll += v;
        nll2 += v * v / (n_ctx - 1 - first);
        count += n_ctx - 1 - first;
        printf("[%ld]%.4f,", k + 1, exp(nll / count));
        fflush(stdout);
    }
    double mean = nll / count, var = nll2 / count - mean * mean;
    double err = var > 0 && count > 1 ? sqrt(var / (count - 1)) * exp(mean) : 0;
    printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", exp(mean), err);
    free(buf);
    return 0;
}

int hr_cmd_perplexity(int argc, char **argv) {
    hr_run_opts o = {.mp = hearth_model_default_params(), .cp = hearth_ctx_default_params(), .sp = hr_sampler_defaults()};
    o.cp.n_ctx = 512;
    long max_chunks = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = hr_parse_common_flag("perplexity", argc, argv, &i, &o);
        if (r < 0) return 2;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { help(); return 0; }
        if (!strcmp(a, "-f") || !strcmp(a, "--file") || !strcmp(a, "--chunks")) {
            if (!hr_arg_need("perplexity", argc, argv, i)) return 2;
            if (a[1] == 'f' || !strcmp(a, "--file")) o.prompt_file = argv[++i];
            else if (!hr_arg_long("perplexity", a, argv[++i], 1, 1L << 30, &max_chunks)) return 2;
        } else return hr_usage_error("perplexity", "unknown flag '%s'", a);
    }
    if (!o.model) return hr_usage_error("perplexity", "a model is required (-m FILE)");
    if (!o.prompt_file) return hr_usage_error("perplexity", "a text file is required (-f FILE)");
    if (o.cp.n_ctx < 4) return hr_usage_error("perplexity", "-c must be at least 4");
    size_t got = 0;
    hr_err fe = {{0}};
    char *text = hr_text_file(o.prompt_file, 0, &got, &fe);
    if (!text) { fprintf(stderr, "hearth perplexity: -f: %s\n", fe.msg); return 1; }
    hr_err e = {{0}};
    const hearth_model_params mp = hr_run_model_params(&o);
    hearth_model *m = hearth_model_load(o.model, &mp, &e);
    hearth_ctx *c = m ? hearth_ctx_new(m, &o.cp, &e) : NULL;
    if (c) hr_print_gpu_notice(c, &o.cp);
    int32_t *toks = NULL;
    size_t n = 0;
    int rc = 1;
    if (c && !hearth_tokenize(m, text, got, true, false, &toks, &n, &e)) rc = score(m, c, toks, n, max_chunks);
    else fprintf(stderr, "hearth perplexity: %s\n", e.msg);
    free(toks), free(text);
    hearth_ctx_free(c);
    hearth_model_free(m);
    return rc;
}
