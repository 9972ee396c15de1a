/* Minimal test helpers: a check that reports file:line and counts failures,
 * a seeded PRNG for random inputs, and a temp-file path helper. */
#ifndef HR_TESTUTIL_H
#define HR_TESTUTIL_H
#include <stdint.h>
#include <stdio.h>

extern int hr_test_failures;

#define CHECK(cond) do { if (!(cond)) { \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); hr_test_failures++; } } while (0)
#define CHECKF(cond, ...) do { if (!(cond)) { \
    fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); hr_test_failures++; } } while (0)
/* Ends main: prints a summary and returns the exit status. */
#define TEST_END() (hr_test_failures ? (fprintf(stderr, "%d check(s) failed\n", hr_test_failures), 1) \
                                     : (printf("ok\n"), 0))

typedef struct { uint64_t s; } hr_rng;
uint64_t hr_rng_next(hr_rng *r);            /* splitmix64 */
float hr_rng_uniform(hr_rng *r);            /* [0, 1) */
float hr_rng_normal(hr_rng *r);             /* N(0, 1) */
/* Unique path under the system temp dir: /tmp/hearth-test-<pid>-<n>-<suffix>. */
const char *hr_test_tmp(char *buf, size_t cap, const char *suffix);
#endif
