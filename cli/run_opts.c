#include <stdio.h>
#include <stdlib.h>
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

int hr_arg_ffn_mode(const char *cmd, const char *v, hearth_ffn_mode *out) {
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

int hr_arg_gpu_mode(const char *cmd, const char *v, hearth_gpu_mode *out) {
    if (!strcmp(v, "auto")) *out = HEARTH_GPU_AUTO;
    else if (!strcmp(v, "off")) *out = HEARTH_GPU_OFF;
    else if (!strcmp(v, "cuda")) *out = HEARTH_GPU_CUDA;
    else if (!strcmp(v, "standin")) *out = HEARTH_GPU_STANDIN;
    else {
        fprintf(stderr, "hearth %s: --gpu: '%s' is not one of auto, off, cuda, standin\n", cmd, v);
        return -1;
    }
    return 1;
}

bool hr_is_gpu_flag(const char *a) {
    static const char *const f[] = {"--gpu", "--gpu-device", "--vram-budget", "-ngl", "--n-gpu-layers", "--gpu-index",
                                    "--reset-gpu-index", "--disable-gpu-index", NULL};
    for (int k = 0; f[k]; k++)
        if (!strcmp(a, f[k])) return true;
    return false;
}

void hr_set_model_path(hr_run_opts *o, const char *model) {
    o->model = model;
    if (o->gpu_index_explicit) return;
    int n = snprintf(o->gpu_index_buf, sizeof o->gpu_index_buf, "%s.generated.gpuidx", model);
    o->cp.gpu_index_path = n > 0 && (size_t)n < sizeof o->gpu_index_buf ? o->gpu_index_buf : NULL;
}

/* GPU flags; v is the value of the valued ones. */
static int gpu_flag(const char *cmd, const char *a, const char *v, hr_run_opts *o) {
    long l;
    double f;
    if (is(a, "--gpu", NULL)) return hr_arg_gpu_mode(cmd, v, &o->cp.gpu);
    if (is(a, "--gpu-device", NULL)) { if (!hr_arg_long(cmd, a, v, 0, 255, &l)) return -1; o->cp.gpu_device = (int32_t)l; }
    else if (is(a, "--vram-budget", NULL)) { if (!hr_arg_float(cmd, a, v, 0, 1e6, &f)) return -1; o->cp.vram_budget_gib = f; }
    else if (is(a, "-ngl", "--n-gpu-layers")) { if (!hr_arg_long(cmd, a, v, 0, 1 << 20, &l)) return -1; o->cp.n_gpu_layers = (int32_t)l; }
    else if (is(a, "--gpu-index", NULL)) o->cp.gpu_index_path = v, o->gpu_index_explicit = true;
    return 1;
}

int hr_parse_common_flag(const char *cmd, int argc, char **argv, int *i, hr_run_opts *o) {
    const char *a = argv[*i];
    static const char *const valued[] = {"-m", "--model", "-t", "--threads", "-c", "--ctx-size", "-b", "--batch-size",
                                         "--temp", "--top-k", "--top-p", "--min-p", "--repeat-penalty",
                                         "--repeat-last-n", "--seed", "-ctk", "--cache-type-k", "-ctv", "--cache-type-v", "--ffn", "--sparse-threshold", "--ffn-act", NULL};
    if (!strcmp(a, "--stats")) {
        o->cp.ffn_stats = true;
        return 1;
    }
    if (!strcmp(a, "--reset-gpu-index") || !strcmp(a, "--disable-gpu-index")) {
        *(a[2] == 'r' ? &o->cp.reset_gpu_index : &o->cp.disable_gpu_index) = true;
        return 1;
    }
    bool takes = hr_is_gpu_flag(a);
    for (int k = 0; valued[k]; k++) takes |= !strcmp(a, valued[k]);
    if (!takes) return 0;
    if (!hr_arg_need(cmd, argc, argv, *i)) return -1;
    const char *v = argv[++*i];
    long l;
    double f;
    uint64_t u;
    if (hr_is_gpu_flag(a)) return gpu_flag(cmd, a, v, o);
    if (is(a, "-m", "--model")) hr_set_model_path(o, v);
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
    } else if (is(a, "--ffn", NULL)) return hr_arg_ffn_mode(cmd, v, &o->cp.ffn_mode);
    else if (is(a, "--ffn-act", NULL)) o->mp.ffn_act = v; /* checked at load, against the architecture */
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
           "  --ffn-act ACT             FFN activation of files that leave it open (swiglu, reglu, drelu,\n"
           "                            relu, gelu): e.g. a dense ReluLLaMA GGUF without Hearth's\n"
           "                            hearth.ffn_activation key (default: the file's)\n"
           "  --stats                   print per-layer FFN activity after the run\n"
           "GPU (hybrid execution: hot neurons on the device, cold ones on the CPU; docs/hybrid.md):\n"
           "  --gpu MODE                auto (CUDA when built in and a GPU answers, else the CPU), off,\n"
           "                            cuda (an error without a usable GPU), standin (the CPU standing\n"
           "                            in for a device: same plan and operations, for testing)\n"
           "  --gpu-device N            CUDA device index (default 0)\n"
           "  --vram-budget GiB         device memory to use, overhead included (default: free memory\n"
           "                            minus %d MiB)\n"
           "  -ngl, --n-gpu-layers N    llama.cpp-style: the first N whole layers on the device\n"
           "                            (N > layers: the output matrix too); default 0: PowerInfer\n"
           "                            files place dense parts then hot neurons, dense files as many\n"
           "                            whole layers as fit\n"
           "  --gpu-index FILE          hot-neuron index (default MODEL.generated.gpuidx; made from\n"
           "                            MODEL's activation statistics when missing or made for another\n"
           "                            budget)\n"
           "  --reset-gpu-index         regenerate the index even if it exists\n"
           "  --disable-gpu-index       no hot neurons on the device (dense parts only)\n"
           "sampling:\n"
           "  --temp X                  temperature, 0 = greedy (default 0.8)\n"
           "  --top-k N                 keep the N most likely tokens, 0 = off (default 40)\n"
           "  --top-p X                 nucleus sampling, 1 = off (default 0.95)\n"
           "  --min-p X                 drop tokens below X times the top probability (default 0.05)\n"
           "  --repeat-penalty X        penalty for recent tokens, 1 = off (default 1.0)\n"
           "  --repeat-last-n N         how many recent tokens the penalty sees (default 64)\n"
           "  --seed N                  random seed (default: time-based)\n",
           HEARTH_VRAM_MARGIN_MIB);
}

