/* hearth bench: prompt and decode speed on seeded random tokens, bytes read per decoded
 * token and the memory bandwidth that speed implies. In sparse FFN modes the bytes follow
 * the share of neurons the engine really computed while decoding (its always-on counters). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "bench_profile.h"
#include "cli.h"
#include "formats/types.h"
#include "hearth.h"
#include "run_opts.h"

typedef struct {
    const char *model;
    long threads, n_prompt, n_gen, runs, n_ctx;
    uint64_t seed;
    bool json, profile;
    hr_run_opts ffn; /* only --ffn, --sparse-threshold, --ffn-threshold, --stats, the GPU flags and
                        --no-mmap/--mmap are taken from the shared parser */
} bench_opts;

typedef struct {
    double prompt_tps, decode_tps;
    uint64_t computed, slots; /* decode phase only: neurons computed, tokens x layers x n_ff */
    uint64_t moe_read;        /* decode phase only, MoE models: expert bytes the routing read */
} bench_run;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void help(void) {
    printf("usage: hearth bench -m MODEL.gguf [flags]\n\n"
           "Measures prompt tokens/s (one eval of the whole prompt) and decode tokens/s (single-token\n"
           "evals of the greedy token) on seeded random token ids; reports medians over the runs, the\n"
           "bytes one decoded token reads and the bandwidth that implies. One untimed warm-up first.\n\n"
           "  -m, --model FILE        model (GGUF)\n"
           "  -t, --threads N         threads (default: number of cores)\n"
           "  -p, --n-prompt N        prompt tokens (default 64)\n"
           "  -n, --n-gen N           decoded tokens (default 64)\n"
           "  -r, --repetitions N     runs (default 3)\n"
           "  -c, --ctx-size N        context size (default: prompt + decoded tokens)\n"
           "  --seed N                seed of the random prompt (default 42)\n"
           "  --no-mmap, -mmp 0|1     read the model into memory instead of mapping the file (-mmp 0:\n"
           "                          llama-bench's spelling); the copy gets 2 MiB pages where the\n"
           "                          file's cached pages are 4 KiB ones (docs/performance.md)\n"
           "  --mlock                 lock the model's pages in RAM (as hearth run; no FFN bundles)\n"
           "  -nr, --no-repack        keep the FFN rows as the file has them (default: bundled per\n"
           "                          neuron for predicted mode on the CPU; see hearth run --help)\n"
           "  --ffn MODE              dense, exact, predicted, threshold (default: predicted when the\n"
           "                          file has predictors, else threshold when it has thresholds,\n"
           "                          else dense)\n"
           "  --ffn-threshold X       one threshold for every layer in --ffn threshold (docs/threshold.md)\n"
           "  --sparse-threshold X    predictor threshold (default: env, then the file's, then 0)\n"
           "  --stats                 also count fired neurons and print the per-layer table (costs a\n"
           "                          full gate product per layer: slows the decode it measures)\n"
           "  --json                  print one JSON object instead of text\n"
           "  --profile               time every operation of the timed runs and print, for decode\n"
           "                          (per token) and the prompt (per prompt token), each kind's time,\n"
           "                          share, bytes and GB/s (docs/performance.md); slows what it measures\n"
           "  --gpu, --gpu-device, --vram-budget, -ngl, --gpu-index, --reset-gpu-index,\n"
           "  --disable-gpu-index, --cpu-moe, --n-cpu-moe, --moe-cache, --moe-cache-policy\n"
           "                          GPU placement, as for hearth run (see hearth run --help)\n"
           "  -h, --help              this help\n\n"
           "bytes/token = weights one decoded token reads (all matrices, one embedding row, norms)\n"
           "            + K and V cache bytes read by attention at the mean decode position.\n"
           "Sparse modes: weights = dense weights - FFN matrices + fraction x FFN matrices\n"
           "            (+ predictor fc1/fc2 in predicted mode; exact mode reads the whole gate, taken\n"
           "            as a third of the FFN bytes), fraction = neurons computed / (n_ff x layers x\n"
           "            decoded tokens), counted by the engine during the timed decodes. Above 60%%\n"
           "            active in a layer the engine reads the whole matrices: not modelled here.\n");
}

