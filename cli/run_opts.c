#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "run_opts.h"

static int kv_type(const char *cmd, const char *flag, const char *v, hearth_kv_type *out) {
    if (!strcmp(v, "f16")) *out = HEARTH_KV_F16;
    else if (!strcmp(v, "f32")) *out = HEARTH_KV_F32;
    else {
        fprintf(stderr, "hearth %s: %s: cache type '%s' is not supported (f16, f32)\n", cmd, flag, v);
        return -1;
    }
    return 1;
}

static int ffn_mode(const char *cmd, const char *v, hearth_ffn_mode *out) {
    if (!strcmp(v, "dense")) *out = HEARTH_FFN_DENSE;
    else if (!strcmp(v, "exact")) *out = HEARTH_FFN_EXACT;
    else if (!strcmp(v, "predicted")) *out = HEARTH_FFN_PREDICTED;
    else if (!strcmp(v, "auto")) *out = HEARTH_FFN_AUTO;
    else {
        fprintf(stderr, "hearth %s: --ffn: mode '%s' is unknown (dense, exact, predicted, auto)\n", cmd, v);
        return -1;
    }
    return 1;
}

static bool is(const char *a, const char *x, const char *y) { return !strcmp(a, x) || (y && !strcmp(a, y)); }

int hr_parse_common_flag(const char *cmd, int argc, char **argv, int *i, hr_run_opts *o) {
    const char *a = argv[*i];
    static const char *const valued[] = {"-m", "--model", "-t", "--threads", "-c", "--ctx-size", "-b", "--batch-size",
                                         "--temp", "--top-k", "--top-p", "--min-p", "--repeat-penalty",
                                         "--repeat-last-n", "--seed", "-ctk", "--cache-type-k", "-ctv", "--cache-type-v", "--ffn", "--sparse-threshold", NULL};
    if (!strcmp(a, "--stats")) {
        o->cp.ffn_stats = true;
        return 1;
    }
    bool takes = false;
    for (int k = 0; valued[k]; k++) takes |= !strcmp(a, valued[k]);
    if (!takes) return 0;
    if (!hr_arg_need(cmd, argc, argv, *i)) return -1;
    const char *v = argv[++*i];
    long l;
    double f;
    uint64_t u;
    if (is(a, "-m", "--model")) o->model = v;
    else if (is(a, "-t", "--threads")) { if (!hr_arg_long(cmd, a, v, 1, 512, &l)) return -1; o->cp.n_threads = (int32_t)l; }
    else if (is(a, "-c", "--ctx-size")) { if (!hr_arg_long(cmd, a, v, 0, 1 << 24, &l)) return -1; o->cp.n_ctx = (int32_t)l; }
    else if (is(a, "-b", "--batch-size")) { if (!hr_arg_long(cmd, a, v, 1, 1 << 16, &l)) return -1; o->cp.n_batch = (int32_t)l; }
    else if (is(a, "--temp", NULL)) { if (!hr_arg_float(cmd, a, v, 0, 100, &f)) return -1; o->sp.temp = (float)f; }
    else if (is(a, "--top-k", NULL)) { if (!hr_arg_long(cmd, a, v, 0, 1 << 24, &l)) return -1; o->sp.top_k = (int32_t)l; }
    else if (is(a, "--top-p", NULL)) { if (!hr_arg_float(cmd, a, v, 0, 1, &f)) return -1; o->sp.top_p = (float)f; }
    else if (is(a, "--min-p", NULL)) { if (!hr_arg_float(cmd, a, v, 0, 1, &f)) return -1; o->sp.min_p = (float)f; }
    else if (is(a, "--repeat-penalty", NULL)) { if (!hr_arg_float(cmd, a, v, 0, 100, &f)) return -1; o->sp.repeat_penalty = (float)f; }
    else if (is(a, "--repeat-last-n", NULL)) { if (!hr_arg_long(cmd, a, v, 0, 1 << 20, &l)) return -1; o->sp.repeat_last_n = (int32_t)l; }
    else if (is(a, "--seed", NULL)) { if (!hr_arg_u64(cmd, a, v, &u)) return -1; o->sp.seed = u; }
    else if (is(a, "--sparse-threshold", NULL)) {
        if (!hr_arg_float(cmd, a, v, -1e30, 1e30, &f)) return -1;
        o->mp.has_sparse_threshold = true, o->mp.sparse_threshold = (float)f;
    } else if (is(a, "--ffn", NULL)) return ffn_mode(cmd, v, &o->cp.ffn_mode);
    else if (is(a, "-ctk", "--cache-type-k")) return kv_type(cmd, a, v, &o->cp.kv_k);
    else if (is(a, "-ctv", "--cache-type-v")) return kv_type(cmd, a, v, &o->cp.kv_v);
    return 1;
}

void hr_print_common_help(void) {
    printf("model and context:\n"
           "  -m, --model FILE          GGUF model (required)\n"
           "  -t, --threads N           CPU threads (default: all cores)\n"
           "  -c, --ctx-size N          context length in tokens (default: the model's, at most 4096)\n"
           "  -b, --batch-size N        prompt tokens per batch (default 512)\n"
           "  -ctk, --cache-type-k T    KV cache type for K: f16 (default) or f32\n"
           "  -ctv, --cache-type-v T    KV cache type for V: f16 (default) or f32\n"
           "sparse FFN:\n"
           "  --ffn MODE                dense, exact (ReLU-family: skip neurons that are zero), predicted\n"
           "                            (the file's predictors choose); default: predicted when the file\n"
           "                            has predictors, else dense\n"
           "  --sparse-threshold X      predictor threshold (default: LLAMA_SPARSE_PRED_THRESHOLD, then the\n"
           "                            file's powerinfer.sparse_threshold, then 0)\n"
           "  --stats                   print per-layer FFN activity after the run\n"
           "sampling:\n"
           "  --temp X                  temperature, 0 = greedy (default 0.8)\n"
           "  --top-k N                 keep the N most likely tokens, 0 = off (default 40)\n"
           "  --top-p X                 nucleus sampling, 1 = off (default 0.95)\n"
           "  --min-p X                 drop tokens below X times the top probability (default 0.05)\n"
           "  --repeat-penalty X        penalty for recent tokens, 1 = off (default 1.0)\n"
           "  --repeat-last-n N         how many recent tokens the penalty sees (default 64)\n"
           "  --seed N                  random seed (default: time-based)\n");
}

void hr_print_ffn_stats(const hearth_model *m, const hearth_ctx *c) {
    const hearth_model_info *in = hearth_model_get_info(m);
    hearth_ffn_mode mode = hearth_ctx_ffn_mode(c);
    fprintf(stderr, "FFN activity (mode %s, %d neurons per layer):\n  layer  computed  fired(exact)  recall\n",
            hearth_ffn_mode_name(mode), in->n_ff);
    double sc = 0, sf = 0;
    for (int32_t il = 0; il < in->n_layer; il++) {
        hearth_ffn_stats s;
        hearth_ctx_ffn_stats(c, il, &s);
        if (!s.tokens) continue;
        double denom = (double)s.tokens * in->n_ff, comp = s.computed / denom, fired = s.fired / denom;
        sc += comp, sf += fired;
        fprintf(stderr, "  %5d  %7.2f%%  %11.2f%%  %6.2f%%\n", il, 100 * comp, 100 * fired,
                s.fired ? 100.0 * s.fired_computed / s.fired : 100.0);
    }
    fprintf(stderr, "  mean   %7.2f%%  %11.2f%%\n", 100 * sc / in->n_layer, 100 * sf / in->n_layer);
}
