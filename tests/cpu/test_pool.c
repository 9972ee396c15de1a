/* The pool runs fn once per ith in [0, nth) per call (whichever thread takes it), with the right nth, across many
 * back-to-back runs (spinning hand-off) and runs separated by pauses (sleeping hand-off). */
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
        hr_pool_free(p);
    }
    hr_err e = {{0}};
    CHECK(hr_pool_new(0, &e) == NULL && e.msg[0] != 0);
    hr_pool_free(NULL);
    return TEST_END();
}
