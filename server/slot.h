/* One slot of the scheduler: a sequence of the shared context serving one job, with its
 * own sampler, UTF-8 reassembly and stop-text hold-back. Engine thread only. */
#ifndef HR_SRV_SLOT_H
#define HR_SRV_SLOT_H
#include "hearth.h"
#include "job.h"
#include "stops.h"
#include "tokenizer/tokenizer.h"

typedef struct hr_slot {
    const hearth_model *m;
    int32_t n_vocab;
    hr_job *job;      /* NULL: free */
    hr_sampler *smp;
    int32_t n_fed;    /* prompt tokens evaluated */
    int32_t n_past;   /* positions of the sequence in the cache */
    int32_t next_tok; /* sampled, to be evaluated next */
    int32_t n_gen;    /* tokens sampled */
    int32_t row;      /* logits row in the current batch, -1: none */
    hr_detok dt;
    hr_stopper st;
    hr_tok_lp *lps;   /* log-probabilities not yet sent with text */
    int32_t n_lps, cap_lps;
    struct hr_grammar_sampler *gs; /* the job's grammar matcher, or NULL */
    float *masked;    /* n_vocab logits with the grammar's mask (kept between jobs) */
} hr_slot;

void hr_slot_init(hr_slot *sl, const hearth_model *m);
/* Takes over the caller's reference to j. -1 (slot left free) when out of memory. */
int hr_slot_start(hr_slot *sl, hr_job *j, hr_err *e);
/* Samples from the logits of the slot's last evaluated token and sends the text that
 * became safe; finishes the job at an end-of-generation token, a stop text, max_tokens,
 * or a full context (n_ctx positions). */
void hr_slot_next(hr_slot *sl, const float *logits, int32_t n_ctx);
/* Finishes the job (finish reason, or err with its HTTP status) and frees the slot. */
void hr_slot_end(hr_slot *sl, const char *finish, int status, const char *err);
void hr_slot_free(hr_slot *sl);
#endif
