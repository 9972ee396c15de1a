/* The loaded model: hyperparameters and tensor views into the mapped GGUF file.
 * Weights are used in place from the mapping, never copied. */
#ifndef HR_MODEL_H
#define HR_MODEL_H
#include <stdbool.h>
#include "hearth.h"
#include "backends/cpu/kernels.h"
#include "formats/gguf.h"
#include "tokenizer/tokenizer.h"

typedef enum hr_act { HR_ACT_SWIGLU = 0, HR_ACT_REGLU, HR_ACT_DRELU, HR_ACT_RELU } hr_act;

typedef struct hr_hparams {
    int32_t n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_ctx_train;
    int32_t n_rot;          /* rotated dims per head (rope.dimension_count) */
    float rms_eps;
    float rope_base;
    float rope_freq_scale; /* 1 / linear scaling factor */
    bool rope_neox;        /* pairs (i, i + n_rot/2) instead of (2i, 2i+1) */
    hr_act act;
    bool has_gate;         /* false for plain ReLU FFNs (up only) */
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
    const float *b_up, *b_down; /* biases (OPT), NULL if none */
} hr_ffn_weights;

typedef struct hr_layer {
    const float *attn_norm, *ffn_norm; /* F32 vectors */
    hr_mat wq, wk, wv, wo;
    hr_ffn_weights ffn;
    bool use_rope;                     /* false for NoPE layers */
} hr_layer;

struct hearth_model {
    gguf_file file;
    hr_hparams hp;
    hr_tokenizer *tok;
    hr_mat token_embd, output;
    const float *output_norm;
    hr_layer *layers;
    hearth_model_info info;
    char arch[32];
    bool sparse_file;          /* PWRI magic: predictors and down_t */
    float sparse_threshold;    /* predictor threshold (file, env, or flag) */
};

/* Loads layer il's FFN tensors with names "blk.<il>.<prefix>..." (gate/up/down or
 * PowerInfer's down_t, fc1, fc2); suffix is "" or "_exps" (one-expert layouts). */
int hr_load_ffn(hearth_model *m, int il, const char *suffix, hr_ffn_weights *f, hr_err *e);
int hr_get_mat(const hearth_model *m, const char *name, int64_t n_in, int64_t n_out, bool required, hr_mat *out, hr_err *e);
int hr_get_vec(const hearth_model *m, const char *name, int64_t n, const float **out, hr_err *e);

/* Dense FFN activation name <-> enum. */
const char *hr_act_name(hr_act a);
int hr_act_from_name(const char *s, size_t len); /* -1 if unknown */

#endif
