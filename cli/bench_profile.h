/* hearth bench --profile: the operation profile of the timed runs (hearth_ctx_profile),
 * summed over runs per phase and printed as a table or JSON. */
#ifndef HR_BENCH_PROFILE_H
#define HR_BENCH_PROFILE_H
#include "hearth.h"

typedef struct bench_prof {
    hearth_profile prompt, decode; /* sums over the timed runs */
    hearth_profile tmp;            /* one phase's read */
} bench_prof;

/* acc += p row by row (rows have fixed indices); the first add copies the names. */
void hr_bench_prof_add(hearth_profile *acc, const hearth_profile *p);
/* Both phases: a table each on stdout, or the body of a "profile" JSON member. */
void hr_bench_prof_text(const bench_prof *bp);
void hr_bench_prof_json(const bench_prof *bp);
#endif
