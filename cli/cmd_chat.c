/* hearth chat: an interactive chat in the terminal. Each turn renders the whole
 * conversation with the model's chat template, evaluates only the tokens after the part the
 * KV cache already holds, and streams the reply until an end-of-generation token, a
 * template stop text, -n tokens, or the end of the context. When the conversation outgrows
 * the context, the oldest turns go (the system message stays). On a terminal the input is
 * read with the line editor of lineedit.c and Ctrl-C stops a reply. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "chat/chat.h"
#include "chat_cli.h"
#include "chat_conv.h"
#include "cli.h"
#include "lineedit.h"
#include "text_file.h"
#include "run_opts.h"
#include "grammar_opts.h"
#include "tokenizer/tokenizer.h"

/* The chat's only mutable globals, and why they cannot be avoided: a signal handler reaches
 * no state but static storage, and sig_atomic_t is the only type it may write. SIGINT sets
 * sigint_flag; the reply loop reads and clears it through session.intr. A SIGTERM or SIGHUP
 * while the line editor holds the terminal in raw mode stores its number in term_sig. */
static volatile sig_atomic_t sigint_flag, term_sig;

static void on_term(int sig) { term_sig = sig; }

/* A first Ctrl-C asks the reply to stop; a second before the chat saw the first (a long
 * prompt evaluation) ends the program as llama-cli does. Only async-signal-safe calls. */
static void on_sigint(int sig) {
    (void)sig;
    if (sigint_flag) {
        if (write(STDOUT_FILENO, "\n", 1) < 0) {}
        _exit(130);
    }
    sigint_flag = 1;
}

typedef struct session {
    hearth_model *m;
    hearth_ctx *c;
    hr_sampler *s;
    hr_run_grammar rg;         /* --grammar: each reply follows it */
    const hr_chat_opts *o;
    hr_chat_tmpl tmpl;
    const char **stops;        /* the template's stop texts and the -r texts, NULL-terminated */
    char bos[64], eos[64];
    int32_t *held;             /* tokens whose keys and values the cache holds, positions 0..n_held-1 */
    size_t n_held;
    int32_t n_ctx;
    hr_conv cv;
    bool told_trim;            /* the notice about dropped messages was given in this conversation */
    volatile sig_atomic_t *intr;
    bool interactive;          /* the input is a terminal: prompts, banner, Ctrl-C handling */
    bool edit;                 /* ... and the line editor reads it */
    hr_lineedit le;
} session;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char commands_help[] =
    "  /help               this list\n"
    "  /clear              start a new conversation (the system message stays); also /reset\n"
    "  /save FILE          write the conversation as JSON ({\"messages\": [...]}, as in a chat request)\n"
    "  /load FILE          replace the conversation with one saved by /save\n"
    "  /exit               quit (also /quit, /bye, Ctrl-D)\n"
    "  //TEXT              send TEXT starting with '/'\n";

