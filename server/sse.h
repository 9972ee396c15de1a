/* Streaming responses: server-sent events in OpenAI's chunk format, ending with
 * "data: [DONE]". The content callback never blocks: with nothing to send it suspends the
 * connection until the job has news (waker.h). */
#ifndef HR_SRV_SSE_H
#define HR_SRV_SSE_H
#include "api_parse.h"
#include "http.h"

/* Queues the event stream for g->job (taking over the caller's reference; the job's notify
 * hook signals the request's wake handle). A client that goes away cancels the job, which
 * frees its slot. */
enum MHD_Result hr_sse_respond(hr_http_req *r, hr_gen_req *g);
#endif
