/* The dynamic expert cache (--moe-cache N, docs/hybrid.md): N device slots per MoE layer,
 * placed by the plan (gpu_plan.c, starting with the most routed experts), whose occupants the
 * policy of sparse/trace_cache.h replaces by observed routing.
 *
 * Per split-MoE evaluation of layer il: hr_ecache_begin makes the slots whose copies have
 * landed usable (the layer's exps[].id and exp_local then name them); the step computes the
 * routed experts of ready slots on the device and the rest on the CPU; hr_ecache_end counts
 * hits, lets the policy choose refills, and for each stages the expert's three matrices into
 * a free pinned buffer and enqueues one copy on the device's copy stream (copy_async); on a
 * real device the rows are copied into the buffer by a staging thread (expert_stage.h) and the
 * copy enqueued at the next begin or end that finds them there. A slot
 * being filled is neither used nor evicted until copy_done says its copy landed, and a
 * staging buffer is reused only then; when none is free the refill waits for a later step.
 * Nothing here waits for the device. */
#ifndef HR_EXPERT_CACHE_H
#define HR_EXPERT_CACHE_H
#include "context.h"

struct hr_hybrid;
/* Staging buffers: twice the experts one token routes per layer (double buffering). */
#define HR_ECACHE_STAGING_PER_K 2

/* With plan.cache_slots > 0: the cache over the plan's slots (policy NULL: lfru). */
int hr_ecache_init(struct hr_hybrid *h, const hearth_model *m, const char *policy, hr_err *e);
void hr_ecache_free(struct hr_hybrid *h);
int hr_ecache_begin(hearth_ctx *c, int il, hr_err *e);
/* count [n_expert]: tokens this evaluation routed to each expert. */
int hr_ecache_end(hearth_ctx *c, int il, const int32_t *count, hr_err *e);
/* Seconds the staging thread spent copying experts into staging buffers (0 without one). */
double hr_ecache_thread_seconds(const struct hr_hybrid *h);
#endif
