#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "text_file.h"
#include "cli.h"
#include "run_opts.h"
#include "grammar_opts.h"

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
    else if (!strcmp(v, "threshold")) *out = HEARTH_FFN_THRESHOLD;
    else if (!strcmp(v, "auto")) *out = HEARTH_FFN_AUTO;
    else {
        fprintf(stderr, "hearth %s: --ffn: mode '%s' is unknown (dense, exact, predicted, threshold, auto)\n", cmd, v);
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
    static const char *const f[] = {"--gpu", "--gpu-device", "-mg", "--main-gpu", "--vram-budget", "-ngl", "--n-gpu-layers",
                                    "--gpu-layers", "--gpu-index", "--reset-gpu-index", "--disable-gpu-index", "-cmoe",
                                    "--cpu-moe", "-ncmoe", "--n-cpu-moe", "--moe-cache", "--moe-cache-policy", NULL};
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

/* -ngl 0 is llama.cpp's "nothing on the GPU", which --gpu cuda or standin contradicts. */
static int ngl_conflict(const char *cmd, const hr_run_opts *o) {
    if (!o->ngl_zero || !o->gpu_mode_set || o->cp.gpu == HEARTH_GPU_OFF || o->cp.gpu == HEARTH_GPU_AUTO) return 1;
    fprintf(stderr, "hearth %s: -ngl 0 puts nothing on the GPU, which contradicts --gpu %s\n", cmd,
            o->cp.gpu == HEARTH_GPU_CUDA ? "cuda" : "standin");
    return -1;
}

/* -ngl N | auto | all: N > 0 the first N whole layers, 0 none (the CPU only), auto (the
 * default) Hearth's own plan, all every layer and the output. */
static int ngl_flag(const char *cmd, const char *a, const char *v, hr_run_opts *o) {
    long l;
    if (!strcmp(v, "auto")) l = 0;
    else if (!strcmp(v, "all")) l = 1 << 20;
    else if (!hr_arg_long(cmd, a, v, 0, 1 << 20, &l)) return -1;
    o->ngl_zero = !strcmp(v, "0") || (l == 0 && strcmp(v, "auto"));
    o->cp.n_gpu_layers = (int32_t)l;
    if (o->ngl_zero) {
        if (!o->gpu_mode_set || o->cp.gpu == HEARTH_GPU_AUTO) o->cp.gpu = HEARTH_GPU_OFF;
    } else {
        if (!o->gpu_mode_set) o->cp.gpu = HEARTH_GPU_AUTO; /* a later -ngl undoes an earlier 0 */
        o->gpu_asked |= l > 0;
    }
    return ngl_conflict(cmd, o);
}

/* GPU flags; v is the value of the valued ones. */
static int gpu_flag(const char *cmd, const char *a, const char *v, hr_run_opts *o) {
    long l;
    double f;
    if (is(a, "--gpu", NULL)) {
        if (hr_arg_gpu_mode(cmd, v, &o->cp.gpu) < 0) return -1;
        o->gpu_mode_set = true;
        o->gpu_asked |= o->cp.gpu == HEARTH_GPU_CUDA || o->cp.gpu == HEARTH_GPU_STANDIN;
        if (o->ngl_zero && o->cp.gpu == HEARTH_GPU_AUTO) o->cp.gpu = HEARTH_GPU_OFF;
        return ngl_conflict(cmd, o);
    }
    if (is(a, "-ngl", "--n-gpu-layers") || is(a, "--gpu-layers", NULL)) return ngl_flag(cmd, a, v, o);
    if (is(a, "--gpu-device", "-mg") || is(a, "--main-gpu", NULL)) { if (!hr_arg_long(cmd, a, v, 0, 255, &l)) return -1; o->cp.gpu_device = (int32_t)l; }
    else if (is(a, "--vram-budget", NULL)) { if (!hr_arg_float(cmd, a, v, 0, 1e6, &f)) return -1; o->cp.vram_budget_gib = f; }
    else if (is(a, "--gpu-index", NULL)) o->cp.gpu_index_path = v, o->gpu_index_explicit = true;
    else if (is(a, "-ncmoe", "--n-cpu-moe")) { /* llama.cpp's: the experts of the first N layers on the host */
        if (!hr_arg_long(cmd, a, v, 0, 1 << 20, &l)) return -1;
        o->cp.n_cpu_moe = (int32_t)l;
        return 1; /* keeps experts off the device: asks for no GPU (as --cpu-moe) */
    } else if (is(a, "--moe-cache", NULL)) { /* the dynamic expert cache: N slots per MoE layer */
        if (!hr_arg_long(cmd, a, v, 0, 1 << 16, &l)) return -1;
        o->cp.moe_cache = (int32_t)l;
    } else if (is(a, "--moe-cache-policy", NULL)) {
        if (strcmp(v, "lru") && strcmp(v, "lfru") && strcmp(v, "static")) {
            fprintf(stderr, "hearth %s: --moe-cache-policy: '%s' is not one of lru, lfru, static\n", cmd, v);
            return -1;
        }
        o->cp.moe_cache_policy = v;
    }
    o->gpu_asked = true;
    return 1;
}

/* llama.cpp flags that mean nothing in Hearth: refused with the reason, never ignored. */
typedef struct refused_flag {
    const char *names; /* space-separated spellings */
    bool valued;
    const char *why;
} refused_flag;

static const refused_flag refused[] = {
    {"--rope-scaling --rope-scale --rope-freq-base --rope-freq-scale", true,
     "read from the file in Hearth (rope.freq_base, rope.scaling.*)"},
    {"--yarn-orig-ctx --yarn-ext-factor --yarn-attn-factor --yarn-beta-slow --yarn-beta-fast", true,
     "YaRN is read from the file in Hearth (rope.scaling.*)"},
    {"-gan --grp-attn-n -gaw --grp-attn-w", true, "Hearth has no self-extend; the context ends at -c"},
    {"--keep", true, "Hearth does not shift the context: generation stops when it is full"},
    {"--context-shift", false, "Hearth does not shift the context: generation stops when it is full"},
    {"-nkvo --no-kv-offload -kvo --kv-offload", false, "the GPU plan keeps each layer's KV cache with its attention (docs/hybrid.md)"},
    {"-sm --split-mode -ts --tensor-split", true, "Hearth uses one GPU (--gpu-device N)"},
    {"-dev --device", true, "choose with --gpu off|cuda|standin and --gpu-device N"},
    {"-ot --override-tensor", true, "placement is the GPU plan's (--vram-budget, -ngl, the GPU index)"},
    {"--numa", true, "Hearth does not place memory by NUMA node"},
    {"--lora --lora-scaled --control-vector --control-vector-scaled", true, "adapters are not supported in Hearth"},
    {"-mm --mmproj", true, "Hearth has no multimodal models"},
    {"-hf -hfr --hf-repo -hff --hf-file -mu --model-url", true, "Hearth does not download models: give a local GGUF file with -m"},
    {"--mirostat --mirostat-lr --mirostat-ent --typical --typical-p --xtc-probability --xtc-threshold --dry-multiplier "
     "--dry-base --dry-allowed-length --dry-penalty-last-n --presence-penalty --frequency-penalty --dynatemp-range "
     "--dynatemp-exp --top-nsigma -l --logit-bias --samplers --sampler-seq",
     true, "Hearth samples with repeat penalty, top-k, top-p, min-p and temperature only"},
    {"--override-kv", true, "Hearth reads metadata only from the file"},
    {"--jinja --no-jinja", false, "Hearth renders chat templates by family (--chat-template NAME), without a Jinja engine"},
    {"--chat-template-file", true, "Hearth renders chat templates by family (--chat-template NAME), without a Jinja engine"},
    {"-C --cpu-mask -Cr --cpu-range --cpu-strict --prio --poll -Cb --cpu-mask-batch -Crb --cpu-range-batch --cpu-strict-batch "
     "--prio-batch --poll-batch",
     true, "Hearth's thread pool sets no CPU affinity, priority or polling"},
};

static bool names_has(const char *names, const char *a) {
    size_t n = strlen(a);
    for (const char *p = names; *p;) {
        const char *q = strchr(p, ' ');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        if (len == n && !memcmp(p, a, n)) return true;
        p += len + (q != NULL);
    }
    return false;
}

/* 1 and *why when a is a refused flag. */
static const refused_flag *find_refused(const char *a) {
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++)
        if (names_has(refused[k].names, a)) return &refused[k];
    return NULL;
}

