/* The loaded model: hyperparameters and tensor views into the mapped GGUF file.
 * Weights are used in place from the mapping, never copied. */
#ifndef HR_MODEL_H
#define HR_MODEL_H
#include <stdbool.h>
#include "hearth.h"
#include "arch.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/ops.h"
#include "formats/gguf.h"
#include "tokenizer/tokenizer.h"


typedef struct hr_hparams {
    int32_t n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_ctx_train;
    int32_t n_rot;          /* rotated dims per head (rope.dimension_count) */
    float rms_eps;         /* epsilon of the norm in use (RMSNorm or LayerNorm) */
    float rope_base;
    float rope_freq_scale; /* 1 / linear scaling factor */
    hr_rope_yarn rope_yarn; /* YaRN (ext_factor 1 with rope.scaling.type yarn) and the rotation's
                               magnitude (rope.scaling.attn_factor, YaRN's mscale) */
    int32_t n_ctx_orig;    /* rope.scaling.original_context_length (n_ctx_train without it) */
    bool rope_longrope;    /* the file's RoPE factors are LongRoPE's long/short pair, not rope_freqs */
    bool rope_neox;        /* the arch's RoPE layout: pairs (i, i + n_rot/2), not (2i, 2i+1) */
    hr_act act;
    bool has_gate;         /* false for plain ReLU/GELU FFNs (up only) */
    float attn_scale;      /* of q.k before the softmax: 1/sqrt(head_dim) unless the arch says otherwise */
    int32_t n_swa;         /* sliding window of the layers marked swa (0: none) */
    float q_scale;         /* q times this after RoPE (Gemma; then attn_scale is 1); 1: none */
    float attn_softcap;    /* scores capped to +-attn_softcap before the softmax; 0: none */
    float final_softcap;   /* logits capped to +-final_softcap; 0: none */
    float embd_scale;      /* token embedding rows times this (Gemma: sqrt(n_embd)); 1: none */
    /* Mixture of experts (moe.h); n_expert 0: dense FFNs. n_ff_exp: each expert's FFN size. */
    int32_t n_expert, n_expert_used, n_ff_exp;
    hr_moe_gate moe_gate;
    const hr_arch *arch;   /* everything else the architecture decides (arch.h) */
} hr_hparams;

/* FFN execution modes (see DESIGN.md "FFN modes"). */
typedef enum hr_ffn_mode { HR_FFN_AUTO = 0, HR_FFN_DENSE, HR_FFN_EXACT, HR_FFN_PREDICTED } hr_ffn_mode;

/* One layer's FFN: neuron j is row j of gate and up, and column j of down
 * (= row j of down_t, the transposed matrix PowerInfer files store). */
typedef struct hr_ffn_weights {
    hr_mat gate, up;     /* {n_embd, n_ff}; gate absent (data NULL) for plain ReLU */
    hr_mat down;         /* {n_ff, n_embd}, dense files */
    hr_mat down_t;       /* {n_embd, n_ff}, PowerInfer files (instead of down) */
    hr_mat fc1, fc2;     /* predictor {n_embd, r}, {r, n_ff}; absent in dense files */
    /* Linear predictor (blk.N.fc2.bias present; Hearth's own form, docs/threshold.md): fc2 is
     * {r, pred_m * n_ff} (one score block per deciding matrix: gate, then up for dReLU) and
     * no ReLU between fc1 and fc2; neuron j is predicted iff every block's score
     * s[i n_ff + j] + pred_b[i n_ff + j] * rms(x) >= 0. pred_b NULL: PowerInfer's form.
     * pred_band (threshold files, pred_m 1, pred_b [2 n_ff]): s estimates gate·x, and j is
     * predicted iff s + pred_b[j] rms >= 0 or -s + pred_b[n_ff + j] rms >= 0, i.e. unless the
     * estimate lies in the band around 0 where |act| stays under the threshold. */
    const float *pred_b;
    int32_t pred_m;
    bool pred_band;
    const float *b_up, *b_down; /* biases (OPT), NULL if none */
} hr_ffn_weights;

/* One layer's mixture-of-experts FFN (moe.h): each 3-D expert tensor as expert 0's matrix,
 * expert e's rows at data + e * n_out * row_bytes (hr_moe_expert). */
typedef struct hr_moe_weights {
    hr_mat router;         /* ffn_gate_inp {n_embd, n_expert}; data NULL: a dense layer */
    hr_mat gate, up;       /* ffn_{gate,up}_exps {n_embd, n_ff_exp, n_expert} */
    hr_mat down;           /* ffn_down_exps {n_ff_exp, n_embd, n_expert} */
    /* ffn_down_exps_t {n_embd, n_ff_exp, n_expert} (hearth calibrate writes it in place of
     * ffn_down_exps): row j of expert e is neuron j's down column, read by the sparse axpy. */
    hr_mat down_t;
    /* Biases where the entry has moe_bias (gpt-oss), else NULL: router {n_expert}; gate, up
     * {n_ff_exp} and down {n_embd} per expert, expert e's at e * that length. */
    const float *router_b, *gate_b, *up_b, *down_b;
    /* Predictors inside experts (hearth calibrate; --ffn predicted), NULL where the file has
     * none: pred[e] is expert e's fc1 {n_embd, r_e} (blk.N.fc1_exps.e.weight), pred[n_expert + e]
     * its fc2 {r_e, n_ff_exp} (blk.N.fc2_exps.e.weight); data NULL for experts without one. */
    hr_mat *pred;
    int32_t n_pred;        /* experts with a predictor */
} hr_moe_weights;

