/* A context: KV cache, scratch buffers and the CPU thread pool for one model. */
#ifndef HR_CONTEXT_H
#define HR_CONTEXT_H
#include "backends/cpu/matmul.h"
#include "backends/cpu/sparse.h"
#include "model.h"

/* The host KV cache (context.c allocates, attention.c reads and writes): the layers whose
 * attention runs on the host; the device keeps the others' (hybrid.h). */
typedef struct hr_kv_cache {
    hearth_kv_type k_type, v_type;
    uint8_t *k_cache, *v_cache; /* [n_seq][n_layer][n_head_kv][n_ctx][head_dim] of F16 or F32: a
                                   head's rows are contiguous, so a decode step streams them */
    int32_t *layer;             /* [model's n_layer]: the layer's index in the caches; -1 when its
                                   attention, and so its cache, is on the device */
    int32_t n_layer;            /* layers the caches hold */
    size_t k_elem, v_elem;      /* bytes per cache element */
    uint64_t bytes;
} hr_kv_cache;

/* Scratch of one forward call, sized for n_batch tokens (forward.c, attention.c, ffn.c). */
typedef struct hr_scratch {
    float *x, *xn, *q, *k, *v, *att, *tmp, *g, *u, *h;
    float *xb;      /* parallel layers (Falcon): attention input and output [n_batch][n_embd] */
    float *scores;  /* [n_threads][4][n_ctx]: attention's scores of a group of queries */
    uint8_t *qprep; /* [n_threads][8][prepared q row]: 4 prepared, 4 re-laid (hr_rows_dot's xt) */
    size_t qprep_stride;
    int32_t *tok_pos, *tok_seq; /* [n_batch] position and sequence of each token of a forward call */
    bool *tok_want;             /* [n_batch] logits wanted */
} hr_scratch;

/* The FFN's mode, its statistics and the sparse modes' scratch (ffn.c, ffn_threshold.c). */
typedef struct hr_ffn_state {
    hearth_ffn_mode mode;
    bool stats_on;
    hearth_ffn_stats *stats; /* [n_layer] */
    float *a;                /* [n_batch][n_ff] activations of computed neurons */
    float *s;                /* [n_batch][n_ff] predictor scores */
    float *ph;               /* [n_batch][max predictor rank] */
    int32_t *idx;            /* [n_ff] union of active neurons */
    int32_t *all;            /* [n_ff] 0..n_ff-1 */
    uint8_t *mask;           /* [n_batch][n_ff] active flags */
    void (*observer)(void *ud, int32_t layer, int32_t n_tok, const float *p, const float *act); /* calibration hook */
    void *observer_ud;
} hr_ffn_state;

/* A context's parts, each for the stage that uses it: the host KV cache, the forward call's
 * scratch, the FFN state, the outputs, the device side, the experts' workspace. */
struct hearth_ctx {
    hearth_model *m;
    int32_t n_ctx, n_batch, n_seq;
    hr_cpu cpu;
    hr_sparse_ws sparse_ws; /* partial sums of the sparse down projection */
    hr_kv_cache kv;
    hr_scratch sc;
    hr_ffn_state ffn;
    float *logits;  /* [logits_rows][n_vocab] */
    int64_t logits_cap, n_logits;
    bool embd_mode;  /* wanted tokens get their final hidden state instead of logits */
    float *embd;     /* [embd rows][n_embd] */
    int64_t embd_cap, n_embd_rows;
    uint64_t scratch_bytes; /* all of the context's buffers but the KV cache */
    struct hr_hybrid *hy; /* device side (hybrid.h); NULL: CPU only */
    struct hr_moe_ws *moe; /* mixture-of-experts workspace and counters (moe.c); NULL: dense */
};

/* One forward call: up to n_batch tokens, token t at position pos[t] of sequence seq[t]
 * (pos and seq may point at c->sc.tok_pos / c->sc.tok_seq). want[t] (NULL: none) asks for
 * token t's logits, written in order as consecutive rows of logits. */
typedef struct hr_fwd {
    const int32_t *tokens, *pos, *seq;
    int32_t n;
    const bool *want;
    float *logits;
    float *embd; /* non-NULL: the wanted tokens' rows after the output norm go here, no logits */
} hr_fwd;

int hr_forward(hearth_ctx *c, const hr_fwd *f, hr_err *e);

/* A context's shape as hearth_ctx_new resolves its parameters (defaults, n_batch capped
 * at n_ctx, the FFN mode the model allows). */
typedef struct hr_ctx_shape {
    int32_t n_ctx, n_batch, n_seq;
    hearth_ffn_mode ffn_mode; /* never AUTO */
} hr_ctx_shape;
int hr_ctx_shape_resolve(const hearth_model *m, const hearth_ctx_params *p, hr_ctx_shape *s, hr_err *e);
/* Attention for the n tokens of f in layer il, reading q/k/v scratch, writing c->att; only
 * for layers with a host cache (forward.c gives the others to the device). */
void hr_attention(hearth_ctx *c, int il, const hr_fwd *f);
/* Element index of the first entry of host cache cell (seq, layer, kv head, pos); only for
 * layers whose attention runs on the host (c->kv.layer[il] >= 0): the device keeps the
 * others. Head-major: a position-major cache put one head's rows 4 KiB or more apart, so
 * every row of a decode step was a new page for the TLB and the prefetcher, and attention
 * read the cache at a quarter of the weights' rate. */
static inline size_t hr_kv_cell(const hearth_ctx *c, int32_t seq, int il, int32_t kvh, int32_t pos) {
    const size_t head = ((size_t)seq * (size_t)c->kv.n_layer + (size_t)c->kv.layer[il]) * (size_t)c->m->hp.n_head_kv +
                        (size_t)kvh;
    return (head * (size_t)c->n_ctx + (size_t)pos) * (size_t)c->m->hp.head_dim;
}
#endif