/* -fa's values as llama.cpp spells them; *out -1 auto, 0 off, 1 on; false if v is none. */
static bool fa_value(const char *v, int *out) {
    static const char *const on[] = {"on", "enabled", "true", "1", NULL}, *const off[] = {"off", "disabled", "false", "0", NULL};
    for (int k = 0; on[k]; k++)
        if (!strcmp(v, on[k])) return *out = 1, true;
    for (int k = 0; off[k]; k++)
        if (!strcmp(v, off[k])) return *out = 0, true;
    if (!strcmp(v, "auto")) return *out = -1, true;
    return false;
}

/* One sampling field, then the sampler's own range check with the flag's name. */
static int sampler_flag(const char *cmd, const char *a, const char *v, hr_run_opts *o) {
    long l;
    double f;
    hr_sampler_params sp = o->sp;
    bool is_int = is(a, "--top-k", "--repeat-last-n");
    if (is_int ? !hr_arg_long(cmd, a, v, -(1L << 30), 1L << 30, &l) : !hr_arg_float(cmd, a, v, -1e30, 1e30, &f)) return -1;
    if (is(a, "--temp", "--temperature")) sp.temp = (float)f;
    else if (is(a, "--top-k", NULL)) sp.top_k = (int32_t)l;
    else if (is(a, "--top-p", NULL)) sp.top_p = (float)f;
    else if (is(a, "--min-p", NULL)) sp.min_p = (float)f;
    else if (is(a, "--repeat-penalty", NULL)) sp.repeat_penalty = (float)f;
    else sp.repeat_last_n = (int32_t)l;
    hr_err e = {{0}};
    if (hr_sampler_params_check(&sp, &e)) {
        const char *colon = strchr(e.msg, ':');
        fprintf(stderr, "hearth %s: %s:%s\n", cmd, a, colon ? colon + 1 : e.msg);
        return -1;
    }
    o->sp = sp;
    return 1;
}

