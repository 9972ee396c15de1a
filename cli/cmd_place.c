/* hearth place: choose the hot FFN neurons for a VRAM budget and write the GPU index. The
 * bytes come from the engine's GPU plan (hearth_gpu_plan_budget), so `hearth run` with the
 * same budget, context and FFN mode reads the index instead of making its own. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "hearth.h"
#include "run_opts.h"
#include "sparse/place.h"

#define CMD "place"
#define MIB 1048576.0
#define GIB 1073741824.0

static void usage(FILE *f) {
    fprintf(f,
            "usage: hearth place -m MODEL --vram-budget GIB [flags]\n"
            "Chooses the FFN neurons to keep on the GPU under a VRAM budget, from activation\n"
            "statistics (hearth calibrate), and writes PowerInfer's GPU index file.\n\n"
            "  -m, --model PATH      PowerInfer or threshold model file (required)\n"
            "  --vram-budget GIB     GPU memory for everything, in GiB (required)\n"
            "  --stats FILE          activation statistics        [MODEL.stats.gguf]\n"
            "  -c, --ctx-size N      context the KV cache holds   [the model's, at most 4096]\n"
            "  -b, --batch-size N    tokens per batch (scratch)   [512, at most -c]\n"
            "  -np, --parallel N     sequences (hearth serve's slots) [1]\n"
            "  --ffn MODE            predicted, dense, exact, threshold, auto [auto]\n"
            "  --gpu MODE            whose overhead comes off the budget: auto (CUDA when built in\n"
            "                        and a GPU answers, else the stand-in's), cuda, standin [auto]\n"
            "  --gpu-device N        CUDA device index            [0]\n"
            "  --group N             place neurons in groups of the N hottest of a layer\n"
            "                        (PowerInfer's solver uses 256)          [1]\n"
            "  -o, --output PATH     GPU index to write            [MODEL.generated.gpuidx]\n"
            "  --json                machine-readable report on stdout\n"
            "  -ncmoe, --n-cpu-moe N, -cmoe, --cpu-moe, -ngl N\n"
            "                        mixtures of experts: as hearth run; the report lists the\n"
            "                        experts placed (statistics' routing counts) and hot neurons\n"
            "                        of ReLU-family host experts (firing counts) and writes them\n"
            "                        as the expert index (-o) the run reads back\n"
            "  --moe-cache N         mixtures of experts: the plan of a run with an expert cache of\n"
            "                        N slots per layer: the experts the slots start with and the hot\n"
            "                        neurons beside them; no index is written (such a run places\n"
            "                        its own from the statistics)\n"
            "  -h, --help            this help\n\n"
            "The accounting is hybrid execution's (docs/hybrid.md): from the budget come the\n"
            "device's own overhead, then scratch for -b tokens, attention with its F16 KV cache\n"
            "for -c tokens and -np sequences, predictors (predicted mode), the output matrix, and\n"
            "allocation rounding; norms and embeddings stay on the CPU. What is left is the neuron\n"
            "budget: neurons go there most activations served per byte first, a neuron costing its\n"
            "ffn_gate, ffn_up and ffn_down_t rows. The index stores the neuron budget as\n"
            "split.vram_capacity. A context with the same --vram-budget, -c, -b, -np, --ffn and\n"
            "device (hearth run, chat, serve; bench sizes its context from -p and -n) reads it;\n"
            "any other neuron budget makes a new one in its place.\n");
}

typedef struct opts {
    hr_place_params p;
    hearth_ctx_params cp;
    bool json;
} opts;

/* Flags that describe the context the index is for, as hearth run takes them. */
static int ctx_flag(const char *f, const char *v, hearth_ctx_params *cp) {
    long l;
    double x;
    if (!strcmp(f, "--vram-budget")) {
        if (!hr_arg_float(CMD, f, v, 1e-9, 1e6, &x)) return 2;
        cp->vram_budget_gib = x;
    } else if (!strcmp(f, "-c") || !strcmp(f, "--ctx-size")) {
        if (!hr_arg_long(CMD, f, v, 0, 1 << 24, &l)) return 2;
        cp->n_ctx = (int32_t)l;
    } else if (!strcmp(f, "-b") || !strcmp(f, "--batch-size")) {
        if (!hr_arg_long(CMD, f, v, 1, 1 << 16, &l)) return 2;
        cp->n_batch = (int32_t)l;
    } else if (!strcmp(f, "-np") || !strcmp(f, "--parallel")) {
        if (!hr_arg_long(CMD, f, v, 1, 256, &l)) return 2;
        cp->n_seq = (int32_t)l;
    } else if (!strcmp(f, "--gpu-device")) {
        if (!hr_arg_long(CMD, f, v, 0, 255, &l)) return 2;
        cp->gpu_device = (int32_t)l;
    } else if (!strcmp(f, "-ncmoe") || !strcmp(f, "--n-cpu-moe")) { /* mixtures of experts, as hearth run */
        if (!hr_arg_long(CMD, f, v, 0, 1 << 20, &l)) return 2;
        cp->n_cpu_moe = (int32_t)l;
    } else if (!strcmp(f, "--moe-cache")) {
        if (!hr_arg_long(CMD, f, v, 1, 1 << 16, &l)) return 2;
        cp->moe_cache = (int32_t)l;
    } else if (!strcmp(f, "-ngl") || !strcmp(f, "--n-gpu-layers")) {
        if (!hr_arg_long(CMD, f, v, 0, 1 << 20, &l)) return 2;
        cp->n_gpu_layers = (int32_t)l;
    } else if (!strcmp(f, "--ffn")) {
        if (hr_arg_ffn_mode(CMD, v, &cp->ffn_mode) < 0) return 2;
    } else if (!strcmp(f, "--gpu")) {
        if (hr_arg_gpu_mode(CMD, v, &cp->gpu) < 0) return 2;
        if (cp->gpu == HEARTH_GPU_OFF) return hr_usage_error(CMD, "--gpu off: placement is for a device");
    } else return hr_usage_error(CMD, "unknown flag '%s'", f);
    return -1;
}

