/* Suspended connections and who wakes them. libmicrohttpd serves every connection from a
 * few event-loop threads, so a request waiting for tokens must not block: its handler
 * suspends the connection and returns; the engine's progress on the job (hr_wait_signal)
 * resumes it, and a ticker resumes every suspended connection twice a second so that each
 * can notice a client that left and send keep-alive comments. */
#ifndef HR_SRV_WAKER_H
#define HR_SRV_WAKER_H
#include <stdbool.h>
#include <microhttpd.h>
#include "util/err.h"

typedef struct hr_waker hr_waker;
typedef struct hr_wait hr_wait;

#define HR_WAKER_TICK_MS 500

/* Starts the ticker thread. */
hr_waker *hr_waker_new(hr_err *e);
/* From now on nothing is suspended again; every suspended connection is resumed (the daemon
 * must not stop with one suspended); joins the ticker. Call before MHD_stop_daemon. */
void hr_waker_stop(hr_waker *w);
void hr_waker_free(hr_waker *w);

/* One connection's handle, with one reference (the caller's). NULL when out of memory. */
hr_wait *hr_wait_new(hr_waker *w, struct MHD_Connection *c);
void hr_wait_ref(hr_wait *t);
void hr_wait_unref(hr_wait *t);
/* Any thread: there is news for the connection (resumes it, or makes its next
 * hr_wait_suspend return false). Takes only the waker's lock. */
void hr_wait_signal(hr_wait *t);
/* From the connection's access handler or content reader only: suspends it and returns
 * true, or returns false (news arrived since the caller last looked, or the server is
 * stopping): the caller should look again instead. */
bool hr_wait_suspend(hr_wait *t);
#endif
