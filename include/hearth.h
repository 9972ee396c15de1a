/* Hearth public API: load a GGUF model, make contexts (KV cache, scratch, threads),
 * tokenize, evaluate batches of tokens, read logits. Sampling: src/sampler/sampler.h.
 * Every fallible call takes an hr_err* (may be NULL) that receives a one-line message. */
#ifndef HEARTH_H
#define HEARTH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef HR_ERR_DEFINED
#define HR_ERR_DEFINED
typedef struct hr_err {
    char msg[512];
} hr_err;
#endif

typedef struct hearth_model hearth_model;
typedef struct hearth_ctx hearth_ctx;

typedef enum hearth_kv_type { HEARTH_KV_F16 = 0, HEARTH_KV_F32 = 1 } hearth_kv_type;

typedef struct hearth_model_params {
    bool verbose;              /* reserved for load-time logging through a callback; unused now */
    bool has_sparse_threshold; /* override the predictor threshold (else: environment
                                  LLAMA_SPARSE_PRED_THRESHOLD, then the file's
                                  powerinfer.sparse_threshold, then 0) */
    float sparse_threshold;
    const char *ffn_act;       /* override the FFN activation ("swiglu", "reglu", "drelu", "relu",
                                  "gelu") of files whose architecture leaves it open, as the
                                  hearth.ffn_activation key would (e.g. a dense ReluLLaMA GGUF
                                  that says nothing); NULL: the file's */
    bool no_mmap;              /* read the file into memory instead of mapping it (llama.cpp's
                                  --no-mmap): the weights then never page back in from disk */
    bool has_ffn_threshold;    /* one threshold for every layer's |act(gate)| in FFN mode
                                  threshold, instead of the file's hearth.ffn_threshold (>= 0) */
    float ffn_threshold;
    bool mlock;                /* lock the model's pages in RAM (llama.cpp's --mlock); when the
                                  limit (RLIMIT_MEMLOCK) refuses, a notice says so and loading goes on */
    bool ffn_bundle;           /* layers with a predictor and ffn_down_t: copy each FFN neuron's
                                  gate, up and down_t rows next to each other at load and release
                                  the mapping's pages of those tensors (predicted mode on the CPU
                                  reads a neuron as one run; docs/performance.md). CPU only: a
                                  context that would put layers on a GPU is refused (auto: the
                                  CPU). Ignored with no_mmap or mlock. hearth_model_bundled_layers
                                  says how many layers. */
} hearth_model_params;

/* FFN modes: dense computes every neuron; exact computes the gate fully, then only the
 * neurons whose activation is non-zero (ReLU-family models; same output as dense);
 * predicted lets the file's per-layer predictors choose (PowerInfer files). */
typedef enum hearth_ffn_mode {
    HEARTH_FFN_AUTO = 0, /* predicted when the file has predictors, else threshold when it has
                            thresholds, else dense */
    HEARTH_FFN_DENSE,
    HEARTH_FFN_EXACT,
    HEARTH_FFN_PREDICTED,
    HEARTH_FFN_THRESHOLD /* gated FFNs with per-layer thresholds (hearth.ffn_threshold or the
                            ffn_threshold load parameter): the gate fully, then up and down only
                            for neurons whose |act(gate)| is above the layer's threshold */
} hearth_ffn_mode;

/* Per-layer activity, summed over evaluated tokens. tokens and computed are always
 * counted; fired and fired_computed only with ffn_stats on (ReLU-family models; in predicted
 * mode on a file with thresholds, "fired" is "above the threshold"). */
typedef struct hearth_ffn_stats {
    uint64_t tokens;
    uint64_t computed;  /* neurons computed (predicted mode: predicted active) */
    uint64_t fired;     /* neurons whose exact activation is non-zero (needs the full gate) */
    uint64_t fired_computed; /* fired and computed: recall = fired_computed / fired */
} hearth_ffn_stats;

