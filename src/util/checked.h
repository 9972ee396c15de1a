/* Overflow-checked size arithmetic for anything derived from file contents. */
#ifndef HR_CHECKED_H
#define HR_CHECKED_H
#include <stdbool.h>
#include <stdint.h>

/* Each returns false (and leaves *r unspecified) on overflow. */
static inline bool hr_add_u64(uint64_t a, uint64_t b, uint64_t *r) { return !__builtin_add_overflow(a, b, r); }
static inline bool hr_mul_u64(uint64_t a, uint64_t b, uint64_t *r) { return !__builtin_mul_overflow(a, b, r); }
#endif
