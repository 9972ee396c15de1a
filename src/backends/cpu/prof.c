/* Exclusive-time accounting of hr_prof (prof.h). */
#include "prof.h"

#include <string.h>

static const char *const op_names[HR_PROF_OPS] = {
    [HR_PROF_MATVEC] = "matvec",       [HR_PROF_GEMM] = "gemm",       [HR_PROF_GATHER] = "gather",
    [HR_PROF_AXPY] = "axpy",           [HR_PROF_FFN] = "sparse_ffn",  [HR_PROF_PREDICTOR] = "predictor",
    [HR_PROF_ATTN] = "attention",      [HR_PROF_NORM] = "norm",       [HR_PROF_ROPE] = "rope",
    [HR_PROF_ELEM] = "elementwise",    [HR_PROF_MOE_ROUTE] = "moe_route", [HR_PROF_SYNC] = "sync",
};

const char *hr_prof_op_name(hr_prof_op op) { return op >= 0 && op < HR_PROF_OPS ? op_names[op] : "?"; }

uint64_t hr_prof_cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void hr_prof_start(hr_prof *p, hr_pool *pool) {
    memset(p, 0, sizeof *p);
    p->scope = -1;
    p->pool = pool;
    hr_pool_set_timing(pool, true);
    p->sync_seen_ns = hr_pool_sync_ns(pool);
    p->cpu0_ns = hr_prof_cpu_now();
}

void hr_prof_stop(hr_prof *p) {
    if (p && p->pool) hr_pool_set_timing(p->pool, false);
}

/* The pool's waits since the last charge: they happened inside the operation ending now
 * (nested operations took theirs when they ended). */
static uint64_t take_sync(hr_prof *p) {
    uint64_t s = hr_pool_sync_ns(p->pool), d = s - p->sync_seen_ns;
    p->sync_seen_ns = s;
    return d;
}

void hr_prof_end(hr_prof *p, hr_prof_mark m, hr_prof_op op, uint32_t type, uint64_t bytes) {
    if (!p) return;
    const uint64_t wall = hr_prof_now() - m.t0, inner = p->attributed_ns - m.attr0;
    uint64_t own = wall > inner ? wall - inner : 0, sync = take_sync(p);
    if (sync > own) sync = own; /* clock granularity */
    if (p->scope >= 0 && (op == HR_PROF_MATVEC || op == HR_PROF_GEMM)) op = (hr_prof_op)p->scope, type = 0;
    if (op >= HR_PROF_OPS || type >= HR_TYPE_MAX) op = HR_PROF_ELEM, type = 0;
    hr_prof_slot *s = &p->slot[op][type];
    s->ns += own - sync, s->calls++, s->bytes += bytes;
    p->slot[HR_PROF_SYNC][0].ns += sync;
    p->attributed_ns = m.attr0 + wall;
}

void hr_prof_forward(hr_prof *p, hr_prof_mark m, int64_t n_tok) {
    if (!p) return;
    p->slot[HR_PROF_SYNC][0].ns += take_sync(p); /* pool runs outside any timed operation */
    p->total_ns += hr_prof_now() - m.t0;
    p->tokens += (uint64_t)n_tok, p->forwards++;
}