/* Mixture-of-experts models: the experts' weights and what routing made the context read.
 * Bytes read count each expert a forward call uses once per layer (a batch reads an expert
 * once for all its tokens routed to it; in exact mode an expert's up rows count only for the
 * neurons some routed token fires; with ffn_down_exps_t only the down rows of non-zero
 * activations count); decode_* only calls of one token. */
typedef struct hearth_moe_stats {
    int32_t n_expert, n_expert_used, n_layer;
    uint64_t expert_bytes;        /* all experts of all layers */
    uint64_t tokens, read_bytes;  /* every forward call */
    uint64_t decode_tokens, decode_read_bytes;
    int32_t n_ff_exp;             /* neurons per expert: a layer's FFN counters (hearth_ctx_ffn_stats)
                                     count over tokens x n_expert_used x n_ff_exp neuron slots */
    uint64_t router_bytes;        /* all layers' routers, read by every token besides the experts */
} hearth_moe_stats;

/* Where the GPU side runs. AUTO: CUDA when compiled in and a GPU answers, else the CPU
 * alone (hearth_ctx_gpu_status says which and why). STANDIN: the CPU standing in for a
 * device (same placement and operations; tests on machines without a GPU). */
typedef enum hearth_gpu_mode { HEARTH_GPU_AUTO = 0, HEARTH_GPU_OFF, HEARTH_GPU_CUDA, HEARTH_GPU_STANDIN } hearth_gpu_mode;
#define HEARTH_VRAM_MARGIN_MIB 512

typedef struct hearth_ctx_params {
    int32_t n_ctx;      /* 0: the model's training context, capped at 4096 */
    int32_t n_threads;  /* 0: number of cores */
    int32_t n_batch;    /* max tokens per eval call (prompt chunk); 0: 512 */
    hearth_kv_type kv_k, kv_v;
    hearth_ffn_mode ffn_mode;
    bool ffn_stats;     /* count per-layer activity (costs a full gate product per layer in predicted mode) */
    /* Calibration hook (hearth calibrate); NULL when unused. Called in dense mode only, from
     * each layer's FFN, with the batch's predictor inputs p [n_tok][n_embd] (the residual
     * stream before ffn_norm; falcon: the layer input) and activations act [n_tok][n_ff]. */
    void (*ffn_observer)(void *ud, int32_t layer, int32_t n_tok, const float *p, const float *act);
    void *ffn_observer_ud;
    int32_t n_seq;      /* independent sequences (server slots), each with its own KV cache of
                           n_ctx cells; 0: 1 */
    /* GPU (hybrid execution, see docs/hybrid.md). */
    hearth_gpu_mode gpu;
    int32_t gpu_device;        /* CUDA device index */
    double vram_budget_gib;    /* <= 0: free device memory minus HEARTH_VRAM_MARGIN_MIB */
    int32_t n_gpu_layers;      /* > 0: llama.cpp-style offload of the first N whole layers;
                                  0: automatic (PowerInfer files: hybrid placement of dense
                                  parts, then hot neurons; dense files: as many whole layers
                                  as the budget holds) */
    const char *gpu_index_path;  /* NULL: <model>.generated.gpuidx */
    bool reset_gpu_index;      /* regenerate the GPU index even if one exists */
    bool disable_gpu_index;    /* no hot neurons on the GPU (dense parts only) */
    int32_t n_cpu_moe;         /* mixtures of experts: the experts of layers 0..N-1 stay on the CPU
                                  (llama.cpp's --n-cpu-moe; >= n_layer: every expert, --cpu-moe) */
    int32_t moe_cache;         /* > 0: a dynamic expert cache of N device slots per MoE layer, refilled
                                  by observed routing, instead of the static placement (docs/hybrid.md) */
    const char *moe_cache_policy; /* "lru", "lfru" or "static" (src/sparse/trace_cache.h); NULL: lfru */
} hearth_ctx_params;

