/* The GPU plan: before anything is allocated, exactly what goes on the device and the
 * byte offset of everything in its one arena (docs/hybrid.md). A pure function of the
 * model, the context shape, the budget, the FFN mode and the hot-neuron index.
 *
 * Order of value (what the budget buys first):
 *   scratch for n_batch tokens (required; a budget below it is an error),
 *   attention layer by layer (q, k, v, output matrices with that layer's F16 KV cache),
 *   predictors layer by layer (fc1, fc2; predicted mode only),
 *   norms of the layers with both (serial RMSNorm models): attention and predictor then
 *   share one round trip,
 *   the output matrix,
 *   hot neurons: per layer the first k neurons of the index's bucket, gathered into
 *   contiguous device matrices (local row i = neuron hot_ids[i]).
 * Mixtures of experts: attention layer by layer, the output, then whole experts by routed
 * frequency per byte (docs/hybrid.md), then hot neurons of the ReLU-family experts left on
 * the host by firing count per byte; -ngl N: attention of layers 0..N-1 required, experts
 * (and their neurons) of those layers only.
 * n_gpu_layers > 0, or any dense (non-PowerInfer) file: whole layers instead (attention,
 * KV and the entire FFN of layers 0..N-1), llama.cpp's -ngl; N > n_layer adds the output.
 * Whole layers with a dense FFN of a serial RMSNorm model also hold their two norm
 * vectors, so a run of them executes device-resident: the residual stream stays on the
 * device from the first such layer to the last (two transfers per batch, not two per
 * layer). Elsewhere norms run on the host. */
#ifndef HR_GPU_PLAN_H
#define HR_GPU_PLAN_H
#include "backends/device.h"
#include "model.h"
#include "sparse/gpuidx.h"
#include "sparse/moeidx.h"

/* Categories: hearth_gpu_cat (hearth.h). */

/* Device scratch, each [n_batch][...] F32 unless noted. */
typedef struct hr_gpu_scratch {
    uint64_t x;      /* n_embd: normed layer input (attention, FFN) */
    uint64_t xp;     /* n_embd: predictor input; in device-resident layers (never with a
                        predictor on the device) the residual stream */
    uint64_t q, att; /* n_head * head_dim */
    uint64_t k, v;   /* n_head_kv * head_dim */
    uint64_t o;      /* n_embd: attention output */
    uint64_t ph;     /* max predictor rank */
    uint64_t s;      /* n_ff: predictor scores */
    uint64_t g, u, h; /* n_ff */
    uint64_t y;      /* n_embd: FFN output */
    uint64_t logits; /* n_vocab */
    uint64_t idx;    /* I32 [n_ff] */
    uint64_t mask;   /* U8 [n_batch][n_ff] */
    /* mixtures of experts (size 0 otherwise): the device experts' inputs and outputs, one row
     * per (token, chosen expert) of the batch grouped by expert, and one expert's
     * gate/up/activation over its tokens; eidx: I32 0..n_ff_exp-1 (down_t's sparse axpy) */
    uint64_t xe, ye; /* [n_batch * n_expert_used][n_embd] */
    uint64_t ge, ue, he; /* [n_batch][n_ff_exp] */
    uint64_t eidx;
    /* U8 [n_batch * n_expert_used][n_ff_exp], predicted mode with expert predictors only (size
     * 0 otherwise): which hot neurons of split experts each row's predictor marks, the rows of
     * expert xhot[i] at row xr0 as [rows][n_hot] */
    uint64_t emask;
} hr_gpu_scratch;

/* The layer plan: what one layer's step does, chosen once per layer from the parts below;
 * the forward pass runs the step function this kind names (forward.c's table). */
typedef enum hr_step_kind {
    HR_STEP_HOST,       /* nothing of the layer on the device */
    HR_STEP_ATTN,       /* attention and its KV cache on the device; predictor and FFN on the host */
    HR_STEP_ATTN_PRED,  /* norms, attention and predictor on the device in one round trip
                           (hr_hybrid_attn_pred), then the FFN split (or on the host without hot rows) */
    HR_STEP_RESIDENT,   /* the whole serial layer on the device, the residual stream kept there
                           (hr_hybrid_run_layer); run as HR_STEP_SPLIT_FFN while the host watches
                           the FFN (--stats, calibration) */
    HR_STEP_SPLIT_FFN,  /* the FFN shared: predictor, hot neurons or the whole FFN on the device,
                           the rest on the CPU; attention on either side (attn says) */
    HR_STEP_SPLIT_MOE,  /* a mixture-of-experts layer with some experts on the device: those it holds
                           computed there while the CPU computes the others (moe.c); attention on
                           either side (attn says) */
    HR_STEP_COUNT
} hr_step_kind;
const char *hr_step_kind_name(hr_step_kind k);

