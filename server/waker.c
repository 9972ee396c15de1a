/* Suspension bookkeeping under one lock. Lock order: a job's lock (the engine signals while
 * holding it) before the waker's, which is taken before libmicrohttpd's internal one (inside
 * MHD_suspend/resume_connection); libmicrohttpd calls none of our callbacks while holding
 * its own, so no cycle exists. Suspending happens under the waker's lock, so a resume can
 * never precede the suspend it undoes (libmicrohttpd forbids resuming an active connection). */
#include "waker.h"
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct hr_wait {
    hr_waker *w;
    struct MHD_Connection *conn;
    bool suspended, pending;
    int refs;
    hr_wait *prev, *next; /* the waker's list of handles */
};

struct hr_waker {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    hr_wait *head;
    bool stopping, started;
    pthread_t thread;
};

static void resume(hr_wait *t) {
    t->suspended = false;
    MHD_resume_connection(t->conn);
}

static void *ticker(void *arg) {
    hr_waker *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stopping) {
        struct timespec dl;
        clock_gettime(CLOCK_MONOTONIC, &dl);
        dl.tv_nsec += HR_WAKER_TICK_MS * 1000000L;
        dl.tv_sec += dl.tv_nsec / 1000000000L, dl.tv_nsec %= 1000000000L;
        if (pthread_cond_timedwait(&w->cv, &w->mu, &dl) != ETIMEDOUT) continue;
        for (hr_wait *t = w->head; t; t = t->next)
            if (t->suspended) resume(t);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

hr_waker *hr_waker_new(hr_err *e) {
    hr_waker *w = calloc(1, sizeof *w);
    if (!w) { hr_errf(e, "out of memory"); return NULL; }
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&w->thread, NULL, ticker, w)) {
        hr_errf(e, "cannot start the connection ticker thread");
        hr_waker_free(w);
        return NULL;
    }
    w->started = true;
    return w;
}

void hr_waker_stop(hr_waker *w) {
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->stopping = true;
    for (hr_wait *t = w->head; t; t = t->next)
        if (t->suspended) resume(t);
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    if (w->started) pthread_join(w->thread, NULL);
    w->started = false;
}

void hr_waker_free(hr_waker *w) {
    if (!w) return;
    hr_waker_stop(w);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

hr_wait *hr_wait_new(hr_waker *w, struct MHD_Connection *c) {
    hr_wait *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->w = w, t->conn = c, t->refs = 1;
    pthread_mutex_lock(&w->mu);
    t->next = w->head;
    if (w->head) w->head->prev = t;
    w->head = t;
    pthread_mutex_unlock(&w->mu);
    return t;
}

void hr_wait_ref(hr_wait *t) {
    pthread_mutex_lock(&t->w->mu);
    t->refs++;
    pthread_mutex_unlock(&t->w->mu);
}

void hr_wait_unref(hr_wait *t) {
    if (!t) return;
    hr_waker *w = t->w;
    pthread_mutex_lock(&w->mu);
    if (--t->refs) { pthread_mutex_unlock(&w->mu); return; }
    if (t->prev) t->prev->next = t->next;
    else w->head = t->next;
    if (t->next) t->next->prev = t->prev;
    pthread_mutex_unlock(&w->mu);
    free(t);
}

void hr_wait_signal(hr_wait *t) {
    pthread_mutex_lock(&t->w->mu);
    if (t->suspended) resume(t);
    else t->pending = true;
    pthread_mutex_unlock(&t->w->mu);
}

bool hr_wait_suspend(hr_wait *t) {
    pthread_mutex_lock(&t->w->mu);
    bool ok = !t->pending && !t->w->stopping;
    t->pending = false;
    if (ok) {
        t->suspended = true;
        MHD_suspend_connection(t->conn);
    }
    pthread_mutex_unlock(&t->w->mu);
    return ok;
}