static int parse(int argc, char **argv, opts *o) {
    long l;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(f, "--json")) { o->json = true; continue; }
        if (!strcmp(f, "-cmoe") || !strcmp(f, "--cpu-moe")) { o->cp.n_cpu_moe = 1 << 20; continue; }
        if (f[0] != '-') return hr_usage_error(CMD, "unexpected argument '%s'", f);
        if (!hr_arg_need(CMD, argc, argv, i)) return 2;
        const char *v = argv[++i];
        if (!strcmp(f, "-m") || !strcmp(f, "--model")) o->p.model_path = v;
        else if (!strcmp(f, "--stats")) o->p.stats_path = v;
        else if (!strcmp(f, "-o") || !strcmp(f, "--output")) o->p.out_path = v;
        else if (!strcmp(f, "--group")) {
            if (!hr_arg_long(CMD, f, v, 1, 1 << 24, &l)) return 2;
            o->p.group = (int32_t)l;
        } else {
            int rc = ctx_flag(f, v, &o->cp);
            if (rc >= 0) return rc;
        }
    }
    if (!o->p.model_path) return hr_usage_error(CMD, "a model is required (-m MODEL)");
    if (!(o->cp.vram_budget_gib > 0)) return hr_usage_error(CMD, "--vram-budget GIB is required");
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

/* The categories a placement budget holds before neurons (the rest are 0 then). */
static const hearth_gpu_cat fixed_cats[] = {HEARTH_GPU_CAT_SCRATCH, HEARTH_GPU_CAT_ATTN, HEARTH_GPU_CAT_KV,
                                            HEARTH_GPU_CAT_PRED, HEARTH_GPU_CAT_NORMS, HEARTH_GPU_CAT_OUTPUT};
