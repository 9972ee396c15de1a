/* hearth run: generate text from a prompt, streaming tokens to stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"
#include "formats/types.h"
#include "run_opts.h"
#include "tokenizer/tokenizer.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void help(void) {
    printf("usage: hearth run -m MODEL.gguf (-p PROMPT | -f FILE) [flags]\n\n"
           "Generates text from a prompt and streams it to stdout; timings go to stderr.\n\n"
           "  -p, --prompt TEXT         prompt text\n"
           "  -f, --file FILE           read the prompt from a file\n"
           "  -n, --n-predict N         tokens to generate (default 128)\n"
           "  --ignore-eos              keep generating after end-of-sequence\n"
           "  --verbose                 print model, memory, kernel and GPU plan details to stderr\n"
           "  --dump FILE               write prompt tokens, generated tokens and each step's logits as JSON\n"
           "  --force-tokens \"ID ...\"   teacher forcing: after each step feed these token ids in turn instead of\n"
           "                            the sampled ones (the dump still records the sampled ones); comparing\n"
           "                            two engines' logits on one history\n");
    hr_print_common_help();
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0, r;
    do {
        if (n + 65536 > cap) {
            char *b = realloc(buf, cap = cap * 2 + 65536 + 1);
            if (!b) break;
            buf = b;
        }
        r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
    } while (r > 0);
    fclose(f);
    if (buf) buf[n] = 0;
    *len = n;
    return buf;
}

static int parse(int argc, char **argv, hr_run_opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = hr_parse_common_flag("run", argc, argv, &i, o);
        if (r < 0) return 2;
        if (r > 0) continue;
        long l;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { help(); return 0; }
        else if (!strcmp(a, "--ignore-eos")) o->ignore_eos = true;
        else if (!strcmp(a, "--verbose")) o->verbose = true;
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt") || !strcmp(a, "-f") || !strcmp(a, "--file") ||
                 !strcmp(a, "--dump") || !strcmp(a, "-n") || !strcmp(a, "--n-predict") ||
                 !strcmp(a, "--force-tokens")) {
            if (!hr_arg_need("run", argc, argv, i)) return 2;
            const char *v = argv[++i];
            if (a[1] == 'p' || !strcmp(a, "--prompt")) o->prompt = v;
            else if (a[1] == 'f' || !strcmp(a, "--file")) o->prompt_file = v;
            else if (!strcmp(a, "--dump")) o->dump = v;
            else if (!strcmp(a, "--force-tokens")) o->force_tokens = v;
            else if (!hr_arg_long("run", a, v, -1, 1 << 24, &l)) return 2;
            else o->n_predict = l;
        } else return hr_usage_error("run", "unknown flag '%s'", a);
    }
    if (!o->model) return hr_usage_error("run", "a model is required (-m FILE)");
    if (!o->prompt && !o->prompt_file) return hr_usage_error("run", "a prompt is required (-p TEXT or -f FILE)");
    if (o->prompt && o->prompt_file) return hr_usage_error("run", "give either -p or -f, not both");
    return -1;
}

typedef struct {
    FILE *f;
    int32_t n_vocab;
    int steps;
} dumper;

static void dump_begin(dumper *d, const int32_t *toks, size_t n) {
    fprintf(d->f, "{\"n_vocab\":%d,\"prompt_tokens\":[", d->n_vocab);
    for (size_t i = 0; i < n; i++) fprintf(d->f, "%s%d", i ? "," : "", toks[i]);
    fprintf(d->f, "],\"steps\":[");
}

static void dump_step(dumper *d, int32_t tok, const float *logits) {
    fprintf(d->f, "%s{\"token\":%d,\"logits\":[", d->steps++ ? ",\n" : "\n", tok);
    for (int32_t i = 0; i < d->n_vocab; i++) fprintf(d->f, "%s%.9g", i ? "," : "", logits[i]);
    fprintf(d->f, "]}");
}

static void verbose_info(const hearth_model *m, const hearth_ctx *c, const hr_run_opts *o) {
    const hearth_model_info *in = hearth_model_get_info(m);
    fprintf(stderr, "model: arch %s, ffn %s, %d layers, n_embd %d, n_ff %d, heads %d/%d, vocab %d, weights %s\n",
            in->arch, in->ffn_act, in->n_layer, in->n_embd, in->n_ff, in->n_head, in->n_head_kv, in->n_vocab,
            hr_type_name(in->weight_type));
    fprintf(stderr, "types:");
    for (int i = 0; i < in->n_types; i++)
        fprintf(stderr, "%s %s %.1f%% (%u tensors, %.2f MiB)", i ? "," : "", hr_type_name(in->types[i].type),
                in->weight_bytes ? 100.0 * (double)in->types[i].bytes / (double)in->weight_bytes : 0.0,
                in->types[i].n_tensors, in->types[i].bytes / 1048576.0);
    fprintf(stderr, "\n");
    fprintf(stderr, "memory: file %.1f MiB mapped (used in place, not copied); resident beyond the file: "
                    "host KV cache %.2f MiB (%s/%s), buffers %.2f MiB\n",
            in->file_bytes / 1048576.0, hearth_ctx_kv_bytes(c) / 1048576.0, o->cp.kv_k == HEARTH_KV_F32 ? "f32" : "f16",
            o->cp.kv_v == HEARTH_KV_F32 ? "f32" : "f16", hearth_ctx_scratch_bytes(c) / 1048576.0);
    fprintf(stderr, "context: %d tokens; decode reads %.1f MiB of weights per token (dense); FFN mode %s",
            hearth_ctx_n_ctx(c), in->decode_bytes / 1048576.0, hearth_ffn_mode_name(hearth_ctx_ffn_mode(c)));
    if (hearth_model_has_predictors(m)) fprintf(stderr, ", predictor threshold %g", hearth_model_sparse_threshold(m));
    fprintf(stderr, "\n");
}

/* Mixture-of-experts models: the experts' bytes, and what the routing made the run read
 * (measured: each call reads every expert it routes a token to once per layer). */
