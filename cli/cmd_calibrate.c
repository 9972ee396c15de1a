/* hearth calibrate: count neuron activations of a ReLU-family model over a text, train
 * per-layer predictors, write a PowerInfer file and the activation-statistics file; or,
 * with --target-sparsity, per-layer thresholds of FFN mode threshold (any gated FFN). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "text_file.h"
#include "cli.h"
#include "formats/types.h"
#include "hearth.h"
#include "moe_cli.h"
#include "sparse/calibrate.h"
#include "sparse/moe_calib.h"

typedef struct {
    const char *model, *text, *out, *plot;
    double recall, target; /* target < 0: predictors (ReLU family), else thresholds */
    bool keep_down, allocate, predictors;
    bool verbose; /* mixtures of experts: each expert's predictor or why it has none */
    double alloc_step;
    long alloc_tokens;
    bool out_default; /* OUT not given: named after MODEL */
    long max_rank, min_rank, pairs, threads, n_ctx, epochs;
    int pred_f16; /* --predictor-type: -1 the weights' (F32 for F32 models, else F16), 0 F32, 1 F16 */
    bool linear;  /* --predictor-form linear */
    double min_precision;
    uint64_t seed;
} cal_opts;

static void help(void) {
    printf("usage: hearth calibrate -m MODEL.gguf -f TEXT [-o OUT.gguf] [flags]\n\n"
           "Runs a ReLU-family model (reglu, drelu, relu) densely over a text, counts how often\n"
           "each FFN neuron fires, trains one activation predictor per layer, and writes a\n"
           "PowerInfer GGUF (OUT, default MODEL.powerinfer.gguf) plus its statistics file\n"
           "(OUT with .gguf replaced by .stats.gguf; see docs/stats-format.md). PowerInfer\n"
           "loads OUT too: a tied output is written as output.weight, a dReLU llama as its\n"
           "bamboo (PowerInfer's sparse kernels need F16 or Q4_0: hearth quantize OUT first).\n"
           "Mixtures of experts: counts how often each expert is routed and, inside ReLU-family\n"
           "experts, how often each neuron fires (the statistics file), and writes OUT (default\n"
           "MODEL.sparse.gguf) with the experts' down matrices transposed (ffn_down_exps_t), where\n"
           "--ffn exact reads only the firing neurons' down rows, and, for each expert routed at\n"
           "least 200 times, a predictor of its firing neurons (--ffn predicted then computes the\n"
           "gate only for them) where it reads fewer bytes than exact mode (--tokens: pairs per expert).\n\n"
           "  -m, --model FILE    model to calibrate\n"
           "  -f, --file FILE     calibration text\n"
           "  -o, --output FILE   PowerInfer file to write\n"
           "  --recall X          recall target of truly active neurons, held-out (default 0.99)\n"
           "  --max-rank R        largest predictor width tried (default 512)\n"
           "  --min-rank R        smallest predictor width tried (default 16; ranks double up to\n"
           "                      --max-rank, the one reading the fewest bytes per token wins)\n"
           "  --tokens N          (p, active set) pairs kept per layer for training (default 16384)\n"
           "  --epochs N          training passes per rank (default 6)\n"
           "  --predictor-type T  f16 or f32: the predictors' type (default: f32 for an F32 model,\n"
           "                      else f16; F16 halves their bytes at the same decisions: the rank\n"
           "                      search and the recall shift measure the rounded weights)\n"
           "  --predictor-form F  powerinfer (default: fc2 relu(fc1 x), the form PowerInfer runs) or\n"
           "                      linear (Hearth only, RMSNorm models): a truncated SVD of the\n"
           "                      deciding matrices, no training; for dReLU it estimates both gate x\n"
           "                      and up x and predicts a neuron where both pass, so far fewer\n"
           "                      needless neurons are computed (docs/threshold.md); with\n"
           "                      --target-sparsity --predictors it estimates gate x and predicts a\n"
           "                      neuron unless the estimate lies in the band around 0 where\n"
           "                      |act| stays under the threshold; ranks step by about 1.25x from\n"
           "                      --min-rank up to min(--max-rank, n_embd)\n"
           "  --min-precision P   linear form: the cheapest rank whose precision on held-out pairs\n"
           "                      reaches P (0 <= P <= 1; default 0: the cheapest rank)\n"
           "  -c, --ctx-size N    tokens per chunk, each from an empty cache (default 512)\n"
           "  -t, --threads N     threads (default: all cores)\n"
           "  --seed N            training seed (default 1)\n"
           "  --plot FILE.svg     activation-frequency plot\n"
           "  -v, --verbose       mixtures of experts: each expert's predictor, or why it has none\n\n"
           "Thresholds instead of predictors (any gated FFN: swiglu, geglu, reglu, drelu):\n"
           "  --target-sparsity S per layer, the threshold on |act(gate x)| under which a share S\n"
           "                      (0 <= S < 1) of neurons falls over the text, the model run densely;\n"
           "                      writes OUT (default MODEL.threshold.gguf) with the key\n"
           "                      hearth.ffn_threshold and ffn_down as ffn_down_t (--ffn threshold),\n"
           "                      and its statistics file (how often each neuron is above its\n"
           "                      threshold: hearth place and the GPU plan rank hot neurons by it)\n"
           "  --keep-down         keep ffn_down (llama.cpp still loads OUT; the down projection then\n"
           "                      runs dense)\n"
           "  --allocate          per-layer sparsities at the same average S instead of S everywhere:\n"
           "                      a greedy search (TEAL's) raises, step by step, the layer whose raise\n"
           "                      changes the model's next-token distributions least (mean KL from\n"
           "                      dense over the text's first tokens); uniform S is kept if it scores\n"
           "                      lower\n"
           "  --allocate-tokens N tokens the search scores (default 512)\n"
           "  --allocate-step X   share of one layer's neurons a step adds (default 0.05)\n"
           "  --predictors        also train one predictor per layer toward the neurons above the\n"
           "                      threshold (--recall, --max-rank, --tokens, --epochs, --seed as above)\n"
           "                      and write them into OUT, with OUT's statistics file (how often\n"
           "                      each neuron is above its threshold); --ffn predicted, OUT's default,\n"
           "                      then computes the gate only for predicted neurons (--predictor-form\n"
           "                      as above; calibrate says whether they read fewer bytes than the\n"
           "                      gate they spare)\n");
}

