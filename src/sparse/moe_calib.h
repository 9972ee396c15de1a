/* Calibration of mixtures of experts (hearth calibrate on an MoE model): routing counts per
 * layer and expert, firing counts per expert neuron (ReLU-family experts), and the model
 * file rewritten with each layer's experts' down matrices transposed (ffn_down_exps_t), so
 * that --ffn exact reads only the firing neurons' down rows. */
#ifndef HR_MOE_CALIB_H
#define HR_MOE_CALIB_H
#include "calibrate.h"

typedef struct hr_moe_pairs hr_moe_pairs; /* moe_pred.h */
typedef struct hr_moe_pred hr_moe_pred;

/* Whether m's layers are mixtures of experts. */
bool hr_calib_is_moe(const hearth_model *m);

/* Runs m densely over tokens in chunks (o: chunk size, threads, bos, progress) and fills
 * stats (hr_stats_init_moe: expert_counts, and counts for ReLU-family experts); pairs (NULL:
 * none; ReLU-family experts) collects each expert's (input, firing set) pairs. */
int hr_calib_moe(hearth_model *m, const int32_t *tokens, int64_t n_tokens, const hr_collect_opts *o, hr_stats *stats, hr_moe_pairs *pairs,
                 hr_err *e);

/* Writes m's file to path (GGUF, every key and tensor as it is) with each
 * blk.N.ffn_down_exps.weight {n_ff_exp, n_embd, n_expert} replaced by
 * blk.N.ffn_down_exps_t.weight {n_embd, n_ff_exp, n_expert} of the same type (dequantized,
 * transposed, requantized per expert, as PowerInfer files store ffn_down_t). */
int hr_write_moe_down_t(const hearth_model *m, const char *path, hr_err *e);
/* The same, plus preds' kept expert predictors (moe_pred.h; F16 when f16; NULL: none); any
 * predictor tensors of m's file are replaced. */
int hr_write_moe_sparse(const hearth_model *m, const hr_moe_pred *preds, bool f16, const char *path, hr_err *e);
#endif