static void verbose_moe(const hearth_ctx *c) {
    hearth_moe_stats s;
    if (hearth_ctx_moe_stats(c, &s)) return;
    const double mib = 1048576.0;
    fprintf(stderr, "experts: %d per layer, %d used per token, %.2f MiB of expert weights in %d layers; read per decoded "
                    "token %.2f MiB (%llu tokens), per token over all calls %.2f MiB (%llu tokens)\n",
            s.n_expert, s.n_expert_used, s.expert_bytes / mib, s.n_layer,
            s.decode_tokens ? s.decode_read_bytes / mib / (double)s.decode_tokens : 0.0, (unsigned long long)s.decode_tokens,
            s.tokens ? s.read_bytes / mib / (double)s.tokens : 0.0, (unsigned long long)s.tokens);
}

/* --force-tokens: whitespace-separated ids, each within the vocabulary. Returns the count, or
 * -1 with the message printed. *out is malloc'ed. */
static long parse_forced(const char *s, int32_t n_vocab, int32_t **out) {
    long n = 0, cap = 0;
    int32_t *v = NULL;
    for (;;) {
        while (*s == ' ' || *s == '\t' || *s == '\n' || *s == ',') s++;
        if (!*s) break;
        char *end;
        long x = strtol(s, &end, 10);
        if (end == s || x < 0 || x >= n_vocab) {
            fprintf(stderr, "hearth run: --force-tokens: '%.20s' is not a token id in [0, %d)\n", s, n_vocab);
            free(v);
            return -1;
        }
        if (n == cap) {
            int32_t *g = realloc(v, (size_t)(cap = cap * 2 + 64) * sizeof *v);
            if (!g) { free(v); fprintf(stderr, "hearth run: out of memory\n"); return -1; }
            v = g;
        }
        v[n++] = (int32_t)x;
        s = end;
    }
    *out = v;
    return n;
}