/* One expert resident on the device: its three matrices (down: ffn_down_exps, or the
 * file's ffn_down_exps_t rows when it has those instead) and, where the file has them
 * (gpt-oss), its biases (F32 [n_ff_exp], [n_ff_exp], [n_embd]) after them; end: the byte
 * after its last one, so [gate.off, end) is all of it (the expert cache copies that). */
typedef struct hr_gpu_expert {
    int32_t id;
    hr_dmat gate, up, down;
    bool down_t, bias;
    uint64_t gb, ub, db, end;
} hr_gpu_expert;

/* Hot neurons of one expert computed on the host (ReLU-family experts of a file with
 * or without ffn_down_exps_t, placed by the statistics' firing counts,
 * gpu_plan_xhot.c): its hottest neurons' gate, up and down_t rows (hr_xhot_down: transposed
 * down columns without ffn_down_exps_t) gathered into device matrices, local row i = neuron
 * hot_ids[i] (ascending); the CPU computes the expert's other neurons. */
typedef struct hr_gpu_xhot {
    int32_t id, n_hot, n_cold;
    int32_t *hot_ids;
    int32_t *cold_ids; /* the expert's other neurons, ascending: what the CPU computes */
    hr_dmat gate, up, down;
} hr_gpu_xhot;

typedef struct hr_gpu_layer {
    hr_step_kind step;          /* what the forward pass runs for this layer */
    bool attn;                  /* wq, wk, wv, wo resident; KV slice in the caches */
    hr_dmat wq, wk, wv, wo;
    bool pred;
    hr_dmat fc1, fc2;
    bool ffn_dense;             /* whole FFN of a dense file: gate (if any), up, down */
    int32_t n_hot;              /* hot neurons: gathered gate (if any), up, down_t rows */
    int32_t *hot_ids;           /* [n_hot] ascending neuron ids; local row i is neuron hot_ids[i] */
    hr_dmat gate, up, down;     /* down: ffn_down (dense) or the gathered ffn_down_t rows (hot) */
    bool norms;                 /* attn_norm and ffn_norm resident (F32 [n_embd]): a whole layer
                                   can run device-resident, a hybrid one fuse attention and predictor */
    uint64_t attn_norm, ffn_norm;
    /* with attn: the layer's attention vectors (F32), each where the host layer has it:
     * biases bq {n_q}, bk, bv {n_kv}, bo {n_embd}; per-head norms q_norm, k_norm {head_dim} */
    uint64_t bq, bk, bv, bo, q_norm, k_norm;
    uint64_t hot_bytes;         /* bytes of this layer's hot neurons */
    int32_t n_exp;              /* experts on the device, exps[] ascending by id; with an expert
                                   cache its slots, whose ids and exp_local the cache rewrites
                                   as it refills them (id -1: empty or being filled) */
    hr_gpu_expert *exps;
    int32_t *exp_local;         /* [n_expert] expert id -> index into exps, -1: on the host (NULL: none) */
    int32_t n_xhot;             /* host experts with hot neurons on the device, xhot[] ascending by id */
    hr_gpu_xhot *xhot;
    int32_t *xhot_local;        /* [n_expert] expert id -> index into xhot, -1: none (NULL: none) */
} hr_gpu_layer;

typedef struct hr_gpu_plan_in {
    const hearth_model *m;
    int32_t n_ctx, n_seq, n_batch;
    uint64_t budget;            /* arena bytes (margin and device overhead already taken off) */
    hearth_ffn_mode mode;       /* resolved (never AUTO) */
    int32_t n_gpu_layers;       /* > 0: whole layers 0..N-1 (N > n_layer: and the output) */
    const hr_gpuidx *idx;       /* hot neurons; NULL: none (first pass, or --disable-gpu-index) */
    /* mixtures of experts: the experts of layers 0..n_cpu_moe-1 stay on the host (llama.cpp's
     * --n-cpu-moe; >= n_layer: --cpu-moe); expert_freq [n_layer][n_expert]: tokens routed to
     * each expert on the calibration text, NULL: uniform (lowest layer, then expert, first) */
    int32_t n_cpu_moe;
    const uint32_t *expert_freq;
    /* > 0: a dynamic expert cache (engine/expert_cache.c) of this many slots in every layer that
     * may place experts, required (an error when the budget lacks them), each starting with
     * the layer's most routed experts; the cache then refills them at run time */
    int32_t moe_cache;
    /* [n_layer][n_expert][n_ff_exp]: routed tokens each expert neuron fired on (hearth
     * calibrate's counts); with ReLU-family experts and down rows (hr_xhot_down), in dense,
     * exact or predicted mode and static placement, the hottest neurons of the experts left on the host go to
     * the device after the whole experts, by count per byte (NULL: none) */
    const uint32_t *expert_neuron_freq;
} hr_gpu_plan_in;

