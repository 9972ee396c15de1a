/* hearth chat: an interactive chat in the terminal. Each turn renders the whole
 * conversation with the model's chat template, evaluates only the tokens after the part the
 * KV cache already holds, and streams the reply until an end-of-generation token, a
 * template stop text, or -n tokens. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "chat/chat.h"
#include "cli.h"
#include "run_opts.h"
#include "tokenizer/tokenizer.h"

typedef struct chat_opts {
    hr_run_opts run;
    const char *tmpl_name, *system, *dump_prompt;
    int tmpl;
} chat_opts;

/* The conversation: roles are static strings, contents are owned. */
typedef struct conv {
    hr_chat_msg *msgs;
    size_t n, cap;
} conv;

typedef struct session {
    hearth_model *m;
    hearth_ctx *c;
    hr_sampler *s;
    const chat_opts *o;
    hr_chat_tmpl tmpl;
    const char *const *stops;
    char bos[64], eos[64];
    int32_t *held; /* tokens whose keys and values the cache holds, positions 0..n_held-1 */
    size_t n_held;
    int32_t n_ctx;
    conv cv;
} session;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void help(void) {
    printf("usage: hearth chat -m MODEL.gguf [flags]\n\n"
           "Interactive chat: type a message and press Enter; end a line with '\\' to continue the\n"
           "message on the next line. /reset starts a new conversation, /exit or Ctrl-D quits.\n"
           "Replies stream to stdout; notices go to stderr.\n\n"
           "  --chat-template NAME      template family (%s);\n"
           "                            default: detected from the model, else chatml\n"
           "  --system TEXT             system message at the start of the conversation\n"
           "  -n, --n-predict N         most tokens per reply, -1 = until the context is full (default 256)\n"
           "  --verbose                 per turn: prompt tokens, tokens reused from the cache, speed\n",
           hr_chat_names());
    hr_print_common_help();
}

static int parse(int argc, char **argv, chat_opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = hr_parse_common_flag("chat", argc, argv, &i, &o->run);
        if (r < 0) return 2;
        if (r > 0) continue;
        long l;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { help(); return 0; }
        else if (!strcmp(a, "--verbose")) o->run.verbose = true;
        else if (!strcmp(a, "--chat-template") || !strcmp(a, "--system") || !strcmp(a, "--dump-prompt") ||
                 !strcmp(a, "-n") || !strcmp(a, "--n-predict")) {
            if (!hr_arg_need("chat", argc, argv, i)) return 2;
            const char *v = argv[++i];
            if (!strcmp(a, "--chat-template")) o->tmpl_name = v;
            else if (!strcmp(a, "--system")) o->system = v;
            else if (!strcmp(a, "--dump-prompt")) o->dump_prompt = v; /* hidden: tests compare with hearth run */
            else if (!hr_arg_long("chat", a, v, -1, 1 << 24, &l)) return 2;
            else o->run.n_predict = l;
        } else return hr_usage_error("chat", "unknown flag '%s'", a);
    }
    if (!o->run.model) return hr_usage_error("chat", "a model is required (-m FILE)");
    if (o->tmpl_name && (o->tmpl = hr_chat_from_name(o->tmpl_name)) < 0)
        return hr_usage_error("chat", "--chat-template: unknown template '%s' (%s)", o->tmpl_name, hr_chat_names());
    return -1;
}

/* ---- conversation ---- */

static int conv_push(conv *cv, const char *role, const char *text, size_t len) {
    if (cv->n == cv->cap) {
        size_t cap = cv->cap ? cv->cap * 2 : 8;
        hr_chat_msg *p = realloc(cv->msgs, cap * sizeof *p);
        if (!p) return -1;
        cv->msgs = p, cv->cap = cap;
    }
    char *s = malloc(len + 1);
    if (!s) return -1;
    memcpy(s, text, len);
    s[len] = 0;
    cv->msgs[cv->n++] = (hr_chat_msg){role, s};
    return 0;
}

static size_t conv_first(const conv *cv) { return cv->n && !strcmp(cv->msgs[0].role, "system") ? 1 : 0; }

static void conv_remove(conv *cv, size_t i) {
    free((char *)cv->msgs[i].content);
    memmove(cv->msgs + i, cv->msgs + i + 1, (cv->n - i - 1) * sizeof *cv->msgs);
    cv->n--;
}

