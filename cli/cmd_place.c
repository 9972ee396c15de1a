/* hearth place: choose the hot FFN neurons for a VRAM budget and write the GPU index. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "hearth.h"
#include "sparse/place.h"

#define CMD "place"
#define MIB 1048576.0

static void usage(FILE *f) {
    fprintf(f,
            "usage: hearth place -m MODEL --vram-budget GIB [flags]\n"
            "Chooses the FFN neurons to keep on the GPU under a VRAM budget, from activation\n"
            "statistics (hearth calibrate), and writes PowerInfer's GPU index file.\n\n"
            "  -m, --model PATH      model file (required)\n"
            "  --vram-budget GIB     GPU memory for everything, in GiB (required)\n"
            "  --stats FILE          activation statistics        [MODEL.stats.gguf]\n"
            "  -c, --ctx-size N      tokens of KV cache to reserve [the model's, at most 4096]\n"
            "  --group N             place neurons in groups of the N hottest of a layer\n"
            "                        (PowerInfer's solver uses 256)          [1]\n"
            "  -o, --output PATH     GPU index to write            [MODEL.generated.gpuidx]\n"
            "  --json                machine-readable report on stdout\n"
            "  -h, --help            this help\n\n"
            "The budget first holds, in this order: attention weights of all layers, predictors,\n"
            "norms, the output matrix (the token embedding only when it is the output matrix;\n"
            "embedding lookups stay on the CPU), the F16 KV cache for -c tokens, and scratch\n"
            "estimated as 4 * %d * (3 n_embd + n_head*head_dim + 2 n_head_kv*head_dim +\n"
            "n_head*n_ctx + 4 n_ff + n_vocab) bytes. The rest goes to neurons, most activations\n"
            "served per byte first; a neuron costs its ffn_gate and ffn_up rows and its ffn_down\n"
            "column in the file's types.\n",
            HR_PLACE_SCRATCH_TOKENS);
}

typedef struct opts {
    hr_place_params p;
    bool json;
    bool ctx_set;
} opts;

static int parse(int argc, char **argv, opts *o) {
    long l;
    double x;
    bool budget_set = false;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(f, "--json")) { o->json = true; continue; }
        if (f[0] != '-') return hr_usage_error(CMD, "unexpected argument '%s'", f);
        if (!hr_arg_need(CMD, argc, argv, i)) return 2;
        const char *v = argv[++i];
        if (!strcmp(f, "-m") || !strcmp(f, "--model")) o->p.model_path = v;
        else if (!strcmp(f, "--stats")) o->p.stats_path = v;
        else if (!strcmp(f, "-o") || !strcmp(f, "--output")) o->p.out_path = v;
        else if (!strcmp(f, "--vram-budget")) {
            if (!hr_arg_float(CMD, f, v, 1e-9, 1e6, &x)) return 2;
            o->p.vram_budget_gib = x, budget_set = true;
        } else if (!strcmp(f, "-c") || !strcmp(f, "--ctx-size")) {
            if (!hr_arg_long(CMD, f, v, 1, 1 << 24, &l)) return 2;
            o->p.n_ctx = (int32_t)l, o->ctx_set = true;
        } else if (!strcmp(f, "--group")) {
            if (!hr_arg_long(CMD, f, v, 1, 1 << 24, &l)) return 2;
            o->p.group = (int32_t)l;
        } else return hr_usage_error(CMD, "unknown flag '%s'", f);
    }
    if (!o->p.model_path) return hr_usage_error(CMD, "a model is required (-m MODEL)");
    if (!budget_set) return hr_usage_error(CMD, "--vram-budget GIB is required");
    return -1;
}

static double share(uint64_t hot, uint64_t total) { return total ? (double)hot / (double)total : 0.0; }

static void json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

static void print_json(const opts *o, const hr_place_result *r) {
    const hr_vram_fixed *f = &r->fixed;
    uint64_t hot = 0, tot = 0, n_hot = 0;
    printf("{\"model\": ");
    json_str(o->p.model_path);
    printf(", \"stats\": ");
    json_str(r->stats_path);
    printf(", \"output\": ");
    json_str(r->out_path);
    printf(", \"n_layer\": %d, \"n_ff\": %d, \"n_ctx\": %d, \"group\": %d, \"n_tokens\": %llu,\n", r->shape.n_layer,
           r->shape.n_ff, r->n_ctx, r->group, (unsigned long long)r->n_tokens);
    printf(" \"budget_bytes\": %llu, \"fixed\": {\"attention\": %llu, \"predictors\": %llu, \"norms\": %llu, "
           "\"output\": %llu, \"other\": %llu, \"kv_cache\": %llu, \"scratch\": %llu, \"total\": %llu},\n",
           (unsigned long long)r->budget, (unsigned long long)f->attn, (unsigned long long)f->predictor,
           (unsigned long long)f->norms, (unsigned long long)f->output, (unsigned long long)f->other,
           (unsigned long long)f->kv, (unsigned long long)f->scratch, (unsigned long long)f->total);
    printf(" \"neuron_budget\": %llu, \"neuron_bytes_used\": %llu, \"ffn_bytes\": %llu,\n \"layers\": [",
           (unsigned long long)r->neuron_budget, (unsigned long long)r->neuron_used, (unsigned long long)r->ffn_bytes);
    for (int32_t l = 0; l < r->shape.n_layer; l++) {
        const hr_place_layer *s = &r->layers[l];
        printf("%s\n  {\"layer\": %d, \"n_hot\": %d, \"neuron_bytes\": %llu, \"bytes\": %llu, \"hot_count\": %llu, "
               "\"total_count\": %llu, \"share\": %.6f}",
               l ? "," : "", l, s->n_hot, (unsigned long long)r->neuron_bytes[l], (unsigned long long)s->bytes,
               (unsigned long long)s->hot_count, (unsigned long long)s->total_count, share(s->hot_count, s->total_count));
        hot += s->hot_count, tot += s->total_count, n_hot += (uint64_t)s->n_hot;
    }
    printf("],\n \"n_hot\": %llu, \"hot_count\": %llu, \"total_count\": %llu, \"share\": %.6f}\n",
           (unsigned long long)n_hot, (unsigned long long)hot, (unsigned long long)tot, share(hot, tot));
}

static const char *human(uint64_t b, char *buf) {
    if (b < 1024 * 1024) snprintf(buf, 32, "%9.1f KiB", (double)b / 1024.0);
    else if (b < (1ull << 30)) snprintf(buf, 32, "%9.1f MiB", (double)b / MIB);
    else snprintf(buf, 32, "%9.2f GiB", (double)b / (MIB * 1024));
    return buf;
}

static void print_text(const opts *o, const hr_place_result *r) {
    const hr_vram_fixed *f = &r->fixed;
    char a[10][32];
    printf("model %s: %d layers, n_ff %d; statistics %s (%llu tokens)\n", o->p.model_path, r->shape.n_layer,
           r->shape.n_ff, r->stats_path, (unsigned long long)r->n_tokens);
    printf("VRAM budget %.3f GiB (%llu bytes):\n", (double)r->budget / (MIB * 1024), (unsigned long long)r->budget);
    printf("  attention    %s\n  predictors   %s\n  norms        %s\n  output       %s\n  other        %s\n"
           "  KV cache     %s  (%d tokens, f16)\n  scratch      %s\n"
           "  FFN neurons  %s  of %s left (all neurons: %s)\n",
           human(f->attn, a[0]), human(f->predictor, a[1]), human(f->norms, a[2]), human(f->output, a[3]),
           human(f->other, a[4]), human(f->kv, a[5]), r->n_ctx, human(f->scratch, a[6]), human(r->neuron_used, a[7]),
           human(r->neuron_budget, a[8]), human(r->ffn_bytes, a[9]));
    printf("layer  hot neurons        bytes/neuron  activations served\n");
    uint64_t hot = 0, tot = 0, n_hot = 0;
    for (int32_t l = 0; l < r->shape.n_layer; l++) {
        const hr_place_layer *s = &r->layers[l];
        printf("%5d  %7d / %-7d  %12llu  %6.2f%%\n", l, s->n_hot, r->shape.n_ff, (unsigned long long)r->neuron_bytes[l],
               100.0 * share(s->hot_count, s->total_count));
        hot += s->hot_count, tot += s->total_count, n_hot += (uint64_t)s->n_hot;
    }
    const uint64_t all = (uint64_t)r->shape.n_layer * (uint64_t)r->shape.n_ff;
    printf("overall: %llu of %llu neurons (%.2f%%) on the GPU serve %.2f%% of activations\n", (unsigned long long)n_hot,
           (unsigned long long)all, 100.0 * share(n_hot, all), 100.0 * share(hot, tot));
    printf("wrote %s\n", r->out_path);
}

int hr_cmd_place(int argc, char **argv) {
    opts o;
    memset(&o, 0, sizeof o);
    o.p.group = 1;
    int rc = parse(argc, argv, &o);
    if (rc >= 0) return rc;
    hr_err e = {{0}};
    hearth_model_params mp = hearth_model_default_params();
    hearth_model *m = hearth_model_load(o.p.model_path, &mp, &e);
    if (!m) {
        fprintf(stderr, "hearth place: %s: %s\n", o.p.model_path, e.msg);
        return 1;
    }
    const hearth_model_info *mi = hearth_model_get_info(m);
    hr_place_shape shape = {mi->n_layer, mi->n_ff, mi->n_embd, mi->n_head, mi->n_head_kv, mi->head_dim, mi->n_vocab};
    if (!o.ctx_set) o.p.n_ctx = mi->n_ctx_train > 0 && mi->n_ctx_train < 4096 ? mi->n_ctx_train : 4096;
    hearth_model_free(m);
    hr_place_result r;
    if (hr_place_model(&o.p, &shape, &r, &e)) {
        fprintf(stderr, "hearth place: %s\n", e.msg);
        return 1;
    }
    if (o.json) print_json(&o, &r);
    else print_text(&o, &r);
    hr_place_result_free(&r);
    return 0;
}
