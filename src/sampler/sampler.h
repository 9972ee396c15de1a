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
/* The one valid range of every parameter, for the CLI, the server and hr_sampler_new alike:
 * temp finite in [0, HR_SAMPLER_TEMP_MAX] (0 greedy), top_k in [0, 2^24] (0 off), top_p and
 * min_p in [0, 1], repeat_penalty finite in (0, HR_SAMPLER_PENALTY_MAX] (1 off; 0 would divide
 * by zero), repeat_last_n in [0, 2^20]. On failure the message starts with the field's name
 * and a colon ("repeat_penalty: 0 must be > 0 (1 = off)"), so callers can put their own
 * spelling of the parameter in front. Returns 0 or -1. */
#define HR_SAMPLER_TEMP_MAX 100.0
#define HR_SAMPLER_PENALTY_MAX 100.0
#define HR_SAMPLER_TOP_K_MAX (1 << 24)
#define HR_SAMPLER_LAST_N_MAX (1 << 20)
int hr_sampler_params_check(const hr_sampler_params *p, hr_err *e);
hr_sampler *hr_sampler_new(const hr_sampler_params *p, int32_t n_vocab, hr_err *e);
void hr_sampler_free(hr_sampler *s);
/* Chooses a token from logits (n_vocab floats, not modified). */
int32_t hr_sampler_sample(hr_sampler *s, const float *logits);
/* Records a token (prompt or generated) for the repetition penalty. */
void hr_sampler_accept(hr_sampler *s, int32_t token);

#endif
