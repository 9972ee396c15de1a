/* Per-context operation profile (hearth bench --profile). The forward pass and the CPU
 * backend wrap each dispatched operation in hr_prof_begin/hr_prof_end when the context's
 * profile exists; with none (the default) each hook is one NULL test. Times are exclusive:
 * an operation timed inside another (a matmul inside the MoE routing) is charged to itself
 * and subtracted from the outer one, and the thread pool's hand-off and wait time inside an
 * operation is charged to HR_PROF_SYNC, so the slots add up to the timed wall time. */
#ifndef HR_PROF_H
#define HR_PROF_H
#include <stdint.h>
#include <time.h>
#include "../../formats/types.h"
#include "pool.h"

typedef enum hr_prof_op {
    HR_PROF_MATVEC,    /* dense product, one token (per weight type) */
    HR_PROF_GEMM,      /* dense product, several tokens (per weight type) */
    HR_PROF_GATHER,    /* gathered rows (per weight type) */
    HR_PROF_AXPY,      /* sparse axpy over ffn_down_t rows (per weight type) */
    HR_PROF_FFN,       /* one token's fused sparse FFN over bundled rows: each active neuron's
                          gate, up and down_t rows (per weight type) */
    HR_PROF_PREDICTOR, /* predictor fc1/fc2 products and the threshold test */
    HR_PROF_ATTN,      /* KV store, scores, softmax, weighted sum of V */
    HR_PROF_NORM,      /* RMSNorm / LayerNorm of the residual stream, q/k head norms */
    HR_PROF_ROPE,
    HR_PROF_ELEM,      /* activations, masks, residual adds, biases, scales */
    HR_PROF_MOE_ROUTE, /* router product, top-k, grouping tokens by expert */
    HR_PROF_SYNC,      /* thread pool: hand-off, imbalance and waits inside operations */
    HR_PROF_OPS
} hr_prof_op;

typedef struct hr_prof_slot {
    uint64_t ns, calls, bytes;
} hr_prof_slot;

typedef struct hr_prof {
    hr_prof_slot slot[HR_PROF_OPS][HR_TYPE_MAX]; /* ops without a weight type use [op][0] */
    uint64_t attributed_ns; /* wall time inside timed operations (outermost level) */
    uint64_t sync_seen_ns;  /* the pool's sync counter already charged */
    uint64_t total_ns, tokens, forwards; /* whole forward calls */
    uint64_t cpu0_ns;       /* the process's CPU time when the profile started */
    int scope;              /* >= 0: products inside are charged to this op (predictor, router) */
    hr_pool *pool;
} hr_prof;

typedef struct hr_prof_mark {
    uint64_t t0, attr0;
} hr_prof_mark;

static inline uint64_t hr_prof_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline hr_prof_mark hr_prof_begin(const hr_prof *p) {
    hr_prof_mark m = {0, 0};
    if (p) m.t0 = hr_prof_now(), m.attr0 = p->attributed_ns;
    return m;
}

/* Charges the time since m to op (type: the weight type, or 0), less what nested
 * operations and the pool's waits took; bytes: what the operation reads and writes. */
void hr_prof_end(hr_prof *p, hr_prof_mark m, hr_prof_op op, uint32_t type, uint64_t bytes);

/* Starts (resets) a profile on pool's runs; hr_prof_stop turns the pool's timing off. */
void hr_prof_start(hr_prof *p, hr_pool *pool);
void hr_prof_stop(hr_prof *p);
/* Around one forward call of n_tok tokens: the whole call's wall time. */
void hr_prof_forward(hr_prof *p, hr_prof_mark m, int64_t n_tok);
const char *hr_prof_op_name(hr_prof_op op);
/* CPU time of the whole process (all threads, spinning included). */
uint64_t hr_prof_cpu_now(void);
#endif
