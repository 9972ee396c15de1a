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

typedef struct hr_layer {
    const float *attn_norm, *ffn_norm; /* F32 vectors */
    hr_mat wq, wk, wv, wo;
    hr_mat gate, up, down;             /* down: n_in = n_ff, n_out = n_embd */
    const float *rope_layer_mask;      /* reserved */
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
};

/* Dense FFN activation name <-> enum. */
const char *hr_act_name(hr_act a);
int hr_act_from_name(const char *s, size_t len); /* -1 if unknown */

#endif
