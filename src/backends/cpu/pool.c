/* Persistent pool with claimed work items. A run publishes fn/arg and a ticket
 * (generation, next index, count) in one 64-bit atomic; every thread, the caller
 * included, claims indices by compare-and-swap until none are left, and the caller
 * waits only for claimed items still running. Workers spin briefly on the ticket
 * (cheap hand-off for the hundreds of runs per token), then sleep on a condition
 * variable, so a core taken by another process neither stalls the caller (it takes
 * the work itself) nor is burnt by spinning. Sleepers and wakers meet Dekker-style
 * through seq_cst atomics plus the mutex. */
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define CPU_RELAX() __asm__ __volatile__("yield")
#else
#define CPU_RELAX() ((void)0)
#endif

#define SPIN_NS 100000 /* ~100 us of spinning before sleeping */

/* ticket layout: generation in the high 32 bits, next index, then count (16 bits each) */
#define T_GEN(t) ((uint32_t)((t) >> 32))
#define T_NEXT(t) ((uint32_t)(((t) >> 16) & 0xffff))
#define T_COUNT(t) ((uint32_t)((t) & 0xffff))

typedef struct worker {
    hr_pool *pool;
    pthread_t th;
} worker;

/* One thread's share of a range run: steps [front, back) packed as back << 32 | front, on its
 * own cache line (the owner claims from the front, a thief moves the back). */
typedef struct {
    _Alignas(64) _Atomic uint64_t fb;
} share;

struct hr_pool {
    int n;
    worker *w;
    share *shares; /* n of them, for hr_pool_run_ranges */
    hr_task_fn fn;
    void *arg;
    _Atomic uint64_t ticket;
    atomic_int done;      /* items finished in the current run */
    atomic_int sleepers;  /* workers blocked (or about to block) on work_cv */
    atomic_int waiting;   /* 1 while the caller blocks on done_cv */
    atomic_bool stop;
    bool timed;                /* profiling (prof.h): time each item and each run */
    _Atomic uint64_t busy_ns;  /* items' run time in the current run, all threads */
    uint64_t sync_ns;          /* sum over timed runs of wall - busy / threads */
    pthread_mutex_t mu;
    pthread_cond_t work_cv, done_cv;
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Claims and runs items of generation gen until none are left. Reading fn/arg after a
 * successful claim is safe: the run cannot finish (and be replaced) while an item of it
 * is outstanding. */
static void work(hr_pool *p, uint32_t gen) {
    uint64_t t = atomic_load(&p->ticket);
    while (T_GEN(t) == gen && T_NEXT(t) < T_COUNT(t)) {
        if (!atomic_compare_exchange_weak(&p->ticket, &t, t + (1u << 16))) continue;
        if (p->timed) {
            uint64_t t0 = now_ns();
            p->fn(p->arg, (int)T_NEXT(t), (int)T_COUNT(t));
            atomic_fetch_add(&p->busy_ns, now_ns() - t0);
        } else {
            p->fn(p->arg, (int)T_NEXT(t), (int)T_COUNT(t));
        }
        if (atomic_fetch_add(&p->done, 1) + 1 == (int)T_COUNT(t) && atomic_load(&p->waiting)) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done_cv);
            pthread_mutex_unlock(&p->mu);
        }
        t = atomic_load(&p->ticket);
    }
}

/* Spins while the generation is still `seen`; returns 1 if SPIN_NS passed without news. */
static int spin_while_gen(hr_pool *p, uint32_t seen) {
    uint64_t t0 = 0;
    for (unsigned i = 1;; i++) {
        if (T_GEN(atomic_load_explicit(&p->ticket, memory_order_acquire)) != seen || atomic_load(&p->stop)) return 0;
        CPU_RELAX();
        if ((i & 63) == 0) {
            uint64_t t = now_ns();
            if (!t0) t0 = t;
            else if (t - t0 > SPIN_NS) return 1;
        }
    }
}

static void *worker_main(void *vp) {
    worker *w = vp;
    hr_pool *p = w->pool;
    uint32_t seen = 0;
    for (;;) {
        if (spin_while_gen(p, seen)) {
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->sleepers, 1);
            while (T_GEN(atomic_load(&p->ticket)) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->work_cv, &p->mu);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop)) break;
        seen = T_GEN(atomic_load(&p->ticket));
        work(p, seen);
    }
    return NULL;
}

