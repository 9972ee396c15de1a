/* Predictors inside experts (hearth calibrate on ReLU-family mixtures of experts; --ffn
 * predicted). The dense calibration run hands every used expert's inputs and activations to a
 * collector (moe.h's observer) that keeps, per layer and expert, a seeded uniform sample of
 * (expert input, firing set) pairs; each expert routed often enough then gets its own low-rank
 * predictor from the dense trainer (predictor_train.c), started from the expert's gate, whose
 * rank search here weighs the predictor's bytes against the gate rows it saves. An expert keeps
 * its predictor only where predicted mode reads fewer bytes than exact mode would: exact reads
 * the whole gate, predicted reads the predictor plus the predicted neurons' gate rows (up and
 * down are read for firing neurons in both).
 *
 * File tensors (docs/stats-format.md, "Expert predictors"): blk.N.fc1_exps.E.weight
 * {n_embd, r} and blk.N.fc2_exps.E.weight {r, n_ff_exp} for expert E of layer N, named after
 * the dense blk.N.fc1/fc2 with llama.cpp's _exps suffix and the expert id; F16 (F32 for F32
 * models); absent for experts without one. */
#ifndef HR_MOE_PRED_H
#define HR_MOE_PRED_H
#include "calibrate.h"

/* Experts routed fewer times than this in calibration get no predictor: too few pairs to
 * train, and to set the recall shift on (a tenth of them). */
#define HR_MOE_PRED_MIN_PAIRS 200
/* The rank search starts lower than the dense one (16): an expert is a small FFN, and its
 * predictor's bytes weigh against a gate of n_ff_exp rows. */
#define HR_MOE_PRED_MIN_RANK 8

typedef struct hr_moe_pair_set {
    int64_t n, alloc;   /* pairs kept, capacity allocated so far */
    uint64_t seen;      /* routings offered */
    float *p;           /* [alloc][n_embd] expert inputs */
    uint8_t *mask;      /* [alloc][mask_bytes] firing sets */
} hr_moe_pair_set;

typedef struct hr_moe_pairs {
    int32_t n_layer, n_expert, n_embd, n_ff;
    int64_t cap;        /* pairs kept per expert at most (a uniform sample of its routings) */
    size_t mask_bytes;
    hr_moe_pair_set *set; /* [n_layer][n_expert] */
    uint64_t rng;
    bool oom;           /* an allocation failed during collection */
} hr_moe_pairs;

int hr_moe_pairs_init(hr_moe_pairs *p, const hearth_model *m, int64_t cap, uint64_t seed, hr_err *e);
void hr_moe_pairs_free(hr_moe_pairs *p);
/* The collector (an hr_moe_observer; ud: the hr_moe_pairs). */
void hr_moe_pairs_observe(void *ud, int il, int32_t x, int32_t cnt, const float *xin, const float *act);

/* One expert's outcome. */
typedef struct hr_moe_pred {
    hr_predictor p;     /* fc1 NULL: no predictor (why says why) */
    int64_t n_pairs;
    uint64_t routed;
    double gate_bytes;  /* the expert's gate, read whole by exact mode */
    double pred_bytes;  /* predicted mode per routed token: predictor + predicted gate rows
                           (test pairs); 0 when not trained */
    char why[128];      /* skipped: the reason; kept: empty */
} hr_moe_pred;

typedef struct hr_moe_pred_opts {
    double recall;
    int32_t max_rank, epochs;
    bool f16;
    uint64_t seed;
    hr_progress_fn progress; /* NULL: none; called as experts finish ("training", share done), from
                                one pool thread only, so never twice at once */
    void *progress_ud;
} hr_moe_pred_opts;

/* Trains out[il * n_expert + x] for every layer and expert of m from pairs, the experts in
 * parallel over cpu's threads (each on one thread); the result does not depend on their count. */
int hr_moe_train_preds(hr_cpu *cpu, const hearth_model *m, const hr_moe_pairs *pairs, const hr_moe_pred_opts *o, hr_moe_pred *out,
                       hr_err *e);
void hr_moe_preds_free(hr_moe_pred *p, size_t n);
/* Adds the kept predictors' tensors to w (F16 when f16); their buffers go into bufs[*nb]
 * (freed by the caller after gguf_w_write; bufs holds 2 per kept predictor). */
int hr_moe_preds_add(gguf_writer *w, const hearth_model *m, const hr_moe_pred *preds, bool f16, void **bufs, size_t *nb, hr_err *e);
#endif
