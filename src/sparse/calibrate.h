/* Calibration (hearth calibrate): run a ReLU-family model densely over text, count how
 * often each neuron fires, keep (predictor input, active set) pairs, train one predictor
 * per layer, and write a PowerInfer file plus the statistics file. */
#ifndef HR_CALIBRATE_H
#define HR_CALIBRATE_H
#include <stdbool.h>
#include <stdint.h>
#include "backends/cpu/matmul.h"
#include "formats/gguf.h"
#include "hearth.h"
#include "stats.h"

typedef void (*hr_progress_fn)(void *ud, const char *phase, double frac);

/* ---- collection (collect.c) ---- */

/* (p, active set) pairs per layer, for the same tokens in every layer. */
typedef struct hr_pairs {
    int32_t n_layer, n_embd, n_ff;
    int64_t cap, n;     /* pairs per layer: capacity and filled */
    size_t mask_bytes;  /* bytes of one active-set bitset: (n_ff + 7) / 8 */
    float *p;           /* [n_layer][cap][n_embd] */
    uint8_t *mask;      /* [n_layer][cap][mask_bytes]; bit j of byte j/8 = neuron j fired */
} hr_pairs;

static inline bool hr_pair_bit(const uint8_t *m, int64_t j) { return (m[j >> 3] >> (j & 7)) & 1; }

typedef struct hr_collect_opts {
    int32_t n_ctx;      /* tokens per chunk (each chunk from an empty cache) */
    int32_t n_threads;
    int64_t max_pairs;  /* pairs kept per layer, spread evenly over the text */
    int32_t bos;        /* >= 0: each chunk starts with this token, then n_ctx - 1 text tokens */
    hr_progress_fn progress;
    void *progress_ud;
} hr_collect_opts;

/* Evaluates the text in chunks of the context's size, each from an empty cache (position 0)
 * and led by o->bos when there is one, so the context's observers and
 * counters see every token once; progress reported as what; the tokens evaluated (BOS
 * included) added to *n_evaluated when not NULL. */
int hr_calib_eval_chunks(hearth_ctx *ctx, const int32_t *tokens, int64_t n_tokens, const hr_collect_opts *o,
                         const char *what, uint64_t *n_evaluated, hr_err *e);

/* Counts activations over tokens (stats->n_tokens = tokens evaluated) and fills pairs.
 * Refuses FFNs that are not ReLU-family (nothing is exactly zero there). */
int hr_calib_collect(hearth_model *m, const int32_t *tokens, int64_t n_tokens, const hr_collect_opts *o,
                     hr_stats *stats, hr_pairs *pairs, hr_err *e);
void hr_pairs_free(hr_pairs *p);
/* Room for cap pairs per layer of n_layer layers of width d and ff neurons. */
int hr_pairs_init(hr_pairs *p, int32_t n_layer, int32_t d, int32_t ff, int64_t cap, hr_err *e);
/* Layer il's n_tok FFN inputs p [n_tok][n_embd] and activations act [n_tok][n_ff]: counts in
 * cnt [n_ff] each neuron's active tokens (act != 0, or act > *thr where thr is given) and
 * keeps every stride-th token's pair (seen[il]: tokens layer il has seen so far). */
void hr_pairs_record(hr_pairs *pp, uint32_t *cnt, int64_t *seen, int64_t stride, int32_t il, int32_t n_tok, const float *p,
                     const float *act, const float *thr);

/* ---- predictor training (predictor_train.c) ---- */

typedef struct hr_pred_opts {
    double recall;      /* target recall of truly active neurons on held-out pairs */
    int32_t max_rank;   /* largest hidden width r tried */
    int32_t min_rank;   /* smallest r tried (0: 16) */
    int32_t epochs;     /* passes over the training pairs per rank (0: default) */
    bool f16;           /* predictor will be stored as F16: measure with rounded weights */
    double ffn_neuron_bytes; /* bytes one computed neuron reads (gate+up+down rows), for the rank choice */
    uint64_t seed;
    double min_precision; /* linear form: the cheapest rank whose calibration-pair precision reaches it */
    float rms_eps;      /* linear form: the model's RMSNorm epsilon */
    bool band;          /* linear form for threshold files: active iff the gate estimate is outside */
    float band_lo, band_hi; /* (band_lo, band_hi), the band where |act(g)| <= the threshold (hr_thr_band) */
    hr_progress_fn progress;
    void *progress_ud;
} hr_pred_opts;