static void help(void) {
    printf("usage: hearth chat -m MODEL.gguf [flags]\n\n"
           "Interactive chat: type a message and press Enter. End a line with '\\' to continue the\n"
           "message on the next line, or put it between lines starting and ending with \"\"\"; a pasted\n"
           "block is one message. On a terminal: arrows, Home/End, Ctrl-A/E/U/K/W edit the line,\n"
           "Up/Down recall earlier lines, Ctrl-C stops a reply (what was generated stays in the\n"
           "conversation), Ctrl-C twice on an empty line or Ctrl-D quits. When the conversation no\n"
           "longer fits the context, the oldest messages are dropped (the system message stays) and a\n"
           "notice says so once. Replies stream to stdout; notices go to stderr.\n\n"
           "Commands:\n%s\nFlags:\n"
           "  --chat-template NAME      template family (%s);\n"
           "                            default: detected from the model, else chatml\n"
           "  --system, -sys, --system-prompt TEXT\n"
           "                            system message at the start of the conversation\n"
           "  -sysf, --system-prompt-file FILE\n"
           "                            the system message is FILE's text\n"
           "  -p, --prompt TEXT         the first user message, sent before reading the input\n"
           "  -f, --file FILE           the first user message is FILE's text\n"
           "  -r, --reverse-prompt TEXT end a reply where it reaches TEXT (not printed); repeatable, up to %d\n"
           "  -n, --n-predict N         most tokens per reply, -1 = until the context is full (default 256);\n"
           "                            never more than the context leaves after the prompt\n"
           "  -co, --color [on|off|auto]\n"
           "                            colour the typed text (default auto: on a terminal unless NO_COLOR is set)\n"
           "  --history-file FILE       where the typed lines are kept across chats on a terminal (Up recalls\n"
           "                            them); default $XDG_STATE_HOME/hearth/chat_history, else\n"
           "                            ~/.local/state/hearth/chat_history\n"
           "  --no-history              keep the typed lines of this chat only\n"
           "  --verbose                 per turn: prompt tokens, tokens reused from the cache, speed\n",
           commands_help, hr_chat_names(), HR_CHAT_MAX_REVERSE);
    hr_print_common_help();
}

static int parse_color(const char *v) {
    if (!strcmp(v, "on") || !strcmp(v, "yes") || !strcmp(v, "1") || !strcmp(v, "always")) return 1;
    if (!strcmp(v, "off") || !strcmp(v, "no") || !strcmp(v, "0") || !strcmp(v, "never")) return 0;
    return !strcmp(v, "auto") ? -1 : -2;
}

static int parse(int argc, char **argv, hr_chat_opts *o) {
    int n_rev = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = hr_parse_common_flag("chat", argc, argv, &i, &o->run);
        if (r < 0) return 2;
        if (r > 0) continue;
        long l;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { help(); return 0; }
        else if (!strcmp(a, "--verbose")) o->run.verbose = true;
        else if (!strcmp(a, "--no-history")) o->no_history = true;
        else if ((!strcmp(a, "-co") || !strcmp(a, "--color")) && (i + 1 >= argc || parse_color(argv[i + 1]) == -2))
            o->color = 1; /* llama.cpp's older flag took no value */
        else if (!strcmp(a, "--chat-template") || !strcmp(a, "--system") || !strcmp(a, "-sys") ||
                 !strcmp(a, "--system-prompt") || !strcmp(a, "--dump-prompt") || !strcmp(a, "-n") ||
                 !strcmp(a, "--n-predict") || !strcmp(a, "-co") || !strcmp(a, "--color") || !strcmp(a, "-p") ||
                 !strcmp(a, "--prompt") || !strcmp(a, "-r") || !strcmp(a, "--reverse-prompt") || !strcmp(a, "-f") ||
                 !strcmp(a, "--file") || !strcmp(a, "-sysf") || !strcmp(a, "--system-prompt-file") ||
                 !strcmp(a, "--history-file")) {
            if (!hr_arg_need("chat", argc, argv, i)) return 2;
            const char *v = argv[++i];
            if (!strcmp(a, "--chat-template")) o->tmpl_name = v;
            else if (!strcmp(a, "--history-file") && !*v) return hr_usage_error("chat", "%s: the path is empty", a);
            else if (!strcmp(a, "--history-file")) o->history_file = v;
            else if (!strcmp(a, "-f") || !strcmp(a, "--file")) o->first_file = v;
            else if (!strcmp(a, "-sysf") || !strcmp(a, "--system-prompt-file")) o->system_file = v;
            else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) o->first_message = v;
            else if ((!strcmp(a, "-r") || !strcmp(a, "--reverse-prompt")) && !*v)
                return hr_usage_error("chat", "%s: the text is empty", a);
            else if (!strcmp(a, "-r") || !strcmp(a, "--reverse-prompt")) {
                if (n_rev == HR_CHAT_MAX_REVERSE) return hr_usage_error("chat", "%s: at most %d texts", a, HR_CHAT_MAX_REVERSE);
                o->reverse[n_rev++] = v;
            }
            else if (!strcmp(a, "--dump-prompt")) o->dump_prompt = v; /* hidden: tests compare with hearth run */
            else if (a[1] == 'c' || !strcmp(a, "--color")) o->color = parse_color(v);
            else if (a[1] != 'n' && strcmp(a, "--n-predict")) o->system = v;
            else if (!hr_arg_long("chat", a, v, -1, 1 << 24, &l)) return 2;
            else o->run.n_predict = l;
        } else return hr_usage_error("chat", "unknown flag '%s'", a);
    }
    if (!o->run.model) return hr_usage_error("chat", "a model is required (-m FILE)");
    if (o->first_message && o->first_file) return hr_usage_error("chat", "give either -p or -f, not both");
    if (o->system && o->system_file) return hr_usage_error("chat", "give either -sys or -sysf, not both");
    return -1;
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

