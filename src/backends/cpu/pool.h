/* Persistent thread pool, one per context. The caller's thread works as thread 0.
 * Workers spin briefly for new work, then sleep on a condition variable, so a
 * busy core elsewhere does not stall the pool. */
#ifndef HR_POOL_H
#define HR_POOL_H
#include <stdbool.h>
#include <stdint.h>
#include "../../util/err.h"

typedef struct hr_pool hr_pool;
typedef void (*hr_task_fn)(void *arg, int ith, int nth);

hr_pool *hr_pool_new(int n_threads, hr_err *e);   /* n_threads >= 1 */
int hr_pool_threads(const hr_pool *p);
/* Runs fn(arg, ith, nth) for ith in [0, nth) and returns when all are done.
 * Each ith runs exactly once, but not necessarily on thread ith: idle threads (the
 * caller included) claim the next index, so a worker descheduled by the OS does not
 * hold the caller up. Per-ith scratch is safe (one ith never runs twice at once). */
void hr_pool_run(hr_pool *p, hr_task_fn fn, void *arg);
/* The same with n_chunks indices (1..65535) instead of one per thread: finer pieces
 * balance better when a core is busy elsewhere. fn sees nth = n_chunks. */
void hr_pool_run_chunks(hr_pool *p, hr_task_fn fn, void *arg, int n_chunks);
/* A group's run (several products' chunks in one hr_pool_run_chunks): item i owns the indices
 * [first[i], first[i + 1]); the item owning index ith, of n. */
static inline int hr_chunk_owner(const int *first, int n, int ith) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (first[mid] <= ith) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}
/* fn(arg, i0, i1) over [0, n) in steps of `step` indices, each index once: thread ith owns
 * the ith contiguous share of the steps and walks it from the front (one memory stream, no
 * restarts); a thread with nothing left takes the back half of the share with the most steps
 * left. Balances to one step where fixed chunks leave a thread idle for up to a chunk. Step
 * boundaries are multiples of step from 0 whatever the threads, so code that keeps its
 * results independent of where chunks start stays so. slot (< the thread count) names
 * per-thread scratch: no two calls with the same slot run at once. */
typedef void (*hr_range_fn)(void *arg, int64_t i0, int64_t i1, int slot);
void hr_pool_run_ranges(hr_pool *p, hr_range_fn fn, void *arg, int64_t n, int64_t step);
/* A range run over a group of items (several products in one run): item i owns the steps
 * [first[i], first[i + 1]), first[0] = 0; fn(arg, i, s0, s1) gets each piece of an item as its
 * own steps [s0, s1), an item's pieces never merged with another's. */
typedef void (*hr_item_fn)(void *arg, int item, int64_t s0, int64_t s1);
void hr_pool_run_group(hr_pool *p, const int *first, int n, hr_item_fn fn, void *arg);
void hr_pool_free(hr_pool *p);
/* Profiling (prof.h): with timing on, each run adds to a counter its wall time beyond its
 * items' run time spread evenly over the threads it could use (hand-off, imbalance, waits). */
void hr_pool_set_timing(hr_pool *p, bool on);
uint64_t hr_pool_sync_ns(const hr_pool *p);

#endif