static int seed_flag(const char *cmd, const char *a, const char *v, hr_run_opts *o) {
    uint64_t u;
    if (!strcmp(v, "-1")) return 1; /* llama.cpp's "random": the time-based default stays */
    if (!hr_arg_u64(cmd, a, v, &u)) return -1;
    o->sp.seed = u, o->seed_set = true;
    return 1;
}

static int batch_flag(const char *cmd, const char *a, const char *v, hr_run_opts *o) {
    long l;
    if (!hr_arg_long(cmd, a, v, 1, 1 << 16, &l)) return -1;
    *(is(a, "-b", "--batch-size") ? &o->batch_flag : &o->ubatch_flag) = (int32_t)l;
    /* Hearth's n_batch is the chunk a prompt is evaluated in: llama.cpp's physical batch */
    int32_t b = o->batch_flag, ub = o->ubatch_flag;
    o->cp.n_batch = b && ub ? (b < ub ? b : ub) : b ? b : ub;
    return 1;
}

const char *hr_pages_hint(int64_t huge, uint64_t file_bytes) {
    return (double)huge < 0.5 * (double)file_bytes
               ? " (the rest in 4 KiB pages, slower to decode; --no-mmap reads it into 2 MiB pages: docs/performance.md)"
               : "";
}

hearth_model_params hr_run_model_params(const hr_run_opts *o) {
    /* auto mode with no device answering runs on the CPU: ask the driver before loading,
     * since bundles and device placement exclude each other */
    const bool cpu_only = o->cp.gpu == HEARTH_GPU_OFF || o->ngl_zero ||
                          (o->cp.gpu == HEARTH_GPU_AUTO && !o->gpu_asked && hearth_gpu_count(NULL) == 0);
    const bool predicted = o->cp.ffn_mode == HEARTH_FFN_AUTO || o->cp.ffn_mode == HEARTH_FFN_PREDICTED;
    hearth_model_params mp = o->mp;
    mp.ffn_bundle = !o->no_repack && cpu_only && predicted;
    return mp;
}

void hr_print_repack(FILE *f, const char *label, const hearth_model *m) {
    size_t bytes = 0;
    const int32_t bundled = hearth_model_bundled_layers(m, &bytes);
    if (bundled)
        fprintf(f, "%s%d of %d layers' FFN rows bundled per neuron (%.1f MiB; -nr keeps the file's layout)\n", label,
                (int)bundled, hearth_model_get_info(m)->n_layer, bytes / 1048576.0);
}

