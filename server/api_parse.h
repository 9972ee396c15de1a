/* Parsing of /v1/completions and /v1/chat/completions bodies into a job. */
#ifndef HR_SRV_API_PARSE_H
#define HR_SRV_API_PARSE_H
#include "apierr.h"
#include "job.h"
#include "server_impl.h"

typedef enum hr_api_kind { HR_API_COMPLETION, HR_API_CHAT } hr_api_kind;

typedef struct hr_gen_req {
    hr_api_kind kind;
    bool stream, include_usage;
    hr_job *job; /* one reference, the caller's */
} hr_gen_req;

/* Validates the body (NUL-terminated at body[len]), renders chat messages, tokenizes and
 * checks the context.
 * Returns 0, or -1 with ae set (400 for anything the client got wrong). */
int hr_gen_parse(hr_server *s, hr_api_kind kind, const char *body, size_t len, hr_gen_req *out, hr_apierr *ae);

/* Renders a chat request's messages with the server's template (chat_prompt.c).
 * *out is malloc'ed. */
int hr_chat_prompt(hr_server *s, const cJSON *messages, char **out, hr_apierr *ae);
#endif
