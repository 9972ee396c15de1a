/* Token sampling as llama.cpp's default chain does it:
 * repetition penalty -> top-k -> top-p -> min-p -> temperature -> draw.
 * temp <= 0 is greedy (argmax after penalties). Seeded, reproducible. */
#ifndef HR_SAMPLER_H
#define HR_SAMPLER_H
#include <stdint.h>
#include "../util/err.h"

typedef struct hr_sampler_params {
    float temp;            /* default 0.8; <= 0 greedy */
    int32_t top_k;         /* default 40; <= 0 disabled */
    float top_p;           /* default 0.95; >= 1 disabled */
    float min_p;           /* default 0.05; <= 0 disabled */
    float repeat_penalty;  /* default 1.0 (off) */
    int32_t repeat_last_n; /* default 64 */
    uint64_t seed;
} hr_sampler_params;

typedef struct hr_sampler hr_sampler;

hr_sampler_params hr_sampler_defaults(void);
hr_sampler *hr_sampler_new(const hr_sampler_params *p, int32_t n_vocab, hr_err *e);
void hr_sampler_free(hr_sampler *s);
/* Chooses a token from logits (n_vocab floats, not modified). */
int32_t hr_sampler_sample(hr_sampler *s, const float *logits);
/* Records a token (prompt or generated) for the repetition penalty. */
void hr_sampler_accept(hr_sampler *s, int32_t token);

#endif