/* Flags without a value. Returns 1 if a is one, else 0. */
static int switch_flag(const char *cmd, int argc, char **argv, int *i, hr_run_opts *o) {
    const char *a = argv[*i];
    if (!strcmp(a, "--stats")) o->cp.ffn_stats = true;
    else if (!strcmp(a, "--reset-gpu-index") || !strcmp(a, "--disable-gpu-index"))
        *(a[2] == 'r' ? &o->cp.reset_gpu_index : &o->cp.disable_gpu_index) = true, o->gpu_asked = true;
    else if (is(a, "-cmoe", "--cpu-moe")) o->cp.n_cpu_moe = 1 << 20; /* llama.cpp's: every expert on the host */
    else if (!strcmp(a, "--no-mmap")) o->mp.no_mmap = true;
    else if (!strcmp(a, "--mmap")) o->mp.no_mmap = false;
    else if (!strcmp(a, "--mlock")) o->mp.mlock = true;
    else if (is(a, "-nr", "--no-repack")) o->no_repack = true;
    else if (!strcmp(a, "--no-warmup")) {} /* Hearth does no warm-up run */
    else if (is(a, "-fa", "--flash-attn")) {
        /* the value is optional, as older llama.cpp builds took -fa alone */
        if (*i + 1 < argc && fa_value(argv[*i + 1], &o->flash_attn)) ++*i;
        else o->flash_attn = 1;
        (void)cmd;
    } else return 0;
    return 1;
}

char *hr_run_schema_gbnf(const hr_run_opts *o, hr_err *e) {
    const char *v = o->json_schema;
    bool file = o->json_schema_file || v[0] == '@';
    if (!file) return hr_json_schema_to_gbnf(v, strlen(v), e);
    const char *path = o->json_schema_file ? v : v + 1;
    /* one byte over the converter's limit is enough for it to refuse the size */
    size_t n = 0;
    char *buf = hr_text_file(path, (2u << 20) + 1, &n, e);
    if (!buf) return hr_errctx(e, "json schema"), NULL;
    char *g = hr_json_schema_to_gbnf(buf, n, e);
    free(buf);
    return g;
}

/* -j/--json-schema TEXT|@FILE and -jf/--json-schema-file FILE (llama.cpp's names), for run and
 * chat: converted here so that a bad schema fails before the model loads; the grammar path
 * (cli/grammar_opts.c) converts it again when it builds the sampler. */
static int json_schema_flag(const char *cmd, int argc, char **argv, int *i, hr_run_opts *o) {
    const char *a = argv[*i];
    bool text = is(a, "-j", "--json-schema"), file = is(a, "-jf", "--json-schema-file");
    bool gram = is(a, "--grammar", "--grammar-file");
    if ((!text && !file && !(gram && o->json_schema)) || (strcmp(cmd, "run") && strcmp(cmd, "chat"))) return 0;
    if (gram || o->json_schema || o->grammar || o->grammar_file) {
        fprintf(stderr, "hearth %s: give one of --grammar, --grammar-file, --json-schema\n", cmd);
        return -1;
    }
    if (!hr_arg_need(cmd, argc, argv, *i)) return -1;
    o->json_schema = argv[++*i], o->json_schema_file = file;
    hr_err e = {{0}};
    char *g = hr_run_schema_gbnf(o, &e);
    if (!g) {
        fprintf(stderr, "hearth %s: %s\n", cmd, e.msg);
        return -1;
    }
    free(g);
    return 1;
}