static int parse(int argc, char **argv, bench_opts *o) {
    static const char *cmd = "bench";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help();
            return 0;
        }
        if (!strcmp(a, "--json")) {
            o->json = true;
            continue;
        }
        if (!strcmp(a, "--profile")) {
            o->profile = true;
            continue;
        }
        if (!strcmp(a, "-mmp")) {
            if (!hr_arg_need(cmd, argc, argv, i)) return 2;
            long v;
            if (!hr_arg_long(cmd, a, argv[++i], 0, 1, &v)) return 2;
            o->ffn.mp.no_mmap = v == 0;
            continue;
        }
        if (!strcmp(a, "--ffn") || !strcmp(a, "--sparse-threshold") || !strcmp(a, "--ffn-threshold") || !strcmp(a, "--stats") ||
            !strcmp(a, "--no-mmap") || !strcmp(a, "--mmap") || !strcmp(a, "--mlock") || !strcmp(a, "-nr") ||
            !strcmp(a, "--no-repack") ||
            hr_is_gpu_flag(a)) {
            if (hr_parse_common_flag(cmd, argc, argv, &i, &o->ffn) < 0) return 2;
            continue;
        }
        long *dst = NULL, lo = 1, hi = 1 << 20;
        if (!strcmp(a, "-t") || !strcmp(a, "--threads")) dst = &o->threads, hi = 512;
        else if (!strcmp(a, "-p") || !strcmp(a, "--n-prompt")) dst = &o->n_prompt;
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-gen")) dst = &o->n_gen;
        else if (!strcmp(a, "-r") || !strcmp(a, "--repetitions")) dst = &o->runs, hi = 1000;
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) dst = &o->n_ctx, hi = 1 << 24;
        else if (strcmp(a, "-m") && strcmp(a, "--model") && strcmp(a, "--seed"))
            return hr_usage_error(cmd, "unknown flag '%s'", a);
        if (!hr_arg_need(cmd, argc, argv, i)) return 2;
        const char *v = argv[++i];
        if (dst) {
            if (!hr_arg_long(cmd, a, v, lo, hi, dst)) return 2;
        } else if (!strcmp(a, "--seed")) {
            if (!hr_arg_u64(cmd, a, v, &o->seed)) return 2;
        } else {
            o->model = v;
            hr_set_model_path(&o->ffn, v); /* default GPU index path */
        }
    }
    if (!o->model) return hr_usage_error(cmd, "a model is required (-m FILE)");
    if (o->n_ctx && o->n_ctx < o->n_prompt + o->n_gen)
        return hr_usage_error(cmd, "-c %ld is smaller than prompt + decoded tokens (%ld)", o->n_ctx,
                              o->n_prompt + o->n_gen);
    return -1;
}

