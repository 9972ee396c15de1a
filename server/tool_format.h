/* Tool calls in OpenAI's response shapes: message.tool_calls of a whole reply, and
 * delta.tool_calls of a stream, whose content is held back from a call marker on. */
#ifndef HR_SRV_TOOL_FORMAT_H
#define HR_SRV_TOOL_FORMAT_H
#include "api_format.h"
#include "tools.h"

/* Fills msg (a chat message object) with content and tool_calls parsed from the reply.
 * Returns the number of calls (finish_reason "tool_calls" when > 0), -1 when out of memory. */
int hr_fmt_tool_message(hr_fmt *f, const hr_tool_spec *spec, const char *text, size_t len, cJSON *msg);

/* Stream state: the reply so far and how much of it went out as content. */
typedef struct hr_tool_stream {
    char *acc;
    size_t len, cap, sent;
} hr_tool_stream;

/* Sends events through add (which takes ownership of each, returns -1 on failure). */
typedef int (*hr_event_fn)(void *ud, cJSON *ev);

/* One chunk of the engine: its text joins the reply; what is safe goes out as content (with
 * the chunk's log-probabilities). */
int hr_tool_stream_push(hr_tool_stream *ts, hr_fmt *f, const hr_tool_spec *spec, const hr_chunk *c, bool lp_on,
                        hr_event_fn add, void *ud);
/* The end of the reply: the rest of the content, then one delta per call. *n_calls: how many. */
int hr_tool_stream_end(hr_tool_stream *ts, hr_fmt *f, const hr_tool_spec *spec, hr_event_fn add, void *ud, int *n_calls);
void hr_tool_stream_free(hr_tool_stream *ts);
#endif