int hr_parse_common_flag(const char *cmd, int argc, char **argv, int *i, hr_run_opts *o) {
    const char *a = argv[*i];
    static const char *const valued[] = {"-m", "--model", "-t", "--threads", "-tb", "--threads-batch", "-c", "--ctx-size",
                                         "-b", "--batch-size", "-ub", "--ubatch-size", "--temp", "--temperature", "--top-k",
                                         "--top-p", "--min-p", "--repeat-penalty", "--repeat-last-n", "-s", "--seed", "-ctk",
                                         "--cache-type-k", "-ctv", "--cache-type-v", "--ffn", "--sparse-threshold", "--ffn-act",
                                         "--ffn-threshold", NULL};
    if (switch_flag(cmd, argc, argv, i, o)) return 1;
    int gr = json_schema_flag(cmd, argc, argv, i, o);
    if (!gr) gr = hr_grammar_flag(cmd, argc, argv, i, o);
    if (gr) return gr;
    const refused_flag *rf = find_refused(a);
    if (rf) {
        fprintf(stderr, "hearth %s: %s: %s\n", cmd, a, rf->why);
        return -1;
    }
    bool takes = hr_is_gpu_flag(a);
    for (int k = 0; valued[k]; k++) takes |= !strcmp(a, valued[k]);
    if (!takes) return 0;
    if (!hr_arg_need(cmd, argc, argv, *i)) return -1;
    const char *v = argv[++*i];
    long l;
    double f;
    if (hr_is_gpu_flag(a)) return gpu_flag(cmd, a, v, o);
    if (is(a, "-m", "--model")) hr_set_model_path(o, v);
    else if (is(a, "-t", "--threads")) { if (!hr_arg_long(cmd, a, v, 1, 512, &l)) return -1; o->cp.n_threads = (int32_t)l; }
    else if (is(a, "-tb", "--threads-batch")) { if (!hr_arg_long(cmd, a, v, 1, 512, &l)) return -1; o->threads_batch = (int32_t)l; }
    else if (is(a, "-c", "--ctx-size")) { if (!hr_arg_long(cmd, a, v, 0, 1 << 24, &l)) return -1; o->cp.n_ctx = (int32_t)l; }
    else if (is(a, "-b", "--batch-size") || is(a, "-ub", "--ubatch-size")) return batch_flag(cmd, a, v, o);
    else if (is(a, "-s", "--seed")) return seed_flag(cmd, a, v, o);
    else if (is(a, "--temp", "--temperature") || is(a, "--top-k", "--top-p") || is(a, "--min-p", "--repeat-penalty") ||
             is(a, "--repeat-last-n", NULL))
        return sampler_flag(cmd, a, v, o);
    else if (is(a, "--sparse-threshold", NULL)) {
        if (!hr_arg_float(cmd, a, v, -1e30, 1e30, &f)) return -1;
        o->mp.has_sparse_threshold = true, o->mp.sparse_threshold = (float)f;
    } else if (is(a, "--ffn-threshold", NULL)) {
        if (!hr_arg_float(cmd, a, v, 0, 1e30, &f)) return -1;
        o->mp.has_ffn_threshold = true, o->mp.ffn_threshold = (float)f;
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
           "  -tb, --threads-batch N    accepted for llama.cpp; Hearth runs prompts and decoding on one pool\n"
           "                            of -t threads (a notice says so when N differs)\n"
           "  -c, --ctx-size N          context length in tokens (default: the model's, at most 4096); a\n"
           "                            warning past the model's training context, an error when the\n"
           "                            KV cache alone does not fit in RAM\n"
           "  -b, --batch-size N        prompt tokens per evaluation (default 512)\n"
           "  -ub, --ubatch-size N      llama.cpp's physical batch: Hearth evaluates prompts in chunks of\n"
           "                            the smaller of -b and -ub\n"
           "  -ctk, --cache-type-k T    KV cache type for K: f16 (default) or f32\n"
           "  -ctv, --cache-type-v T    KV cache type for V: f16 (default) or f32\n"
           "  -fa, --flash-attn [on|off|auto]  accepted for llama.cpp; changes nothing: Hearth's attention\n"
           "                            always works one query at a time over the cache (scores, softmax,\n"
           "                            V.p), never building the batch's full attention matrix\n"
           "  --no-mmap                 read the model into memory instead of mapping the file\n"
           "  --mlock                   lock the model in RAM (a notice when RLIMIT_MEMLOCK refuses)\n"
           "  -nr, --no-repack          keep the FFN rows as the file has them: by default, for predicted\n"
           "                            mode on the CPU (files with predictors; in a CUDA build only with\n"
           "                            --gpu off or -ngl 0), each neuron's gate, up and down rows are\n"
           "                            copied side by side at load (not with --no-mmap or --mlock;\n"
           "                            docs/performance.md)\n"
           "sparse FFN:\n"
           "  --ffn MODE                dense, exact (ReLU-family: skip neurons that are zero), predicted\n"
           "                            (the file's predictors choose), threshold (gated FFNs: skip up and\n"
           "                            down of neurons whose |act(gate)| is under the layer's threshold,\n"
           "                            hearth.ffn_threshold); default: predicted when the file has\n"
           "                            predictors, else threshold when it has thresholds, else dense\n"
           "  --ffn-threshold X         one threshold (>= 0) for every layer in --ffn threshold, instead of\n"
           "                            the file's (experiments)\n"
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
           "  -mg, --gpu-device N       CUDA device index (default 0)\n"
           "  --vram-budget GiB         device memory to use, overhead included (default: free memory\n"
           "                            minus %d MiB)\n"
           "  -ngl, --n-gpu-layers N    as in llama.cpp: the first N whole layers on the device (N > layers\n"
           "                            or 'all': the output matrix too); 0: nothing on the GPU (as --gpu\n"
           "                            off); default 'auto': PowerInfer files place dense parts then hot\n"
           "                            neurons, dense files as many whole layers as fit\n"
           "  --gpu-index FILE          hot-neuron index (default MODEL.generated.gpuidx; made from\n"
           "                            MODEL's activation statistics when missing or made for another\n"
           "                            budget); mixtures of experts: the expert index, as hearth place\n"
           "                            writes it\n"
           "  --reset-gpu-index         regenerate the index even if it exists\n"
           "  --disable-gpu-index       no hot neurons on the device (dense parts only)\n"
           "  -cmoe, --cpu-moe          as in llama.cpp: keep every mixture-of-experts expert on the CPU\n"
           "                            (attention and output may still go to the device)\n"
           "  -ncmoe, --n-cpu-moe N     as in llama.cpp: keep the experts of the first N layers on the CPU;\n"
           "                            the others go to the device by routed frequency as the budget allows\n"
           "  --moe-cache N             a dynamic expert cache instead: N device slots per MoE layer (in the\n"
           "                            budget), refilled from host memory by observed routing while the CPU\n"
           "                            computes the misses; 0: static placement (default)\n"
           "  --moe-cache-policy P      lfru (default: frequency with recency), lru or static (never refill)\n"
           "sampling:\n"
           "  --temp X                  temperature in [0, %g], 0 = greedy (default 0.8)\n"
           "  --top-k N                 keep the N most likely tokens, 0 = off (default 40)\n"
           "  --top-p X                 nucleus sampling in [0, 1], 1 = off (default 0.95)\n"
           "  --min-p X                 drop tokens below X times the top probability, in [0, 1] (default 0.05)\n"
           "  --repeat-penalty X        penalty for recent tokens, in (0, %g], 1 = off (default 1.0)\n"
           "  --repeat-last-n N         how many recent tokens the penalty sees (default 64)\n"
           "  -s, --seed N              random seed (default and -1: time-based)\n"
           "  --grammar TEXT            run, chat: GBNF grammar (llama.cpp's syntax) the output must follow;\n"
           "                            greedy picks the best token it allows (docs/grammar.md)\n"
           "  --grammar-file FILE       the same, read from FILE\n"
           "  -j, --json-schema SCHEMA  run, chat: the output is JSON valid under SCHEMA (JSON text, or\n"
           "                            @FILE); unsupported keywords are refused by name (docs/grammar.md)\n"
           "  -jf, --json-schema-file F the same, read from F\n"           "llama.cpp flags with no meaning in Hearth (--rope-*, --yarn-*, -sm, -ts, -ot, --numa, --lora,\n"
           "--mirostat, --jinja, ...) are refused with the reason.\n",
           HEARTH_VRAM_MARGIN_MIB, HR_SAMPLER_TEMP_MAX, HR_SAMPLER_PENALTY_MAX);
}

