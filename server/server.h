/* hearth serve: an OpenAI-compatible HTTP server over one model and one context whose
 * n_seq sequences are the slots. The caller owns the model and the context and frees
 * them after hr_server_stop. */
#ifndef HR_SERVER_H
#define HR_SERVER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "hearth.h"
#include "sampler/sampler.h"

typedef struct hr_server_params {
    const char *host;      /* numeric address or name; "127.0.0.1" when NULL */
    int port;              /* 0: any free port (hr_server_port tells which) */
    const char *api_key;   /* NULL: no authentication */
    size_t max_body;       /* request body limit in bytes */
    int chat_template;     /* hr_chat_tmpl, or -1: detect from the model */
    const char *model_id;  /* the name /v1/models reports */
    int32_t n_batch;       /* tokens per engine step */
    int32_t n_predict;     /* max_tokens when a request gives none */
    hr_sampler_params sp;  /* sampling defaults for requests */
    bool seed_fixed;       /* sp.seed is the default seed (else each request draws one) */
    const char *cors;      /* allowed browser origins: "*" (NULL: the default), a comma-separated
                              list, or "" (no CORS headers) */
    FILE *log;             /* one line per request; NULL: none */
    int timeout_s;         /* idle limit of a connection with a request under way; 0: 600 */
    int conn_per_ip;       /* connections at once from one address; 0: no limit */
    int max_conns;         /* connections at once; 0: what the open-file limit allows */
} hr_server_params;

typedef struct hr_server hr_server;

hr_server *hr_server_start(hearth_model *m, hearth_ctx *c, const hr_server_params *p, hr_err *e);
int hr_server_port(const hr_server *s);
int32_t hr_server_n_slots(const hr_server *s);
const char *hr_server_chat_template(const hr_server *s);
/* Stops accepting, ends running requests, joins every thread and frees the server. */
void hr_server_stop(hr_server *s);
#endif
