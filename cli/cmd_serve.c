/* hearth serve: OpenAI-compatible HTTP server (server/). Flags, model and context here;
 * the main thread then waits for SIGINT/SIGTERM and shuts the server down. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"
#include "run_opts.h"
#ifdef HEARTH_HAVE_SERVER
#include <pthread.h>
#include "chat/chat.h"
#include "server.h"

typedef struct serve_opts {
    hr_run_opts run;
    hr_server_params sp;
    long parallel;
    bool seed_given;
} serve_opts;

static void help(void) {
    printf("usage: hearth serve -m MODEL.gguf [flags]\n\n"
           "OpenAI-compatible HTTP server: POST /v1/completions, POST /v1/chat/completions (both with\n"
           "\"stream\": true), GET /v1/models, /health, /metrics, and a chat page at /.\n\n"
           "server:\n"
           "  --host ADDR               address to listen on (default 127.0.0.1)\n"
           "  --port N                  TCP port, 0 = any free port (default 8080)\n"
           "  -np, --parallel N         requests served at once (slots); more wait in a queue (default 1)\n"
           "  --api-key KEY             require \"Authorization: Bearer KEY\" on /v1/* and /metrics\n"
           "                            (default: none)\n"
           "  --chat-template NAME      %s (default: detected from the model,\n"
           "                            else chatml)\n"
           "  --max-body BYTES          largest request body accepted (default 1048576)\n"
           "  -n, --n-predict N         max_tokens when a request gives none (default 256; never more\n"
           "                            than the context leaves)\n"
           "  --cors ORIGINS            browser origins allowed to call the API: * (any), a comma-separated\n"
           "                            list, or none (default *; also --cors-origins)\n"
           "  -to, --timeout N          close a connection idle for N seconds mid-request (default 600);\n"
           "                            one without a complete request: after min(N, 10) seconds\n"
           "  --conn-per-ip N           connections at once from one address, 0 = no limit (default 256)\n"
           "  --log-disable             no request log lines on stderr\n"
           "  -cb, --cont-batching      accepted for llama-server: the slots are always decoded in one batch\n"
           "  --version                 print the version and build and exit\n"
           "-c N is the total context, split evenly over the -np slots as in llama-server (-c 4096 -np 4:\n"
           "1024 tokens per slot); without -c each slot gets the model's context (at most 4096). The\n"
           "sampling flags below are the defaults of requests that do not set them; without -s/--seed\n"
           "each request draws a random seed.\n\n",
           hr_chat_names());
    hr_print_common_help();
}

static int serve_flag(int argc, char **argv, int *i, serve_opts *o) {
    const char *a = argv[*i];
    static const char *const valued[] = {"--host", "--port", "-np", "--parallel", "--api-key", "--chat-template",
                                         "--max-body", "-n", "--n-predict", "--cors", "--cors-origins", "-to",
                                         "--timeout", "--conn-per-ip", NULL};
    if (!strcmp(a, "-cb") || !strcmp(a, "--cont-batching")) return 0; /* always on */
    if (!strcmp(a, "-nocb") || !strcmp(a, "--no-cont-batching")) {
        fprintf(stderr, "hearth serve: %s: the slots are always decoded in one batch\n", a);
        return 2;
    }
    if (!strcmp(a, "--log-disable")) {
        o->sp.log = NULL;
        return 0;
    }
    bool takes = false;
    for (int k = 0; valued[k]; k++) takes |= !strcmp(a, valued[k]);
    if (!takes) return hr_usage_error("serve", "unknown flag '%s'", a);
    if (!hr_arg_need("serve", argc, argv, *i)) return 2;
    const char *v = argv[++*i];
    long l;
    if (!strcmp(a, "--host")) o->sp.host = v;
    else if (!strcmp(a, "--api-key")) o->sp.api_key = v;
    else if (!strcmp(a, "--port")) { if (!hr_arg_long("serve", a, v, 0, 65535, &l)) return 2; o->sp.port = (int)l; }
    else if (!strcmp(a, "-np") || !strcmp(a, "--parallel")) { if (!hr_arg_long("serve", a, v, 1, 256, &o->parallel)) return 2; }
    else if (!strcmp(a, "--max-body")) { if (!hr_arg_long("serve", a, v, 1, 1L << 30, &l)) return 2; o->sp.max_body = (size_t)l; }
    else if (!strcmp(a, "--cors") || !strcmp(a, "--cors-origins")) o->sp.cors = !strcmp(v, "none") ? "" : v;
    else if (!strcmp(a, "-to") || !strcmp(a, "--timeout")) { if (!hr_arg_long("serve", a, v, 1, 86400, &l)) return 2; o->sp.timeout_s = (int)l; }
    else if (!strcmp(a, "--conn-per-ip")) { if (!hr_arg_long("serve", a, v, 0, 1 << 20, &l)) return 2; o->sp.conn_per_ip = (int)l; }
    else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) { if (!hr_arg_long("serve", a, v, 1, 1 << 24, &l)) return 2; o->sp.n_predict = (int32_t)l; }
    else if ((o->sp.chat_template = hr_chat_from_name(v)) < 0)
        return hr_usage_error("serve", "--chat-template: '%s' is not one of %s", v, hr_chat_names());
    return 0;
}