typedef struct {
    const char *phase;
    int layer, n_layer, last;
} bar;

static void progress(void *ud, const char *phase, double frac) {
    bar *b = ud;
    double total = b->n_layer > 0 ? (b->layer + frac) / b->n_layer : frac;
    int pct = (int)(total * 100 + 0.5);
    const char *pre = hr_progress_step(&b->last, pct, phase != b->phase);
    if (!pre) return;
    b->phase = phase;
    int fill = pct * 30 / 100;
    fprintf(stderr, "%s%-9s [%.*s%*s] %3d%%", pre, phase, fill, "##############################", 30 - fill, "", pct);
    if (pct >= 100 || !hr_progress_tty()) fprintf(stderr, "\n");
    fflush(stderr);
}

static int parse(int argc, char **argv, cal_opts *o) {
    const char *cmd = "calibrate";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return help(), 1;
        if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            o->verbose = true;
            continue;
        }
        if (!strcmp(a, "--keep-down") || !strcmp(a, "--allocate") || !strcmp(a, "--predictors")) {
            if (!strcmp(a, "--keep-down")) o->keep_down = true;
            else if (!strcmp(a, "--allocate")) o->allocate = true;
            else o->predictors = true;
            continue;
        }
        if (!hr_arg_need(cmd, argc, argv, i)) return -1;
        const char *v = argv[++i];
        bool ok = true;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) o->model = v;
        else if (!strcmp(a, "-f") || !strcmp(a, "--file")) o->text = v;
        else if (!strcmp(a, "-o") || !strcmp(a, "--output")) o->out = v;
        else if (!strcmp(a, "--plot")) o->plot = v;
        else if (!strcmp(a, "--target-sparsity")) {
            ok = hr_arg_float(cmd, a, v, 0, 1, &o->target);
            if (ok && o->target >= 1) return hr_usage_error(cmd, "--target-sparsity %g: it must be below 1", o->target), -1;
        } else if (!strcmp(a, "--allocate-tokens")) ok = hr_arg_long(cmd, a, v, 1, 1L << 24, &o->alloc_tokens);
        else if (!strcmp(a, "--allocate-step")) ok = hr_arg_float(cmd, a, v, 1e-4, 0.5, &o->alloc_step);
        else if (!strcmp(a, "--predictor-form")) {
            if (!strcmp(v, "linear") || !strcmp(v, "powerinfer")) o->linear = v[0] == 'l';
            else return hr_usage_error(cmd, "--predictor-form '%s': powerinfer or linear", v), -1;
        } else if (!strcmp(a, "--min-precision")) ok = hr_arg_float(cmd, a, v, 0, 1, &o->min_precision);
        else if (!strcmp(a, "--predictor-type")) {
            if (!strcmp(v, "f16") || !strcmp(v, "f32")) o->pred_f16 = v[1] == '1';
            else return hr_usage_error(cmd, "--predictor-type '%s': f16 or f32", v), -1;
        } else if (!strcmp(a, "--recall")) ok = hr_arg_float(cmd, a, v, 1e-6, 1.0, &o->recall);
        else if (!strcmp(a, "--max-rank")) ok = hr_arg_long(cmd, a, v, 4, 1L << 16, &o->max_rank);
        else if (!strcmp(a, "--min-rank")) ok = hr_arg_long(cmd, a, v, 4, 1L << 16, &o->min_rank);
        else if (!strcmp(a, "--tokens")) ok = hr_arg_long(cmd, a, v, 10, 1L << 30, &o->pairs);
        else if (!strcmp(a, "--epochs")) ok = hr_arg_long(cmd, a, v, 1, 1000, &o->epochs);
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) ok = hr_arg_long(cmd, a, v, 1, 512, &o->threads);
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) ok = hr_arg_long(cmd, a, v, 2, 1L << 20, &o->n_ctx);
        else if (!strcmp(a, "--seed")) ok = hr_arg_u64(cmd, a, v, &o->seed);
        else return hr_usage_error(cmd, "unknown flag '%s'", a), -1;
        if (!ok) return -1;
    }
    if (!o->model) return hr_usage_error(cmd, "a model is required (-m FILE)"), -1;
    if (!o->text) return hr_usage_error(cmd, "a calibration text is required (-f FILE)"), -1;
    if (o->pred_f16 >= 0 && o->target >= 0 && !o->predictors)
        return hr_usage_error(cmd, "--predictor-type with --target-sparsity needs --predictors"), -1;
    if (o->keep_down && o->target < 0) return hr_usage_error(cmd, "--keep-down needs --target-sparsity"), -1;
    if (o->linear && o->target >= 0 && !o->predictors)
        return hr_usage_error(cmd, "--predictor-form with --target-sparsity needs --predictors"), -1;
    if (o->min_precision > 0 && !o->linear) return hr_usage_error(cmd, "--min-precision needs --predictor-form linear"), -1;
    if (o->predictors && o->target < 0)
        return hr_usage_error(cmd, "--predictors needs --target-sparsity (ReLU-family models get predictors without it)"), -1;
    if ((o->allocate || o->alloc_tokens || o->alloc_step > 0) && o->target < 0)
        return hr_usage_error(cmd, "--allocate needs --target-sparsity"), -1;
    if ((o->alloc_tokens || o->alloc_step > 0) && !o->allocate)
        return hr_usage_error(cmd, "--allocate-tokens and --allocate-step need --allocate"), -1;
    return 0;
}