hr_pool *hr_pool_new(int n_threads, hr_err *e) {
    if (n_threads < 1 || n_threads > 1024) {
        hr_errf(e, "thread count %d out of range [1, 1024]", n_threads);
        return NULL;
    }
    hr_pool *p = calloc(1, sizeof *p);
    if (!p || !(p->w = calloc((size_t)n_threads, sizeof *p->w)) ||
        !(p->shares = aligned_alloc(64, (size_t)n_threads * sizeof *p->shares))) {
        if (p) free(p->w);
        free(p);
        hr_errf(e, "out of memory for thread pool");
        return NULL;
    }
    p->n = n_threads;
    atomic_init(&p->ticket, 0);
    atomic_init(&p->done, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->waiting, 0);
    atomic_init(&p->stop, false);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work_cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    for (int i = 1; i < n_threads; i++) {
        p->w[i].pool = p;
        if (pthread_create(&p->w[i].th, NULL, worker_main, &p->w[i]) != 0) {
            p->n = i; /* join only those started */
            hr_pool_free(p);
            hr_errf(e, "cannot start worker thread %d", i);
            return NULL;
        }
    }
    return p;
}

int hr_pool_threads(const hr_pool *p) { return p->n; }

static void wait_done(hr_pool *p, int count) {
    uint64_t t0 = 0;
    for (unsigned i = 1; atomic_load_explicit(&p->done, memory_order_acquire) < count; i++) {
        CPU_RELAX();
        if ((i & 63) == 0) {
            uint64_t t = now_ns();
            if (!t0) t0 = t;
            else if (t - t0 > SPIN_NS) {
                pthread_mutex_lock(&p->mu);
                atomic_store(&p->waiting, 1);
                while (atomic_load(&p->done) < count) pthread_cond_wait(&p->done_cv, &p->mu);
                atomic_store(&p->waiting, 0);
                pthread_mutex_unlock(&p->mu);
                return;
            }
        }
    }
}

void hr_pool_run_chunks(hr_pool *p, hr_task_fn fn, void *arg, int n_chunks) {
    if (n_chunks < 1) return;
    if (n_chunks > 0xffff) n_chunks = 0xffff;
    if (p->n == 1 || n_chunks == 1) {
        for (int i = 0; i < n_chunks; i++) fn(arg, i, n_chunks);
        return;
    }
    const uint64_t t0 = p->timed ? now_ns() : 0;
    if (p->timed) atomic_store(&p->busy_ns, 0);
    p->fn = fn;
    p->arg = arg;
    atomic_store(&p->done, 0);
    uint32_t gen = T_GEN(atomic_load(&p->ticket)) + 1;
    atomic_store(&p->ticket, ((uint64_t)gen << 32) | (uint64_t)n_chunks); /* seq_cst: publishes fn/arg */
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->work_cv);
        pthread_mutex_unlock(&p->mu);
    }
    work(p, gen);
    wait_done(p, n_chunks);
    if (p->timed) { /* the run's wall time beyond its work spread evenly over the threads it could use */
        const uint64_t wall = now_ns() - t0, th = (uint64_t)(n_chunks < p->n ? n_chunks : p->n);
        const uint64_t even = atomic_load(&p->busy_ns) / th;
        p->sync_ns += wall > even ? wall - even : 0;
    }
}

void hr_pool_set_timing(hr_pool *p, bool on) { p->timed = on; }
uint64_t hr_pool_sync_ns(const hr_pool *p) { return p->sync_ns; }

void hr_pool_run(hr_pool *p, hr_task_fn fn, void *arg) { hr_pool_run_chunks(p, fn, arg, p->n); }

void hr_pool_free(hr_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, true);
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++) pthread_join(p->w[i].th, NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work_cv);
    pthread_cond_destroy(&p->done_cv);
    free(p->w);
    free(p->shares);
    free(p);
}

/* ---- range runs: contiguous shares, the idle taking half of the busiest share's rest ---- */

typedef struct {
    hr_range_fn fn;
    void *arg;
    int64_t n, step;
    share *sh;
    int n_sh;
} range_run;

/* Claims steps [*k0, *k1) from the front: a quarter of what is left, at least one. Few
 * claims on a long share (each is a locked instruction, which waits for the thread's loads in
 * flight), single steps at its end, where the balance is decided. */
