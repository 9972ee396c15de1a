/* Expert-cache policy: which experts a layer's device slots hold, and which to refill after
 * each evaluation. One implementation serves the run-time cache (engine/expert_cache.c) and
 * the simulator below, which replays a routing trace (routing_trace.h) so that policies and
 * slot counts can be compared offline; on the stand-in device the run-time cache's hits
 * equal the simulator's at lag 1 (tests/engine/test_hybrid_moe.c).
 *
 * Per layer: n_slot slots, each empty, filling (a copy in flight: not usable) or ready.
 * An evaluation routes count[x] tokens to expert x: those of ready slots are hits. Then the
 * policy observes the routing and picks at most max refills among the missed experts (not
 * held nor filling), each into a victim slot: an empty one first, else a ready one whose
 * expert this evaluation did not use (the working set of the current step is never
 * evicted for one of its own misses):
 *   static: never refills (the slots keep what they were given: the most routed experts);
 *   lru:    the slot used longest ago (never used first; ties: the lower slot), candidates
 *           by tokens routed this step (ties: lower id);
 *   lfru:   frequency with recency: every expert's score decays by HR_CACHE_LFRU_DECAY per
 *           evaluation and gains its routed tokens; the slot of the lowest score is the
 *           victim, and only a candidate with a higher score than the victim's is admitted
 *           (so a one-off expert does not evict a steady one).
 * Everything is integer or float arithmetic in a fixed order: replays are deterministic. */
#ifndef HR_TRACE_CACHE_H
#define HR_TRACE_CACHE_H
#include <stdbool.h>
#include <stdint.h>
#include "routing_trace.h"

typedef enum hr_cache_policy { HR_CACHE_STATIC = 0, HR_CACHE_LRU, HR_CACHE_LFRU, HR_CACHE_POLICY_COUNT } hr_cache_policy;
#define HR_CACHE_LFRU_DECAY 0.9f

const char *hr_cache_policy_name(hr_cache_policy p);
/* "static", "lru", "lfru" -> the policy; -1 for anything else. */
int hr_cache_policy_parse(const char *s);

typedef struct hr_cache_layer {
    int32_t n_slot, n_expert;
    int32_t *slot;   /* [n_slot] the expert held or being filled, -1: empty */
    uint8_t *ready;  /* [n_slot] 1: usable */
    int32_t *where;  /* [n_expert] the slot holding or filling the expert, -1: none */
    uint64_t *last;  /* [n_expert] evaluation of the last use (0: never) */
    float *score;    /* [n_expert] decayed routed tokens (lfru) */
    uint64_t step;   /* evaluations observed */
    int32_t *cand;   /* [n_expert] work space */
} hr_cache_layer;

/* init [n_slot]: the experts the slots start with, ready (-1: empty); NULL: all empty. */
int hr_cache_layer_init(hr_cache_layer *L, int32_t n_slot, int32_t n_expert, const int32_t *init, hr_err *e);
void hr_cache_layer_free(hr_cache_layer *L);
static inline bool hr_cache_hit(const hr_cache_layer *L, int32_t x) { return L->where[x] >= 0 && L->ready[L->where[x]]; }
/* Tokens of count [n_expert] that ready slots serve. */
uint64_t hr_cache_hits(const hr_cache_layer *L, const int32_t *count);
/* After an evaluation: records its routing, then picks at most max refills; slots[i] is
 * the i-th slot to fill, now holding its new expert, not ready (evicted[i]: the expert it
 * held, -1 if empty; may be NULL). Returns the number of refills. */
int32_t hr_cache_update(hr_cache_layer *L, hr_cache_policy p, const int32_t *count, int32_t max, int32_t *slots,
                        int32_t *evicted);
/* Slot s's copy has completed: usable from now on. */
static inline void hr_cache_filled(hr_cache_layer *L, int32_t s) { L->ready[s] = 1; }

/* The n most routed experts of freq [n_expert] (ties: the lower id) into out [n]. */
void hr_cache_top(const uint64_t *freq, int32_t n_expert, int32_t n, int32_t *out);

typedef struct hr_cache_sim {
    uint64_t lookups;  /* routings (token x chosen expert) */
    uint64_t hits;     /* of which a ready slot served */
    uint64_t refills;  /* experts copied in */
    uint64_t decode_lookups, decode_hits; /* of which in one-token evaluations (decode steps; a
                                             prompt batch is one evaluation of many tokens) */
} hr_cache_sim;
/* Replays t through n_slot slots per layer: refills become usable `lag` evaluations of
 * their layer later (1: the next one, as the stand-in's synchronous copies; more models
 * copies slower than a token). init [n_layer][n_slot]: starting experts; NULL: static
 * starts with each layer's most routed experts of the whole trace (the best static
 * placement, an oracle), lru and lfru empty. */
int hr_cache_simulate(const hr_rtrace *t, hr_cache_policy p, int32_t n_slot, int32_t max_refills, int32_t lag,
                      const int32_t *init, hr_cache_sim *out, hr_err *e);
#endif
