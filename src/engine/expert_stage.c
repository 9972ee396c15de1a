/* The expert cache's staging thread (expert_stage.h). */
#include "expert_stage.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { JOB_IDLE, JOB_QUEUED, JOB_RUNNING, JOB_DONE };

typedef struct stage_job {
    int state;
    int n;
    hr_stage_piece p[HR_STAGE_PIECES];
} stage_job;

struct hr_stager {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t work;
    bool quit, started;
    int32_t n_jobs;
    stage_job *jobs;
    double seconds;
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The oldest queued job is not tracked: any queued one will do, each is one expert. */
static stage_job *next_job(hr_stager *s) {
    for (int32_t i = 0; i < s->n_jobs; i++)
        if (s->jobs[i].state == JOB_QUEUED) return &s->jobs[i];
    return NULL;
}

static void *stager_main(void *arg) {
    hr_stager *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        stage_job *j = NULL;
        while (!s->quit && !(j = next_job(s))) pthread_cond_wait(&s->work, &s->mu);
        if (s->quit) break;
        j->state = JOB_RUNNING;
        const stage_job copy = *j;
        pthread_mutex_unlock(&s->mu);
        const double t0 = now_s();
        for (int i = 0; i < copy.n; i++) memcpy(copy.p[i].dst, copy.p[i].src, copy.p[i].bytes);
        const double dt = now_s() - t0;
        pthread_mutex_lock(&s->mu);
        j->state = JOB_DONE, s->seconds += dt;
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int hr_stager_start(hr_stager **out, int32_t n_jobs, hr_err *e) {
    *out = NULL;
    hr_stager *s = calloc(1, sizeof *s);
    if (!s || !(s->jobs = calloc((size_t)n_jobs, sizeof *s->jobs))) {
        free(s);
        return hr_errf(e, "out of memory");
    }
    s->n_jobs = n_jobs;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work, NULL);
    if (pthread_create(&s->th, NULL, stager_main, s) != 0) {
        hr_stager_stop(s);
        return hr_errf(e, "cannot start the expert staging thread");
    }
    s->started = true;
    *out = s;
    return 0;
}

void hr_stager_stop(hr_stager *s) {
    if (!s) return;
    if (s->started) {
        pthread_mutex_lock(&s->mu);
        s->quit = true;
        pthread_cond_signal(&s->work);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->th, NULL);
    }
    pthread_cond_destroy(&s->work);
    pthread_mutex_destroy(&s->mu);
    free(s->jobs);
    free(s);
}

void hr_stager_put(hr_stager *s, int32_t b, const hr_stage_piece *p, int n) {
    pthread_mutex_lock(&s->mu);
    stage_job *j = &s->jobs[b];
    j->n = n < HR_STAGE_PIECES ? n : HR_STAGE_PIECES;
    memcpy(j->p, p, sizeof *p * (size_t)j->n);
    j->state = JOB_QUEUED;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
}

bool hr_stager_take(hr_stager *s, int32_t b) {
    pthread_mutex_lock(&s->mu);
    const bool done = s->jobs[b].state == JOB_DONE;
    if (done) s->jobs[b].state = JOB_IDLE;
    pthread_mutex_unlock(&s->mu);
    return done;
}

double hr_stager_seconds(hr_stager *s) {
    pthread_mutex_lock(&s->mu);
    const double t = s->seconds;
    pthread_mutex_unlock(&s->mu);
    return t;
}