/* Mixtures of experts: how evenly layer il routes (the three busiest experts' shares of
 * the token-expert pairs, and how many experts take half of them). */
static void print_routing(const hearth_ctx *c, int32_t il, const hearth_moe_stats *ms) {
    uint64_t *n = calloc((size_t)ms->n_expert, sizeof *n), tot = 0, half = 0;
    if (!n || hearth_ctx_moe_routed(c, il, n)) {
        free(n);
        return;
    }
    for (int32_t x = 0; x < ms->n_expert; x++) tot += n[x];
    int32_t k = 0, ranked = 0, unused = 0;
    for (int32_t x = 0; x < ms->n_expert; x++) unused += !n[x];
    fprintf(stderr, "  top");
    while (tot && (half * 2 < tot || ranked < 3) && ranked < ms->n_expert) { /* largest first: repeated maximum (n is small) */
        int32_t b = 0;
        for (int32_t x = 1; x < ms->n_expert; x++) b = n[x] > n[b] ? x : b;
        if (ranked++ < 3) fprintf(stderr, " #%d %.1f%%", b, 100.0 * (double)n[b] / (double)tot);
        if (half * 2 < tot) half += n[b], k++;
        n[b] = 0;
    }
    fprintf(stderr, "; %d of %d experts take half, %d unused", k, ms->n_expert, unused);
    free(n);
}

/* Predicted mode inside experts: layer il's predictors' precision and recall over the
 * experts (predicted neurons against those whose gate fired), then the busiest three
 * experts' and the lowest recall among the rest. */
