/* The expert cache's staging thread (expert_cache.c): copies an expert's rows from the mapped
 * model into a pinned staging buffer off the decode thread, which then only enqueues the
 * device copy once the bytes are there. One job per staging buffer; the thread never calls
 * the device. */
#ifndef HR_EXPERT_STAGE_H
#define HR_EXPERT_STAGE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util/err.h"

typedef struct hr_stager hr_stager;

/* One piece of a job: bytes from src to dst. */
typedef struct hr_stage_piece {
    void *dst;
    const void *src;
    size_t bytes;
} hr_stage_piece;

#define HR_STAGE_PIECES 6 /* three matrices, three biases */

int hr_stager_start(hr_stager **out, int32_t n_jobs, hr_err *e);
/* Ends the thread after the piece it is copying; jobs not started are dropped. */
void hr_stager_stop(hr_stager *s);
/* Job b (idle: never queued, or reported done) copies the n pieces. */
void hr_stager_put(hr_stager *s, int32_t b, const hr_stage_piece *p, int n);
/* Whether job b has been copied; true once per job (it is idle again after). Never waits. */
bool hr_stager_take(hr_stager *s, int32_t b);
/* Seconds the thread spent copying. */
double hr_stager_seconds(hr_stager *s);
#endif