typedef struct hearth_model_info {
    const char *arch;        /* "llama", "exaone", "smallthinker", "bamboo", "falcon", "opt" */
    const char *ffn_act;     /* "swiglu", "reglu", "drelu", "relu", "gelu" */
    int32_t n_vocab, n_ctx_train, n_embd, n_layer, n_head, n_head_kv, n_ff, head_dim;
    uint32_t weight_type;    /* dominant weight type (ggml id): the most bytes among the matrices */
    int32_t n_types;         /* the file's type mix, most bytes first */
    struct { uint32_t type, n_tensors; uint64_t bytes; } types[16];
    uint64_t weight_bytes;   /* tensor bytes in the file */
    uint64_t decode_bytes;   /* bytes one densely decoded token reads (all matrices, embedding row; no predictor) */
    uint64_t ffn_bytes;      /* of which FFN matrices (gate, up, down or down_t), all layers */
    uint64_t predictor_bytes; /* fc1 + fc2, all layers (0 without predictors) */
    uint64_t file_bytes;
} hearth_model_info;

hearth_model_params hearth_model_default_params(void);
hearth_ctx_params hearth_ctx_default_params(void);

hearth_model *hearth_model_load(const char *path, const hearth_model_params *p, hr_err *e);
void hearth_model_free(hearth_model *m);
const hearth_model_info *hearth_model_get_info(const hearth_model *m);
/* Warnings of the load, one line each ('\n'-separated, no trailing newline; "" when none):
 * a BOS/EOS id outside the vocabulary (disabled), --mlock refused. The library never prints. */
const char *hearth_model_notices(const hearth_model *m);

/* Tokenizer of the model (see src/tokenizer/tokenizer.h for the semantics). *out is malloc'ed. */
int hearth_tokenize(const hearth_model *m, const char *text, size_t len, bool add_special,
                    bool parse_special, int32_t **out, size_t *n_out, hr_err *e);
int hearth_token_piece(const hearth_model *m, int32_t id, bool render_special, char *buf, size_t cap);
int32_t hearth_token_bos(const hearth_model *m);
int32_t hearth_token_eos(const hearth_model *m); /* -1 if the vocabulary has none */
bool hearth_token_is_eog(const hearth_model *m, int32_t id);
/* The model's tokenizer (src/tokenizer/tokenizer.h), for modules such as src/grammar that need
 * every token's bytes; valid while the model lives. */
struct hr_tokenizer;
const struct hr_tokenizer *hearth_model_tokenizer(const hearth_model *m);

hearth_ctx *hearth_ctx_new(hearth_model *m, const hearth_ctx_params *p, hr_err *e);
void hearth_ctx_free(hearth_ctx *c);
int32_t hearth_ctx_n_ctx(const hearth_ctx *c);
/* Host memory the context holds beyond the mapped file: the KV cache of the layers whose
 * attention runs on the host (a device layer's is in hearth_gpu_status.used_kv), and
 * scratch buffers. */
uint64_t hearth_ctx_kv_bytes(const hearth_ctx *c);
uint64_t hearth_ctx_scratch_bytes(const hearth_ctx *c);

/* The FFN mode the context resolved to (never AUTO), and layer il's counters. */
hearth_ffn_mode hearth_ctx_ffn_mode(const hearth_ctx *c);
int hearth_ctx_ffn_stats(const hearth_ctx *c, int32_t il, hearth_ffn_stats *out);
/* -1 for dense models. */
int hearth_ctx_moe_stats(const hearth_ctx *c, hearth_moe_stats *out);
/* Tokens layer il routed to each expert: counts[n_expert], summed over every forward call
 * (a token counts once for each of its n_expert_used experts). -1 for dense models or a bad il. */
int hearth_ctx_moe_routed(const hearth_ctx *c, int32_t il, uint64_t *counts);
/* The smallest router margin since the last call, which it resets: over every token and layer
 * routed, the gap in router-logit units between the last expert chosen and the best one not
 * chosen (+INF when nothing was routed or every expert is chosen; NAN for dense models). A
 * margin within rounding of zero is a near tie another engine may break the other way. */
