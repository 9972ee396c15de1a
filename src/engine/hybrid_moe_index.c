/* The expert placement a mixture of experts' context runs with under static placement: the
 * expert index (sparse/moeidx.h) at the GPU index path when it was made for this model and
 * for the bytes this plan has for experts, else the plan's own placement, written back to
 * that path when it came from statistics (as the hot-neuron index is, hybrid_index.c). */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "hybrid.h"

static bool exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* Why x cannot describe this model and plan (into why), or NULL when it may. */
static const char *stale(const hearth_model *m, const hr_gpu_plan *plan, const hr_moeidx *x, char *why, size_t cap) {
    const hr_hparams *hp = &m->hp;
    const uint64_t fp = hr_gpu_plan_expert_fingerprint(m);
    if (x->n_layer != hp->n_layer || x->n_expert != hp->n_expert || x->n_ff != hp->n_ff_exp)
        snprintf(why, cap, "made for %d layers of %d experts of %d neurons, the model has %d of %d of %d", x->n_layer,
                 x->n_expert, x->n_ff, hp->n_layer, hp->n_expert, hp->n_ff_exp);
    else if (x->expert_bytes != fp)
        snprintf(why, cap, "made for another model: its experts take %llu bytes, this model's %llu",
                 (unsigned long long)x->expert_bytes, (unsigned long long)fp);
    else if (x->capacity != plan->expert_budget)
        snprintf(why, cap, "made for %llu bytes of experts, this context has %llu", (unsigned long long)x->capacity,
                 (unsigned long long)plan->expert_budget);
    else return NULL;
    return why;
}

static void add_note(char *note, size_t cap, const char *fmt, const char *a, const char *b) {
    const size_t n = strlen(note);
    if (n + 2 >= cap) return;
    snprintf(note + n, cap - n, "%s", n ? "; " : "");
    const size_t k = strlen(note);
    snprintf(note + k, cap - k, fmt, a, b);
}

/* 0: *plan now holds the file's placement; 1: not used (why: the reason); -1: a malformed file. */
static int try_read(const hr_gpu_plan_in *in, const char *path, hr_gpu_plan *plan, char *why, size_t wcap, char *note,
                    size_t cap, hr_err *e) {
    hr_moeidx x;
    if (hr_moeidx_read(path, &x, e)) return -1;
    const char *bad = stale(in->m, plan, &x, why, wcap);
    hr_gpu_plan fresh;
    hr_err pe = {{0}};
    if (!bad) {
        if (!hr_gpu_plan_make_indexed(in, &x, &fresh, &pe)) {
            hr_gpu_plan_free(plan);
            *plan = fresh;
            hr_moeidx_free(&x);
            snprintf(note, cap, "experts and expert neurons read from the GPU index %.200s", path);
            return 0;
        }
        hr_gpu_plan_free(&fresh);
        snprintf(why, wcap, "%.190s", pe.msg);
    }
    hr_moeidx_free(&x);
    return 1;
}

int hr_hybrid_moe_index(const hr_gpu_plan_in *in, const char *idx_path, bool reset, bool from_stats, hr_gpu_plan *plan,
                        char *note, size_t cap, hr_err *e) {
    if (!plan->expert_budget) return 0; /* no byte left for experts: nothing to read or write */
    char why[200] = "";
    if (!reset && idx_path && exists(idx_path)) {
        const int r = try_read(in, idx_path, plan, why, sizeof why, note, cap, e);
        if (r <= 0) return r;
    }
    if (!from_stats || !idx_path) { /* the uniform order: any context makes it again */
        if (*why) add_note(note, cap, "GPU index not used: %.150s%s", why, "");
        return 0;
    }
    hr_moeidx x;
    hr_err we = {{0}};
    if (hr_gpu_plan_moeidx(plan, in->m, &x, e)) return -1;
    if (hr_moeidx_write(idx_path, &x, &we)) add_note(note, cap, "expert placement kept in memory: %.150s%s", we.msg, "");
    else if (*why) add_note(note, cap, "GPU index replaced: %.150s%s", why, "");
    else add_note(note, cap, "expert placement written to %.180s%s", idx_path, "");
    hr_moeidx_free(&x);
    return 0;
}
