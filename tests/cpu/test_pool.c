/* The pool runs fn once per ith in [0, nth) per call (whichever thread takes it), with the right nth, across many
 * back-to-back runs (spinning hand-off) and runs separated by pauses (sleeping hand-off). A range run covers
 * every index once in spans that start on a step boundary, and a thread that stalls has its share taken. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "backends/cpu/pool.h"
#include "testutil.h"

typedef struct {
    atomic_int count[64];
    atomic_int bad_nth;
    int expect_nth;
} job;

static void task(void *arg, int ith, int nth) {
    job *j = arg;
    volatile int sink = 0;
    for (int i = 0; i < 300; i++) sink += i; /* long enough for workers to claim items too */
    if (nth != j->expect_nth || ith < 0 || ith >= nth) atomic_fetch_add(&j->bad_nth, 1);
    else atomic_fetch_add(&j->count[ith], 1);
}

static void nap_us(long us) {
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

#define RN 2000
typedef struct {
    atomic_int hit[RN];
    atomic_int bad, spans, by_caller, stalled;
    atomic_int in_slot[64];
    int64_t n, step;
    pthread_t caller;
} rjob;

static void range_fn(void *arg, int64_t i0, int64_t i1, int slot) {
    rjob *j = arg;
    /* a slot is one thread's at a time */
    if (slot < 0 || slot >= 64 || atomic_fetch_add(&j->in_slot[slot], 1) != 0) atomic_fetch_add(&j->bad, 1);
    if (i0 < 0 || i1 > j->n || i0 >= i1 || i0 % j->step || (i1 % j->step && i1 != j->n)) atomic_fetch_add(&j->bad, 1);
    const bool mine = pthread_equal(pthread_self(), j->caller);
    /* the caller stalls on its first span, as a thread descheduled by another process */
    if (mine && atomic_exchange(&j->stalled, 1) == 0) nap_us(20000);
    for (int64_t i = i0; i < i1 && i >= 0 && i < j->n; i++) {
        atomic_fetch_add(&j->hit[i], 1);
        if (mine) atomic_fetch_add(&j->by_caller, 1);
    }
    atomic_fetch_add(&j->spans, 1);
    if (slot >= 0 && slot < 64) atomic_fetch_sub(&j->in_slot[slot], 1);
}

static void check_ranges(hr_pool *p, int64_t n, int64_t step, int stall) {
    static rjob j; /* 8 KB of counters: off the stack */
    for (int i = 0; i < RN; i++) atomic_init(&j.hit[i], 0);
    for (int i = 0; i < 64; i++) atomic_init(&j.in_slot[i], 0);
    atomic_init(&j.bad, 0), atomic_init(&j.spans, 0), atomic_init(&j.by_caller, 0), atomic_init(&j.stalled, !stall);
    j.n = n, j.step = step, j.caller = pthread_self();
    hr_pool_run_ranges(p, range_fn, &j, n, step);
    int miss = 0;
    for (int64_t i = 0; i < RN; i++) miss += atomic_load(&j.hit[i]) != (i < n ? 1 : 0);
    CHECKF(miss == 0 && atomic_load(&j.bad) == 0, "threads %d n %lld step %lld: %d indices wrong, %d bad spans",
           hr_pool_threads(p), (long long)n, (long long)step, miss, atomic_load(&j.bad));
    /* stalled for 20 ms, the caller must have lost most of its share to the others */
    const int64_t share = n / hr_pool_threads(p);
    if (stall && hr_pool_threads(p) > 1 && n / step >= 64)
        CHECKF(atomic_load(&j.by_caller) < share / 2, "threads %d: the stalled caller still did %d of its share of %lld",
               hr_pool_threads(p), atomic_load(&j.by_caller), (long long)share);
}

/* Spans only (no per-index work): a count too large for the packed shares merges whole steps. */
typedef struct {
    _Atomic int64_t covered;
    atomic_int bad;
    int64_t n, step;
} hjob;

static void huge_fn(void *arg, int64_t i0, int64_t i1, int slot) {
    hjob *j = arg;
    (void)slot;
    if (i0 < 0 || i1 > j->n || i0 >= i1 || i0 % j->step || (i1 % j->step && i1 != j->n)) atomic_fetch_add(&j->bad, 1);
    atomic_fetch_add(&j->covered, i1 - i0);
}

static void check_huge(hr_pool *p) {
    hjob j = {.n = ((int64_t)1 << 33) + 5, .step = 3};
    atomic_init(&j.covered, 0), atomic_init(&j.bad, 0);
    hr_pool_run_ranges(p, huge_fn, &j, j.n, j.step);
    CHECKF(atomic_load(&j.covered) == j.n && atomic_load(&j.bad) == 0, "threads %d: %lld of %lld covered, %d bad spans",
           hr_pool_threads(p), (long long)atomic_load(&j.covered), (long long)j.n, atomic_load(&j.bad));
}

/* A group run: item i's steps [0, first[i + 1] - first[i]) each once, empty items never called. */
#define GI 7
typedef struct {
    int first[GI + 1];
    atomic_int hit[GI][64];
    atomic_int bad;
} gjob;

static void group_fn(void *arg, int item, int64_t s0, int64_t s1) {
    gjob *j = arg;
    if (item < 0 || item >= GI || s0 < 0 || s0 >= s1 || s1 > j->first[item + 1] - j->first[item]) {
        atomic_fetch_add(&j->bad, 1);
        return;
    }
    for (int64_t s = s0; s < s1; s++) atomic_fetch_add(&j->hit[item][s], 1);
}

static void check_group(hr_pool *p) {
    static gjob j;
    const int count[GI] = {5, 0, 64, 1, 0, 33, 2};
    j.first[0] = 0;
    for (int i = 0; i < GI; i++) j.first[i + 1] = j.first[i] + count[i];
    for (int rep = 0; rep < 100; rep++) {
        for (int i = 0; i < GI; i++)
            for (int s = 0; s < 64; s++) atomic_init(&j.hit[i][s], 0);
        atomic_init(&j.bad, 0);
        hr_pool_run_group(p, j.first, GI, group_fn, &j);
        int wrong = 0;
        for (int i = 0; i < GI; i++)
            for (int s = 0; s < 64; s++) wrong += atomic_load(&j.hit[i][s]) != (s < count[i]);
        CHECKF(wrong == 0 && atomic_load(&j.bad) == 0, "threads %d: group run %d steps wrong, %d bad pieces",
               hr_pool_threads(p), wrong, atomic_load(&j.bad));
    }
}

int main(void) {
    for (int n = 1; n <= 4; n++) {
        hr_err e = {{0}};
        hr_pool *p = hr_pool_new(n, &e);
        CHECK(p != NULL);
        if (!p) continue;
        CHECK(hr_pool_threads(p) == n);
        job j = {.expect_nth = n};
        for (int i = 0; i < 64; i++) atomic_init(&j.count[i], 0);
        atomic_init(&j.bad_nth, 0);
        const int iters = 20000, slow = 40;
        for (int it = 0; it < iters; it++) hr_pool_run(p, task, &j);
        for (int it = 0; it < slow; it++) {
            nap_us(it % 2 ? 300 : 20); /* past the spin window: workers will have slept */
            hr_pool_run(p, task, &j);
        }
        for (int i = 0; i < n; i++)
            CHECKF(atomic_load(&j.count[i]) == iters + slow, "n=%d ith=%d ran %d times", n, i, atomic_load(&j.count[i]));
        for (int i = n; i < 64; i++) CHECK(atomic_load(&j.count[i]) == 0);
        CHECK(atomic_load(&j.bad_nth) == 0);
        /* explicit item counts, more and fewer than threads */
        for (int chunks = 1; chunks <= 64; chunks += 9) {
            job k = {.expect_nth = chunks};
            for (int i = 0; i < 64; i++) atomic_init(&k.count[i], 0);
            atomic_init(&k.bad_nth, 0);
            for (int it = 0; it < 500; it++) hr_pool_run_chunks(p, task, &k, chunks);
            for (int i = 0; i < 64; i++)
                CHECKF(atomic_load(&k.count[i]) == (i < chunks ? 500 : 0), "chunks=%d i=%d", chunks, i);
            CHECK(atomic_load(&k.bad_nth) == 0);
        }
        const int64_t shapes[][2] = {{1, 1}, {7, 3}, {RN, 1}, {RN, 16}, {RN - 3, 16}, {100, 1000}, {RN, 7}, {64, 64}};
        for (int s = 0; s < (int)(sizeof shapes / sizeof shapes[0]); s++)
            for (int rep = 0; rep < 50; rep++) check_ranges(p, shapes[s][0], shapes[s][1], 0);
        check_ranges(p, RN, 4, 1);
        check_ranges(p, RN - 1, 1, 1);
        check_huge(p);
        check_group(p);
        hr_pool_free(p);
    }
    hr_err e = {{0}};
    CHECK(hr_pool_new(0, &e) == NULL && e.msg[0] != 0);
    hr_pool_free(NULL);
    return TEST_END();
}
