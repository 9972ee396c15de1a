#define _XOPEN_SOURCE 700 /* nftw */
#include "testutil.h"
#include <ftw.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int hr_test_failures = 0;

uint64_t hr_rng_next(hr_rng *r) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float hr_rng_uniform(hr_rng *r) { return (float)((hr_rng_next(r) >> 40) * (1.0 / 16777216.0)); }

float hr_rng_normal(hr_rng *r) {
    double u1 = ((hr_rng_next(r) >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    double u2 = (hr_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* The temporary paths this test process named (test-process state only): removed at exit with
 * whatever was made beside or below them (PATH*), unless HEARTH_TEST_KEEP is set. The suite
 * left 30-50 model files in /tmp per run before. */
static char tmp_prefix[512];
static int tmp_counter;

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    (void)remove(path); /* best effort: carry on */
    return 0;
}

static void tmp_cleanup(void) {
    for (int i = 0; i < tmp_counter; i++) {
        char pat[600];
        glob_t g;
        snprintf(pat, sizeof pat, "%s%d-*", tmp_prefix, i);
        if (glob(pat, 0, NULL, &g)) continue;
        for (size_t k = 0; k < g.gl_pathc; k++) nftw(g.gl_pathv[k], rm_entry, 8, FTW_DEPTH | FTW_PHYS);
        globfree(&g);
    }
}

const char *hr_test_tmp(char *buf, size_t cap, const char *suffix) {
    if (!tmp_prefix[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(tmp_prefix, sizeof tmp_prefix, "%s/hearth-test-%d-", dir ? dir : "/tmp", (int)getpid());
        if (!getenv("HEARTH_TEST_KEEP")) atexit(tmp_cleanup);
    }
    snprintf(buf, cap, "%s%d-%s", tmp_prefix, tmp_counter++, suffix);
    return buf;
}