/* Whether a turn can go while keeping the system message and the newest message. */
static bool conv_can_drop(const conv *cv) { return cv->n > conv_first(cv) + 1; }

/* Drops the oldest turn: its user message and the replies up to the next user message. */
static void conv_drop_turn(conv *cv) {
    size_t f = conv_first(cv);
    conv_remove(cv, f);
    while (cv->n > f + 1 && strcmp(cv->msgs[f].role, "user")) conv_remove(cv, f);
}

static void conv_truncate(conv *cv, size_t keep) {
    while (cv->n > keep) conv_remove(cv, cv->n - 1);
}

/* ---- prompt and cache ---- */

static void dump_prompt(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) { fprintf(stderr, "hearth chat: cannot write %s\n", path); return; }
    fputs(text, f);
    fclose(f);
}

static int render_tokens(session *S, int32_t **toks, size_t *n, hr_err *e) {
    char *text = NULL;
    if (hr_chat_render(S->tmpl, S->cv.msgs, S->cv.n, true, S->bos, S->eos, &text, e)) return -1;
    if (S->o->dump_prompt) dump_prompt(S->o->dump_prompt, text);
    int rc = hearth_tokenize(S->m, text, strlen(text), true, true, toks, n, e);
    free(text);
    return rc;
}

/* Room kept for the reply when deciding whether the conversation still fits. */
static size_t reply_room(const session *S) {
    long half = S->n_ctx / 2, n = S->o->run.n_predict;
    return (size_t)(n < 0 || n > half ? half : n);
}

/* Renders and tokenizes the conversation, dropping the oldest turns until it fits.
 * Returns 0 with the tokens, 1 if the newest message alone does not fit (it is removed),
 * -1 on error. */
static int build_prompt(session *S, int32_t **toks, size_t *n, hr_err *e) {
    for (bool told = false;; told = true) {
        if (render_tokens(S, toks, n, e)) return -1;
        if (*n + reply_room(S) <= (size_t)S->n_ctx) return 0;
        if (!conv_can_drop(&S->cv)) {
            if (*n < (size_t)S->n_ctx) return 0; /* the reply gets what is left */
            fprintf(stderr, "hearth chat: the message does not fit the context (%zu tokens with the template, "
                            "context %d); not sent\n", *n, S->n_ctx);
            conv_remove(&S->cv, S->cv.n - 1);
            free(*toks), *toks = NULL;
            return 1;
        }
        if (!told)
            fprintf(stderr, "hearth chat: the conversation no longer fits the context (%d tokens); "
                            "dropping the oldest turns\n", S->n_ctx);
        conv_drop_turn(&S->cv);
        free(*toks), *toks = NULL;
    }
}

/* Evaluates the prompt tokens after the longest prefix the cache already holds (at least
 * the last token, whose logits start the reply). Returns the number reused, or -1. */
static long sync_cache(session *S, const int32_t *toks, size_t n, hr_err *e) {
    size_t lcp = 0;
    while (lcp < S->n_held && lcp < n && S->held[lcp] == toks[lcp]) lcp++;
    if (lcp == n) lcp = n - 1;
    S->n_held = lcp;
    if (hearth_eval(S->c, toks + lcp, (int32_t)(n - lcp), (int32_t)lcp, false, e)) return -1;
    memcpy(S->held + lcp, toks + lcp, (n - lcp) * sizeof *toks);
    S->n_held = n;
    for (size_t i = lcp; i < n; i++) hr_sampler_accept(S->s, toks[i]);
    return (long)lcp;
}

/* ---- reply ---- */

typedef struct reply {
    char *p;
    size_t len, cap, shown;
    hr_detok dt;
} reply;

static int reply_append(reply *r, const char *s, size_t n) {
    if (r->len + n + 1 > r->cap) {
        size_t cap = (r->cap + n) * 2 + 256;
        char *p = realloc(r->p, cap);
        if (!p) return -1;
        r->p = p, r->cap = cap;
    }
    memcpy(r->p + r->len, s, n);
    r->len += n;
    r->p[r->len] = 0;
    return 0;
}

/* Prints reply bytes shown..upto, keeping incomplete UTF-8 characters for later. */
static void reply_show(reply *r, size_t upto) {
    char out[260];
    while (r->shown < upto) {
        size_t k = upto - r->shown < 256 ? upto - r->shown : 256;
        fwrite(out, 1, hr_detok_push(&r->dt, r->p + r->shown, k, out, sizeof out), stdout);
        r->shown += k;
    }
    fflush(stdout);
}