typedef struct hr_predictor {
    int32_t n_embd, n_ff, r;
    float *fc1;         /* [r][n_embd]  (ggml {n_embd, r}) */
    float *fc2;         /* [m n_ff][r]  (ggml {r, m n_ff}; m = 1 in PowerInfer's form) */
    float recall, precision; /* on the test pairs */
    float pred_frac, true_frac; /* mean predicted / truly active share of neurons */
    int32_t m;          /* linear form: score blocks (1, or 2 for dReLU's gate and up); 0: PowerInfer's */
    float *bias;        /* linear form: [m n_ff], times the input's RMS (ffn.c); else NULL */
    bool band;          /* linear form of a threshold file: bias [2 n_ff], the upper then the lower test */
} hr_predictor;

/* Trains one layer's predictor from n pairs (P [n][n_embd], masks [n][mask_bytes]).
 * G (optional, [n_ff][n_embd]) is the effective deciding matrix (gate rows times the norm
 * weight), whose data-weighted truncated SVD starts the training. Ranks are tried upward
 * from min_rank, doubling, up to max_rank; each reaches the recall target through a
 * per-layer shift folded into fc2; the rank with the fewest bytes read per token
 * (predictor + predicted neurons) wins (a rank whose predictor alone reads more than the
 * best so far is not trained). The products run on cpu's threads; the result does not
 * depend on their count. */
int hr_predictor_train(hr_cpu *cpu, const float *P, const uint8_t *masks, int64_t n, int32_t n_embd, int32_t n_ff,
                       const float *G, const hr_pred_opts *o, hr_predictor *out, hr_err *e);
/* The linear form (predictor_linear.c): fc1 = Q^T Dec, fc2 = Q from the data-weighted
 * truncated SVD of Dec [m n_ff][n_embd] (the m deciding matrices stacked, norm weight
 * folded: gate, then up for dReLU), no ReLU; each score row gets a bias of its residual's
 * RMS times one per-layer shift set for the recall target on held-out pairs. Inputs are
 * RMS-normalised for the fit, so a token's biases scale with its RMS when run. Ranks from
 * min_rank (0: 16) up to min(max_rank, n_embd) in steps of about 1.25x; the cheapest in
 * bytes per token among those reaching o->min_precision on the calibration pairs wins (the
 * most precise when none does). */
int hr_predictor_fit_linear(hr_cpu *cpu, const float *P, const uint8_t *masks, int64_t n, int32_t n_embd, int32_t n_ff,
                            const float *Dec, int32_t m, const hr_pred_opts *o, hr_predictor *out, hr_err *e);
/* Recall, precision and predicted share of a predictor over pairs. */
int hr_predictor_eval(hr_cpu *cpu, const hr_predictor *pr, const float *P, const uint8_t *masks, int64_t n,
                      double *recall, double *precision, double *pred_frac, hr_err *e);
void hr_predictor_free(hr_predictor *p);

/* ---- model access (calib_model.c) ---- */

/* Layer il's effective deciding matrix [n_ff][n_embd]: gate (or up without a gate) rows
 * times the FFN norm weight, so that for RMSNorm sign(G p) = sign(gate · norm(p)). */
float *hr_calib_decider(const hearth_model *m, int il, hr_err *e);
/* The deciding matrices of the linear form: 2 for dReLU with a gate (gate and up must both
 * be positive), else 1; hr_calib_deciders stacks them [n][n_ff][n_embd], norm weight folded. */
int32_t hr_calib_n_deciders(const hearth_model *m);
float *hr_calib_deciders(const hearth_model *m, int il, hr_err *e);
/* The model's RMSNorm epsilon, and whether the linear form fits it (RMSNorm only). */
float hr_calib_rms_eps(const hearth_model *m);
int hr_calib_linear_check(const hearth_model *m, hr_err *e);
/* Bytes one computed neuron reads in layer 0 (gate, up and down rows). */
double hr_calib_neuron_bytes(const hearth_model *m);

/* ---- PowerInfer writer (pwri_write.c) ---- */

/* Layer il's predictor tensors: blk.N.fc1/fc2 (F16 into buffers from alloc(ud, bytes), which
 * must stay alive until the file is written, or F32 from p) and the linear form's fc2.bias. */
int hr_w_predictor(gguf_writer *w, const hr_predictor *p, int il, bool f16, void *(*alloc)(void *, size_t), void *ud, hr_err *e);

/* Writes model m as a PowerInfer GGUF: every KV (but powerinfer.sparse_threshold) and
 * tensor copied, ffn_down replaced by its transpose ffn_down_t (same type), and
 * blk.N.fc1/fc2 from preds (F16 if f16, else F32). For PowerInfer's loader: a tied output
 * is written as output.weight (a copy of token_embd) unless the architecture always ties
 * it (opt), and a dReLU llama without rope_freqs is written as architecture bamboo (its
 * llama.* keys as bamboo.*). */
int hr_write_powerinfer(const hearth_model *m, const hr_predictor *preds, bool f16, const char *path, hr_err *e);