float hearth_ctx_moe_margin(hearth_ctx *c);
/* Predicted mode with ffn_stats (files with expert predictors): per expert of layer il, the
 * token-neuron pairs its predictor marked, those whose gate fired (> 0), and both (precision
 * both / predicted, recall both / fired), each [n_expert]. -1 without those counts. */
int hearth_ctx_moe_pred_stats(const hearth_ctx *c, int32_t il, uint64_t *predicted, uint64_t *fired, uint64_t *both);
/* Operation profile (hearth bench --profile; docs/performance.md). hearth_ctx_profile(c, true)
 * starts (or restarts from zero) timing every operation the forward pass dispatches; false
 * stops it. Off (the default) it costs one pointer test per operation. Each row is one
 * operation kind (and weight type for products): exclusive wall seconds, calls, bytes read and
 * written. Row order is fixed (the same index is the same operation in every read), rows
 * never used have calls == 0; the last row, "other", is the forward time no operation claimed. */
#define HEARTH_PROFILE_ROWS 512
typedef struct hearth_profile_row {
    const char *op;   /* "matvec", "gemm", "gather", "axpy", "sparse_ffn", "predictor", "attention",
                         "norm", "rope", "elementwise", "moe_route", "sync", "other" */
    const char *type; /* weight type of products ("q4_0", ...), else "" */
    double seconds;
    uint64_t calls, bytes;
} hearth_profile_row;
typedef struct hearth_profile {
    double total_s;            /* wall time of the forward calls */
    uint64_t tokens, forwards; /* tokens evaluated, forward calls */
    double cpu_s;              /* CPU time of the process since the profile started (all threads,
                                  spinning included): below total_s x threads, other processes
                                  had the cores, and every wall time above is stretched */
    int32_t threads;
    int32_t n_rows;
    hearth_profile_row rows[HEARTH_PROFILE_ROWS];
} hearth_profile;
int hearth_ctx_profile(hearth_ctx *c, bool on, hr_err *e);
/* -1 when profiling is off. */
int hearth_ctx_profile_read(const hearth_ctx *c, hearth_profile *out);
const char *hearth_ffn_mode_name(hearth_ffn_mode m);
/* The CPU kernel table the context runs: "scalar", "avx2", "avx512", "amx" or "neon" (the best
 * the CPU has, or HEARTH_KERNELS's choice). */
const char *hearth_ctx_cpu_kernels(const hearth_ctx *c);
float hearth_model_sparse_threshold(const hearth_model *m);
/* Bytes of the model's file the process has in 2 MiB pages now (they fault in as the weights
 * are first read; bundled FFN rows count for the tensors they hold); -1 where the system does
 * not say. Decode over 4 KiB pages is slower (docs/performance.md, "2 MiB pages for the
 * mapped weights"). */
int64_t hearth_model_huge_page_bytes(const hearth_model *m);
/* Layers whose FFN rows were bundled at load (hearth_model_params.ffn_bundle), and the bytes
 * of the bundles (*bytes may be NULL). */
int32_t hearth_model_bundled_layers(const hearth_model *m, size_t *bytes);
/* True when this build has the CUDA backend (whether a GPU answers is another matter). */
bool hearth_gpu_built(void);
/* CUDA devices a context could use, asked of the driver without creating a context on
 * any; 0 with the reason in e when there are none. */
int32_t hearth_gpu_count(hr_err *e);
/* CUDA device `index` (< hearth_gpu_count): name, memory, compute capability. Reading its
 * free memory creates the device's primary context. */
typedef struct hearth_gpu_info {
    char name[128];
    uint64_t total_bytes, free_bytes;
    int32_t cc_major, cc_minor;
} hearth_gpu_info;
int hearth_gpu_info_get(int32_t index, hearth_gpu_info *out, hr_err *e);
/* Layer il's threshold of FFN mode threshold; negative when the model has none. */
float hearth_model_ffn_threshold(const hearth_model *m, int32_t il);
bool hearth_model_has_predictors(const hearth_model *m);