/* Samples and streams one reply. The cache holds the prompt; each kept token is evaluated
 * before the next is sampled. Returns the number of tokens sampled, or -1. */
static long generate(session *S, reply *r, hr_err *e) {
    long n_gen = 0, max = S->o->run.n_predict;
    char piece[256];
    bool stopped = false;
    while (max < 0 || n_gen < max) {
        int32_t tok = hr_sampler_sample(S->s, hearth_logits(S->c, -1));
        hr_sampler_accept(S->s, tok);
        n_gen++;
        if (hearth_token_is_eog(S->m, tok)) break;
        int len = hearth_token_piece(S->m, tok, false, piece, sizeof piece);
        if (len > (int)sizeof piece) len = sizeof piece;
        if (len > 0 && reply_append(r, piece, (size_t)len)) return hr_errf(e, "out of memory");
        size_t safe = hr_chat_stop_scan(S->stops, r->p ? r->p : "", r->len, &stopped);
        reply_show(r, safe);
        if (stopped) { r->len = safe; break; }
        if (max >= 0 && n_gen >= max) break;
        if (S->n_held >= (size_t)S->n_ctx) {
            fprintf(stderr, "\nhearth chat: context full (%d tokens); reply cut short\n", S->n_ctx);
            break;
        }
        if (hearth_eval(S->c, &tok, 1, (int32_t)S->n_held, false, e)) return -1;
        S->held[S->n_held++] = tok;
    }
    reply_show(r, r->len); /* no stop followed: a held-back tail was plain text */
    char out[8];
    fwrite(out, 1, hr_detok_flush(&r->dt, out, sizeof out), stdout);
    printf("\n");
    fflush(stdout);
    return n_gen;
}

/* One turn for the conversation as it stands (ending with the user's message). Returns 0,
 * or -1 on an error that ends the chat. */
static int turn(session *S) {
    hr_err e = {{0}};
    int32_t *toks = NULL;
    size_t n = 0;
    int b = build_prompt(S, &toks, &n, &e);
    if (b) return b > 0 ? 0 : (fprintf(stderr, "hearth chat: %s\n", e.msg), -1);
    double t0 = now_s();
    long reused = sync_cache(S, toks, n, &e);
    free(toks);
    reply r = {0};
    double t1 = now_s();
    long n_gen = reused < 0 ? -1 : generate(S, &r, &e);
    int rc = n_gen < 0 ? -1 : conv_push(&S->cv, "assistant", r.p ? r.p : "", r.len);
    if (n_gen < 0) fprintf(stderr, "hearth chat: %s\n", e.msg), S->n_held = 0;
    else if (rc) fprintf(stderr, "hearth chat: out of memory\n");
    else if (S->o->run.verbose)
        fprintf(stderr, "prompt: %zu tokens, %ld reused from the cache, %zu evaluated in %.3f s | reply: %ld tokens in %.3f s\n",
                n, reused, n - (size_t)reused, t1 - t0, n_gen, now_s() - t1);
    free(r.p);
    return rc;
}

/* ---- input ---- */

/* Reads one message: lines ending in '\' continue it. Returns its length, or -1 at EOF
 * with nothing read. *buf is reused between calls. */
static long read_message(char **buf, size_t *cap, bool tty) {
    char *line = NULL;
    size_t lcap = 0, len = 0;
    ssize_t k;
    bool any = false;
    if (tty) fputs("> ", stdout), fflush(stdout);
    while ((k = getline(&line, &lcap, stdin)) >= 0) {
        any = true;
        while (k > 0 && (line[k - 1] == '\n' || line[k - 1] == '\r')) k--;
        bool more = k > 0 && line[k - 1] == '\\';
        if (more) line[k - 1] = '\n';
        if (len + (size_t)k + 1 > *cap) {
            char *p = realloc(*buf, *cap = len + (size_t)k + 256);
            if (!p) break;
            *buf = p;
        }
        memcpy(*buf + len, line, (size_t)k);
        len += (size_t)k;
        (*buf)[len] = 0;
        if (!more) break;
    }
    free(line);
    return any && *buf ? (long)len : -1;
}

static bool is_command(const char *msg, const char *cmd) {
    size_t n = strlen(cmd);
    if (strncmp(msg, cmd, n)) return false;
    for (msg += n; *msg == ' ' || *msg == '\t'; msg++) {}
    return !*msg;
}

