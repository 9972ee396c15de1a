/* Server counters, rendered in Prometheus' text format for GET /metrics. */
#ifndef HR_SRV_METRICS_H
#define HR_SRV_METRICS_H
#include <pthread.h>
#include <stdint.h>

#define HR_METRICS_MAX_SERIES 96

typedef struct hr_metrics {
    pthread_mutex_t mu;
    struct {
        const char *endpoint; /* a static route label */
        int status;
        uint64_t n;
    } req[HR_METRICS_MAX_SERIES];
    int n_req;
    uint64_t prompt_tokens, gen_tokens, cancelled;
    /* Decode rate: tokens generated per second of engine time over the last window
     * (closed after a second of work, or when the engine goes idle). */
    double win_s, tokens_per_s;
    uint64_t win_tokens;
    double ffn_computed; /* share of FFN neurons computed per token, all layers; < 0 unknown */
    int busy, busy_peak, queued, n_slots;
} hr_metrics;

void hr_metrics_init(hr_metrics *m, int n_slots);
void hr_metrics_destroy(hr_metrics *m);
void hr_metrics_request(hr_metrics *m, const char *endpoint, int status);
/* Engine side, once per step: prompt tokens evaluated, tokens generated, the step's
 * duration in seconds, the FFN's computed share (< 0: unknown). */
void hr_metrics_step(hr_metrics *m, uint64_t prompt, uint64_t gen, double seconds, double ffn_computed);
/* The engine has no work: closes the decode window. */
void hr_metrics_idle(hr_metrics *m);
void hr_metrics_cancelled(hr_metrics *m);
void hr_metrics_load(hr_metrics *m, int busy, int queued);
void hr_metrics_get_load(hr_metrics *m, int *busy, int *queued);
/* The exposition text (malloc'ed), NULL when out of memory. */
char *hr_metrics_render(hr_metrics *m);
#endif