/* Bytes of one predictor's tensors as written. */
static uint64_t pred_bytes(const hr_predictor *p, bool f16) {
    const uint64_t rows = (uint64_t)(p->m ? p->m : 1) * (uint64_t)p->n_ff;
    return (uint64_t)p->r * ((uint64_t)p->n_embd + rows) * (f16 ? 2 : 4) + (p->bias ? 4 * rows * (p->band ? 2 : 1) : 0);
}

static void print_table(const hr_stats *s, const hr_predictor *p, bool f16) {
    printf("%5s %8s %8s %8s %9s %5s %12s\n", "layer", "fired", "sparsity", "recall", "precision", "r", "pred bytes");
    double nt = s->n_tokens ? (double)s->n_tokens : 1;
    for (int32_t l = 0; l < s->n_layer; l++) {
        double sum = 0;
        for (int32_t j = 0; j < s->n_ff; j++) sum += s->counts[(size_t)l * s->n_ff + j];
        double fired = sum / nt / s->n_ff;
        printf("%5d %7.2f%% %7.2f%% %7.2f%% %8.2f%% %5d %12llu\n", l, 100 * fired, 100 * (1 - fired), 100 * p[l].recall,
               100 * p[l].precision, p[l].r, (unsigned long long)pred_bytes(&p[l], f16));
    }
}