static void print_expert_preds(const hearth_ctx *c, int32_t il, const hearth_moe_stats *ms) {
    const size_t ne = (size_t)ms->n_expert;
    uint64_t *b = calloc(4 * ne, sizeof *b), *pr = b + ne, *fi = b + 2 * ne, *bo = b + 3 * ne, P = 0, F = 0, B = 0;
    if (!b || hearth_ctx_moe_pred_stats(c, il, pr, fi, bo) || hearth_ctx_moe_routed(c, il, b)) {
        free(b);
        return;
    }
    for (size_t x = 0; x < ne; x++) P += pr[x], F += fi[x], B += bo[x];
    fprintf(stderr, "\n         experts' predictors: precision %.2f%%, recall %.2f%%; busiest (precision/recall)", P ? 100.0 * B / P : 100.0,
            F ? 100.0 * B / F : 100.0);
    int32_t worst = -1;
    for (int r = 0; r < 3; r++) { /* busiest first: repeated maximum over the routings */
        int32_t top = -1;
        for (size_t x = 0; x < ne; x++)
            if (b[x] && (top < 0 || b[x] > b[top])) top = (int32_t)x;
        if (top < 0) break;
        fprintf(stderr, " #%d %.1f%%/%.1f%%", top, pr[top] ? 100.0 * bo[top] / pr[top] : 100.0, fi[top] ? 100.0 * bo[top] / fi[top] : 100.0);
        b[top] = 0;
    }
    for (size_t x = 0; x < ne; x++)
        if (b[x] && fi[x] && (worst < 0 || bo[x] * fi[worst] < bo[worst] * fi[x])) worst = (int32_t)x;
    if (worst >= 0) fprintf(stderr, "; lowest recall of the others #%d %.1f%%", worst, 100.0 * bo[worst] / fi[worst]);
    free(b);
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
        if (moe && mode == HEARTH_FFN_PREDICTED) print_expert_preds(c, il, &ms);
        fputc('\n', stderr);
    }
    fprintf(stderr, "  mean   %7.2f%%  %11.2f%%\n", 100 * sc / in->n_layer, 100 * sf / in->n_layer);
}

/* One line, and only when it tells the user something: a GPU was asked for, or --verbose. */
static bool gpu_notice(const hearth_ctx *c, const hearth_ctx_params *cp, bool wanted) {
    hearth_gpu_status s;
    if (!wanted || cp->gpu != HEARTH_GPU_AUTO || hearth_ctx_gpu_status(c, &s) || s.active || !s.reason[0]) return false;
    fprintf(stderr, "hearth: no usable GPU (%s); running on the CPU\n", s.reason);
    return true;
}

void hr_warn_kernels(const hearth_ctx *c) {
    const char *want = getenv("HEARTH_KERNELS"), *got = hearth_ctx_cpu_kernels(c);
    if (want && *want && strcmp(want, got) != 0)
        fprintf(stderr, "hearth: HEARTH_KERNELS=%s is unknown or not supported by this CPU; using %s "
                        "(scalar, avx2, avxvnni, avx512, amx or neon)\n", want, got);
}

void hr_print_gpu_notice(const hearth_ctx *c, const hearth_ctx_params *cp) {
    hr_warn_kernels(c);
    (void)gpu_notice(c, cp, cp->n_gpu_layers > 0 || cp->vram_budget_gib > 0 || cp->gpu_device > 0);
}

bool hr_gpu_notice(const hearth_ctx *c, const hr_run_opts *o) {
    hr_warn_kernels(c);
    return gpu_notice(c, &o->cp, o->verbose || o->gpu_asked || o->cp.n_gpu_layers > 0 || o->cp.vram_budget_gib > 0);
}

void hr_print_model_notices(const char *cmd, const hearth_model *m) {
    const char *n = hearth_model_notices(m);
    while (n && *n) {
        const char *end = strchr(n, '\n');
        int len = end ? (int)(end - n) : (int)strlen(n);
        fprintf(stderr, "hearth %s: warning: %.*s\n", cmd, len, n);
        n += len + (end != NULL);
    }
}

static double gib(uint64_t b) { return (double)b / (1024.0 * 1048576.0); }

