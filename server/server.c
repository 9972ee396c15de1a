/* Server lifetime: template choice, engine, HTTP daemon; orderly shutdown. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "http.h"
#include "server_impl.h"

uint64_t hr_server_next(hr_server *s) {
    /* splitmix64 over a counter: distinct, well-mixed values without shared RNG state. */
    uint64_t z = s->id_base + 0x9E3779B97F4A7C15ull * (atomic_fetch_add(&s->counter, 1) + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The token texts templates put between turns. */
static void special_texts(hr_server *s) {
    int32_t bos = hearth_token_bos(s->model);
    int n = bos >= 0 ? hearth_token_piece(s->model, bos, true, s->bos_text, sizeof s->bos_text - 1) : 0;
    s->bos_text[n > 0 && n < (int)sizeof s->bos_text ? n : 0] = 0;
    s->eos_text[0] = 0;
    for (int32_t id = 0; id < s->n_vocab; id++) {
        if (!hearth_token_is_eog(s->model, id)) continue;
        n = hearth_token_piece(s->model, id, true, s->eos_text, sizeof s->eos_text - 1);
        s->eos_text[n > 0 && n < (int)sizeof s->eos_text ? n : 0] = 0;
        break;
    }
}

static void choose_template(hr_server *s) {
    if (s->p.chat_template >= 0) {
        s->tmpl = (hr_chat_tmpl)s->p.chat_template;
        return;
    }
    size_t len = 0;
    const char *t = hearth_model_meta_str(s->model, "tokenizer.chat_template", &len);
    bool known;
    s->tmpl = hr_chat_detect(t, t ? len : 0, &known);
}

hr_server *hr_server_start(hearth_model *m, hearth_ctx *c, const hr_server_params *p, hr_err *e) {
    hr_server *s = calloc(1, sizeof *s);
    if (!s) { hr_errf(e, "out of memory"); return NULL; }
    s->model = m, s->ctx = c, s->p = *p;
    snprintf(s->host, sizeof s->host, "%s", p->host ? p->host : "127.0.0.1");
    snprintf(s->model_id, sizeof s->model_id, "%s", p->model_id ? p->model_id : "model");
    s->n_ctx = hearth_ctx_n_ctx(c);
    s->n_vocab = hearth_model_get_info(m)->n_vocab;
    s->started = time(NULL);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    s->id_base = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)s;
    atomic_init(&s->counter, 0);
    choose_template(s);
    special_texts(s);
    hr_metrics_init(&s->metrics, hearth_ctx_n_seq(c));
    if (!(s->sched = hr_sched_new(m, c, p->n_batch, &s->metrics, e)) || hr_http_start(s, e)) {
        hr_server_stop(s);
        return NULL;
    }
    return s;
}

int hr_server_port(const hr_server *s) { return s->port; }
int32_t hr_server_n_slots(const hr_server *s) { return hr_sched_n_slots(s->sched); }
const char *hr_server_chat_template(const hr_server *s) { return hr_chat_name(s->tmpl); }

void hr_server_stop(hr_server *s) {
    if (!s) return;
    /* Engine first: it ends every job, whose notify hooks resume the connections waiting
     * for them; then the daemon (no connection left suspended) closes every connection and
     * joins its threads; then nothing refers to the scheduler. */
    hr_sched_stop(s->sched);
    hr_http_stop(s);
    hr_sched_free(s->sched);
    hr_metrics_destroy(&s->metrics);
    free(s);
}
