#include "testutil.h"
#include <math.h>
#include <stdlib.h>
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

const char *hr_test_tmp(char *buf, size_t cap, const char *suffix) {
    static int counter; /* test-process only */
    const char *dir = getenv("TMPDIR");
    snprintf(buf, cap, "%s/hearth-test-%d-%d-%s", dir ? dir : "/tmp", (int)getpid(), counter++, suffix);
    return buf;
}
