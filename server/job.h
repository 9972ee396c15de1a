/* One generation request as the engine sees it: immutable input, and an output channel
 * (text chunks, finish state) that the engine thread fills and an HTTP thread drains. */
#ifndef HR_SRV_JOB_H
#define HR_SRV_JOB_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "sampler/sampler.h"

#define HR_MAX_TOP_LOGPROBS 20

/* Log-probability of one generated token, with the most likely alternatives. */
typedef struct hr_tok_lp {
    int32_t id;
    float lp;
    int32_t n_top;
    int32_t top_id[HR_MAX_TOP_LOGPROBS];
    float top_lp[HR_MAX_TOP_LOGPROBS];
} hr_tok_lp;

/* Text that became safe to send, and the tokens generated since the previous chunk. */
typedef struct hr_chunk {
    char *text;
    size_t len;
    hr_tok_lp *lps;
    int32_t n_lps;
} hr_chunk;

typedef struct hr_job {
    /* Input, fixed before submission. */
    int32_t *prompt;
    int32_t n_prompt;
    hr_sampler_params sp;
    int32_t max_tokens;
    int32_t n_logprobs; /* -1: none; else top alternatives per token (0..20) */
    bool ignore_eos;
    char **stops; /* user and template stop texts */
    int32_t n_stops;
    struct hr_grammar *grammar;  /* response_format / grammar / forced tool call, or NULL */
    struct hr_tool_spec *tools;  /* tools offered: the reply is parsed for calls (server/tools.h) */
    bool special_text;           /* special tokens are part of the reply's text (call markers) */

    /* Output, guarded by mu. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    hr_chunk *chunks;
    int32_t n_chunks, cap_chunks;
    bool done, cancelled;
    const char *finish; /* "stop", "length"; NULL with err set on failure */
    char err[256];
    int err_status;     /* HTTP status of the failure: 500, 503 when the server is stopping */
    int32_t n_gen;
    int refs;
    /* Called (under mu) after each push and at the finish: wakes the connection waiting
     * for this job (server/waker.h). NULL: none. */
    void (*notify)(void *ud);
    void *notify_ud;
} hr_job;

/* A job with one reference (the caller's). Returns NULL when out of memory. */
hr_job *hr_job_new(void);
void hr_job_ref(hr_job *j);
void hr_job_unref(hr_job *j);
int hr_job_add_stop(hr_job *j, const char *s, size_t len);

/* Engine side. push copies text and lps; returns -1 when out of memory. */
int hr_job_push(hr_job *j, const char *text, size_t len, const hr_tok_lp *lps, int32_t n_lps);
/* Ends the job: finish reason and tokens generated, or (err non-NULL) a failure with
 * its HTTP status. Only the first call counts. */
void hr_job_finish(hr_job *j, const char *finish, int32_t n_gen, int status, const char *err);
bool hr_job_is_cancelled(hr_job *j);

/* HTTP side: waits until chunk `next` exists or the job is done, at most timeout_ms
 * (< 0: no limit). Returns the number of chunks available; *done reports completion
 * (finish, err and n_gen are final once done was seen). */
int32_t hr_job_wait(hr_job *j, int32_t next, int timeout_ms, bool *done);
/* Chunk i (< a count hr_job_wait returned); its text and lps stay valid while the job lives. */
hr_chunk hr_job_chunk(hr_job *j, int32_t i);
void hr_job_cancel(hr_job *j);
/* Sets (fn non-NULL) or clears the notify hook; once a clear returns, fn is not running
 * and will not be called again. */
void hr_job_set_notify(hr_job *j, void (*fn)(void *ud), void *ud);
#endif
