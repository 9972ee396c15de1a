/* The engine thread: N slots (one sequence each of a shared hearth_ctx), a FIFO queue of
 * jobs, and one hearth_eval_batch per step covering every busy slot. Only this thread
 * evaluates the model. */
#ifndef HR_SRV_SCHEDULER_H
#define HR_SRV_SCHEDULER_H
#include "hearth.h"
#include "job.h"
#include "metrics.h"

typedef struct hr_sched hr_sched;

/* Starts the engine thread. Slots: hearth_ctx_n_seq(c); n_batch: tokens per step. */
hr_sched *hr_sched_new(hearth_model *m, hearth_ctx *c, int32_t n_batch, hr_metrics *mx, hr_err *e);
int32_t hr_sched_n_slots(const hr_sched *s);
/* Queues j (the scheduler takes its own reference). -1 when the scheduler is stopping. */
int hr_sched_submit(hr_sched *s, hr_job *j);
/* Queues an embedding job (the scheduler takes its own reference): j->prompt is evaluated in
 * embeddings mode on the sequence of a free slot, between steps; the job gets one chunk whose
 * bytes are the n_embd floats of the mean hidden state over its tokens, then finishes "stop".
 * -1 when the scheduler is stopping. */
int hr_sched_submit_embed(hr_sched *s, hr_job *j);
/* The client is gone: drops j from the queue, or frees its slot at the next step. */
void hr_sched_cancel(hr_sched *s, hr_job *j);
/* Fails what is queued or running ("the server is shutting down") and joins the thread. */
void hr_sched_stop(hr_sched *s);
void hr_sched_free(hr_sched *s);
#endif
