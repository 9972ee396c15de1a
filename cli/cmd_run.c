/* hearth run: generate text from a prompt, streaming the prompt and then the tokens to stdout
 * (llama.cpp's llama-completion habits); -cnv hands over to hearth chat. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "text_file.h"
#include "chat/chat.h"
#include "cli.h"
#include "formats/types.h"
#include "run_opts.h"
#include "grammar_opts.h"
#include "tokenizer/tokenizer.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define MAX_REVERSE 16

/* hearth run's own options beside the shared ones. */
typedef struct run_cli {
    hr_run_opts o;
    const char *reverse[MAX_REVERSE + 1]; /* -r texts, NULL-terminated */
    int n_reverse;
    bool no_echo;          /* --no-display-prompt */
    bool cnv;              /* -i / -cnv: hand over to hearth chat */
    const char *system, *chat_template;
    const char *chat_only; /* a chat flag (--history-file, --no-history) given, for the error without -cnv */
    const char *cnv_bad;   /* a flag of plain completion, refused with -cnv */
    const char *dump_routing; /* --dump-routing FILE: the MoE routing trace */
    char **chat_argv;      /* the arguments hearth chat gets with -cnv */
    int chat_argc;
} run_cli;

static void help(void) {
    printf("usage: hearth run -m MODEL.gguf (-p PROMPT | -f FILE) [flags]\n"
           "       hearth run -m MODEL.gguf -cnv [-sys TEXT] [flags]   (interactive chat: hearth chat)\n\n"
           "Generates text from a prompt and streams it to stdout after the prompt itself, as llama.cpp\n"
           "does; timings go to stderr.\n\n"
           "  -p, --prompt TEXT         prompt text\n"
           "  -f, --file FILE           read the prompt from a file\n"
           "  -n, --n-predict N         tokens to generate (default 128); -1: until end-of-sequence or the\n"
           "                            context is full\n"
           "  -r, --reverse-prompt TEXT stop when the output reaches TEXT (not printed); repeatable\n"
           "  --no-display-prompt       print only the generated text, not the prompt before it\n"
           "  --ignore-eos              keep generating after end-of-sequence\n"
           "  -i, -cnv, --conversation  interactive chat with the model's chat template: the same as\n"
           "                            hearth chat with these flags (-p or -f is then the first message, -r\n"
           "                            ends replies; --dump, --force-tokens, --ignore-eos are refused)\n"
           "  -sys, --system-prompt TEXT  the chat's system message (with -cnv)\n"
           "  -sysf, --system-prompt-file FILE  the chat's system message from a file (with -cnv)\n"
           "  --chat-template NAME      the chat's template (with -cnv; hearth chat --help lists them)\n"
           "  --history-file FILE, --no-history  where the chat keeps the typed lines, or not at all (with\n"
           "                            -cnv; hearth chat --help)\n"
           "  -v, --verbose             print model, memory, kernel and GPU plan details to stderr\n"
           "  --version                 print the version and build and exit\n"
           "  --list-devices            list the GPUs this build can use and exit\n"
           "  --dump FILE               write prompt tokens, generated tokens and each step's logits as JSON\n"
           "                            (MoE models: and the step's smallest router margin)\n"
           "  --force-tokens \"ID ...\"   teacher forcing: after each step feed these token ids in turn instead of\n"
           "                            the sampled ones (the dump still records the sampled ones); comparing\n"
           "                            two engines' logits on one history\n"
           "  --dump-routing FILE       mixtures of experts: write each layer's chosen experts per token (a\n"
           "                            routing trace, for expert-cache policies: docs/hybrid.md)\n");
    hr_print_common_help();
}

/* Reads a regular file or a stream (a pipe, /dev/stdin); a directory or a read error is an
 * error (printed), never an empty prompt. */
static bool is(const char *a, const char *x, const char *y) { return !strcmp(a, x) || (y && !strcmp(a, y)); }

static void chat_push(run_cli *r, const char *a) { r->chat_argv[r->chat_argc++] = (char *)a; }

/* Flags of hearth run alone. Returns 1 consumed, 0 not one of them, 2 usage error, 3 --help
 * or --version / --list-devices printed. */