/* Mixtures of experts: how evenly layer il routes (the busiest expert's share of the
 * token-expert pairs, and how many experts take half of them). */
static void print_routing(const hearth_ctx *c, int32_t il, const hearth_moe_stats *ms) {
    uint64_t *n = calloc((size_t)ms->n_expert, sizeof *n), tot = 0, top = 0, half = 0;
    if (!n || hearth_ctx_moe_routed(c, il, n)) {
        free(n);
        return;
    }
    for (int32_t x = 0; x < ms->n_expert; x++) tot += n[x], top = n[x] > top ? n[x] : top;
    int32_t k = 0, unused = 0;
    for (int32_t x = 0; x < ms->n_expert; x++) unused += !n[x];
    while (tot && half * 2 < tot) { /* largest first: repeated maximum (n is small) */
        int32_t b = 0;
        for (int32_t x = 1; x < ms->n_expert; x++) b = n[x] > n[b] ? x : b;
        half += n[b], n[b] = 0, k++;
    }
    fprintf(stderr, "  busiest expert %5.1f%%, %d of %d experts take half, %d unused", tot ? 100.0 * (double)top / (double)tot : 0.0,
            k, ms->n_expert, unused);
    free(n);
}

void hr_print_ffn_stats(const hearth_model *m, const hearth_ctx *c) {
    const hearth_model_info *in = hearth_model_get_info(m);
    hearth_ffn_mode mode = hearth_ctx_ffn_mode(c);
    hearth_moe_stats ms;
    const bool moe = !hearth_ctx_moe_stats(c, &ms);
    /* experts: neuron slots are the chosen experts' neurons */
    const int32_t n_ff = moe ? ms.n_expert_used * ms.n_ff_exp : in->n_ff;
    if (moe)
        fprintf(stderr, "FFN activity (mode %s, %d experts used of %d, %d neurons each):\n  layer  computed  fired(exact)  recall  routing\n",
                hearth_ffn_mode_name(mode), ms.n_expert_used, ms.n_expert, ms.n_ff_exp);
    else
        fprintf(stderr, "FFN activity (mode %s, %d neurons per layer):\n  layer  computed  fired(exact)  recall\n",
                hearth_ffn_mode_name(mode), in->n_ff);
    double sc = 0, sf = 0;
    for (int32_t il = 0; il < in->n_layer; il++) {
        hearth_ffn_stats s;
        hearth_ctx_ffn_stats(c, il, &s);
        if (!s.tokens) continue;
        double denom = (double)s.tokens * n_ff, comp = s.computed / denom, fired = s.fired / denom;
        sc += comp, sf += fired;
        fprintf(stderr, "  %5d  %7.2f%%  %11.2f%%  %6.2f%%", il, 100 * comp, 100 * fired,
                s.fired ? 100.0 * s.fired_computed / s.fired : 100.0);
        if (moe) print_routing(c, il, &ms);
        fputc('\n', stderr);
    }
    fprintf(stderr, "  mean   %7.2f%%  %11.2f%%\n", 100 * sc / in->n_layer, 100 * sf / in->n_layer);
}