static const char *const json_keys[] = {"scratch", "attention", "kv_cache", "predictors", "norms", "output"};
#define N_FIXED (sizeof fixed_cats / sizeof *fixed_cats)

static void print_json(const opts *o, const hearth_gpu_budget *b, const hr_place_result *r) {
    uint64_t hot = 0, tot = 0, n_hot = 0;
    printf("{\"model\": ");
    json_str(o->p.model_path);
    printf(", \"stats\": ");
    json_str(r->stats_path);
    printf(", \"output\": ");
    json_str(r->out_path);
    printf(", \"device\": ");
    json_str(b->device);
    printf(",\n \"n_layer\": %d, \"n_ff\": %d, \"n_ctx\": %d, \"n_batch\": %d, \"n_seq\": %d, \"ffn_mode\": \"%s\", "
           "\"group\": %d, \"n_tokens\": %llu,\n",
           r->n_layer, r->n_ff, b->n_ctx, b->n_batch, b->n_seq, hearth_ffn_mode_name(b->ffn_mode), r->group,
           (unsigned long long)r->n_tokens);
    printf(" \"budget_bytes\": %llu, \"overhead_bytes\": %llu, \"fixed\": {", (unsigned long long)b->budget,
           (unsigned long long)b->overhead);
    for (size_t k = 0; k < N_FIXED; k++) printf("\"%s\": %llu, ", json_keys[k], (unsigned long long)b->bytes[fixed_cats[k]]);
    printf("\"total\": %llu},\n", (unsigned long long)b->fixed);
    printf(" \"neuron_budget\": %llu, \"neuron_bytes_used\": %llu, \"ffn_bytes\": %llu,\n \"layers\": [",
           (unsigned long long)r->neuron_budget, (unsigned long long)r->neuron_used, (unsigned long long)r->ffn_bytes);
    for (int32_t l = 0; l < r->n_layer; l++) {
        const hr_place_layer *s = &r->layers[l];
        printf("%s\n  {\"layer\": %d, \"n_hot\": %d, \"neuron_bytes\": %llu, \"bytes\": %llu, \"hot_count\": %llu, "
               "\"total_count\": %llu, \"share\": %.6f}",
               l ? "," : "", l, s->n_hot, (unsigned long long)b->neuron_bytes[l], (unsigned long long)s->bytes,
               (unsigned long long)s->hot_count, (unsigned long long)s->total_count, share(s->hot_count, s->total_count));
        hot += s->hot_count, tot += s->total_count, n_hot += (uint64_t)s->n_hot;
    }
    printf("],\n \"n_hot\": %llu, \"hot_count\": %llu, \"total_count\": %llu, \"share\": %.6f}\n",
           (unsigned long long)n_hot, (unsigned long long)hot, (unsigned long long)tot, share(hot, tot));
}

static const char *human(uint64_t b, char *buf) {
    if (b < 1024 * 1024) snprintf(buf, 32, "%9.1f KiB", (double)b / 1024.0);
    else if (b < (1ull << 30)) snprintf(buf, 32, "%9.1f MiB", (double)b / MIB);
    else snprintf(buf, 32, "%9.2f GiB", (double)b / GIB);
    return buf;
}

/* What a category's figure covers. */
static const char *detail(hearth_gpu_cat c, const hearth_gpu_budget *b, char *buf, size_t cap) {
    switch (c) {
    case HEARTH_GPU_CAT_SCRATCH: snprintf(buf, cap, "%d tokens", b->n_batch); break;
    case HEARTH_GPU_CAT_ATTN: snprintf(buf, cap, "%d layers", b->layers_attn); break;
    case HEARTH_GPU_CAT_KV: snprintf(buf, cap, "%d tokens x %d sequences, f16", b->n_ctx, b->n_seq); break;
    case HEARTH_GPU_CAT_PRED: snprintf(buf, cap, "%d layers", b->layers_pred); break;
    case HEARTH_GPU_CAT_NORMS: snprintf(buf, cap, "on the CPU"); break;
    default: snprintf(buf, cap, "%s", b->output_on_device ? "on the device" : "on the CPU"); break;
    }
    return buf;
}

