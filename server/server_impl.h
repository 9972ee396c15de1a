/* The server's state, shared by the HTTP, API and engine parts. */
#ifndef HR_SRV_IMPL_H
#define HR_SRV_IMPL_H
#include <stdatomic.h>
#include <time.h>
#include "chat/chat.h"
#include "metrics.h"
#include "scheduler.h"
#include "server.h"

struct MHD_Daemon;

struct hr_server {
    hearth_model *model;
    hearth_ctx *ctx;
    hr_server_params p;
    char host[256];
    char model_id[256];
    struct MHD_Daemon *mhd;
    struct hr_waker *waker;
    hr_sched *sched;
    hr_metrics metrics;
    int port;
    int32_t n_ctx, n_vocab;
    hr_chat_tmpl tmpl;
    char bos_text[64], eos_text[64];
    time_t started;
    uint64_t id_base;
    atomic_uint_fast64_t counter; /* ids and default seeds */
};

/* A fresh 64-bit value per call (request ids, seeds). */
uint64_t hr_server_next(hr_server *s);
#endif