/* ---- setup ---- */

static void special_text(const hearth_model *m, int32_t id, char *buf, size_t cap) {
    int len = id >= 0 ? hearth_token_piece(m, id, true, buf, cap - 1) : 0;
    buf[len > 0 && (size_t)len < cap ? len : 0] = 0;
}

/* The public API names end-of-generation tokens but not EOS; the lowest-numbered one is the
 * vocabulary's EOS in the families that print it (Llama-2, Mistral: "</s>"). */
static int32_t find_eos(const hearth_model *m) {
    int32_t n = hearth_model_get_info(m)->n_vocab;
    for (int32_t i = 0; i < n; i++)
        if (hearth_token_is_eog(m, i)) return i;
    return -1;
}

static hr_chat_tmpl pick_template(const hearth_model *m, const chat_opts *o) {
    if (o->tmpl_name) return (hr_chat_tmpl)o->tmpl;
    size_t len = 0;
    bool known;
    const char *t = hearth_model_meta_str(m, "tokenizer.chat_template", &len);
    hr_chat_tmpl k = hr_chat_detect(t, len, &known);
    if (!known)
        fprintf(stderr, "hearth chat: %s; using chatml (choose with --chat-template)\n",
                t ? "the model's chat template is not one Hearth knows" : "the model has no chat template");
    return k;
}

static int session_open(session *S, const chat_opts *o, hr_err *e) {
    S->o = o;
    if (!(S->m = hearth_model_load(o->run.model, &o->run.mp, e))) return -1;
    if (!(S->c = hearth_ctx_new(S->m, &o->run.cp, e))) return -1;
    hr_print_gpu_notice(S->c, &o->run.cp);
    S->n_ctx = hearth_ctx_n_ctx(S->c);
    if (!(S->held = malloc((size_t)S->n_ctx * sizeof *S->held))) return hr_errf(e, "out of memory");
    if (!(S->s = hr_sampler_new(&o->run.sp, hearth_model_get_info(S->m)->n_vocab, e))) return -1;
    S->tmpl = pick_template(S->m, o);
    S->stops = hr_chat_stops(S->tmpl);
    special_text(S->m, hearth_token_bos(S->m), S->bos, sizeof S->bos);
    special_text(S->m, find_eos(S->m), S->eos, sizeof S->eos);
    if (o->system && conv_push(&S->cv, "system", o->system, strlen(o->system))) return hr_errf(e, "out of memory");
    if (o->run.verbose)
        fprintf(stderr, "chat: template %s, context %d tokens\n", hr_chat_name(S->tmpl), S->n_ctx);
    return 0;
}

static void session_close(session *S) {
    conv_truncate(&S->cv, 0);
    free(S->cv.msgs);
    free(S->held);
    hr_sampler_free(S->s);
    hearth_ctx_free(S->c);
    hearth_model_free(S->m);
}

static int chat_loop(session *S) {
    bool tty = isatty(STDIN_FILENO);
    char *msg = NULL;
    size_t cap = 0;
    long len;
    int rc = 0;
    while (!rc && (len = read_message(&msg, &cap, tty)) >= 0) {
        if (is_command(msg, "/exit")) break;
        if (is_command(msg, "/reset")) {
            conv_truncate(&S->cv, conv_first(&S->cv));
            fprintf(stderr, "(new conversation)\n");
            continue;
        }
        if (!len) continue;
        if (conv_push(&S->cv, "user", msg, (size_t)len)) { fprintf(stderr, "hearth chat: out of memory\n"); rc = 1; }
        else if (turn(S)) rc = 1;
    }
    if (tty && !rc) printf("\n");
    free(msg);
    return rc;
}

int hr_cmd_chat(int argc, char **argv) {
    chat_opts o = {.run = {.n_predict = 256, .mp = hearth_model_default_params(), .cp = hearth_ctx_default_params(),
                           .sp = hr_sampler_defaults()}};
    o.run.sp.seed = (uint64_t)time(NULL);
    int r = parse(argc, argv, &o);
    if (r >= 0) return r;
    hr_err e = {{0}};
    session S = {0};
    int rc = 1;
    if (session_open(&S, &o, &e)) fprintf(stderr, "hearth chat: %s\n", e.msg);
    else rc = chat_loop(&S);
    session_close(&S);
    return rc;
}