static int run_flag(int argc, char **argv, int *i, run_cli *r) {
    const char *a = argv[*i];
    hr_run_opts *o = &r->o;
    long l;
    if (is(a, "-h", "--help")) return help(), 3;
    if (is(a, "--version", NULL)) return hr_print_version(), 3;
    if (is(a, "--list-devices", NULL)) return hr_list_devices(), 3;
    if (is(a, "--ignore-eos", NULL)) o->ignore_eos = true, r->cnv_bad = r->cnv_bad ? r->cnv_bad : a;
    else if (is(a, "--verbose", "-v")) o->verbose = true, chat_push(r, "--verbose");
    else if (is(a, "--no-display-prompt", NULL)) r->no_echo = true;
    else if (is(a, "--display-prompt", NULL)) r->no_echo = false;
    else if (is(a, "-i", "--interactive") || is(a, "-cnv", "--conversation") || is(a, "-if", "--interactive-first")) r->cnv = true;
    else if (is(a, "-no-cnv", "--no-conversation")) r->cnv = false;
    else if (is(a, "--no-history", NULL)) r->chat_only = a, chat_push(r, a);
    else if (is(a, "-p", "--prompt") || is(a, "-f", "--file") || is(a, "--dump", "--force-tokens") ||
             is(a, "-n", "--n-predict") || is(a, "--predict", NULL) || is(a, "-r", "--reverse-prompt") ||
             is(a, "-sys", "--system-prompt") || is(a, "-sysf", "--system-prompt-file") || is(a, "--chat-template", NULL) ||
             is(a, "--dump-routing", NULL) || is(a, "--history-file", NULL)) {
        if (!hr_arg_need("run", argc, argv, *i)) return 2;
        const char *v = argv[++*i];
        if (is(a, "-n", "--n-predict") || is(a, "--predict", NULL)) {
            /* llama.cpp: -1 until end-of-sequence, -2 until the context fills; Hearth never
             * shifts the context, so both stop at the first of the two */
            if (!hr_arg_long("run", a, v, -2, 1 << 24, &l)) return 2;
            o->n_predict = l < 0 ? -1 : l;
            chat_push(r, "-n"), chat_push(r, l < 0 ? "-1" : v);
        } else if (is(a, "-sys", "--system-prompt")) {
            r->system = v, chat_push(r, "--system"), chat_push(r, v);
        } else if (is(a, "-sysf", "--system-prompt-file")) {
            r->system = v, chat_push(r, "-sysf"), chat_push(r, v);
        } else if (is(a, "--chat-template", NULL)) {
            r->chat_template = v, chat_push(r, a), chat_push(r, v);
        } else if (is(a, "--history-file", NULL)) {
            r->chat_only = a, chat_push(r, a), chat_push(r, v);
        } else if (is(a, "-p", "--prompt")) {
            o->prompt = v, chat_push(r, "-p"), chat_push(r, v); /* with -cnv: the first message */
        } else if (is(a, "-f", "--file")) {
            o->prompt_file = v, chat_push(r, "-f"), chat_push(r, v);
        } else {
            if (!r->cnv_bad && !is(a, "-r", "--reverse-prompt")) r->cnv_bad = a;
            if (is(a, "-r", "--reverse-prompt")) chat_push(r, "-r"), chat_push(r, v);
            if (is(a, "--dump-routing", NULL)) r->dump_routing = v;
            else if (is(a, "--dump", NULL)) o->dump = v;
            else if (is(a, "--force-tokens", NULL)) o->force_tokens = v;
            else if (r->n_reverse == MAX_REVERSE) return hr_usage_error("run", "-r: at most %d reverse prompts", MAX_REVERSE);
            else if (!*v) return hr_usage_error("run", "-r: the reverse prompt is empty");
            else r->reverse[r->n_reverse++] = v;
        }
    } else return 0;
    return 1;
}