static void print_budget(const hearth_gpu_budget *b, const hr_place_result *r) {
    char a[3][32], d[64];
    printf("VRAM budget %.6g GiB (%llu bytes) on %s; context %d tokens x %d sequence%s, batch %d, FFN %s:\n",
           (double)b->budget / GIB, (unsigned long long)b->budget, b->device, b->n_ctx, b->n_seq, b->n_seq > 1 ? "s" : "",
           b->n_batch, hearth_ffn_mode_name(b->ffn_mode));
    printf("  %-12s %s\n", "overhead", human(b->overhead, a[0]));
    for (size_t k = 0; k < N_FIXED; k++)
        printf("  %-12s %s  (%s)\n", hearth_gpu_cat_name(fixed_cats[k]), human(b->bytes[fixed_cats[k]], a[0]),
               detail(fixed_cats[k], b, d, sizeof d));
    printf("  %-12s %s  of %s left (all neurons: %s)\n", "FFN neurons", human(r->neuron_used, a[0]),
           human(r->neuron_budget, a[1]), human(r->ffn_bytes, a[2]));
}

static void print_text(const opts *o, const hearth_gpu_budget *b, const hr_place_result *r) {
    printf("model %s: %d layers, n_ff %d; statistics %s (%llu tokens)\n", o->p.model_path, r->n_layer, r->n_ff,
           r->stats_path, (unsigned long long)r->n_tokens);
    print_budget(b, r);
    printf("layer  hot neurons        bytes/neuron  activations served\n");
    uint64_t hot = 0, tot = 0, n_hot = 0;
    for (int32_t l = 0; l < r->n_layer; l++) {
        const hr_place_layer *s = &r->layers[l];
        printf("%5d  %7d / %-7d  %12llu  %6.2f%%\n", l, s->n_hot, r->n_ff, (unsigned long long)b->neuron_bytes[l],
               100.0 * share(s->hot_count, s->total_count));
        hot += s->hot_count, tot += s->total_count, n_hot += (uint64_t)s->n_hot;
    }
    const uint64_t all = (uint64_t)r->n_layer * (uint64_t)r->n_ff;
    printf("overall: %llu of %llu neurons (%.2f%%) on the GPU serve %.2f%% of activations\n", (unsigned long long)n_hot,
           (unsigned long long)all, 100.0 * share(n_hot, all), 100.0 * share(hot, tot));
    printf("wrote %s (split.vram_capacity %llu: the neuron budget)\n", r->out_path, (unsigned long long)r->neuron_budget);
}

/* The smallest budget in thousandths of a GiB that leaves a byte for neurons. */
static double suggest(uint64_t need) {
    double k = ceil((double)need / GIB * 1000.0);
    while ((uint64_t)(k / 1000.0 * GIB) <= need) k++;
    return k / 1000.0;
}

/* Why this budget and these parameters leave nothing to place. */
static void no_neurons(const opts *o, const hearth_gpu_budget *b) {
    if (!b->need) {
        fprintf(stderr, "hearth place: %s: hybrid execution puts no hot neurons of this model on the GPU in FFN mode %s "
                        "(that needs ffn_down_t, no FFN biases, and a PowerInfer file in predicted or dense mode, or a "
                        "threshold file (hearth calibrate --target-sparsity) in threshold mode), so it "
                        "reads no GPU index\n", o->p.model_path, hearth_ffn_mode_name(b->ffn_mode));
        return;
    }
    fprintf(stderr, "hearth place: VRAM budget of %.6g GiB (%llu bytes) leaves no bytes for neurons: the device's "
                    "overhead, scratch for %d tokens, attention with the KV cache for %d tokens x %d sequence(s), "
                    "predictors and the output take %llu bytes; use --vram-budget %.3f or more (or a smaller -c or -b)\n",
            (double)b->budget / GIB, (unsigned long long)b->budget, b->n_batch, b->n_ctx, b->n_seq,
            (unsigned long long)b->need, suggest(b->need));
}