/* neuron_bytes: what one predicted neuron reads (the rank search's trade-off); thr: a
 * threshold file's thresholds (the linear form then tests the gate estimate against the band
 * each one leaves dead), else NULL. */
static int train_all(hearth_model *m, const hr_pairs *pairs, const cal_opts *o, bool f16, double neuron_bytes, const float *thr,
                     hr_predictor *preds, hr_err *e) {
    hr_cpu cpu;
    long nt = o->threads ? o->threads : sysconf(_SC_NPROCESSORS_ONLN);
    if (hr_cpu_init(&cpu, nt > 0 ? (int)nt : 1, e)) return -1;
    bar b = {NULL, 0, pairs->n_layer, -1};
    hr_pred_opts po = {.recall = o->recall, .max_rank = (int32_t)o->max_rank, .min_rank = (int32_t)o->min_rank, .epochs = (int32_t)o->epochs, .f16 = f16,
                       .ffn_neuron_bytes = neuron_bytes, .seed = o->seed, .min_precision = o->min_precision,
                       .rms_eps = hr_calib_rms_eps(m), .progress = progress, .progress_ud = &b};
    int rc = 0;
    for (int32_t l = 0; l < pairs->n_layer && !rc; l++) {
        b.layer = l;
        po.band = o->linear && thr;
        if (po.band && hr_thr_band(m, thr[l], &po.band_lo, &po.band_hi, e)) rc = -1;
        float *G = rc ? NULL : o->linear && !thr ? hr_calib_deciders(m, l, e) : hr_calib_decider(m, l, e);
        if (!G) rc = -1;
        const float *P = pairs->p + (size_t)l * (size_t)pairs->cap * (size_t)pairs->n_embd;
        const uint8_t *M = pairs->mask + (size_t)l * (size_t)pairs->cap * pairs->mask_bytes;
        const int32_t nd = thr ? 1 : hr_calib_n_deciders(m);
        if (!rc && (o->linear ? hr_predictor_fit_linear(&cpu, P, M, pairs->n, pairs->n_embd, pairs->n_ff, G, nd, &po, &preds[l], e)
                              : hr_predictor_train(&cpu, P, M, pairs->n, pairs->n_embd, pairs->n_ff, G, &po, &preds[l], e)))
            rc = hr_errctx(e, "layer %d", l);
        free(G);
    }
    hr_cpu_free(&cpu);
    return rc;
}

