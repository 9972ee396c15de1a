/* Parsing of /v1/completions and /v1/chat/completions bodies into a job. */
#ifndef HR_SRV_API_PARSE_H
#define HR_SRV_API_PARSE_H
#include "apierr.h"
#include "job.h"
#include "server_impl.h"
#include "tools.h"

typedef enum hr_api_kind { HR_API_COMPLETION, HR_API_CHAT } hr_api_kind;

typedef struct hr_gen_req {
    hr_api_kind kind;
    bool stream, include_usage;
    hr_job *job; /* one reference, the caller's */
    int32_t trimmed; /* chat: oldest messages left out to fit the context */
} hr_gen_req;

/* Validates the body (NUL-terminated at body[len]), renders chat messages, tokenizes and
 * checks the context.
 * Returns 0, or -1 with ae set (400 for anything the client got wrong). */
int hr_gen_parse(hr_server *s, hr_api_kind kind, const char *body, size_t len, hr_gen_req *out, hr_apierr *ae);

/* Renders a chat request's messages with the server's template (chat_prompt.c).
 * *out is malloc'ed. */
int hr_chat_prompt(hr_server *s, const cJSON *messages, char **out, hr_apierr *ae);
/* As hr_chat_prompt for root's "messages", leaving out the oldest turns (never the system
 * message or the last message) until the prompt leaves hr_chat_reply_room tokens of the
 * context free; *trimmed: how many were left out. The result may still exceed the context. */
int hr_chat_prompt_fit(hr_server *s, const cJSON *root, int32_t max_tokens, char **out, int32_t *trimmed, hr_apierr *ae);
/* Reply tokens a chat prompt leaves room for: max_tokens when the request gives it, else
 * --n-predict; at most half the context. */
int32_t hr_chat_reply_room(const hr_server *s, const cJSON *root, int32_t max_tokens);

/* As hr_chat_prompt_fit for a conversation that needs the tool renderer (tool_prompt.c):
 * *spec as hr_tools_render gives it. */
int hr_tools_prompt_fit(hr_server *s, const cJSON *root, const hr_tools_req *tr, int32_t max_tokens, char **out,
                        hr_tool_spec **spec, int32_t *trimmed, hr_apierr *ae);

/* The job's grammar from `grammar`, `json_schema`, `response_format` or a forced tool call
 * (j->tools set before). At most one of them; a bad one is a 400 with the parser's message. */
int hr_constrain_parse(const cJSON *root, const hr_tools_req *tr, hr_job *j, hr_apierr *ae);
#endif