/* ffn_down {n_ff, n_embd} t transposed to ffn_down_t {n_embd, n_ff} of the same type:
 * its size (0 with a message when the type or shape cannot be), and the transposition
 * into out (that many bytes). */
uint64_t hr_down_t_bytes(const gguf_tensor *t, hr_err *e);
int hr_transpose_down_into(const gguf_tensor *t, void *out, hr_err *e);

/* ---- thresholds of FFN mode threshold (thr_calib.c, thr_write.c) ---- */

/* Per layer, the bound on |act(gate·x)| under which a fraction target (in [0, 1)) of the
 * layer's neurons falls over the tokens, the model run densely (chunks as o says; pairs
 * and max_pairs unused). From a histogram of 128 log-spaced bins per octave, interpolated
 * within the bin; target 0 gives 0 (skip only exact zeros: dense). Gated FFNs only. */
int hr_calib_thresholds(hearth_model *m, const int32_t *tokens, int64_t n_tokens, const hr_collect_opts *o, double target,
                        float *thr, hr_err *e);
/* Per-layer allocation at the same average (TEAL-style greedy search; thr_alloc.c): every
 * layer starts at sparsity 0; each step raises by `step` the one layer whose raise gives the
 * smallest mean KL(dense || thresholded) of the next-token distributions over the text's
 * first eval_tokens tokens, until the layers' mean is target. A layer's threshold for a
 * share is read from its dense histogram, as hr_calib_thresholds does. When uniform target
 * scores lower than the search's end point, uniform is returned (kept_uniform). */
typedef struct hr_thr_alloc {
    int32_t eval_tokens; /* in: text tokens scored (the text's first); 0: 512 */
    double step;         /* in: share of one layer's neurons a step adds (about; 0: 0.05) */
    float *share;        /* out, n_layer (the caller's): share of each layer's neurons skipped */
    double kl_uniform, kl_alloc; /* out: mean KL of uniform target and of the allocation */
    int32_t n_scored;    /* out: positions scored */
    int64_t n_evals;     /* out: evaluations of the scored tokens the search made */
    bool kept_uniform;   /* out: uniform scored lower than the search's result and was kept */
} hr_thr_alloc;
int hr_calib_thresholds_alloc(hearth_model *m, const int32_t *tokens, int64_t n_tokens, const hr_collect_opts *o,
                              double target, hr_thr_alloc *a, float *thr, hr_err *e);
/* Writes model m with key hearth.ffn_threshold = thr (one per layer), every other KV and
 * tensor copied; down_t: ffn_down replaced by ffn_down_t (what the sparse path reads; such
 * a file is Hearth's only), else ffn_down kept (llama.cpp still loads the file). */
int hr_write_thresholds(const hearth_model *m, const float *thr, bool down_t, const char *path, hr_err *e);
/* The same with per-layer predictors (preds: n_layer of them, F16 if f16, else F32) as
 * blk.N.fc1/fc2, replacing the input's: `--ffn predicted` then computes the gate only for
 * predicted neurons, and up and down for those of them above the threshold. */
int hr_write_thresholds_pred(const hearth_model *m, const float *thr, bool down_t, const hr_predictor *preds, bool f16,
                             const char *path, hr_err *e);

/* ---- predictors for threshold files (thr_pred.c) ---- */

/* Like hr_calib_collect, for any gated FFN: the model run densely, neuron j of layer l is
 * active on a token iff |act(gate·x)| > thr[l] (FFN mode threshold's set); stats counts
 * that per neuron (hot neurons for `hearth place`), pairs keep (p, active set) for
 * hr_predictor_train. */
int hr_calib_collect_thr(hearth_model *m, const int32_t *tokens, int64_t n_tokens, const hr_collect_opts *o, const float *thr,
                         hr_stats *stats, hr_pairs *pairs, hr_err *e);
/* Bytes of one gate row in layer 0: what a predicted neuron of a threshold file reads before
 * its threshold test (the rank search's ffn_neuron_bytes there). */
double hr_calib_gate_row_bytes(const hearth_model *m);
/* The band (lo, hi) of gate products g around 0 where |act(g)| <= t, for the linear form's
 * two-sided test: hi the smallest g > 0 above t, lo the negative g nearest 0 above t (silu
 * and gelu dip below 0), -inf where the dip stays within t. Very negative g, where the
 * magnitude falls back under t, is outside the band: predicted, at the cost of a gate row. */
int hr_thr_band(const hearth_model *m, float t, float *lo, float *hi, hr_err *e);

/* ---- plot (plot_svg.c) ---- */

/* Per layer: sorted activation frequency on log-log axes, and the cumulative share of
 * activations served by the hottest neurons. */
int hr_plot_svg(const hr_stats *s, const char *path, hr_err *e);

#endif