static bool take_front(share *s, uint32_t *k0, uint32_t *k1) {
    uint64_t v = atomic_load_explicit(&s->fb, memory_order_relaxed);
    for (;;) {
        const uint32_t f = (uint32_t)v, b = (uint32_t)(v >> 32);
        if (f >= b) return false;
        const uint32_t n = (b - f) / 4 ? (b - f) / 4 : 1;
        if (atomic_compare_exchange_weak(&s->fb, &v, v + n)) {
            *k0 = f, *k1 = f + n;
            return true;
        }
    }
}

/* Moves the back half of the share with most steps left to *own (found empty); false when
 * every share is empty. The steps are invisible between the two stores, which is harmless:
 * a thread finding nothing returns, and this one runs them. */
static bool steal_half(const range_run *r, share *own) {
    for (;;) {
        int best = -1;
        uint32_t most = 0;
        uint64_t v = 0;
        for (int i = 0; i < r->n_sh; i++) {
            const uint64_t u = atomic_load_explicit(&r->sh[i].fb, memory_order_relaxed);
            const uint32_t f = (uint32_t)u, b = (uint32_t)(u >> 32);
            if (b > f && b - f > most) most = b - f, best = i, v = u;
        }
        if (best < 0) return false;
        const uint32_t f = (uint32_t)v, b = (uint32_t)(v >> 32), mid = b - (b - f + 1) / 2;
        if (atomic_compare_exchange_strong(&r->sh[best].fb, &v, (uint64_t)mid << 32 | f)) {
            /* an empty share is never written by others (they test before they swap) */
            atomic_store(&own->fb, (uint64_t)b << 32 | mid);
            return true;
        }
    }
}

static void range_task(void *arg, int ith, int nth) {
    (void)nth;
    const range_run *r = arg;
    share *own = &r->sh[ith];
    do {
        uint32_t k0, k1;
        while (take_front(own, &k0, &k1)) {
            const int64_t i0 = (int64_t)k0 * r->step, i1 = (int64_t)k1 * r->step;
            r->fn(r->arg, i0, i1 < r->n ? i1 : r->n, ith);
        }
    } while (steal_half(r, own));
}

void hr_pool_run_ranges(hr_pool *p, hr_range_fn fn, void *arg, int64_t n, int64_t step) {
    if (n < 1) return;
    if (step < 1) step = 1;
    int64_t n_steps = (n + step - 1) / step;
    if (n_steps > UINT32_MAX / 2) { /* keeps the packed counts in range: whole steps merge */
        step *= (n_steps + UINT32_MAX / 2 - 1) / (UINT32_MAX / 2);
        n_steps = (n + step - 1) / step;
    }
    if (p->n == 1 || n_steps == 1) {
        fn(arg, 0, n, 0);
        return;
    }
    const int n_sh = n_steps < p->n ? (int)n_steps : p->n;
    for (int i = 0; i < n_sh; i++) {
        const uint64_t f = (uint64_t)(n_steps * i / n_sh), b = (uint64_t)(n_steps * (i + 1) / n_sh);
        atomic_store_explicit(&p->shares[i].fb, b << 32 | f, memory_order_relaxed);
    }
    range_run r = {.fn = fn, .arg = arg, .n = n, .step = step, .sh = p->shares, .n_sh = n_sh};
    hr_pool_run_chunks(p, range_task, &r, n_sh); /* its ticket's seq_cst store publishes the shares */
}

typedef struct {
    const int *first;
    int n;
    hr_item_fn fn;
    void *arg;
} group_run;

static void group_range(void *arg, int64_t k0, int64_t k1, int slot) {
    (void)slot;
    const group_run *g = arg;
    for (int i = hr_chunk_owner(g->first, g->n, (int)k0); k0 < k1; i++) {
        const int64_t end = k1 < g->first[i + 1] ? k1 : g->first[i + 1];
        if (end > k0) g->fn(g->arg, i, k0 - g->first[i], end - g->first[i]);
        k0 = end;
    }
}

void hr_pool_run_group(hr_pool *p, const int *first, int n, hr_item_fn fn, void *arg) {
    group_run g = {.first = first, .n = n, .fn = fn, .arg = arg};
    if (n > 0) hr_pool_run_ranges(p, group_range, &g, first[n], 1);
}