/* A batch over several sequences: token i is at position pos[i] of sequence seq[i]
 * (0 <= seq < n_seq); logits[i] asks for its logits (then hearth_logits(c, k) is the k-th
 * requested row, in batch order). Each token's result depends only on its own sequence,
 * never on what else is in the batch: a sequence decoded alone or batched with others
 * gives bit-identical logits. Positions of one sequence may repeat earlier ones (the cache
 * keeps what precedes them); every position before pos[i] must have been evaluated. */
typedef struct hearth_batch {
    int32_t n;
    const int32_t *tokens, *pos, *seq;
    const bool *logits;
} hearth_batch;
int hearth_eval_batch(hearth_ctx *c, const hearth_batch *b, hr_err *e);
int32_t hearth_ctx_n_seq(const hearth_ctx *c);

/* String metadata of the model file (e.g. "tokenizer.chat_template"), NULL if absent
 * or not a string. Valid while the model lives; not NUL-terminated: *len is set. */
const char *hearth_model_meta_str(const hearth_model *m, const char *key, size_t *len);

/* GPU status of a context: what runs where. */
typedef struct hearth_gpu_status {
    bool active;              /* a device (CUDA or standin) computes part of the model */
    char device[128];         /* e.g. "cuda:0 NVIDIA H200", "standin", "" */
    char reason[256];         /* why no device is used, when !active and one was wanted */
    uint64_t budget, used;    /* bytes: the budget and what was reserved (<= budget) */
    uint64_t used_fixed, used_kv, used_scratch, used_neurons;
    int32_t layers_attn;      /* layers whose attention is on the device */
    double ffn_share;         /* share of FFN neuron bytes on the device */
    double act_share;         /* share of activations the hot neurons serve (from statistics); -1: unknown */
    /* Details of the plan (docs/hybrid.md). used_fixed = used_attn + used_pred + used_output;
     * used_neurons holds hot neurons and whole FFNs. */
    uint64_t used_attn, used_pred, used_output;
    int32_t layers_pred;      /* layers whose predictor is on the device */
    int32_t layers_whole;     /* whole layers on the device (-ngl, or a dense file) */
    int32_t layers_resident;  /* of which run device-resident: the residual stream stays on the
                                 device across them (serial RMSNorm models, dense FFN) */
    bool output_on_device;
    int64_t hot_neurons;      /* FFN neurons resident on the device, all layers */
    uint64_t neuron_budget;   /* bytes the plan had left for hot neurons */
    uint64_t ffn_bytes;       /* bytes of every FFN neuron of every layer (the host copy) */
    char note[256];           /* how the hot set was chosen; warnings (no statistics, index not written) */
    /* Overlap, summed over FFN evaluations with a device share. */
    uint64_t ffn_splits;      /* layer evaluations split between the device and the CPU */
    uint64_t act_device, act_total; /* computed activations (token x neuron): on the device / all layers */
    double enqueue_s;         /* time enqueueing device work (the stand-in computes while enqueueing) */
    double cold_s;            /* CPU time on the cold neurons while the device worked */
    double wait_s;            /* time then spent waiting for the device */
    /* Round trips of the forward pass: waits for the device, bytes copied each way. */
    uint64_t syncs, bytes_to_dev, bytes_to_host;
    /* Mixtures of experts: experts resident on the device (all layers) out of all; expert
     * evaluations (token x chosen expert) computed on the device / in all. */
    int32_t experts_device, experts_total;
    uint64_t expert_evals_device, expert_evals_total;
    /* Hot neurons of experts computed on the host (ReLU-family experts, calibrated files):
     * experts with some, their neurons on the device (all layers); evaluations of such experts,
     * whose hot neurons the device computed while the CPU computed the rest, and (beside an
     * expert cache) those a ready cache slot held whole instead, their hot neurons idle. */
    int32_t experts_split;
    int64_t expert_neurons_device;
    uint64_t expert_split_evals, expert_split_cached;
    /* The dynamic expert cache (moe_cache > 0): slots per layer, policy; routings (token x chosen
     * expert) looked up in its layers and served by a ready slot; refills issued, landed, and
     * the misses whose expert was still being copied; bytes copied in; host time spent
     * staging and enqueueing refills (the part of a copy on the decode path), and the
     * staging thread's time copying experts into pinned memory (off that path; 0 where the
     * decode thread stages, as on the stand-in). */
    int32_t cache_slots;
    char cache_policy[8];
    uint64_t cache_lookups, cache_hits, cache_refills, cache_landed, cache_late, cache_refill_bytes;
    double cache_refill_s, cache_stage_s;
} hearth_gpu_status;
int hearth_ctx_gpu_status(const hearth_ctx *c, hearth_gpu_status *out);
/* Mixtures of experts: from now on append every layer's routing (the chosen experts of each
 * token, rank order) to a routing trace at path (src/sparse/routing_trace.h; hearth run
 * --dump-routing), closed with the context. Not a mixture of experts: an error. */
