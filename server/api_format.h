/* OpenAI response objects for completions and chat completions, whole or as stream chunks. */
#ifndef HR_SRV_API_FORMAT_H
#define HR_SRV_API_FORMAT_H
#include <cjson/cJSON.h>
#include "api_parse.h"

typedef struct hr_fmt {
    hr_server *s;
    hr_api_kind kind;
    char id[48];
    long long created;
    size_t text_offset; /* completions' logprobs.text_offset: bytes of reply so far */
} hr_fmt;

void hr_fmt_init(hr_fmt *f, hr_server *s, hr_api_kind kind);
/* An empty logprobs object of the right shape, to which hr_fmt_logprobs_add appends. */
cJSON *hr_fmt_logprobs_new(const hr_fmt *f);
void hr_fmt_logprobs_add(hr_fmt *f, cJSON *lp, const hr_tok_lp *lps, int32_t n);
cJSON *hr_fmt_usage(int32_t n_prompt, int32_t n_gen);
/* One stream chunk: text (chat: delta.content; role: also delta.role), its logprobs
 * (n_lps; lp_on says whether the request asked for them), finish reason or NULL. */
cJSON *hr_fmt_chunk(hr_fmt *f, const char *text, size_t len, bool role, bool lp_on, const hr_tok_lp *lps,
                    int32_t n_lps, const char *finish);
/* The usage-only chunk that closes a stream when stream_options.include_usage is set. */
cJSON *hr_fmt_usage_chunk(hr_fmt *f, int32_t n_prompt, int32_t n_gen);
/* The whole response of a finished job. */
cJSON *hr_fmt_full(hr_fmt *f, hr_job *j, int32_t n_chunks);
#endif