/* Mixtures of experts: which experts the run-time plan puts on the device for this budget,
 * and the expert index written at out (a context with the same budget reads it back). */
static void print_experts(const opts *o, const hearth_gpu_experts *x, const char *stats, const char *out) {
    uint64_t dev = 0, all = 0;
    for (int32_t i = 0; x->routed && i < x->n_layer * x->n_expert; i++) all += x->routed[i], dev += x->on_device[i] ? x->routed[i] : 0;
    if (o->json) {
        printf("{\"model\": ");
        json_str(o->p.model_path);
        printf(", \"stats\": ");
        if (stats) json_str(stats);
        else printf("null");
        printf(", \"output\": ");
        if (x->index_written) json_str(out);
        else printf("null");
        printf(", \"expert_budget\": %llu, \"moe_cache\": %d", (unsigned long long)x->expert_budget, o->cp.moe_cache);
        printf(", \"n_layer\": %d, \"n_expert\": %d, \"n_expert_used\": %d, \"n_tokens\": %llu, \"budget_bytes\": %llu, "
               "\"used_bytes\": %llu, \"expert_bytes\": %llu, \"n_placed\": %d, \"share\": %.6f, \"n_split\": %d, "
               "\"n_expert_neurons\": %lld, \"expert_neuron_bytes\": %llu,\n \"layers\": [",
               x->n_layer, x->n_expert, x->n_expert_used, (unsigned long long)x->n_tokens, (unsigned long long)x->budget,
               (unsigned long long)x->used, (unsigned long long)x->placed_bytes, x->n_placed, all ? (double)dev / (double)all : 0.0,
               x->n_split, (long long)x->n_neurons, (unsigned long long)x->neuron_bytes);
        for (int32_t l = 0; l < x->n_layer; l++) {
            printf("%s\n  {\"layer\": %d, \"experts\": [", l ? "," : "", l);
            for (int32_t k = 0, n = 0; k < x->n_expert; k++)
                if (x->on_device[l * x->n_expert + k]) printf("%s%d", n++ ? ", " : "", k);
            printf("], \"neurons\": [");
            for (int32_t k = 0, n = 0; k < x->n_expert; k++)
                if (x->neurons[l * x->n_expert + k]) printf("%s[%d, %d]", n++ ? ", " : "", k, x->neurons[l * x->n_expert + k]);
            printf("]}");
        }
        printf("]}\n");
        return;
    }
    printf("model %s: %d layers of %d experts (%d used per token); %s%s\n", o->p.model_path, x->n_layer, x->n_expert,
           x->n_expert_used, stats ? "routing statistics " : "no statistics (uniform order: lowest layer and id first)",
           stats ? stats : "");
    printf("VRAM budget %.6g GiB (%llu bytes): arena %llu bytes, of which %llu for experts\n", (double)x->budget / GIB,
           (unsigned long long)x->budget, (unsigned long long)x->used, (unsigned long long)x->placed_bytes);
    if (o->cp.moe_cache > 0)
        printf("expert cache: %d slots per layer, starting with the experts listed; the cache refills them by use\n",
               o->cp.moe_cache);
    printf("layer  experts on the GPU; hot neurons of host experts (expert:neurons)\n");
    for (int32_t l = 0; l < x->n_layer; l++) {
        printf("%5d ", l);
        for (int32_t k = 0; k < x->n_expert; k++)
            if (x->on_device[l * x->n_expert + k]) printf(" %d", k);
        printf(";");
        for (int32_t k = 0; k < x->n_expert; k++)
            if (x->neurons[l * x->n_expert + k]) printf(" %d:%d", k, x->neurons[l * x->n_expert + k]);
        printf("\n");
    }
    printf("overall: %d of %d experts on the GPU, %lld expert neurons of %d more (%llu bytes)", x->n_placed,
           x->n_layer * x->n_expert, (long long)x->n_neurons, x->n_split, (unsigned long long)x->neuron_bytes);
    if (all) printf(", serving %.2f%% of routings (statistics)", 100.0 * (double)dev / (double)all);
    printf("\n");
    if (x->index_written)
        printf("wrote %s (split.vram_capacity %llu: the bytes for experts and their neurons)\n", out,
               (unsigned long long)x->expert_budget);
    else if (o->cp.moe_cache > 0) printf("wrote no index: a run with --moe-cache places its slots and neurons itself\n");
    else printf("wrote no index: the budget leaves no bytes for experts\n");
}