int hearth_ctx_dump_routing(hearth_ctx *c, const char *path, hr_err *e);

/* What the device arena holds, by category (docs/hybrid.md). Norms are on the device only
 * for whole layers that can run device-resident. */
typedef enum hearth_gpu_cat {
    HEARTH_GPU_CAT_SCRATCH = 0, /* activations of n_batch tokens */
    HEARTH_GPU_CAT_ATTN,        /* attention matrices */
    HEARTH_GPU_CAT_KV,          /* F16 K and V caches of the layers with attention on the device */
    HEARTH_GPU_CAT_PRED,        /* predictors */
    HEARTH_GPU_CAT_NORMS,
    HEARTH_GPU_CAT_OUTPUT,      /* output matrix */
    HEARTH_GPU_CAT_FFN,         /* whole FFNs (dense files, -ngl) */
    HEARTH_GPU_CAT_NEURONS,     /* hot neurons' rows */
    HEARTH_GPU_CAT_COUNT
} hearth_gpu_cat;
const char *hearth_gpu_cat_name(hearth_gpu_cat c);

/* The GPU accounting a context with these parameters would use, without making one: the
 * same plan (hybrid execution's), before any hot neuron is placed. hearth place uses it,
 * so the GPU index it writes is the one such a context reads. */
typedef struct hearth_gpu_budget {
    char device[160];          /* whose overhead was taken off: "standin", "cuda:0", with why when auto fell back */
    uint64_t budget;           /* p->vram_budget_gib in bytes, converted as hearth_ctx_new converts it */
    uint64_t overhead;         /* the device's own memory (context, library scratch), outside the arena */
    int32_t n_ctx, n_batch, n_seq; /* as hearth_ctx_new resolves them */
    hearth_ffn_mode ffn_mode;  /* resolved (never AUTO) */
    uint64_t bytes[HEARTH_GPU_CAT_COUNT]; /* placed under this budget (hot neurons: 0) */
    uint64_t fixed;            /* sum of bytes[] */
    int32_t layers_attn, layers_pred, layers_whole;
    bool output_on_device;
    bool takes_index;          /* a context would read (or make) a GPU index: PowerInfer file, no FFN biases,
                                  predicted or dense mode, n_gpu_layers 0, every dense part on the device */
    uint64_t neuron_budget;    /* bytes left for hot neurons (0 unless takes_index): the index's
                                  split.vram_capacity */
    uint64_t need;             /* the budget up to which no byte is left for neurons (every dense part
                                  on the device, allocation rounding set aside); 0 when the file
                                  takes no hot neurons */
    int32_t n_layer;
    uint64_t *neuron_bytes;    /* [n_layer] device bytes of one hot neuron (gate + up + down_t rows) */
    uint64_t ffn_bytes;        /* bytes of every FFN neuron of every layer */
} hearth_gpu_budget;
/* Uses p's n_ctx, n_batch, n_seq, ffn_mode, n_gpu_layers, vram_budget_gib (> 0) and gpu:
 * standin: the stand-in's overhead; cuda: the device's (it is opened and closed); auto: CUDA
 * when built in and a GPU answers, else the stand-in's; off: an error. Free *out with
 * hearth_gpu_budget_free (also after an error). */
