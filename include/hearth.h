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
} hearth_model_params;

/* FFN modes: dense computes every neuron; exact computes the gate fully, then only the
 * neurons whose activation is non-zero (ReLU-family models; same output as dense);
 * predicted lets the file's per-layer predictors choose (PowerInfer files). */
typedef enum hearth_ffn_mode {
    HEARTH_FFN_AUTO = 0, /* predicted when the file has predictors, else dense */
    HEARTH_FFN_DENSE,
    HEARTH_FFN_EXACT,
    HEARTH_FFN_PREDICTED
} hearth_ffn_mode;

/* Per-layer activity, summed over evaluated tokens. tokens and computed are always
 * counted; fired and fired_computed only with ffn_stats on (ReLU-family models). */
typedef struct hearth_ffn_stats {
    uint64_t tokens;
    uint64_t computed;  /* neurons computed (predicted mode: predicted active) */
    uint64_t fired;     /* neurons whose exact activation is non-zero (needs the full gate) */
    uint64_t fired_computed; /* fired and computed: recall = fired_computed / fired */
} hearth_ffn_stats;

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
} hearth_ctx_params;

typedef struct hearth_model_info {
    const char *arch;        /* "llama", "exaone", "smallthinker", "bamboo", "falcon", "opt" */
    const char *ffn_act;     /* "swiglu", "reglu", "drelu", "relu", "gelu" */
    int32_t n_vocab, n_ctx_train, n_embd, n_layer, n_head, n_head_kv, n_ff, head_dim;
    uint32_t weight_type;    /* dominant weight type (ggml id) */
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

/* Tokenizer of the model (see src/tokenizer/tokenizer.h for the semantics). *out is malloc'ed. */
int hearth_tokenize(const hearth_model *m, const char *text, size_t len, bool add_special,
                    bool parse_special, int32_t **out, size_t *n_out, hr_err *e);
int hearth_token_piece(const hearth_model *m, int32_t id, bool render_special, char *buf, size_t cap);
int32_t hearth_token_bos(const hearth_model *m);
bool hearth_token_is_eog(const hearth_model *m, int32_t id);

hearth_ctx *hearth_ctx_new(hearth_model *m, const hearth_ctx_params *p, hr_err *e);
void hearth_ctx_free(hearth_ctx *c);
int32_t hearth_ctx_n_ctx(const hearth_ctx *c);
/* Bytes the context holds beyond the mapped file: KV cache and scratch buffers. */
uint64_t hearth_ctx_kv_bytes(const hearth_ctx *c);
uint64_t hearth_ctx_scratch_bytes(const hearth_ctx *c);

/* The FFN mode the context resolved to (never AUTO), and layer il's counters. */
hearth_ffn_mode hearth_ctx_ffn_mode(const hearth_ctx *c);
int hearth_ctx_ffn_stats(const hearth_ctx *c, int32_t il, hearth_ffn_stats *out);
const char *hearth_ffn_mode_name(hearth_ffn_mode m);
float hearth_model_sparse_threshold(const hearth_model *m);
bool hearth_model_has_predictors(const hearth_model *m);

/* Evaluates n tokens at positions pos..pos+n-1 (the cache keeps 0..pos-1; later entries
 * are overwritten). n may exceed n_batch: it is split internally. all_logits: keep the
 * logits of every token (else only the last). Errors: pos+n > n_ctx, bad token id. */
int hearth_eval(hearth_ctx *c, const int32_t *tokens, int32_t n, int32_t pos, bool all_logits, hr_err *e);
/* Logits (n_vocab floats) of token i of the last eval (i = -1: the last token). */
const float *hearth_logits(const hearth_ctx *c, int32_t i);

#endif
