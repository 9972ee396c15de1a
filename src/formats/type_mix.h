/* The mix of tensor types in a file: what a Q4_K_M file is made of, by bytes. */
#ifndef HR_TYPE_MIX_H
#define HR_TYPE_MIX_H
#include <stdint.h>

#include "gguf.h"

typedef struct hr_type_share {
    uint32_t type;      /* ggml type id */
    uint32_t n_tensors;
    uint64_t elems;
    uint64_t bytes;
} hr_type_share;

#define HR_TYPE_MIX_MAX 16

/* Fills out[] with one entry per type present, largest share of bytes first (ties: lower id
 * first); returns the number of entries (at most HR_TYPE_MIX_MAX). */
int hr_type_mix(const gguf_file *f, hr_type_share out[HR_TYPE_MIX_MAX]);
/* Bits per element of a share (bytes * 8 / elems), 0 for an empty one. */
double hr_type_share_bpw(const hr_type_share *s);
#endif