/* -1: not a mixture of experts; else the exit code. */
static int place_experts(const opts *o, hearth_model *m) {
    char def[1024];
    const char *stats = o->p.stats_path;
    const size_t n = strlen(o->p.model_path);
    FILE *f;
    /* as a context looks: MODEL.stats.gguf, then x.stats.gguf for x.gguf */
    for (int k = 0; !stats && k < 2; k++) {
        const int cut = k && n > 5 && !strcmp(o->p.model_path + n - 5, ".gguf") ? 5 : 0;
        if ((k && !cut) || snprintf(def, sizeof def, "%.*s.stats.gguf", (int)(n - (size_t)cut), o->p.model_path) >= (int)sizeof def)
            continue;
        if ((f = fopen(def, "rb"))) fclose(f), stats = def;
    }
    hearth_gpu_experts x;
    hr_err e = {{0}};
    char *out = o->p.out_path ? NULL : hr_gpuidx_default_path(o->p.model_path);
    const char *path = o->p.out_path ? o->p.out_path : out;
    int rc = path ? hearth_gpu_place_experts(m, &o->cp, stats, path, &x, &e) : hr_errf(&e, "out of memory");
    if (!rc && !x.n_expert) {
        free(out);
        return -1;
    }
    if (rc) fprintf(stderr, "hearth place: %s: %s\n", o->p.model_path, e.msg);
    else print_experts(o, &x, stats, path);
    hearth_gpu_experts_free(&x);
    free(out);
    return rc ? 1 : 0;
}

static int place(const opts *o, hearth_model *m) {
    const int moe = place_experts(o, m);
    if (moe >= 0) return moe;
    hr_err e = {{0}};
    hearth_gpu_budget b;
    if (hearth_gpu_plan_budget(m, &o->cp, &b, &e)) {
        hearth_gpu_budget_free(&b);
        fprintf(stderr, "hearth place: %s: %s\n", o->p.model_path, e.msg);
        return 1;
    }
    int rc = 1;
    if (!b.takes_index) no_neurons(o, &b);
    else {
        hr_place_params p = o->p;
        p.n_layer = b.n_layer, p.n_ff = hearth_model_get_info(m)->n_ff;
        p.neuron_bytes = b.neuron_bytes, p.neuron_budget = b.neuron_budget;
        hr_place_result r;
        if (hr_place_model(&p, &r, &e)) fprintf(stderr, "hearth place: %s\n", e.msg);
        else {
            if (o->json) print_json(o, &b, &r);
            else print_text(o, &b, &r);
            hr_place_result_free(&r);
            rc = 0;
        }
    }
    hearth_gpu_budget_free(&b);
    return rc;
}

int hr_cmd_place(int argc, char **argv) {
    opts o;
    memset(&o, 0, sizeof o);
    o.p.group = 1;
    o.cp = hearth_ctx_default_params();
    int rc = parse(argc, argv, &o);
    if (rc >= 0) return rc;
    hr_err e = {{0}};
    hearth_model_params mp = hearth_model_default_params();
    hearth_model *m = hearth_model_load(o.p.model_path, &mp, &e);
    if (!m) {
        fprintf(stderr, "hearth place: %s: %s\n", o.p.model_path, e.msg);
        return 1;
    }
    rc = place(&o, m);
    hearth_model_free(m);
    return rc;
}