typedef struct hr_gpu_plan {
    int32_t n_layer, n_attn;    /* n_attn: layers 0..n_attn-1 have attention on the device */
    int32_t n_whole;            /* whole layers (-ngl, or dense files) */
    hr_gpu_layer *layers;       /* [n_layer] */
    bool output;
    hr_dmat out;
    int32_t kv_layers;          /* = n_attn: caches are F16 [n_seq][n_attn][n_ctx][kvd] */
    uint64_t k_cache, v_cache;
    /* RoPE frequency factors of this context (hr_rope_factors; F32 [n_rot/2]) with the first
     * attention layer, counted in its attention bytes; rope_ff_src NULL: none */
    const float *rope_ff_src;
    uint64_t rope_ff;
    hr_gpu_scratch sc;
    uint64_t bytes[HEARTH_GPU_CAT_COUNT];
    uint64_t total, budget;
    bool hot_ok;                /* the model and mode allow hot neurons (PowerInfer file, no FFN biases) */
    uint64_t neuron_budget;     /* bytes left for hot neurons' rows (allocation rounding already set aside) */
    uint64_t *neuron_bytes;     /* [n_layer] device bytes of one hot neuron (gate + up + down_t rows) */
    uint64_t ffn_bytes;         /* all FFN neuron bytes of all layers (host copy) */
    uint64_t hot_bytes;         /* of which on the device */
    int64_t n_hot_total;
    int32_t n_exp_total;        /* experts on the device, all layers */
    int32_t cache_slots;        /* moe_cache: slots per cached layer (their exps[]; 0: static placement) */
    int32_t n_xhot_total;       /* host experts with hot neurons on the device, all layers */
    int64_t n_xneurons_total;   /* their hot neurons */
    uint64_t xhot_bytes;        /* their device bytes (in HEARTH_GPU_CAT_NEURONS) */
    /* static expert placement: the bytes left for whole experts and expert neurons (an expert
     * index's split.vram_capacity); 0 when none are left or the stage was not reached */
    uint64_t expert_budget;
    bool expert_masks;          /* scratch emask exists (predicted mode with expert predictors) */
} hr_gpu_plan;

/* Fills *p (free with hr_gpu_plan_free, also after an error). */
int hr_gpu_plan_make(const hr_gpu_plan_in *in, hr_gpu_plan *p, hr_err *e);
/* The same with a mixture's static placement taken from an expert index (hearth place, or an
 * earlier context) instead of the greedy order: an error when it does not fit the model's
 * shape, the layers this context may place (--n-cpu-moe, -ngl, FFN mode) or the bytes left. */
int hr_gpu_plan_make_indexed(const hr_gpu_plan_in *in, const hr_moeidx *x, hr_gpu_plan *p, hr_err *e);
void hr_gpu_plan_free(hr_gpu_plan *p);
/* True when anything besides scratch is on the device. */
bool hr_gpu_plan_uses_device(const hr_gpu_plan *p);
/* True when a context with this plan (made without an index) and these parameters reads
 * or makes a GPU index: hot neurons allowed, automatic placement, bytes left for them. */
bool hr_gpu_plan_takes_index(const hr_gpu_plan *p, const hearth_ctx_params *cp);

/* The last mixture-of-experts stage (gpu_plan_xhot.c), called by the plan: hot neurons of
 * the host experts of the layers il with ok[il] (others skipped), greedy by firing count per
 * byte, each neuron's cost the exact growth of its expert's three rounded allocations; the
 * first that does not fit ends it. *used grows by what it takes, within budget. */
int hr_plan_xhot_place(const hr_gpu_plan_in *in, hr_gpu_plan *p, const bool *ok, uint64_t *used, hr_err *e);
/* The same stage from given flags (an expert index: on [n_layer][n_expert][n_ff_exp]), layers
 * ok[] only: an error when a flagged neuron is outside them, of a whole expert, or past the budget. */
int hr_plan_xhot_given(const hr_gpu_plan_in *in, hr_gpu_plan *p, const bool *ok, const uint8_t *on, uint64_t *used, hr_err *e);
/* The model an expert index was made for: one expert's device bytes of every MoE layer, summed. */
uint64_t hr_gpu_plan_expert_fingerprint(const hearth_model *m);
/* The plan's static expert placement as an expert index (capacity: expert_budget). */
int hr_gpu_plan_moeidx(const hr_gpu_plan *p, const hearth_model *m, hr_moeidx *out, hr_err *e);
/* The rows the device holds for hot expert neurons' down: ffn_down_exps_t's rows, or the
 * columns of ffn_down_exps, transposed at upload into rows of its type (F32, F16) or of F16
 * (any other type, dequantized); data NULL in the latter, n_out 0 without either matrix. */
hr_mat hr_xhot_down(const hr_moe_weights *w);
/* Offsets of layer il's expert neurons from *off; their bytes into the neuron category. */
void hr_plan_xhot_layout(const hr_gpu_plan_in *in, hr_gpu_plan *p, int il, uint64_t *off);
void hr_plan_xhot_free(hr_gpu_layer *g);
#endif
