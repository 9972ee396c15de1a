/* Shared by the threshold calibration files (thr_calib.c, thr_alloc.c): per-layer
 * histograms of |act(gate·x)| over a text, and the magnitude under which a share falls. */
#ifndef HR_THR_INTERNAL_H
#define HR_THR_INTERNAL_H
#include <stddef.h>
#include <stdint.h>
#include "calibrate.h"

/* Bins of one layer's histogram. */
size_t hr_thr_n_bins(void);
/* Runs the model densely over the tokens (chunks as o says) and returns in *hist (the
 * caller frees) n_layer histograms of hr_thr_n_bins() counts; refuses targets outside
 * [0, 1), experts, ungated FFNs and empty texts. */
int hr_thr_histograms(hearth_model *m, const int32_t *tokens, int64_t n_tokens, const hr_collect_opts *o, double target,
                      uint64_t **hist, hr_err *e);
/* The magnitude with a share target of histogram h's mass at or below it; 0 for target 0. */
float hr_thr_pick(const uint64_t *h, double target);

#endif
