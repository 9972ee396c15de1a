/* Shared by the threshold calibration files (thr_calib.c, thr_alloc.c, thr_pred.c): a dense
 * pass that hands each layer's |act(gate·x)| to an observer, per-layer histograms of it over
 * a text, and the magnitude under which a share falls. */
#ifndef HR_THR_INTERNAL_H
#define HR_THR_INTERNAL_H
#include <stddef.h>
#include <stdint.h>
#include "calibrate.h"

/* What a gate-magnitude observer sees: hr_thr_run_dense sets ctx and mag before the first
 * layer, and hr_thr_gate_mag fills mag with the layer's |act(gate·x)|. */
typedef struct hr_thr_gate {
    const hearth_model *m;
    const hearth_ctx *ctx;
    float *mag; /* [n_ctx][n_ff] */
} hr_thr_gate;
/* mag of the n_tok tokens of the layer being observed (the CPU's last gate product). */
const float *hr_thr_gate_mag(hr_thr_gate *g, int32_t n_tok);
/* Runs the tokens densely on the CPU in chunks (as o says) with fn as the FFN observer (ud
 * its argument, g the gate view fn reads); what names the step for o's progress, n_evaluated
 * (may be NULL) adds the tokens evaluated. */
int hr_thr_run_dense(hearth_model *m, const int32_t *tokens, int64_t n_tokens, const hr_collect_opts *o, hr_thr_gate *g,
                     void (*fn)(void *ud, int32_t il, int32_t n_tok, const float *p, const float *act), void *ud,
                     const char *what, uint64_t *n_evaluated, hr_err *e);
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