typedef struct hr_layer {
    const float *attn_norm, *ffn_norm; /* F32 vectors; ffn_norm NULL for parallel layers */
    const float *attn_norm_b, *ffn_norm_b; /* LayerNorm biases, NULL with RMSNorm */
    const float *attn_norm2, *attn_norm2_b; /* Falcon-40B: separate norm of the attention input */
    hr_mat wq, wk, wv, wo;             /* with a fused attn_qkv: row views into it */
    const float *bq, *bk, *bv, *bo;    /* attention biases, NULL if none */
    const float *q_norm, *k_norm;      /* per-head RMSNorm weights {head_dim} of q and k, NULL if none */
    const float *sinks;                /* attention sink logit per head {n_head} (gpt-oss), NULL if none */
    hr_ffn_weights ffn;
    hr_moe_weights moe;                /* router.data NULL unless a mixture of experts */
    bool use_rope;                     /* false for NoPE layers */
    bool swa;                          /* attention over the last hp.n_swa positions only */
    bool nope;                         /* no RoPE in this layer (SmallThinker's global layers) */
    float rope_base, rope_freq_scale;  /* this layer's RoPE (Gemma 3's sliding layers have their own) */
    bool attn_scaled;                  /* q scaled after RoPE or scores soft-capped (Gemma), which
                                          the device attention lacks */
    const float *attn_post_norm, *ffn_post_norm; /* RMSNorm of the attention / FFN output before
                                                    the residual add (Gemma), NULL if none */
    bool rope_ext;                     /* RoPE with frequency factors, YaRN or an attention factor
                                          (hr_rope_ext; on the device: hr_dev_rope) */
} hr_layer;

struct hearth_model {
    gguf_file file;
    hr_hparams hp;
    hr_tokenizer *tok;
    hr_mat token_embd, output;
    hr_mat pos_embd;           /* learned positions {n_embd, n_pos}; absent (data NULL) otherwise */
    const float *output_norm, *output_norm_b;
    /* RoPE frequency divisors {n_rot/2}, NULL if absent: rope_freqs (Llama-3.1+) for every
     * context; LongRoPE's long factors for contexts longer than hp.n_ctx_orig, else short. */
    const float *rope_freqs, *rope_long, *rope_short;
    hr_layer *layers;
    uint16_t *gelu_tab;        /* GELU/GEGLU models: ggml's F16 GELU table (vmath.h), 128 KiB */
    hearth_model_info info;
    char arch[32];
    bool sparse_file;          /* PWRI magic: predictors and down_t */
    float sparse_threshold;    /* predictor threshold (file, env, or flag) */
    float *ffn_thr;            /* per layer, FFN mode threshold's bound on |act(gate)| (file key
                                  hearth.ffn_threshold or the load override); NULL: none (ffn_threshold.c) */
    const char *ffn_act;       /* activation override from the load parameters (load time only) */
    void *ffn_bundle;          /* bundled FFN rows (ffn_bundle.c), NULL unless built */
    size_t ffn_bundle_bytes;
    int32_t n_bundled;         /* layers whose gate, up and down_t are views of ffn_bundle */
    hr_err notes;              /* load warnings, '\n'-separated (hearth_model_notices) */
};

/* Bundles each qualifying layer's gate, up and down_t rows per neuron (ffn_bundle.c). */
int hr_ffn_bundle(hearth_model *m, hr_err *e);
void hr_ffn_bundle_free(hearth_model *m);
/* Opens the file as p asks (mapped, or read into memory; optionally locked). */
int hr_model_open_file(hearth_model *m, const char *path, const hearth_model_params *p, hr_err *e);
/* A FLOAT32/64 key of the file (absent: *out unchanged); NaN and infinities are refused. */
int hr_model_f32(const hearth_model *m, const char *key, float *out, hr_err *e);
/* Appends a line to the load warnings. */
void hr_model_note(hearth_model *m, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Loads layer il's FFN tensors with names "blk.<il>.<prefix>..." (gate/up/down or
 * PowerInfer's down_t, fc1, fc2); suffix is "" or "_exps" (one-expert layouts). */
int hr_load_ffn(hearth_model *m, int il, const char *suffix, hr_ffn_weights *f, hr_err *e);
/* Reads the thresholds of FFN mode threshold into m->ffn_thr (ffn_threshold.c). */
int hr_load_ffn_thresholds(hearth_model *m, const hearth_model_params *p, hr_err *e);
/* Whether FFN mode threshold can run on m: one error line saying why not. */
int hr_ffn_threshold_check(const hearth_model *m, hr_err *e);
/* Predictor score blocks per neuron, the most of any layer: 2 where a linear predictor
 * scores gate and up, else 1 (the size of the score buffers). */
int32_t hr_model_pred_blocks(const hearth_model *m);
int hr_get_mat(const hearth_model *m, const char *name, int64_t n_in, int64_t n_out, bool required, hr_mat *out, hr_err *e);
int hr_get_vec(const hearth_model *m, const char *name, int64_t n, const float **out, hr_err *e);
/* The frequency factors a context of n_ctx positions per sequence uses (NULL: none), as
 * llama.cpp's get_rope_factors chooses them for its context padded to 256. */
const float *hr_rope_factors(const hearth_model *m, int32_t n_ctx);

/* ReLU-family activations zero out neurons exactly, which exact mode and the activity
 * counters rely on. */
static inline bool hr_act_relu_family(hr_act a) { return a == HR_ACT_REGLU || a == HR_ACT_DRELU || a == HR_ACT_RELU; }

/* Dense FFN activation name <-> enum. */
const char *hr_act_name(hr_act a);
int hr_act_from_name(const char *s, size_t len); /* -1 if unknown */

#endif