static int write_outputs(hearth_model *m, hr_stats *s, hr_predictor *p, bool f16, const cal_opts *o, hr_err *e) {
    char spath[4096];
    if (hr_stats_path(o->out, spath, sizeof spath)) return hr_errf(e, "output path too long");
    s->recall = malloc(sizeof(float) * (size_t)s->n_layer), s->precision = malloc(sizeof(float) * (size_t)s->n_layer);
    s->rank = malloc(sizeof(uint32_t) * (size_t)s->n_layer);
    if (!s->recall || !s->precision || !s->rank) return hr_errf(e, "out of memory");
    for (int32_t l = 0; l < s->n_layer; l++) s->recall[l] = p[l].recall, s->precision[l] = p[l].precision, s->rank[l] = (uint32_t)p[l].r;
    const char *base = strrchr(o->out, '/');
    snprintf(s->model, sizeof s->model, "%s", base ? base + 1 : o->out);
    if (hr_write_powerinfer(m, p, f16, o->out, e) || hr_stats_write(spath, s, e)) return -1;
    if (o->plot && hr_plot_svg(s, o->plot, e)) return -1;
    fprintf(stderr, "wrote %s and %s%s%s\n", o->out, spath, o->plot ? " and " : "", o->plot ? o->plot : "");
    return 0;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* F16 predictors: as --predictor-type says, else unless the weights are F32. */
static bool pred_f16(const cal_opts *o, const hearth_model *m) {
    return o->pred_f16 >= 0 ? o->pred_f16 == 1 : hearth_model_get_info(m)->weight_type != HR_F32;
}

static int calibrate(hearth_model *m, const int32_t *toks, size_t n, const cal_opts *o, hr_err *e) {
    const hearth_model_info *info = hearth_model_get_info(m);
    bool f16 = pred_f16(o, m);
    hr_collect_opts co = {(int32_t)o->n_ctx, (int32_t)o->threads, o->pairs, hearth_token_bos(m), progress, NULL};
    bar b = {NULL, 0, 0, -1};
    co.progress_ud = &b;
    if (hr_calib_is_moe(m)) { /* mixtures of experts: counts and the transposed-down file (moe_calibrate.c) */
        if (o->pred_f16 >= 0) return hr_errf(e, "--predictor-type is for dense models (experts' predictors take the weights' type)");
        if (o->linear) return hr_errf(e, "--predictor-form linear is for dense models (experts' predictors are PowerInfer's form)");
        char moe_out[4096];
        size_t l = strlen(o->model);
        if (l >= 5 && !strcmp(o->model + l - 5, ".gguf")) l -= 5;
        snprintf(moe_out, sizeof moe_out, "%.*s.sparse.gguf", (int)l, o->model);
        const hr_moe_cal_opts mo = {o->recall, (int32_t)o->max_rank, (int32_t)o->epochs, (int32_t)o->threads, o->pairs, o->seed, false, o->verbose};
        return hr_calibrate_moe(m, toks, n, o->out_default ? moe_out : o->out, &co, &mo, e);
    }
    if (o->linear && hr_calib_linear_check(m, e)) return -1;
    hr_stats s;
    hr_pairs pairs;
    fprintf(stderr, "calibrate: %zu tokens, chunks of %ld, %s FFN, %d layers x %d neurons\n", n, o->n_ctx, info->ffn_act,
            info->n_layer, info->n_ff);
    double t0 = now();
    if (hr_calib_collect(m, toks, (int64_t)n, &co, &s, &pairs, e)) return -1;
    double t1 = now();
    fprintf(stderr, "calibrate: counted %llu tokens in %.1f s; %lld (p, active set) pairs per layer\n",
            (unsigned long long)s.n_tokens, t1 - t0, (long long)pairs.n);
    hr_predictor *preds = calloc((size_t)s.n_layer, sizeof *preds);
    int rc = preds ? train_all(m, &pairs, o, f16, hr_calib_neuron_bytes(m), NULL, preds, e) : hr_errf(e, "out of memory");
    if (!rc) fprintf(stderr, "calibrate: trained %d predictors in %.1f s\n", s.n_layer, now() - t1);
    if (!rc) print_table(&s, preds, f16);
    if (!rc) rc = write_outputs(m, &s, preds, f16, o, e);
    for (int32_t l = 0; preds && l < s.n_layer; l++) hr_predictor_free(&preds[l]);
    free(preds);
    hr_pairs_free(&pairs);
    hr_stats_free(&s);
    return rc;
}

/* --allocate: the search, then its table (allocated share and threshold per layer). */
static int allocate(hearth_model *m, const int32_t *toks, size_t n, const cal_opts *o, const hr_collect_opts *co, float *thr,
                    hr_err *e) {
    const int32_t nl = hearth_model_get_info(m)->n_layer;
    hr_thr_alloc a = {.eval_tokens = (int32_t)o->alloc_tokens, .step = o->alloc_step};
    a.share = malloc(sizeof(float) * (size_t)(nl ? nl : 1));
    double t0 = now();
    int rc = a.share ? hr_calib_thresholds_alloc(m, toks, (int64_t)n, co, o->target, &a, thr, e) : hr_errf(e, "out of memory");
    if (!rc) {
        double mean = 0;
        for (int32_t l = 0; l < nl; l++) mean += a.share[l] / (nl ? nl : 1);
        fprintf(stderr, "calibrate: allocated in %.1f s (%lld evaluations of %d positions): mean KL from dense %.5g uniform, %.5g allocated%s\n",
                now() - t0, (long long)a.n_evals, a.n_scored, a.kl_uniform, a.kl_alloc,
                a.kept_uniform ? " (uniform scored lower: kept)" : "");
        printf("%5s %9s %12s\n", "layer", "sparsity", "threshold");
        for (int32_t l = 0; l < nl; l++) printf("%5d %9.4f %12.6g\n", l, (double)a.share[l], (double)thr[l]);
        printf("%5s %9.4f\n", "mean", mean);
    }
    free(a.share);
    return rc;
}

/* What a threshold file's predictors buy: per token, their bytes and the gate rows of the
 * neurons they predict (test pairs) against the whole gate that threshold mode reads. */
static void print_gate_trade(const hr_predictor *p, int32_t n_layer, bool f16, double gate_row) {
    double pred = 0, gate = 0;
    for (int32_t l = 0; l < n_layer; l++) {
        pred += (double)pred_bytes(&p[l], f16) + p[l].pred_frac * p[l].n_ff * gate_row;
        gate += p[l].n_ff * gate_row;
    }
    fprintf(stderr, "calibrate: per token, predictors and the gate rows they select read %.1f KiB, the whole gate %.1f KiB: %s\n",
            pred / 1024, gate / 1024,
            pred < gate ? "--ffn predicted (the file's default) reads fewer bytes"
                        : "the predictors do not pay on this model; run the file with --ffn threshold");
}

/* --predictors: pairs labelled by the thresholds, one predictor per layer (a predicted
 * neuron reads its gate row, then up and down only above the threshold: the gate row is
 * what the rank search trades against), the file and its statistics. */
static int thr_predictors(hearth_model *m, const int32_t *toks, size_t n, const cal_opts *o, hr_collect_opts *co, const float *thr,
                          hr_err *e) {
    const bool f16 = pred_f16(o, m);
    hr_stats s;
    hr_pairs pairs;
    co->max_pairs = o->pairs;
    double t0 = now();
    if (hr_calib_collect_thr(m, toks, (int64_t)n, co, thr, &s, &pairs, e)) return -1;
    double t1 = now();
    fprintf(stderr, "calibrate: %lld (p, set above threshold) pairs per layer in %.1f s\n", (long long)pairs.n, t1 - t0);
    hr_predictor *preds = calloc((size_t)s.n_layer + 1, sizeof *preds);
    int rc = preds ? train_all(m, &pairs, o, f16, hr_calib_gate_row_bytes(m), thr, preds, e) : hr_errf(e, "out of memory");
    char spath[4096];
    if (!rc && hr_stats_path(o->out, spath, sizeof spath)) rc = hr_errf(e, "output path too long");
    if (!rc) {
        fprintf(stderr, "calibrate: trained %d predictors in %.1f s\n", s.n_layer, now() - t1);
        print_table(&s, preds, f16);
        print_gate_trade(preds, s.n_layer, f16, hr_calib_gate_row_bytes(m));
        s.recall = malloc(sizeof(float) * (size_t)s.n_layer), s.precision = malloc(sizeof(float) * (size_t)s.n_layer);
        s.rank = malloc(sizeof(uint32_t) * (size_t)s.n_layer);
        if (!s.recall || !s.precision || !s.rank) rc = hr_errf(e, "out of memory");
        for (int32_t l = 0; !rc && l < s.n_layer; l++)
            s.recall[l] = preds[l].recall, s.precision[l] = preds[l].precision, s.rank[l] = (uint32_t)preds[l].r;
        const char *base = strrchr(o->out, '/');
        snprintf(s.model, sizeof s.model, "%s", base ? base + 1 : o->out);
    }
    if (!rc) rc = hr_write_thresholds_pred(m, thr, !o->keep_down, preds, f16, o->out, e) || hr_stats_write(spath, &s, e) ? -1 : 0;
    if (!rc) fprintf(stderr, "wrote %s (run it with --ffn predicted, the default for it, or --ffn threshold) and %s\n", o->out, spath);
    for (int32_t l = 0; preds && l < s.n_layer; l++) hr_predictor_free(&preds[l]);
    free(preds);
    hr_pairs_free(&pairs);
    hr_stats_free(&s);
    return rc;
}

/* Without --predictors: the file, then its statistics (OUT.stats.gguf: how often each neuron
 * was above its layer's threshold, from a second dense pass), which `hearth place` and the
 * GPU plan rank hot neurons by. */
static int thr_file_stats(hearth_model *m, const int32_t *toks, size_t n, const cal_opts *o, hr_collect_opts *co,
                          const float *thr, hr_err *e) {
    char spath[4096];
    if (hr_stats_path(o->out, spath, sizeof spath)) return hr_errf(e, "output path too long");
    if (hr_write_thresholds(m, thr, !o->keep_down, o->out, e)) return -1;
    hr_stats s;
    hr_pairs pairs;
    co->max_pairs = 1; /* the counts cover every token; no pairs are needed */
    const double t0 = now();
    if (hr_calib_collect_thr(m, toks, (int64_t)n, co, thr, &s, &pairs, e)) return -1;
    const char *base = strrchr(o->out, '/');
    snprintf(s.model, sizeof s.model, "%s", base ? base + 1 : o->out);
    int rc = hr_stats_write(spath, &s, e);
    if (!rc)
        fprintf(stderr, "calibrate: counted neurons above threshold in %.1f s\nwrote %s (run it with --ffn threshold, the default for it) and %s\n",
                now() - t0, o->out, spath);
    hr_pairs_free(&pairs);
    hr_stats_free(&s);
    return rc;
}

/* --target-sparsity: per-layer thresholds from the dense run, then the file. */
static int calibrate_thresholds(hearth_model *m, const int32_t *toks, size_t n, const cal_opts *o, hr_err *e) {
    const hearth_model_info *info = hearth_model_get_info(m);
    hr_collect_opts co = {(int32_t)o->n_ctx, (int32_t)o->threads, 0, hearth_token_bos(m), progress, NULL};
    bar b = {NULL, 0, 0, -1};
    co.progress_ud = &b;
    fprintf(stderr, "calibrate: %zu tokens, chunks of %ld, %s FFN, %d layers x %d neurons, target sparsity %g%s\n", n, o->n_ctx,
            info->ffn_act, info->n_layer, info->n_ff, o->target, o->allocate ? ", allocated per layer" : "");
    float *thr = malloc(sizeof(float) * (size_t)(info->n_layer ? info->n_layer : 1));
    double t0 = now();
    int rc = !thr ? hr_errf(e, "out of memory") : o->allocate ? allocate(m, toks, n, o, &co, thr, e)
                                                               : hr_calib_thresholds(m, toks, (int64_t)n, &co, o->target, thr, e);
    if (!rc && !o->allocate) {
        fprintf(stderr, "calibrate: measured %zu tokens in %.1f s\n", n, now() - t0);
        printf("%5s %12s\n", "layer", "threshold");
        for (int32_t l = 0; l < info->n_layer; l++) printf("%5d %12.6g\n", l, (double)thr[l]);
    }
    if (!rc) rc = o->predictors ? thr_predictors(m, toks, n, o, &co, thr, e) : thr_file_stats(m, toks, n, o, &co, thr, e);
    free(thr);
    return rc;
}

int hr_cmd_calibrate(int argc, char **argv) {
    cal_opts o = {.recall = 0.99, .target = -1, .pred_f16 = -1, .max_rank = 512, .pairs = 16384, .n_ctx = 512, .seed = 1};
    int pr = parse(argc, argv, &o);
    if (pr) return pr > 0 ? 0 : 2;
    char out_buf[4096];
    if (!o.out) {
        size_t l = strlen(o.model);
        if (l >= 5 && !strcmp(o.model + l - 5, ".gguf")) l -= 5;
        snprintf(out_buf, sizeof out_buf, "%.*s.%s.gguf", (int)l, o.model, o.target >= 0 ? "threshold" : "powerinfer");
        o.out = out_buf, o.out_default = true;
    }
    size_t len = 0;
    hr_err fe = {{0}};
    char *text = hr_text_file(o.text, 0, &len, &fe);
    if (!text) {
        fprintf(stderr, "hearth calibrate: %s\n", fe.msg);
        return 1;
    }
    hr_err e = {{0}};
    hearth_model *m = hearth_model_load(o.model, NULL, &e);
    int32_t *toks = NULL;
    size_t n = 0;
    int rc = 1;
    if (m && !hearth_tokenize(m, text, len, false, false, &toks, &n, &e)) {
        if (n < 1) snprintf(e.msg, sizeof e.msg, "the text '%s' has no tokens", o.text);
        else if (!(o.target >= 0 ? calibrate_thresholds(m, toks, n, &o, &e) : calibrate(m, toks, n, &o, &e))) rc = 0;
    }
    if (rc) fprintf(stderr, "hearth calibrate: %s\n", e.msg);
    free(toks), free(text);
    hearth_model_free(m);
    return rc;
}