static int32_t argmax(const float *x, int32_t n) {
    int32_t b = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* Sums the FFN counters over layers: neurons computed and neuron slots (tokens x n_ff;
 * mixtures of experts: tokens x experts used x n_ff_exp); MoE expert bytes read. */
static void ffn_totals(const hearth_ctx *c, const hearth_model_info *in, uint64_t *computed, uint64_t *slots,
                       uint64_t *moe_read) {
    hearth_moe_stats ms;
    const bool moe = !hearth_ctx_moe_stats(c, &ms);
    const uint64_t per_tok = moe ? (uint64_t)ms.n_expert_used * (uint64_t)ms.n_ff_exp : (uint64_t)in->n_ff;
    *computed = *slots = 0, *moe_read = moe ? ms.decode_read_bytes : 0;
    for (int32_t il = 0; il < in->n_layer; il++) {
        hearth_ffn_stats s;
        if (hearth_ctx_ffn_stats(c, il, &s)) continue;
        *computed += s.computed;
        *slots += s.tokens * per_tok;
    }
}

/* One prompt eval from position 0 (overwriting the cache), then n_gen greedy single-token evals;
 * the FFN counters are read around the decodes, so the fraction excludes the prompt's batch. */
static int bench_once(hearth_ctx *c, const int32_t *prompt, int32_t n_prompt, int32_t n_gen,
                      const hearth_model_info *in, bench_run *r, bench_prof *bp, hr_err *e) {
    const int32_t n_vocab = in->n_vocab;
    if (bp && hearth_ctx_profile(c, true, e)) return -1; /* restarts from zero: one phase per read */
    double t0 = now_s();
    if (hearth_eval(c, prompt, n_prompt, 0, false, e)) return -1;
    double t1 = now_s();
    if (bp) {
        hearth_ctx_profile_read(c, &bp->tmp), hr_bench_prof_add(&bp->prompt, &bp->tmp);
        if (hearth_ctx_profile(c, true, e)) return -1;
        t1 = now_s(); /* the read is not decode time */
    }
    uint64_t c0, s0, c1, s1, m0, m1;
    ffn_totals(c, in, &c0, &s0, &m0);
    int32_t tok = argmax(hearth_logits(c, -1), n_vocab);
    for (int32_t i = 0; i < n_gen; i++) {
        if (hearth_eval(c, &tok, 1, n_prompt + i, false, e)) return -1;
        tok = argmax(hearth_logits(c, -1), n_vocab);
    }
    double t2 = now_s();
    if (bp) hearth_ctx_profile_read(c, &bp->tmp), hr_bench_prof_add(&bp->decode, &bp->tmp);
    ffn_totals(c, in, &c1, &s1, &m1);
    r->prompt_tps = n_prompt / (t1 - t0);
    r->decode_tps = n_gen / (t2 - t1);
    r->computed = c1 - c0, r->slots = s1 - s0, r->moe_read = m1 - m0;
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, int n) {
    double *s = malloc((size_t)n * sizeof *s);
    if (!s) return v[0];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    free(s);
    return m;
}

/* Attention of a token at position p reads p+1 cached K and V rows per layer and KV head. */
static uint64_t kv_read_bytes(const hearth_model_info *in, const hearth_ctx_params *cp, double mean_pos) {
    double elem = (cp->kv_k == HEARTH_KV_F32 ? 4 : 2) + (cp->kv_v == HEARTH_KV_F32 ? 4 : 2);
    return (uint64_t)((double)in->n_layer * in->n_head_kv * in->head_dim * (mean_pos + 1.0) * elem + 0.5);
}

static void print_runs(FILE *f, const char *key, const bench_run *r, int n, bool prompt) {
    fprintf(f, "\"%s\":[", key);
    for (int i = 0; i < n; i++) fprintf(f, "%s%.3f", i ? "," : "", prompt ? r[i].prompt_tps : r[i].decode_tps);
    fprintf(f, "]");
}

/* Weight bytes one decoded token reads in the context's FFN mode, given the computed fraction. */
typedef struct {
    hearth_ffn_mode mode;
    float threshold;
    double fraction;
    uint64_t other, ffn, predictor, weights; /* non-FFN matrices, FFN rows read, fc1+fc2, sum */
    bool moe;
    uint64_t moe_expert, moe_router; /* of ffn: expert rows the routing read, routers (per token) */
} sparse_bytes;

static sparse_bytes weight_bytes(const hearth_model_info *in, const hearth_ctx *c, hearth_ffn_mode mode,
                                 const bench_run *runs, int n, long n_gen) {
    sparse_bytes b = {.mode = mode, .fraction = 1.0};
    uint64_t comp = 0, slots = 0, moe_read = 0;
    for (int i = 0; i < n; i++) comp += runs[i].computed, slots += runs[i].slots, moe_read += runs[i].moe_read;
    if (mode != HEARTH_FFN_DENSE && slots) b.fraction = (double)comp / (double)slots;
    b.other = in->decode_bytes - in->ffn_bytes;
    hearth_moe_stats ms;
    if (!hearth_ctx_moe_stats(c, &ms)) { /* experts: what the routing (and exact mode) really read */
        b.moe = true;
        b.moe_expert = n && n_gen ? (uint64_t)((double)moe_read / ((double)n * (double)n_gen) + 0.5) : 0;
        b.moe_router = ms.router_bytes;
        b.ffn = b.moe_expert + b.moe_router;
        b.weights = b.other + b.ffn;
        return b;
    }
    double full = 0; /* FFN bytes read whatever the fraction */
    if ((mode == HEARTH_FFN_EXACT || mode == HEARTH_FFN_THRESHOLD) && strcmp(in->ffn_act, "relu"))
        full = in->ffn_bytes / 3.0; /* the gate */
    b.ffn = (uint64_t)(full + b.fraction * ((double)in->ffn_bytes - full) + 0.5);
    if (mode == HEARTH_FFN_PREDICTED) b.predictor = in->predictor_bytes;
    b.weights = b.other + b.ffn + b.predictor;
    return b;
}

/* GPU fields of the JSON report (all runs together, warm-up included). */
static void print_gpu_json(const hearth_gpu_status *g) {
    printf(",\"gpu\":\"%s\"", g->active ? g->device : "none");
    if (!g->active) return;
    printf(",\"gpu_budget\":%llu,\"gpu_used\":%llu,\"gpu_layers_attn\":%d,\"gpu_layers_whole\":%d,\"gpu_layers_resident\":%d,"
           "\"gpu_ffn_share\":%.6f,\"gpu_act_share_predicted\":%.6f,\"gpu_act_share\":%.6f,"
           "\"gpu_ffn_splits\":%llu,\"gpu_enqueue_s\":%.6f,\"gpu_cold_s\":%.6f,\"gpu_wait_s\":%.6f,"
           "\"gpu_syncs\":%llu,\"gpu_bytes_to_dev\":%llu,\"gpu_bytes_to_host\":%llu",
           (unsigned long long)g->budget, (unsigned long long)g->used, g->layers_attn, g->layers_whole, g->layers_resident,
           g->ffn_share,
           g->act_share, g->act_total ? (double)g->act_device / (double)g->act_total : 0.0,
           (unsigned long long)g->ffn_splits, g->enqueue_s, g->cold_s, g->wait_s, (unsigned long long)g->syncs,
           (unsigned long long)g->bytes_to_dev, (unsigned long long)g->bytes_to_host);
    if (g->experts_total) /* mixtures of experts: the split MoE's share */
        printf(",\"gpu_experts\":%d,\"gpu_experts_total\":%d,\"gpu_expert_evals\":%llu,\"gpu_expert_evals_total\":%llu,"
               "\"gpu_experts_split\":%d,\"gpu_expert_neurons\":%lld,\"gpu_expert_split_evals\":%llu,"
               "\"gpu_expert_split_cached\":%llu",
               g->experts_device, g->experts_total, (unsigned long long)g->expert_evals_device,
               (unsigned long long)g->expert_evals_total, g->experts_split, (long long)g->expert_neurons_device,
               (unsigned long long)g->expert_split_evals, (unsigned long long)g->expert_split_cached);
    if (g->cache_slots) /* the dynamic expert cache */
        printf(",\"gpu_cache_slots\":%d,\"gpu_cache_policy\":\"%s\",\"gpu_cache_lookups\":%llu,\"gpu_cache_hits\":%llu,"
               "\"gpu_cache_hit_rate\":%.6f,\"gpu_cache_refills\":%llu,\"gpu_cache_landed\":%llu,\"gpu_cache_late\":%llu,"
               "\"gpu_cache_refill_bytes\":%llu,\"gpu_cache_refill_s\":%.6f,\"gpu_cache_stage_s\":%.6f",
               g->cache_slots, g->cache_policy, (unsigned long long)g->cache_lookups, (unsigned long long)g->cache_hits,
               g->cache_lookups ? (double)g->cache_hits / (double)g->cache_lookups : 0.0, (unsigned long long)g->cache_refills,
               (unsigned long long)g->cache_landed, (unsigned long long)g->cache_late,
               (unsigned long long)g->cache_refill_bytes, g->cache_refill_s, g->cache_stage_s);
}

static void report(const bench_opts *o, const hearth_model_info *in, const hearth_ctx_params *cp, int n_threads,
                   int32_t n_ctx, const char *kern, const bench_run *runs, const sparse_bytes *sb,
                   const hearth_gpu_status *gs, const bench_prof *bp, int64_t huge, const hearth_model *m) {
    int n = (int)o->runs;
    double *v = malloc((size_t)n * sizeof *v);
    if (!v) return;
    for (int i = 0; i < n; i++) v[i] = runs[i].prompt_tps;
    double pp = median(v, n);
    for (int i = 0; i < n; i++) v[i] = runs[i].decode_tps;
    double tg = median(v, n);
    free(v);
    double mean_pos = (double)o->n_prompt + (o->n_gen - 1) / 2.0;
    uint64_t kvb = kv_read_bytes(in, cp, mean_pos), bpt = sb->weights + kvb;
    double pred_share = bpt ? (double)sb->predictor / (double)bpt : 0.0;
    double gbs = tg * (double)bpt / 1e9;
    const char *type = hr_type_name(in->weight_type);
    if (o->json) {
        printf("{\"model\":\"");
        for (const char *p = o->model; *p; p++) {
            if (*p == '"' || *p == '\\') putchar('\\');
            if ((unsigned char)*p >= 0x20) putchar(*p);
        }
        printf("\",\"arch\":\"%s\",\"type\":\"%s\",\"weight_bytes\":%llu,\"file_bytes\":%llu,\"threads\":%d,"
               "\"cpu_kernels\":\"%s\",\"n_prompt\":%ld,\"n_gen\":%ld,\"runs\":%ld,\"n_ctx\":%d,\"seed\":%llu,",
               in->arch, type ? type : "?", (unsigned long long)in->weight_bytes, (unsigned long long)in->file_bytes,
               n_threads, kern, o->n_prompt, o->n_gen, o->runs, n_ctx, (unsigned long long)o->seed);
        printf("\"prompt_tok_s\":%.3f,\"decode_tok_s\":%.3f,", pp, tg);
        print_runs(stdout, "prompt_tok_s_runs", runs, n, true);
        putchar(',');
        print_runs(stdout, "decode_tok_s_runs", runs, n, false);
        printf(",\"ffn_mode\":\"%s\",\"sparse_threshold\":%.9g,\"computed_fraction\":%.6f,"
               "\"dense_weight_bytes\":%llu,\"ffn_bytes\":%llu,\"predictor_bytes\":%llu,"
               "\"nonffn_bytes_per_token\":%llu,\"ffn_bytes_per_token\":%llu,\"predictor_bytes_per_token\":%llu,"
               "\"predictor_byte_share\":%.6f",
               hearth_ffn_mode_name(sb->mode), sb->threshold, sb->fraction, (unsigned long long)in->decode_bytes,
               (unsigned long long)in->ffn_bytes, (unsigned long long)in->predictor_bytes,
               (unsigned long long)sb->other, (unsigned long long)sb->ffn, (unsigned long long)sb->predictor,
               pred_share);
        printf(",\"weight_bytes_per_token\":%llu,\"kv_bytes_per_token\":%llu,\"bytes_per_token\":%llu,"
               "\"decode_gb_s\":%.3f",
               (unsigned long long)sb->weights, (unsigned long long)kvb, (unsigned long long)bpt, gbs);
        printf(",\"mmap\":%s,\"huge_page_bytes\":%lld,\"ffn_bundled_layers\":%d", o->ffn.mp.no_mmap ? "false" : "true",
               (long long)huge, (int)hearth_model_bundled_layers(m, NULL));
        if (sb->moe)
            printf(",\"moe_expert_bytes_per_token\":%llu,\"moe_router_bytes_per_token\":%llu",
                   (unsigned long long)sb->moe_expert, (unsigned long long)sb->moe_router);
        print_gpu_json(gs);
        if (bp) hr_bench_prof_json(bp);
        printf("}\n");
        return;
    }
    printf("model   %s (%s, %s, %d layers, n_embd %d, n_ff %d, vocab %d)\n", o->model, in->arch, type ? type : "?",
           in->n_layer, in->n_embd, in->n_ff, in->n_vocab);
    printf("setup   %d threads (CPU kernels %s), prompt %ld tokens, decode %ld tokens, %ld runs, n_ctx %d%s\n", n_threads,
           kern, o->n_prompt, o->n_gen, o->runs, n_ctx, o->ffn.mp.no_mmap ? ", model read into memory (--no-mmap)" : "");
    printf("prompt  %10.2f tok/s (median)\n", pp);
    printf("decode  %10.2f tok/s (median)\n", tg);
    if (sb->mode == HEARTH_FFN_DENSE) {
        printf("ffn     dense\n");
    } else {
        printf("ffn     %s", hearth_ffn_mode_name(sb->mode));
        if (sb->mode == HEARTH_FFN_PREDICTED) printf(", threshold %g", sb->threshold);
        printf(": %.2f%% of neurons computed while decoding (all layers)\n", 100 * sb->fraction);
    }
    printf("bytes/token  %.1f MiB = weights %.1f MiB + KV cache %.2f MiB (at mean position %.1f)\n",
           bpt / 1048576.0, sb->weights / 1048576.0, kvb / 1048576.0, mean_pos);
    if (sb->mode != HEARTH_FFN_DENSE && !sb->moe)
        printf("  weights = non-FFN %.1f MiB + FFN rows %.1f MiB (of %.1f) + predictor %.1f MiB (%.1f%% of bytes/token)\n",
               sb->other / 1048576.0, sb->ffn / 1048576.0, in->ffn_bytes / 1048576.0, sb->predictor / 1048576.0,
               100 * pred_share);
    if (sb->moe)
        printf("  experts: %.1f MiB of expert rows + %.2f MiB of routers per decoded token (from the routing)\n",
               sb->moe_expert / 1048576.0, sb->moe_router / 1048576.0);
    printf("decode bandwidth  %.2f GB/s\n", gbs);
    hr_print_repack(stdout, "repack  ", m);
    if (huge >= 0)
        printf("pages   %.1f of the file's %.1f MiB in 2 MiB pages%s\n", huge / 1048576.0, in->file_bytes / 1048576.0,
               hr_pages_hint(huge, in->file_bytes));
    if (bp) hr_bench_prof_text(bp);
}

/* Pages the mapped weights in and starts the thread pool, so run 1 is not a cold start. */
static int warm_up(hearth_ctx *c, const int32_t *prompt, int32_t n_prompt, hr_err *e) {
    if (hearth_eval(c, prompt, n_prompt < 8 ? n_prompt : 8, 0, false, e)) return -1;
    return hearth_eval(c, prompt, 1, n_prompt < 8 ? n_prompt : 8, false, e);
}

static int bench(const bench_opts *o, hearth_model *m) {
    hr_err e = {{0}};
    const hearth_model_info *in = hearth_model_get_info(m);
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.ffn_mode = o->ffn.cp.ffn_mode;
    cp.ffn_stats = o->ffn.cp.ffn_stats;
    cp.gpu = o->ffn.cp.gpu, cp.gpu_device = o->ffn.cp.gpu_device, cp.vram_budget_gib = o->ffn.cp.vram_budget_gib;
    cp.n_gpu_layers = o->ffn.cp.n_gpu_layers, cp.gpu_index_path = o->ffn.cp.gpu_index_path;
    cp.reset_gpu_index = o->ffn.cp.reset_gpu_index, cp.disable_gpu_index = o->ffn.cp.disable_gpu_index;
    cp.n_cpu_moe = o->ffn.cp.n_cpu_moe;
    cp.moe_cache = o->ffn.cp.moe_cache, cp.moe_cache_policy = o->ffn.cp.moe_cache_policy;
    cp.n_threads = (int32_t)o->threads;
    cp.n_ctx = (int32_t)(o->n_ctx ? o->n_ctx : o->n_prompt + o->n_gen);
    if (cp.n_batch < o->n_prompt) cp.n_batch = (int32_t)o->n_prompt; /* one eval, one batch */
    hearth_ctx *c = hearth_ctx_new(m, &cp, &e);
    if (!c) {
        fprintf(stderr, "hearth bench: %s\n", e.msg);
        return 1;
    }
    hr_print_gpu_notice(c, &cp);
    int32_t *prompt = malloc((size_t)o->n_prompt * sizeof *prompt);
    bench_run *runs = calloc((size_t)o->runs, sizeof *runs);
    bench_prof *bp = o->profile ? calloc(1, sizeof *bp) : NULL;
    int rc = 1;
    if (prompt && runs && (bp || !o->profile)) {
        uint64_t s = o->seed * 0x9E3779B97F4A7C15ull + 1;
        for (long i = 0; i < o->n_prompt; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            prompt[i] = (int32_t)(s % (uint64_t)in->n_vocab);
        }
        rc = warm_up(c, prompt, (int32_t)o->n_prompt, &e) ? 1 : 0;
        for (long r = 0; !rc && r < o->runs; r++)
            rc = bench_once(c, prompt, (int32_t)o->n_prompt, (int32_t)o->n_gen, in, &runs[r], bp, &e) ? 1 : 0;
        if (rc) {
            fprintf(stderr, "hearth bench: %s\n", e.msg);
        } else {
            sparse_bytes sb = weight_bytes(in, c, hearth_ctx_ffn_mode(c), runs, (int)o->runs, o->n_gen);
            sb.threshold = hearth_model_sparse_threshold(m);
            hearth_gpu_status gs;
            hearth_ctx_gpu_status(c, &gs);
            report(o, in, &cp, cp.n_threads ? cp.n_threads : (int)sysconf(_SC_NPROCESSORS_ONLN), hearth_ctx_n_ctx(c),
                   hearth_ctx_cpu_kernels(c), runs, &sb, &gs, bp, hearth_model_huge_page_bytes(m), m);
            if (!o->json && gs.active) hr_print_gpu_plan(c), hr_print_gpu_overlap(c);
            if (cp.ffn_stats) hr_print_ffn_stats(m, c);
        }
    } else {
        fprintf(stderr, "hearth bench: out of memory\n");
    }
    free(prompt);
    free(runs);
    free(bp);
    hearth_ctx_free(c);
    return rc;
}

int hr_cmd_bench(int argc, char **argv) {
    bench_opts o = {.n_prompt = 64, .n_gen = 64, .runs = 3, .seed = 42};
    int r = parse(argc, argv, &o);
    if (r >= 0) return r;
    hr_err e = {{0}};
    const hearth_model_params mp = hr_run_model_params(&o.ffn); /* what the shared parser took */
    hearth_model *m = hearth_model_load(o.model, &mp, &e);
    if (!m) {
        fprintf(stderr, "hearth bench: %s\n", e.msg);
        return 1;
    }
    int rc = bench(&o, m);
    hearth_model_free(m);
    return rc;
}