static int generate(hearth_model *m, hearth_ctx *c, hr_run_opts *o, const int32_t *toks, size_t n_toks) {
    hr_err e = {{0}};
    int32_t n_vocab = hearth_model_get_info(m)->n_vocab, n_ctx = hearth_ctx_n_ctx(c);
    if ((int64_t)n_toks >= n_ctx) {
        fprintf(stderr, "hearth run: the prompt has %zu tokens but the context holds %d (raise -c)\n", n_toks, n_ctx);
        return 1;
    }
    int32_t *forced = NULL;
    long n_forced = o->force_tokens ? parse_forced(o->force_tokens, n_vocab, &forced) : 0;
    if (n_forced < 0) return 1;
    hr_sampler *s = hr_sampler_new(&o->sp, n_vocab, &e);
    if (!s) { fprintf(stderr, "hearth run: %s\n", e.msg); free(forced); return 1; }
    for (size_t i = 0; i < n_toks; i++) hr_sampler_accept(s, toks[i]);
    dumper d = {NULL, n_vocab, 0};
    if (o->dump && !(d.f = fopen(o->dump, "w"))) { fprintf(stderr, "hearth run: cannot write %s\n", o->dump); hr_sampler_free(s); free(forced); return 1; }
    if (d.f) dump_begin(&d, toks, n_toks);
    double t0 = now_s();
    int rc = hearth_eval(c, toks, (int32_t)n_toks, 0, false, &e) ? 1 : 0;
    double t1 = now_s(), t_dec = 0;
    int32_t pos = (int32_t)n_toks, n_gen = 0;
    hr_detok dt = {{0}, 0};
    char piece[256], out[300];
    while (!rc && (o->n_predict < 0 || n_gen < o->n_predict)) {
        const float *lg = hearth_logits(c, -1);
        int32_t tok = hr_sampler_sample(s, lg);
        if (d.f) dump_step(&d, tok, lg);
        if (n_gen < n_forced) tok = forced[n_gen];
        hr_sampler_accept(s, tok);
        n_gen++;
        if (!o->ignore_eos && hearth_token_is_eog(m, tok)) break;
        int len = hearth_token_piece(m, tok, false, piece, sizeof piece);
        if (len > (int)sizeof piece) len = sizeof piece;
        if (len > 0) fwrite(out, 1, hr_detok_push(&dt, piece, (size_t)len, out, sizeof out), stdout);
        fflush(stdout);
        if (pos >= n_ctx) { fprintf(stderr, "\nhearth run: context full (%d tokens); stopping\n", n_ctx); break; }
        if (o->n_predict >= 0 && n_gen >= o->n_predict) break;
        double ts = now_s();
        rc = hearth_eval(c, &tok, 1, pos++, false, &e) ? 1 : 0;
        t_dec += now_s() - ts;
    }
    fwrite(out, 1, hr_detok_flush(&dt, out, sizeof out), stdout);
    printf("\n");
    if (d.f) { fprintf(d.f, "]}\n"); fclose(d.f); }
    if (rc) fprintf(stderr, "hearth run: %s\n", e.msg);
    int32_t n_dec = n_gen > 1 ? n_gen - 1 : 0;
    fprintf(stderr, "prompt: %zu tokens in %.3f s (%.2f tok/s) | decode: %d tokens in %.3f s (%.2f tok/s)\n", n_toks,
            t1 - t0, n_toks / (t1 - t0), n_dec, t_dec, t_dec > 0 ? n_dec / t_dec : 0.0);
    hr_sampler_free(s);
    free(forced);
    return rc;
}

int hr_cmd_run(int argc, char **argv) {
    hr_run_opts o = {.n_predict = 128, .mp = hearth_model_default_params(), .cp = hearth_ctx_default_params(),
                     .sp = hr_sampler_defaults()};
    o.sp.seed = (uint64_t)time(NULL);
    int r = parse(argc, argv, &o);
    if (r >= 0) return r;
    size_t plen = 0;
    char *text = o.prompt_file ? read_file(o.prompt_file, &plen) : NULL;
    if (o.prompt_file && !text) { fprintf(stderr, "hearth run: cannot read prompt file '%s'\n", o.prompt_file); return 1; }
    if (o.prompt) plen = strlen(o.prompt);
    hr_err e = {{0}};
    hearth_model *m = hearth_model_load(o.model, &o.mp, &e);
    hearth_ctx *c = m ? hearth_ctx_new(m, &o.cp, &e) : NULL;
    int32_t *toks = NULL;
    size_t n = 0;
    int rc = 1;
    if (c && !hearth_tokenize(m, o.prompt ? o.prompt : text, plen, true, true, &toks, &n, &e)) {
        hr_print_gpu_notice(c, &o.cp);
        if (o.verbose) verbose_info(m, c, &o), hr_print_gpu_plan(c);
        rc = n ? generate(m, c, &o, toks, n) : (fprintf(stderr, "hearth run: the prompt is empty\n"), 1);
        if (!rc && o.cp.ffn_stats) hr_print_ffn_stats(m, c);
        if (!rc && o.verbose) hr_print_gpu_overlap(c), verbose_moe(c);
    } else {
        fprintf(stderr, "hearth run: %s\n", e.msg);
    }
    free(toks);
    free(text);
    hearth_ctx_free(c);
    hearth_model_free(m);
    return rc;
}