int hearth_gpu_plan_budget(hearth_model *m, const hearth_ctx_params *p, hearth_gpu_budget *out, hr_err *e);
void hearth_gpu_budget_free(hearth_gpu_budget *b);

/* Mixtures of experts: the experts a context with p (its budget, n_cpu_moe, n_gpu_layers,
 * device as for hearth_gpu_plan_budget) puts on the device, ranked by the routing counts of
 * the statistics at stats_path (NULL: none, the uniform order). n_expert 0: not a mixture of
 * experts. Free with hearth_gpu_experts_free (also after an error). */
typedef struct hearth_gpu_experts {
    int32_t n_layer, n_expert, n_expert_used;
    int32_t n_placed;          /* experts on the device, all layers */
    uint8_t *on_device;        /* [n_layer][n_expert] 1: on the device */
    uint64_t *routed;          /* [n_layer][n_expert] routed tokens in the statistics (NULL without) */
    uint64_t n_tokens;         /* tokens of the statistics (0 without) */
    uint64_t placed_bytes;     /* device bytes of the placed experts */
    uint64_t budget, used;     /* the budget in bytes and the arena the plan takes */
    /* hot neurons of the experts left on the host (statistics with firing counts, ReLU-family
     * experts with ffn_down_exps_t): per [n_layer][n_expert] how many, experts with some, all
     * of them, their device bytes */
    int32_t *neurons;
    int32_t n_split;
    int64_t n_neurons;
    uint64_t neuron_bytes;
    /* static placement: the bytes the plan had left for experts and their neurons (the expert
     * index's split.vram_capacity; 0: none, so no index), and whether one was written */
    uint64_t expert_budget;
    bool index_written;
} hearth_gpu_experts;
int hearth_gpu_plan_experts(hearth_model *m, const hearth_ctx_params *p, const char *stats_path, hearth_gpu_experts *out,
                            hr_err *e);
/* The same, and (index_path non-NULL, expert_budget > 0) writes that placement as the expert
 * index a context with p reads back from that path instead of placing its experts again
 * (docs/hybrid.md; hearth place). */
int hearth_gpu_place_experts(hearth_model *m, const hearth_ctx_params *p, const char *stats_path, const char *index_path,
                             hearth_gpu_experts *out, hr_err *e);
void hearth_gpu_experts_free(hearth_gpu_experts *x);

/* Evaluates n tokens at positions pos..pos+n-1 (the cache keeps 0..pos-1; later entries
 * are overwritten). n may exceed n_batch: it is split internally. all_logits: keep the
 * logits of every token (else only the last). Errors: pos+n > n_ctx, bad token id. */
int hearth_eval(hearth_ctx *c, const int32_t *tokens, int32_t n, int32_t pos, bool all_logits, hr_err *e);
/* Logits (n_vocab floats) of token i of the last eval (i = -1: the last token). */
const float *hearth_logits(const hearth_ctx *c, int32_t i);
/* Embeddings mode (off by default): evals give each token whose logits they ask for its final
 * hidden state instead, the residual stream after the output norm (n_embd floats, what the
 * output matrix would multiply), and compute no logits; hearth_logits then returns NULL. */
int hearth_ctx_set_embeddings(hearth_ctx *c, bool on);
/* Hidden state of the i-th requested token of the last eval in embeddings mode (i = -1: the
 * last); NULL when out of range or the eval was not in embeddings mode. */
const float *hearth_embeddings(const hearth_ctx *c, int32_t i);

#endif