void hr_print_gpu_notice(const hearth_ctx *c, const hearth_ctx_params *cp) {
    hearth_gpu_status s;
    if (cp->gpu != HEARTH_GPU_AUTO || hearth_ctx_gpu_status(c, &s) || s.active || !s.reason[0]) return;
    fprintf(stderr, "hearth: no usable GPU (%s); running on the CPU\n", s.reason);
}

static double mib(uint64_t b) { return b / 1048576.0; }

void hr_print_gpu_plan(const hearth_ctx *c) {
    hearth_gpu_status s;
    hearth_ctx_gpu_status(c, &s);
    if (!s.active) {
        if (s.reason[0]) fprintf(stderr, "gpu: none (%s)\n", s.reason);
        else fprintf(stderr, "gpu: none\n");
        return;
    }
    const uint64_t norms = s.used_fixed - s.used_attn - s.used_pred - s.used_output;
    fprintf(stderr, "gpu: %s, budget %.2f MiB, arena %.2f MiB = attention %.2f + KV %.2f + predictors %.2f + norms %.2f + "
                    "output %.2f + FFN neurons %.2f + scratch %.2f\n",
            s.device, mib(s.budget), mib(s.used), mib(s.used_attn), mib(s.used_kv), mib(s.used_pred), mib(norms),
            mib(s.used_output), mib(s.used_neurons), mib(s.used_scratch));
    fprintf(stderr, "gpu: attention of %d layers, predictors of %d, %d whole layers (%d device-resident), output %s; %lld hot "
                    "neurons = %.2f%% of FFN bytes",
            s.layers_attn, s.layers_pred, s.layers_whole, s.layers_resident, s.output_on_device ? "on the device" : "on the CPU",
            (long long)s.hot_neurons, 100 * s.ffn_share);
    if (s.act_share >= 0) fprintf(stderr, ", serving %.2f%% of activations (statistics)\n", 100 * s.act_share);
    else fprintf(stderr, ", activation share unknown (no statistics)\n");
    if (s.note[0]) fprintf(stderr, "gpu: %s\n", s.note);
    fprintf(stderr, "gpu: bytes: budget %llu used %llu neuron_budget %llu hot %llu ffn %llu\n", (unsigned long long)s.budget,
            (unsigned long long)s.used, (unsigned long long)s.neuron_budget, (unsigned long long)s.used_neurons,
            (unsigned long long)s.ffn_bytes);
}

void hr_print_gpu_overlap(const hearth_ctx *c) {
    hearth_gpu_status s;
    hearth_ctx_gpu_status(c, &s);
    if (!s.active) return;
    fprintf(stderr, "gpu: %llu FFN splits, %.2f%% of computed activations on the device; enqueue %.3f s, CPU cold "
                    "part %.3f s, waiting for the device %.3f s\n",
            (unsigned long long)s.ffn_splits, s.act_total ? 100.0 * s.act_device / s.act_total : 0.0, s.enqueue_s,
            s.cold_s, s.wait_s);
    fprintf(stderr, "gpu: %llu round trips (waits for the device), %.2f MiB to it, %.2f MiB back\n",
            (unsigned long long)s.syncs, mib(s.bytes_to_dev), mib(s.bytes_to_host));
}