/* Returns -1 to go on, else the exit status. */
static int parse(int argc, char **argv, serve_opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { help(); return 0; }
        if (!strcmp(a, "--version")) { hr_print_version(); return 0; }
        int r = hr_parse_common_flag("serve", argc, argv, &i, &o->run);
        if (r < 0) return 2;
        if (r == 0 && (r = serve_flag(argc, argv, &i, o))) return r;
    }
    if (!o->run.model) return hr_usage_error("serve", "a model is required (-m FILE)");
    o->seed_given = o->run.seed_set;
    /* llama-server's -c: the total, each slot holding its share */
    if (o->run.cp.n_ctx) {
        if (o->run.cp.n_ctx < o->parallel * 8)
            return hr_usage_error("serve", "-c %d split over %ld slots leaves fewer than 8 tokens each", o->run.cp.n_ctx,
                                  o->parallel);
        o->run.cp.n_ctx = (int32_t)(o->run.cp.n_ctx / o->parallel);
    }
    return -1;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int run(serve_opts *o, sigset_t *sigs) {
    hr_err e = {{0}};
    o->run.cp.n_seq = (int32_t)o->parallel;
    if (!o->run.cp.n_batch) o->run.cp.n_batch = 512;
    o->sp.n_batch = o->run.cp.n_batch;
    o->sp.sp = o->run.sp;
    o->sp.seed_fixed = o->seed_given;
    o->sp.model_id = base_name(o->run.model);
    const hearth_model_params mp = hr_run_model_params(&o->run);
    hearth_model *m = hearth_model_load(o->run.model, &mp, &e);
    if (m) hr_print_model_notices("serve", m);
    if (m && hr_check_ctx_size("serve", m, &o->run.cp)) {
        hearth_model_free(m);
        return 1;
    }
    hearth_ctx *c = m ? hearth_ctx_new(m, &o->run.cp, &e) : NULL;
    if (c) hr_gpu_notice(c, &o->run);
    hr_server *s = c ? hr_server_start(m, c, &o->sp, &e) : NULL;
    if (!s) {
        fprintf(stderr, "hearth serve: %s\n", e.msg);
        hearth_ctx_free(c);
        hearth_model_free(m);
        return 1;
    }
    fprintf(stderr, "hearth serve: model %s, chat template %s, FFN mode %s\n", o->sp.model_id,
            hr_server_chat_template(s), hearth_ffn_mode_name(hearth_ctx_ffn_mode(c)));
    const char *host = o->sp.host ? o->sp.host : "127.0.0.1";
    bool v6 = strchr(host, ':') != NULL;
    fprintf(stderr, "hearth serve: listening on http://%s%s%s:%d (%d slots, ctx %d per slot)\n", v6 ? "[" : "", host,
            v6 ? "]" : "", hr_server_port(s), hr_server_n_slots(s), hearth_ctx_n_ctx(c));
    fflush(stderr);
    int sig = 0;
    sigwait(sigs, &sig);
    fprintf(stderr, "hearth serve: %s, shutting down\n", sig == SIGINT ? "interrupted" : "terminated");
    hr_server_stop(s);
    if (o->run.cp.ffn_stats) hr_print_ffn_stats(m, c);
    hearth_ctx_free(c);
    hearth_model_free(m);
    return 0;
}

int hr_cmd_serve(int argc, char **argv) {
    serve_opts o = {.run = {.mp = hearth_model_default_params(), .cp = hearth_ctx_default_params(),
                            .sp = hr_sampler_defaults()},
                    .sp = {.port = 8080, .max_body = 1 << 20, .chat_template = -1, .n_predict = 256},
                    .parallel = 1};
    o.run.sp.seed = (uint64_t)time(NULL);
    o.sp.log = stderr, o.sp.conn_per_ip = 256;
    int r = parse(argc, argv, &o);
    if (r >= 0) return r;
    /* Every thread started from here on inherits the blocked set, so the signals reach
     * only the sigwait below. Peers that disconnect must not kill the process either. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    struct sigaction ign = {0};
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, NULL);
    return run(&o, &sigs);
}
#else
int hr_cmd_serve(int argc, char **argv) {
    (void)argc, (void)argv;
    fprintf(stderr, "hearth serve: this build has no server (libmicrohttpd and cJSON were not found at configure time)\n");
    return 1;
}
#endif
