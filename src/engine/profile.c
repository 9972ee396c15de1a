/* The public face of the operation profile (prof.h): it hangs off the context's hr_cpu, so
 * every layer that dispatches work (engine, matmul, sparse kernels, pool) reaches it. */
#include <stdlib.h>
#include "backends/cpu/prof.h"
#include "context.h"

_Static_assert(HR_PROF_OPS * HR_TYPE_MAX + 1 <= HEARTH_PROFILE_ROWS, "HEARTH_PROFILE_ROWS too small");

int hearth_ctx_profile(hearth_ctx *c, bool on, hr_err *e) {
    if (!on) {
        hr_prof_stop(c->cpu.prof);
        free(c->cpu.prof);
        c->cpu.prof = NULL;
        return 0;
    }
    if (!c->cpu.prof && !(c->cpu.prof = malloc(sizeof *c->cpu.prof))) return hr_errf(e, "out of memory for the profile");
    hr_prof_start(c->cpu.prof, c->cpu.pool);
    return 0;
}

int hearth_ctx_profile_read(const hearth_ctx *c, hearth_profile *out) {
    const hr_prof *p = c->cpu.prof;
    if (!p) return -1;
    out->total_s = (double)p->total_ns * 1e-9;
    out->tokens = p->tokens, out->forwards = p->forwards;
    out->cpu_s = (double)(hr_prof_cpu_now() - p->cpu0_ns) * 1e-9;
    out->threads = hr_pool_threads(c->cpu.pool);
    uint64_t claimed = 0;
    int32_t n = 0;
    for (int op = 0; op < HR_PROF_OPS; op++)
        for (uint32_t t = 0; t < HR_TYPE_MAX; t++) {
            const hr_prof_slot *s = &p->slot[op][t];
            const bool typed = op == HR_PROF_MATVEC || op == HR_PROF_GEMM || op == HR_PROF_GATHER || op == HR_PROF_AXPY ||
                               op == HR_PROF_FFN;
            const char *tn = typed ? hr_type_name(t) : "";
            out->rows[n++] = (hearth_profile_row){hr_prof_op_name((hr_prof_op)op), tn ? tn : "?", (double)s->ns * 1e-9,
                                                  op == HR_PROF_SYNC && !t ? p->forwards : s->calls, s->bytes};
            claimed += s->ns;
        }
    const uint64_t other = p->total_ns > claimed ? p->total_ns - claimed : 0;
    out->rows[n++] = (hearth_profile_row){"other", "", (double)other * 1e-9, p->forwards, 0};
    out->n_rows = n;
    return 0;
}