/* Returns -1 to go on, else the exit status. */
static int parse(int argc, char **argv, run_cli *r) {
    chat_push(r, "chat");
    for (int i = 1; i < argc; i++) {
        const int i0 = i;
        int k = run_flag(argc, argv, &i, r);
        if (k == 2) return 2;
        if (k == 3) return 0;
        if (k == 1) continue;
        k = hr_parse_common_flag("run", argc, argv, &i, &r->o);
        if (k < 0) return 2;
        if (k == 0) return hr_usage_error("run", "unknown flag '%s'", argv[i]);
        for (int j = i0; j <= i; j++) chat_push(r, argv[j]);
    }
    hr_run_opts *o = &r->o;
    if (!o->model) return hr_usage_error("run", "a model is required (-m FILE)");
    if (r->cnv) {
        if (r->cnv_bad)
            return hr_usage_error("run", "%s is for plain completion, not for -cnv (a chat: -p is its first message)",
                                  r->cnv_bad);
        return -1;
    }
    if (r->system || r->chat_template || r->chat_only)
        return hr_usage_error("run", "%s needs a chat: add -cnv (or use hearth chat)",
                              r->system ? "-sys" : r->chat_template ? "--chat-template" : r->chat_only);
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

/* MoE models add the smallest router margin of the forward call that made these logits
 * (hearth_ctx_moe_margin), so a comparison can tell a near-tied expert choice from an error. */
static void dump_step(dumper *d, hearth_ctx *c, int32_t tok, const float *logits) {
    fprintf(d->f, "%s{\"token\":%d,", d->steps++ ? ",\n" : "\n", tok);
    const float mg = hearth_ctx_moe_margin(c);
    if (mg == mg) fprintf(d->f, isinf(mg) ? "\"router_margin\":null," : "\"router_margin\":%.9g,", mg);
    fprintf(d->f, "\"logits\":[");
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
    fprintf(stderr, "cpu: kernels %s, %d threads\n", hearth_ctx_cpu_kernels(c),
            o->cp.n_threads > 0 ? o->cp.n_threads : (int)sysconf(_SC_NPROCESSORS_ONLN));
}

/* After generation, when the weights read so far have faulted in. */
static void verbose_pages(const hearth_model *m) {
    const int64_t huge = hearth_model_huge_page_bytes(m);
    if (huge < 0) return;
    const hearth_model_info *in = hearth_model_get_info(m);
    fprintf(stderr, "pages: %.1f MiB of the model in 2 MiB pages%s\n", huge / 1048576.0,
            in ? hr_pages_hint(huge, in->file_bytes) : "");
    hr_print_repack(stderr, "repack: ", m);
}

/* Mixture-of-experts models: the experts' bytes, and what the routing made the run read
 * (measured: each call reads every expert it routes a token to once per layer). */
static void verbose_moe(const hearth_ctx *c) {
    hearth_moe_stats s;
    if (hearth_ctx_moe_stats(c, &s)) return;
    const double mib = 1048576.0;
    fprintf(stderr, "experts: %d per layer, %d used per token, %.2f MiB of expert weights in %d layers; read per decoded "
                    "token %.2f MiB (%llu tokens; %d whole experts per layer: %.2f MiB), per token over all calls %.2f MiB (%llu tokens)\n",
            s.n_expert, s.n_expert_used, s.expert_bytes / mib, s.n_layer,
            s.decode_tokens ? s.decode_read_bytes / mib / (double)s.decode_tokens : 0.0, (unsigned long long)s.decode_tokens,
            s.n_expert_used, s.n_expert ? s.expert_bytes / mib * s.n_expert_used / s.n_expert : 0.0,
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

/* The streamed text: straight out, or with -r held back while a reverse prompt may be
 * forming at its end (then text keeps everything generated). */
typedef struct stream {
    const char *const *stops;
    char *text;
    size_t len, cap, shown;
    hr_detok dt;
    bool stopped;
} stream;

static void stream_out(stream *st, const char *p, size_t n) {
    char out[300];
    while (n) {
        size_t k = n < 256 ? n : 256;
        fwrite(out, 1, hr_detok_push(&st->dt, p, k, out, sizeof out), stdout);
        p += k, n -= k;
    }
}

/* Adds a piece; returns -1 out of memory. Sets st->stopped at a reverse prompt. */
static int stream_push(stream *st, const char *p, size_t n) {
    if (!st->stops) {
        stream_out(st, p, n);
        return 0;
    }
    if (st->len + n + 1 > st->cap) {
        size_t cap = (st->cap + n) * 2 + 256;
        char *t = realloc(st->text, cap);
        if (!t) return -1;
        st->text = t, st->cap = cap;
    }
    memcpy(st->text + st->len, p, n);
    st->len += n;
    size_t safe = hr_chat_stop_scan(st->stops, st->text, st->len, &st->stopped);
    if (safe > st->shown) stream_out(st, st->text + st->shown, safe - st->shown), st->shown = safe;
    if (st->stopped) st->len = safe;
    return 0;
}

static void stream_end(stream *st) {
    if (st->stops && !st->stopped && st->len > st->shown) stream_out(st, st->text + st->shown, st->len - st->shown);
    char out[16];
    fwrite(out, 1, hr_detok_flush(&st->dt, out, sizeof out), stdout);
    free(st->text);
}

typedef struct timing {
    double load, prompt, gen;
} timing;

/* llama.cpp's summary in one line: the prompt's speed, the generated tokens (every sampled
 * token that was printed, the first included), ms per token, load and total time. */
static void print_timing(size_t n_prompt, int32_t n_gen, const timing *t) {
    fprintf(stderr, "prompt: %zu tokens in %.3f s (%.2f tok/s) | decode: %d tokens in %.3f s (%.2f ms/token, %.2f tok/s) | "
                    "load %.3f s, total %.3f s\n",
            n_prompt, t->prompt, t->prompt > 0 ? (double)n_prompt / t->prompt : 0.0, n_gen, t->gen,
            n_gen ? 1e3 * t->gen / n_gen : 0.0, t->gen > 0 ? n_gen / t->gen : 0.0, t->load, t->load + t->prompt + t->gen);
}

static int generate(hearth_model *m, hearth_ctx *c, run_cli *r, const char *text, size_t text_len, const int32_t *toks,
                    size_t n_toks, timing *tm) {
    hr_run_opts *o = &r->o;
    hr_err e = {{0}};
    int32_t n_vocab = hearth_model_get_info(m)->n_vocab, n_ctx = hearth_ctx_n_ctx(c);
    if ((int64_t)n_toks >= n_ctx) {
        fprintf(stderr, "hearth run: the prompt has %zu tokens but the context holds %d (raise -c)\n", n_toks, n_ctx);
        return 1;
    }
    int32_t *forced = NULL;
    long n_forced = o->force_tokens ? parse_forced(o->force_tokens, n_vocab, &forced) : 0;
    if (n_forced < 0) return 1;
    hr_run_grammar rg;
    if (hr_run_grammar_init(&rg, o, m, &e)) { fprintf(stderr, "hearth run: %s\n", e.msg); free(forced); return 1; }
    hr_sampler *s = hr_sampler_new(&o->sp, n_vocab, &e);
    if (!s) { fprintf(stderr, "hearth run: %s\n", e.msg); free(forced); hr_run_grammar_free(&rg); return 1; }
    for (size_t i = 0; i < n_toks; i++) hr_sampler_accept(s, toks[i]);
    dumper d = {NULL, n_vocab, 0};
    if (o->dump && !(d.f = fopen(o->dump, "w"))) { fprintf(stderr, "hearth run: cannot write %s\n", o->dump); hr_sampler_free(s); free(forced); return 1; }
    if (d.f) dump_begin(&d, toks, n_toks);
    if (!r->no_echo) fwrite(text, 1, text_len, stdout), fflush(stdout);
    double t0 = now_s();
    int rc = hearth_eval(c, toks, (int32_t)n_toks, 0, false, &e) ? 1 : 0;
    double t1 = now_s();
    int32_t pos = (int32_t)n_toks, n_gen = 0, n_sampled = 0;
    stream st = {.stops = r->n_reverse ? r->reverse : NULL};
    char piece[256];
    bool full = false;
    while (!rc && (o->n_predict < 0 || n_sampled < o->n_predict)) {
        const float *lg = hearth_logits(c, -1);
        int32_t tok = hr_run_grammar_sample(&rg, s, lg);
        if (tok < 0 && n_sampled >= n_forced) { fprintf(stderr, "\nhearth run: the grammar allows no further token; stopping\n"); break; }
        if (d.f) dump_step(&d, c, tok, lg);
        if (n_sampled < n_forced) tok = forced[n_sampled];
        hr_sampler_accept(s, tok);
        n_sampled++;
        int grammar_done = hr_run_grammar_accept(&rg, tok, &e);
        if (grammar_done < 0) { rc = 1; break; }
        if (!o->ignore_eos && hearth_token_is_eog(m, tok)) break;
        n_gen++;
        int len = hearth_token_piece(m, tok, false, piece, sizeof piece);
        if (len > (int)sizeof piece) len = sizeof piece;
        if (len > 0 && stream_push(&st, piece, (size_t)len)) { rc = 1; snprintf(e.msg, sizeof e.msg, "out of memory"); break; }
        fflush(stdout);
        if (st.stopped || grammar_done) break;
        if (pos >= n_ctx) { full = true; break; }
        if (o->n_predict >= 0 && n_sampled >= o->n_predict) break;
        rc = hearth_eval(c, &tok, 1, pos++, false, &e) ? 1 : 0;
    }
    stream_end(&st);
    tm->prompt = t1 - t0, tm->gen = now_s() - t1;
    printf("\n");
    fflush(stdout); /* before anything on stderr, which may share the terminal or pipe */
    if (d.f) { fprintf(d.f, "]}\n"); fclose(d.f); }
    if (rc) fprintf(stderr, "hearth run: %s\n", e.msg);
    if (full) fprintf(stderr, "hearth run: context full (%d tokens); stopping\n", n_ctx);
    print_timing(n_toks, n_gen, tm);
    if (o->verbose) hr_run_grammar_report(&rg, "run");
    hr_sampler_free(s);
    hr_run_grammar_free(&rg);
    free(forced);
    return rc;
}

/* -tb: Hearth has one pool; say so when the user expected two sizes. */
static void threads_notice(const hr_run_opts *o) {
    int t = o->cp.n_threads ? o->cp.n_threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (o->threads_batch && o->threads_batch != t)
        fprintf(stderr, "hearth run: -tb %d: Hearth runs prompts and decoding on one pool of %d threads (-t)\n",
                o->threads_batch, t);
}

static int run(run_cli *r) {
    hr_run_opts *o = &r->o;
    size_t plen = 0;
    hr_err fe = {{0}};
    char *text = o->prompt_file ? hr_text_file(o->prompt_file, 0, &plen, &fe) : NULL;
    if (o->prompt_file && !text) return fprintf(stderr, "hearth run: -f: %s\n", fe.msg), 1;
    if (o->prompt) plen = strlen(o->prompt);
    const char *prompt = o->prompt ? o->prompt : text;
    threads_notice(o);
    hr_err e = {{0}};
    timing tm = {0};
    double t0 = now_s();
    const hearth_model_params mp = hr_run_model_params(o);
    hearth_model *m = hearth_model_load(o->model, &mp, &e);
    if (m) hr_print_model_notices("run", m);
    hearth_ctx *c = NULL;
    int rc = 1;
    if (m && !hr_check_ctx_size("run", m, &o->cp)) {
        c = hearth_ctx_new(m, &o->cp, &e);
        if (!c) fprintf(stderr, "hearth run: %s\n", e.msg);
        if (c && r->dump_routing && hearth_ctx_dump_routing(c, r->dump_routing, &e))
            fprintf(stderr, "hearth run: %s\n", e.msg), hearth_ctx_free(c), c = NULL;
    } else if (!m) {
        fprintf(stderr, "hearth run: %s\n", e.msg);
    }
    tm.load = now_s() - t0;
    int32_t *toks = NULL;
    size_t n = 0;
    if (c && !hearth_tokenize(m, prompt, plen, true, true, &toks, &n, &e)) {
        const bool told = hr_gpu_notice(c, o);
        if (o->verbose) verbose_info(m, c, o);
        if (o->verbose && !told) hr_print_gpu_plan(c);
        rc = n ? generate(m, c, r, prompt, plen, toks, n, &tm) : (fprintf(stderr, "hearth run: the prompt is empty\n"), 1);
        if (!rc && o->cp.ffn_stats) hr_print_ffn_stats(m, c);
        if (!rc && o->verbose) hr_print_gpu_overlap(c), verbose_moe(c), verbose_pages(m);
    } else if (c) {
        fprintf(stderr, "hearth run: %s\n", e.msg);
    }
    free(toks);
    free(text);
    hearth_ctx_free(c);
    hearth_model_free(m);
    return rc;
}

int hr_cmd_run(int argc, char **argv) {
    run_cli r = {.o = {.n_predict = 128, .mp = hearth_model_default_params(), .cp = hearth_ctx_default_params(),
                       .sp = hr_sampler_defaults()}};
    r.o.sp.seed = (uint64_t)time(NULL);
    /* every argument, and --system for -sys, fits in twice argc */
    r.chat_argv = calloc((size_t)argc * 2 + 2, sizeof *r.chat_argv);
    if (!r.chat_argv) { fprintf(stderr, "hearth run: out of memory\n"); return 1; }
    int rc = parse(argc, argv, &r);
    if (rc < 0) rc = r.cnv ? hr_cmd_chat(r.chat_argc, r.chat_argv) : run(&r);
    free(r.chat_argv);
    return rc;
}
