/* Shared between the synthesizer's files: the tensor plan and the weight generator. */
#ifndef HR_SYNTH_INTERNAL_H
#define HR_SYNTH_INTERNAL_H
#include <stdint.h>
#include "engine/arch.h"
#include "synth.h"

/* The table entry of p->arch (NULL if unknown; validation reports it). */
const hr_arch *synth_arch(const hr_synth_params *p);

typedef enum synth_fill {
    SYNTH_FILL_NORMAL, /* mean 0, given std */
    SYNTH_FILL_NORM,   /* 1 + HR_SYNTH_NORM_NOISE * z */
    SYNTH_FILL_RAMP    /* RoPE factors: 1 + (std - 1) * (i / (ne0 - 1))^2, no randomness */
} synth_fill;

typedef struct synth_tensor {
    char name[64];
    char seed_name[64]; /* canonical name the values derive from */
    uint32_t type;
    uint32_t n_dims;
    uint64_t ne[3];
    synth_fill fill;
    float std;
    bool transpose; /* values are the transpose of seed_name's {ne1, ne0} matrix */
    uint32_t rank;  /* > 0: each {ne0, ne1} slice is A B with A {rank, ne1}, B {ne0, rank} random,
                       scaled to the same std (not with transpose) */
    uint64_t nbytes;
} synth_tensor;

typedef struct synth_plan {
    synth_tensor *t;
    uint32_t n, cap;
    uint64_t total_bytes;
} synth_plan;

/* Lists the tensors of a validated parameter set. */
int synth_plan_build(const hr_synth_params *p, synth_plan *plan, hr_err *e);
void synth_plan_free(synth_plan *plan);

/* Fills dst (t->nbytes) with t's values for this seed. scratch holds ne0 floats
 * (ne1 when transposed: one column of the source). */
int synth_fill_tensor(const synth_tensor *t, uint64_t seed, void *dst, hr_err *e);

#endif