/* Renders and tokenizes the conversation, dropping the oldest turns until it fits with room
 * for a reply. Returns 0 with the tokens, 1 if the newest message alone does not fit (it is
 * removed), -1 on error. */
static int build_prompt(session *S, int32_t **toks, size_t *n, hr_err *e) {
    size_t dropped = 0;
    for (;;) {
        if (render_tokens(S, toks, n, e)) return -1;
        if (*n + reply_room(S) <= (size_t)S->n_ctx) break;
        if (!hr_conv_can_drop(&S->cv)) {
            if (*n < (size_t)S->n_ctx) break; /* the reply gets what is left */
            fprintf(stderr, "hearth chat: the message does not fit the context (%zu tokens with the template, "
                            "context %d); not sent\n", *n, S->n_ctx);
            hr_conv_remove(&S->cv, S->cv.n - 1);
            free(*toks), *toks = NULL;
            return 1;
        }
        dropped += hr_conv_drop_turn(&S->cv);
        free(*toks), *toks = NULL;
    }
    if (dropped && (!S->told_trim || S->o->run.verbose))
        fprintf(stderr, "hearth chat: context full: dropped the oldest %zu message%s (context %d tokens)%s\n", dropped,
                dropped == 1 ? "" : "s", S->n_ctx, S->told_trim ? "" : "; later drops are not announced");
    S->told_trim |= dropped > 0;
    return 0;
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

/* Whether Ctrl-C asked the reply to stop (consuming the request). */
static bool interrupted(session *S) {
    if (!*S->intr) return false;
    *S->intr = 0;
    return true;
}

/* Samples and streams one reply of at most max tokens. The cache holds the prompt; each kept
 * token is evaluated before the next is sampled. Returns the number of tokens sampled, or -1. */
static long generate(session *S, reply *r, long max, hr_err *e) {
    long n_gen = 0;
    char piece[256];
    bool stopped = false;
    if (S->rg.gs) hr_grammar_sampler_reset(S->rg.gs);
    while (n_gen < max && !interrupted(S)) {
        int32_t tok = hr_run_grammar_sample(&S->rg, S->s, hearth_logits(S->c, -1));
        if (tok < 0) break; /* the grammar allows nothing more */
        hr_sampler_accept(S->s, tok);
        n_gen++;
        int grammar_done = hr_run_grammar_accept(&S->rg, tok, e);
        if (grammar_done < 0) return -1;
        if (hearth_token_is_eog(S->m, tok)) break;
        int len = hearth_token_piece(S->m, tok, false, piece, sizeof piece);
        if (len > (int)sizeof piece) len = sizeof piece;
        if (len > 0 && reply_append(r, piece, (size_t)len)) return hr_errf(e, "out of memory");
        size_t safe = hr_chat_stop_scan((const char *const *)S->stops, r->p ? r->p : "", r->len, &stopped);
        reply_show(r, safe);
        if (stopped) { r->len = safe; break; }
        if (grammar_done) break;
        if (n_gen >= max || S->n_held >= (size_t)S->n_ctx) break;
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

/* The most tokens this reply may take: -n, and never more than the context leaves. */
static long reply_max(const session *S, size_t n_prompt) {
    long left = (long)S->n_ctx - (long)n_prompt, n = S->o->run.n_predict;
    return n < 0 || n > left ? left : n;
}

/* One turn for the conversation as it stands (ending with the user's message). A reply
 * stopped by Ctrl-C stays in the conversation as far as it got, as in llama-cli. Returns 0,
 * or -1 on an error that ends the chat. */
static int turn(session *S) {
    hr_err e = {{0}};
    int32_t *toks = NULL;
    size_t n = 0;
    int b = build_prompt(S, &toks, &n, &e);
    if (b) return b > 0 ? 0 : (fprintf(stderr, "hearth chat: %s\n", e.msg), -1);
    *S->intr = 0;
    double t0 = now_s();
    long reused = sync_cache(S, toks, n, &e);
    free(toks);
    reply r = {0};
    double t1 = now_s();
    long n_gen = reused < 0 ? -1 : generate(S, &r, reply_max(S, n), &e);
    int rc = n_gen < 0 ? -1 : hr_conv_push(&S->cv, "assistant", r.p ? r.p : "", r.len);
    if (n_gen < 0) fprintf(stderr, "hearth chat: %s\n", e.msg), S->n_held = 0;
    else if (rc) fprintf(stderr, "hearth chat: out of memory\n");
    else if (S->o->run.verbose)
        fprintf(stderr, "prompt: %zu tokens, %ld reused from the cache, %zu evaluated in %.3f s | reply: %ld tokens in %.3f s\n",
                n, reused, n - (size_t)reused, t1 - t0, n_gen, now_s() - t1);
    free(r.p);
    return rc;
}

/* ---- input ---- */

enum { IN_MSG, IN_EOF, IN_INTR, IN_INTR_EMPTY, IN_ERR };

typedef struct text {
    char *p;
    size_t len, cap;
} text;

static int text_add(text *t, const char *s, size_t n) {
    if (t->len + n + 1 > t->cap) {
        char *p = realloc(t->p, t->cap = t->len + n + 256);
        if (!p) return -1;
        t->p = p;
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = 0;
    return 0;
}

/* The line editor's read. A SIGTERM or SIGHUP would otherwise end the program with the terminal
 * left in raw mode: while the editor reads, they only interrupt the read, which restores the
 * terminal, and are then raised again with their default action, so the chat still ends by
 * that signal. Outside the read the terminal is in its normal mode and the default stands. */
static int edit_line(session *S, const char *prompt, char **line, size_t *len) {
    static const int sigs[2] = {SIGTERM, SIGHUP};
    struct sigaction sa = {.sa_handler = on_term}, old[2];
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 2; i++) /* one ignored (nohup) stays ignored */
        if (!sigaction(sigs[i], &sa, &old[i]) && old[i].sa_handler == SIG_IGN) sigaction(sigs[i], &old[i], NULL);
    S->le.stop = &term_sig;
    int r = hr_le_read(&S->le, prompt, line, len);
    S->le.stop = NULL;
    for (int i = 0; i < 2; i++) sigaction(sigs[i], &old[i], NULL);
    if (term_sig) raise(term_sig);
    return r;
}

/* One line from the input: HR_LE_LINE / HR_LE_PASTED with *line (malloc'd), or HR_LE_EOF,
 * HR_LE_INTR, HR_LE_ERROR. Without the editor: getline, with a plain prompt on a terminal. */
static int get_line(session *S, bool first, char **line, size_t *len) {
    const char *prompt = first ? "> " : "... ";
    if (S->edit) return edit_line(S, prompt, line, len);
    if (S->interactive) fputs(prompt, stdout), fflush(stdout);
    size_t cap = 0;
    *line = NULL;
    ssize_t k = getline(line, &cap, stdin);
    if (k < 0) { free(*line); return HR_LE_EOF; }
    while (k > 0 && ((*line)[k - 1] == '\n' || (*line)[k - 1] == '\r')) k--;
    (*line)[*len = (size_t)k] = 0;
    return HR_LE_LINE;
}

static bool ends_with(const char *s, size_t n, const char *suf) {
    size_t k = strlen(suf);
    return n >= k && !memcmp(s + n - k, suf, k);
}

/* Adds one line to the message; returns whether the message goes on (1), 0 or -1. Lines
 * ending in '\' continue it; a first line starting with """ opens a block that a line ending
 * in """ closes; a newline inside a paste continues it. */
static int add_line(text *msg, const char *line, size_t len, int kind, bool *block, bool first) {
    bool opening = first && len >= 3 && !memcmp(line, "\"\"\"", 3);
    if (opening) *block = true, line += 3, len -= 3;
    if (*block) {
        bool close = (!opening || len >= 3) && ends_with(line, len, "\"\"\"");
        if (close) len -= 3, *block = false;
        if (opening && !close && !len) return 1; /* a bare """ line */
        if (text_add(msg, line, len)) return -1;
        return close ? 0 : text_add(msg, "\n", 1) ? -1 : 1;
    }
    bool more = kind == HR_LE_PASTED || (len > 0 && line[len - 1] == '\\');
    if (more && kind != HR_LE_PASTED) len--; /* the '\' */
    if (text_add(msg, line, len) || (more && text_add(msg, "\n", 1))) return -1;
    return more;
}

/* Reads one message into msg. Returns IN_MSG, IN_EOF, IN_INTR (Ctrl-C discarded typed
 * text), IN_INTR_EMPTY (Ctrl-C with nothing typed) or IN_ERR. */
static int read_message(session *S, text *msg) {
    msg->len = 0;
    if (text_add(msg, "", 0)) return IN_ERR;
    bool block = false;
    for (bool first = true;; first = false) {
        char *line = NULL;
        size_t len = 0;
        int k = get_line(S, first, &line, &len);
        if (k == HR_LE_EOF) return first ? IN_EOF : IN_MSG;
        if (k == HR_LE_ERROR) return IN_ERR;
        if (k == HR_LE_INTR) { free(line); return first && !len ? IN_INTR_EMPTY : IN_INTR; }
        int more = add_line(msg, line, len, k, &block, first);
        free(line);
        if (more < 0) return IN_ERR;
        if (!more) break;
    }
    while (msg->len && msg->p[msg->len - 1] == '\n') msg->p[--msg->len] = 0; /* a paste's last newline */
    return IN_MSG;
}

/* ---- commands ---- */

/* If msg is the command cmd (a name alone, or followed by an argument when arg is not NULL),
 * true with *arg at its argument. */
static bool is_command(const char *msg, const char *cmd, const char **arg) {
    size_t n = strlen(cmd);
    if (strncmp(msg, cmd, n) || (msg[n] && msg[n] != ' ' && msg[n] != '\t')) return false;
    for (msg += n; *msg == ' ' || *msg == '\t'; msg++) {}
    if (arg) *arg = msg;
    return arg || !*msg;
}

static void new_conversation(session *S) {
    hr_conv_truncate(&S->cv, hr_conv_first(&S->cv));
    S->told_trim = false;
}

static void cmd_save(session *S, const char *path) {
    char err[512];
    if (!*path) fprintf(stderr, "hearth chat: /save needs a file name\n");
    else if (hr_conv_save(&S->cv, path, err, sizeof err)) fprintf(stderr, "hearth chat: /save: %s\n", err);
    else fprintf(stderr, "(saved %zu message%s to %s)\n", S->cv.n, S->cv.n == 1 ? "" : "s", path);
}

static void cmd_load(session *S, const char *path) {
    char err[600];
    hr_conv cv = {0};
    if (!*path) { fprintf(stderr, "hearth chat: /load needs a file name\n"); return; }
    if (hr_conv_load(&cv, path, err, sizeof err)) { fprintf(stderr, "hearth chat: /load: %s\n", err); return; }
    hr_conv_free(&S->cv);
    S->cv = cv;
    S->told_trim = false;
    fprintf(stderr, "(loaded %zu message%s from %s)\n", cv.n, cv.n == 1 ? "" : "s", path);
}

/* A line starting with '/': runs the command. Returns 1 to quit, 0 when handled, -1 when the
 * line is a message after all (a path such as "/usr/bin ..." or "//text"). */
static int command(session *S, char *msg) {
    const char *arg, *w = msg + 1;
    for (size_t n = strlen(msg); n > 1 && (msg[n - 1] == ' ' || msg[n - 1] == '\t');) msg[--n] = 0; /* "/save f.json " */
    if (is_command(msg, "/exit", NULL) || is_command(msg, "/quit", NULL) || is_command(msg, "/bye", NULL)) return 1;
    if (is_command(msg, "/help", NULL) || is_command(msg, "/?", NULL)) fprintf(stderr, "commands:\n%s", commands_help);
    else if (is_command(msg, "/clear", NULL) || is_command(msg, "/reset", NULL))
        new_conversation(S), fprintf(stderr, "(new conversation)\n");
    else if (is_command(msg, "/save", &arg)) cmd_save(S, arg);
    else if (is_command(msg, "/load", &arg)) cmd_load(S, arg);
    else {
        while (*w >= 'a' && *w <= 'z') w++;
        if (w == msg + 1 || (*w && *w != ' ' && *w != '\t')) return -1;
        fprintf(stderr, "hearth chat: unknown command '%.*s' (/help lists them; start a message with '//' to send a '/')\n",
                (int)(w - msg), msg);
    }
    return 0;
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

static hr_chat_tmpl pick_template(const hearth_model *m, const hr_chat_opts *o) {
    if (o->tmpl_name) return (hr_chat_tmpl)hr_chat_from_name(o->tmpl_name);
    size_t len = 0;
    bool known;
    const char *t = hearth_model_meta_str(m, "tokenizer.chat_template", &len);
    hr_chat_tmpl k = hr_chat_detect(t, len, &known);
    if (!known)
        fprintf(stderr, "hearth chat: %s; using chatml (choose with --chat-template)\n",
                t ? "the model's chat template is not one Hearth knows" : "the model has no chat template");
    return k;
}

/* The template's stop texts followed by the -r texts. */
static int make_stops(session *S) {
    const char *const *t = hr_chat_stops(S->tmpl), *const *r = S->o->reverse;
    size_t nt = 0, nr = 0;
    while (t && t[nt]) nt++;
    while (r && r[nr]) nr++;
    if (!(S->stops = malloc((nt + nr + 1) * sizeof *S->stops))) return -1;
    for (size_t i = 0; i < nt; i++) S->stops[i] = t[i];
    for (size_t i = 0; i < nr; i++) S->stops[nt + i] = r[i];
    S->stops[nt + nr] = NULL;
    return 0;
}

static bool want_color(const hr_chat_opts *o, int fd) {
    const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");
    if (o->color >= 0) return o->color;
    return isatty(fd) && !(nc && *nc) && !(term && !strcmp(term, "dumb"));
}

/* The history file: --history-file, else under $XDG_STATE_HOME (an absolute path, as the XDG
 * specification wants), else under ~/.local/state; none without either. */
static const char *history_path(const hr_chat_opts *o, char *buf, size_t cap) {
    if (o->history_file) return o->history_file;
    const char *x = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    if (x && x[0] == '/') snprintf(buf, cap, "%s/hearth/chat_history", x);
    else if (home && *home) snprintf(buf, cap, "%s/.local/state/hearth/chat_history", home);
    else return NULL;
    return buf;
}

/* The editor's history read from and kept in the history file; a file that cannot be used is
 * said once, and the chat goes on with the history in memory. */
static void keep_history(session *S) {
    char buf[4096], err[512];
    const char *path = history_path(S->o, buf, sizeof buf);
    if (path && hr_le_history_persist(&S->le, path, err, sizeof err))
        fprintf(stderr, "hearth chat: history: %s; this chat's lines are not kept\n", err);
}

/* The input side: a terminal gets the line editor (drawing on stdout, or on stderr when only
 * that is a terminal), unless TERM=dumb. */
static void setup_input(session *S) {
    const char *term = getenv("TERM");
    S->interactive = isatty(STDIN_FILENO);
    int out = isatty(STDOUT_FILENO) ? STDOUT_FILENO : isatty(STDERR_FILENO) ? STDERR_FILENO : -1;
    S->edit = S->interactive && out >= 0 && !(term && !strcmp(term, "dumb"));
    hr_le_init(&S->le, STDIN_FILENO, out);
    if (S->edit && want_color(S->o, out)) S->le.color = "\x1b[1;32m", S->le.color_end = "\x1b[0m";
    if (S->edit && !S->o->no_history) keep_history(S);
}

static void banner(const session *S) {
    size_t len = 0;
    const char *name = hearth_model_meta_str(S->m, "general.name", &len), *path = S->o->run.model;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    if (!name || !len) name = base, len = strlen(base);
    fprintf(stderr, "hearth chat: %.*s | template %s | context %d tokens | replies up to %ld tokens\n", (int)len, name,
            hr_chat_name(S->tmpl), S->n_ctx, S->o->run.n_predict < 0 ? (long)S->n_ctx : S->o->run.n_predict);
    fprintf(stderr, "/help for commands; Ctrl-C stops a reply, Ctrl-D quits\n");
}

static int session_open(session *S, const hr_chat_opts *o, hr_err *e) {
    S->o = o;
    S->intr = &sigint_flag;
    const hearth_model_params mp = hr_run_model_params(&o->run);
    if (!(S->m = hearth_model_load(o->run.model, &mp, e))) return -1;
    if (!(S->c = hearth_ctx_new(S->m, &o->run.cp, e))) return -1;
    hr_print_model_notices("chat", S->m), (void)hr_gpu_notice(S->c, &o->run);
    S->n_ctx = hearth_ctx_n_ctx(S->c);
    if (!(S->held = malloc((size_t)S->n_ctx * sizeof *S->held))) return hr_errf(e, "out of memory");
    if (!(S->s = hr_sampler_new(&o->run.sp, hearth_model_get_info(S->m)->n_vocab, e))) return -1;
    if (hr_run_grammar_init(&S->rg, &o->run, S->m, e)) return -1;
    S->tmpl = pick_template(S->m, o);
    if (make_stops(S)) return hr_errf(e, "out of memory");
    special_text(S->m, hearth_token_bos(S->m), S->bos, sizeof S->bos);
    special_text(S->m, find_eos(S->m), S->eos, sizeof S->eos);
    if (o->system && hr_conv_push(&S->cv, "system", o->system, strlen(o->system))) return hr_errf(e, "out of memory");
    if (o->run.verbose)
        fprintf(stderr, "chat: template %s, context %d tokens\n", hr_chat_name(S->tmpl), S->n_ctx);
    setup_input(S);
    return 0;
}

static void session_close(session *S) {
    hr_conv_free(&S->cv);
    hr_le_free(&S->le);
    free(S->stops);
    free(S->held);
    hr_sampler_free(S->s);
    hr_run_grammar_free(&S->rg);
    hearth_ctx_free(S->c);
    hearth_model_free(S->m);
}

/* A message for the model: appended, then answered. Returns 0, or 1 on a fatal error. */
static int send(session *S, const char *msg, size_t len) {
    if (hr_conv_push(&S->cv, "user", msg, len)) return fprintf(stderr, "hearth chat: out of memory\n"), 1;
    return turn(S) ? 1 : 0;
}

static int chat_loop(session *S) {
    text msg = {0};
    int rc = 0, k = IN_MSG;
    bool armed = false; /* a Ctrl-C on an empty line was just pressed: a second one quits */
    if (S->o->first_message) rc = send(S, S->o->first_message, strlen(S->o->first_message));
    while (!rc && (k = read_message(S, &msg)) != IN_EOF) {
        if (k == IN_ERR) { fprintf(stderr, "hearth chat: cannot read the input\n"); rc = 1; break; }
        if (k == IN_INTR_EMPTY && armed) break;
        armed = k == IN_INTR_EMPTY;
        if (armed) fprintf(stderr, "(to exit, press Ctrl-C again or Ctrl-D, or type /exit)\n");
        if (k != IN_MSG || !msg.len) continue;
        int c = msg.p[0] == '/' && !strchr(msg.p, '\n') ? command(S, msg.p) : -1; /* commands are one line */
        if (c > 0) break;
        if (c < 0) rc = msg.p[1] == '/' ? send(S, msg.p + 1, msg.len - 1) : send(S, msg.p, msg.len);
    }
    if (S->interactive && !rc && k == IN_EOF) printf("\n");
    free(msg.p);
    return rc;
}

void hr_chat_opts_init(hr_chat_opts *o) {
    *o = (hr_chat_opts){.run = {.n_predict = 256, .mp = hearth_model_default_params(), .cp = hearth_ctx_default_params(),
                                .sp = hr_sampler_defaults()},
                        .color = -1};
    o->run.sp.seed = (uint64_t)time(NULL);
}

/* -f and -sysf: the files' texts take the places of -p and -sys in the copy *o of the options.
 * *first and *sys own them. -1 (printed) when one cannot be read. */
static int read_message_files(hr_chat_opts *o, char **first, char **sys) {
    hr_err e = {{0}};
    size_t n;
    if (o->first_file && !(o->first_message = *first = hr_text_file(o->first_file, 0, &n, &e)))
        return fprintf(stderr, "hearth chat: -f: %s\n", e.msg), -1;
    if (o->system_file && !(o->system = *sys = hr_text_file(o->system_file, 0, &n, &e)))
        return fprintf(stderr, "hearth chat: -sysf: %s\n", e.msg), -1;
    return 0;
}

int hr_chat_main(const hr_chat_opts *opts) {
    if (opts->tmpl_name && hr_chat_from_name(opts->tmpl_name) < 0)
        return hr_usage_error("chat", "--chat-template: unknown template '%s' (%s)", opts->tmpl_name, hr_chat_names());
    hr_chat_opts oc = *opts, *o = &oc;
    char *first = NULL, *sys = NULL;
    if (read_message_files(o, &first, &sys)) return free(first), 1;
    hr_err e = {{0}};
    session S = {0};
    int rc = 1;
    struct sigaction sa = {.sa_handler = on_sigint, .sa_flags = SA_RESTART}, old;
    sigemptyset(&sa.sa_mask);
    bool caught = false;
    if (session_open(&S, o, &e)) fprintf(stderr, "hearth chat: %s\n", e.msg);
    else {
        /* Only now, so that Ctrl-C during a slow model load still ends the program; piped input
         * keeps the default, so Ctrl-C ends a scripted chat. */
        caught = S.interactive && !sigaction(SIGINT, &sa, &old);
        if (S.interactive) banner(&S);
        rc = chat_loop(&S);
    }
    if (caught) sigaction(SIGINT, &old, NULL);
    session_close(&S);
    free(first), free(sys);
    return rc;
}

int hr_cmd_chat(int argc, char **argv) {
    hr_chat_opts o;
    hr_chat_opts_init(&o);
    int r = parse(argc, argv, &o);
    return r >= 0 ? r : hr_chat_main(&o);
}
