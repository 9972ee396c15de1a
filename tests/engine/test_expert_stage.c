/* The expert cache's staging thread (src/engine/expert_stage.h): jobs of up to three pieces
 * copied exactly, each reported done once and only after its bytes are there, buffers
 * reused job after job, and a stop with jobs still queued or running. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/expert_stage.h"
#include "testutil.h"

enum { JOBS = 4, PIECE = 1 << 16, ROUNDS = 25 };

static void fill(uint8_t *p, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)((seed * 2654435761u + (uint32_t)i * 40503u) >> 13);
}

static void nap(void) {
    const struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
}

int main(void) {
    hr_err e = {{0}};
    hr_stager *s = NULL;
    CHECKF(!hr_stager_start(&s, JOBS, &e) && s, "start: %s", e.msg);
    if (!s) return TEST_END();
    uint8_t *src = malloc((size_t)3 * PIECE * JOBS), *dst = malloc((size_t)3 * PIECE * JOBS);
    CHECK(src && dst);
    if (!src || !dst) return TEST_END();
    int copied = 0;
    for (int round = 0; round < ROUNDS; round++) {
        fill(src, (size_t)3 * PIECE * JOBS, (uint32_t)round + 1);
        memset(dst, 0, (size_t)3 * PIECE * JOBS);
        for (int b = 0; b < JOBS; b++) { /* pieces of different sizes, the last one empty in odd jobs */
            hr_stage_piece p[3];
            for (int i = 0; i < 3; i++) {
                const size_t at = ((size_t)b * 3 + (size_t)i) * PIECE;
                p[i] = (hr_stage_piece){dst + at, src + at, i == 2 && (b & 1) ? 0 : PIECE - (size_t)i * 1000};
            }
            CHECK(!hr_stager_take(s, b)); /* idle: nothing to report */
            hr_stager_put(s, b, p, 3);
        }
        bool done[JOBS] = {false};
        for (int left = JOBS, spins = 0; left && spins < 200000; spins++) {
            for (int b = 0; b < JOBS; b++) {
                if (done[b] || !hr_stager_take(s, b)) continue;
                done[b] = true, left--;
                for (int i = 0; i < 3; i++) { /* every byte there once it is reported */
                    const size_t at = ((size_t)b * 3 + (size_t)i) * PIECE, n = i == 2 && (b & 1) ? 0 : PIECE - (size_t)i * 1000;
                    CHECKF(!memcmp(dst + at, src + at, n), "round %d job %d piece %d: bytes differ", round, b, i);
                    if (n < PIECE) CHECKF(dst[at + n] == 0, "round %d job %d piece %d: wrote past its end", round, b, i);
                }
                CHECKF(!hr_stager_take(s, b), "round %d job %d reported twice", round, b);
                copied++;
            }
            if (left) nap();
        }
        for (int b = 0; b < JOBS; b++) CHECKF(done[b], "round %d job %d never done", round, b);
    }
    CHECKF(copied == ROUNDS * JOBS && hr_stager_seconds(s) >= 0, "%d jobs copied", copied);
    /* a stop with every job queued: the thread ends after what it is copying */
    for (int b = 0; b < JOBS; b++) {
        hr_stage_piece p = {dst + (size_t)b * PIECE, src + (size_t)b * PIECE, PIECE};
        hr_stager_put(s, b, &p, 1);
    }
    hr_stager_stop(s);
    hr_stager_stop(NULL);
    free(src), free(dst);
    return TEST_END();
}