int hr_check_ctx_size(const char *cmd, const hearth_model *m, const hearth_ctx_params *cp) {
    const hearth_model_info *in = hearth_model_get_info(m);
    const int32_t n_ctx = cp->n_ctx ? cp->n_ctx : (in->n_ctx_train < 4096 ? in->n_ctx_train : 4096);
    const int32_t n_seq = cp->n_seq > 0 ? cp->n_seq : 1;
    if (n_ctx > in->n_ctx_train)
        fprintf(stderr, "hearth %s: warning: -c %d is more than the model was trained for (%d tokens); text past "
                        "token %d is likely to degrade\n",
                cmd, n_ctx, in->n_ctx_train, in->n_ctx_train);
    /* Every layer's cache on the host: what a CPU context allocates (a GPU plan may move some
     * layers' caches to the device, never more than this). */
    const uint64_t elem = (cp->kv_k == HEARTH_KV_F32 ? 4u : 2u) + (cp->kv_v == HEARTH_KV_F32 ? 4u : 2u);
    const uint64_t kv = (uint64_t)n_seq * (uint64_t)n_ctx * (uint64_t)in->n_layer * (uint64_t)in->n_head_kv *
                        (uint64_t)in->head_dim * elem;
    const long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGE_SIZE);
    const uint64_t ram = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : 0;
    if (!ram || kv <= ram || cp->gpu == HEARTH_GPU_CUDA || cp->gpu == HEARTH_GPU_STANDIN) return 0;
    fprintf(stderr, "hearth %s: the KV cache of %d x %d tokens needs %.2f GiB (%d layers, %d KV heads of %d, %s/%s) but "
                    "this machine has %.2f GiB of RAM; lower -c\n",
            cmd, n_seq, n_ctx, gib(kv), in->n_layer, in->n_head_kv, in->head_dim, cp->kv_k == HEARTH_KV_F32 ? "f32" : "f16",
            cp->kv_v == HEARTH_KV_F32 ? "f32" : "f16", gib(ram));
    return -1;
}

void hr_print_version(void) {
#ifndef HEARTH_VERSION
#define HEARTH_VERSION "0.0.0"
#endif
#ifdef HEARTH_HAVE_CUDA_BUILD
    const char *cuda = "yes";
#else
    const char *cuda = "no";
#endif
#ifdef HEARTH_HAVE_SERVER
    const char *server = "yes";
#else
    const char *server = "no";
#endif
#if defined(__clang__)
    const char *cc = "clang " __clang_version__;
#elif defined(__GNUC__)
    const char *cc = "GCC " __VERSION__;
#else
    const char *cc = "an unknown compiler";
#endif
    printf("hearth %s\nbuilt with %s; CUDA backend: %s; server: %s\n", HEARTH_VERSION, cc, cuda, server);
}

static double mib(uint64_t b) { return b / 1048576.0; }

/* llama.cpp's --list-devices; the CPU is always there, so only GPUs are listed */
int hr_list_devices(void) {
    hr_err e = {0};
    const int32_t n = hearth_gpu_count(&e);
    printf("Available devices:\n");
    if (n == 0) printf("  none: %s\n", e.msg);
    for (int32_t i = 0; i < n; i++) {
        hearth_gpu_info g;
        if (hearth_gpu_info_get(i, &g, &e)) {
            printf("  CUDA%d: %s\n", (int)i, e.msg);
            continue;
        }
        printf("  CUDA%d: %s (compute %d.%d, %.0f MiB, %.0f MiB free)\n", (int)i, g.name, (int)g.cc_major, (int)g.cc_minor,
               mib(g.total_bytes), mib(g.free_bytes));
    }
    return 0;
}

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
    if (s.experts_total) /* mixtures of experts: act_share is the share of routings */
        fprintf(stderr, "gpu: %d of %d experts on the device%s; %lld expert neurons on the device (hot neurons of %d host experts)\n",
                s.experts_device, s.experts_total, s.cache_slots ? " (expert cache slots, refilled as the routing goes)" : "",
                (long long)s.expert_neurons_device, s.experts_split);
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
    if (s.experts_total)
        fprintf(stderr, "gpu: %llu of %llu expert evaluations (token x chosen expert) on the device\n",
                (unsigned long long)s.expert_evals_device, (unsigned long long)s.expert_evals_total);
    if (s.experts_split)
        fprintf(stderr, "gpu: %llu evaluations of experts with hot neurons split between the device and the CPU, %llu run "
                        "whole in an expert cache slot instead\n",
                (unsigned long long)s.expert_split_evals, (unsigned long long)s.expert_split_cached);
    if (s.cache_slots)
        fprintf(stderr, "gpu: expert cache (%d slots per layer, %s): %.2f%% hits (%llu of %llu), %llu refills (%.2f MiB, "
                        "%llu landed), %llu misses while copying; refills %.3f s on the decode thread, %.3f s on the "
                        "staging thread\n",
                s.cache_slots, s.cache_policy, s.cache_lookups ? 100.0 * s.cache_hits / s.cache_lookups : 0.0,
                (unsigned long long)s.cache_hits, (unsigned long long)s.cache_lookups, (unsigned long long)s.cache_refills,
                mib(s.cache_refill_bytes), (unsigned long long)s.cache_landed, (unsigned long long)s.cache_late,
                s.cache_refill_s, s.cache_stage_s);
}
