/* The expert index (sparse/moeidx.h, docs/hybrid.md): a mixture's static placement (whole
 * experts per layer, then hot neurons of host experts) written by hearth place's library
 * call and read back by a stand-in context with the same budget. Checked here: the context
 * reading the file has exactly the plan it would make itself and leaves the file unchanged;
 * without the file the context writes the identical file; a hand-edited placement in the file
 * is the one used; files for another budget, shape, model or layer limit (--n-cpu-moe), or
 * whose experts do not fit, are replaced by the context's own placement with a note;
 * malformed files (flags not 0/1, a neuron of a whole expert, wrong names, truncation, a
 * PowerInfer index) are errors naming the problem; --reset-gpu-index and
 * --disable-gpu-index. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "backends/device/standin.h"
#include "engine/context.h"
#include "engine/gpu_plan.h"
#include "engine/hybrid.h"
#include "formats/types.h"
#include "sparse/moe_calib.h"
#include "sparse/moeidx.h"
#include "sparse/stats.h"
#include "synth/synth.h"
#include "hybrid_env.h"
#include "testutil.h"

#define GIB 1073741824.0
enum { NE = 4, K = 2, LAYERS = 3, CTX = 32, SEQ = 2, BATCH = 16 };

static char mpath[256], spath[300], ipath[300];

/* A synthetic smallthinker (ReGLU experts) rewritten with ffn_down_exps_t, as calibrate writes it. */
static hearth_model *calibrated(void) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.arch = "smallthinker", p.type = HR_F32, p.n_embd = 64, p.n_layer = LAYERS, p.n_head = 4, p.n_head_kv = 2;
    p.n_ff = 96, p.n_vocab = 300, p.n_expert = NE, p.n_expert_used = K, p.seed = 29, p.act = HR_SYNTH_REGLU;
    hr_err e = {{0}};
    char raw[256];
    hr_test_tmp(raw, sizeof raw, "moeidx_raw.gguf");
    if (hr_synth_write(&p, raw, &e)) return fprintf(stderr, "synth: %s\n", e.msg), NULL;
    hearth_model *m = hearth_model_load(raw, NULL, &e);
    if (!m) return fprintf(stderr, "load: %s\n", e.msg), NULL;
    const int rc = hr_write_moe_down_t(m, hr_test_tmp(mpath, sizeof mpath, "moeidx.gguf"), &e);
    hearth_model_free(m), remove(raw);
    if (rc) return fprintf(stderr, "down_t: %s\n", e.msg), NULL;
    if (!(m = hearth_model_load(mpath, NULL, &e))) fprintf(stderr, "load: %s\n", e.msg);
    return m;
}

/* Routing favours (0, 1) and (2, 3) (each layer sums to tokens x K); expert (l, x) fires on 6 neurons with varied counts. */
static int write_stats(const hearth_model *m, hr_stats *st) {
    const int32_t ff = m->hp.n_ff_exp;
    hr_err e = {{0}};
    if (hr_stats_init_moe(st, LAYERS, NE, K, ff, true, &e)) return fprintf(stderr, "stats: %s\n", e.msg), -1;
    st->n_tokens = 1000;
    hr_test_moe_counts(st->counts, st->expert_counts, LAYERS, NE, ff);
    st->expert_counts[1] = 800, st->expert_counts[0] = 200;
    st->expert_counts[2 * NE + 3] = 700, st->expert_counts[2 * NE + 2] = 300;
    snprintf(spath, sizeof spath, "%s.stats.gguf", mpath), snprintf(ipath, sizeof ipath, "%s.generated.gpuidx", mpath);
    if (hr_stats_write(spath, st, &e)) return fprintf(stderr, "write stats: %s\n", e.msg), -1;
    return 0;
}

static hearth_ctx_params params(uint64_t budget) {
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = CTX, cp.n_threads = 1, cp.n_batch = BATCH, cp.n_seq = SEQ, cp.ffn_mode = HEARTH_FFN_DENSE;
    cp.gpu = HEARTH_GPU_STANDIN, cp.vram_budget_gib = ((double)budget + 0.5) / GIB, cp.gpu_index_path = ipath;
    return cp;
}

/* The plan a context makes itself from the statistics (no index). */
static int own_plan(hearth_model *m, const hr_stats *st, uint64_t budget, int32_t n_cpu_moe, hr_gpu_plan *p, hr_err *e) {
    hr_gpu_plan_in in = {m, CTX, SEQ, BATCH, budget - HR_STANDIN_OVERHEAD, HEARTH_FFN_DENSE, 0, NULL, n_cpu_moe,
                         st->expert_counts, 0, st->counts};
    return hr_gpu_plan_make(&in, p, e);
}

/* The same experts and expert neurons in every layer, and the same bytes. */
static bool same_placement(const hr_gpu_plan *a, const hr_gpu_plan *b) {
    if (a->total != b->total || a->n_exp_total != b->n_exp_total || a->n_xneurons_total != b->n_xneurons_total) return false;
    for (int il = 0; il < a->n_layer; il++) {
        const hr_gpu_layer *u = &a->layers[il], *v = &b->layers[il];
        if (u->n_exp != v->n_exp || u->n_xhot != v->n_xhot || u->step != v->step) return false;
        for (int32_t i = 0; i < u->n_exp; i++)
            if (u->exps[i].id != v->exps[i].id || u->exps[i].gate.off != v->exps[i].gate.off) return false;
        for (int32_t i = 0; i < u->n_xhot; i++)
            if (u->xhot[i].id != v->xhot[i].id || u->xhot[i].n_hot != v->xhot[i].n_hot ||
                memcmp(u->xhot[i].hot_ids, v->xhot[i].hot_ids, sizeof(int32_t) * (size_t)u->xhot[i].n_hot))
                return false;
    }
    return true;
}

static long slurp(const char *path, unsigned char **buf) {
    FILE *f = fopen(path, "rb");
    *buf = NULL;
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    const bool ok = *buf && fread(*buf, 1, (size_t)n, f) == (size_t)n;
    fclose(f);
    return ok ? n : -1;
}

static bool same_file(const unsigned char *a, long na, const char *path) {
    unsigned char *b;
    const long nb = slurp(path, &b);
    const bool eq = na == nb && a && b && !memcmp(a, b, (size_t)na);
    free(b);
    return eq;
}

/* A context with cp; its status note into note. */
static hearth_ctx *open_ctx(hearth_model *m, const hearth_ctx_params *cp, char *note, size_t cap, hr_err *e) {
    hearth_ctx *c = hearth_ctx_new(m, cp, e);
    if (c) {
        hearth_gpu_status gs;
        hearth_ctx_gpu_status(c, &gs);
        snprintf(note, cap, "%s", gs.note);
    }
    return c;
}

/* A file whose note after a context must contain want, and which the context replaced with
 * its own placement (the plan equal to own). */
static void expect_replaced(hearth_model *m, const hearth_ctx_params *cp, const hr_gpu_plan *own, const char *want,
                            const char *tag) {
    char note[300];
    hr_err e = {{0}};
    hearth_ctx *c = open_ctx(m, cp, note, sizeof note, &e);
    CHECKF(c, "%s: %s", tag, e.msg);
    if (!c) return;
    CHECKF(strstr(note, want) && strstr(note, "GPU index replaced: "), "%s: note '%s', wanted '%s'", tag, note, want);
    CHECKF(same_placement(&c->hy->plan, own), "%s: not the context's own placement", tag);
    hearth_ctx_free(c);
    hr_moeidx x;
    CHECKF(!hr_moeidx_read(ipath, &x, &e) && x.capacity == own->expert_budget, "%s: rewritten file: %s", tag, e.msg);
    hr_moeidx_free(&x);
}

/* Malformed: the context refuses to start, naming the problem. */
static void expect_error(hearth_model *m, const hearth_ctx_params *cp, const char *want, const char *tag) {
    hr_err e = {{0}};
    hearth_ctx *c = hearth_ctx_new(m, cp, &e);
    CHECKF(!c && strstr(e.msg, want) && strstr(e.msg, ipath), "%s: %s (wanted '%s')", tag, c ? "accepted" : e.msg, want);
    hearth_ctx_free(c);
}

static int write_idx(const hr_moeidx *x) {
    hr_err e = {{0}};
    const int rc = hr_moeidx_write(ipath, x, &e);
    CHECKF(!rc, "write index: %s", e.msg);
    return rc;
}

static void check_mismatched(hearth_model *m, const hr_stats *st, uint64_t budget, const hr_gpu_plan *own) {
    const hearth_ctx_params cp = params(budget);
    hr_err e = {{0}};
    hr_moeidx base, x;
    if (hr_gpu_plan_moeidx(own, m, &base, &e)) {
        CHECKF(0, "index: %s", e.msg);
        return;
    }
    const size_t ne = NE, ff = (size_t)m->hp.n_ff_exp;
    /* another budget */
    base.capacity += 256;
    if (!write_idx(&base)) expect_replaced(m, &cp, own, "made for", "other budget");
    base.capacity -= 256;
    /* another model (same shape, other expert bytes) */
    base.expert_bytes += 1;
    if (!write_idx(&base)) expect_replaced(m, &cp, own, "made for another model", "other model");
    base.expert_bytes -= 1;
    /* another shape */
    if (!hr_moeidx_init(&x, LAYERS - 1, NE, (int32_t)ff, &e)) {
        x.capacity = base.capacity, x.expert_bytes = base.expert_bytes;
        if (!write_idx(&x)) expect_replaced(m, &cp, own, "made for 2 layers of 4 experts", "other shape");
        hr_moeidx_free(&x);
    }
    /* more than the budget: every expert whole */
    if (!hr_moeidx_init(&x, LAYERS, NE, (int32_t)ff, &e)) {
        x.capacity = base.capacity, x.expert_bytes = base.expert_bytes;
        memset(x.whole, 1, (size_t)LAYERS * ne);
        if (!write_idx(&x)) expect_replaced(m, &cp, own, "need more than", "too big");
        hr_moeidx_free(&x);
    }
    /* --n-cpu-moe 3: the file's experts are in layers this context keeps on the host */
    hearth_ctx_params cpu = cp;
    cpu.n_cpu_moe = 2;
    hr_gpu_plan own2;
    if (!own_plan(m, st, budget, 2, &own2, &e)) {
        if (!write_idx(&base)) expect_replaced(m, &cpu, &own2, "on the host in this context", "--n-cpu-moe 2");
        hr_gpu_plan_free(&own2);
    } else CHECKF(0, "plan --n-cpu-moe 2: %s", e.msg);
    /* malformed */
    hr_moeidx bad;
    if (!hr_moeidx_init(&bad, LAYERS, NE, (int32_t)ff, &e)) {
        bad.capacity = base.capacity, bad.expert_bytes = base.expert_bytes;
        bad.whole[5] = 2;
        if (!write_idx(&bad)) expect_error(m, &cp, "blk.1.gpu_experts[1] = 2 (flags must be 0 or 1)", "flag 2");
        bad.whole[5] = 1, bad.neurons[(size_t)5 * ff + 7] = 1;
        if (!write_idx(&bad)) expect_error(m, &cp, "expert 1 is on the device whole and also lists hot neuron 7", "whole and split");
        hr_moeidx_free(&bad);
    }
    if (!write_idx(&base)) { /* truncated */
        unsigned char *b;
        const long n = slurp(ipath, &b);
        FILE *f = fopen(ipath, "wb");
        if (f && b) fwrite(b, 1, (size_t)(n / 2), f);
        if (f) fclose(f);
        free(b);
        expect_error(m, &cp, "expert index", "truncated");
    }
    hr_gpuidx g; /* a dense model's index at the path */
    if (!hr_gpuidx_init(&g, LAYERS, 8, &e)) {
        CHECKF(!hr_gpuidx_write(ipath, &g, &e), "gpuidx: %s", e.msg);
        expect_error(m, &cp, "not an expert placement index", "PowerInfer index");
        hr_gpuidx_free(&g);
    }
    hr_moeidx_free(&base);
}

/* A budget of one whole expert and about 20 neurons; place's file round trip; a hand-edited
 * placement used as written; reset and disable. */
static void check_round_trip(hearth_model *m, const hr_stats *st) {
    hr_gpu_plan all;
    hr_err e = {{0}};
    if (own_plan(m, st, 1ull << 34, 0, &all, &e)) {
        CHECKF(0, "plan: %s", e.msg);
        return;
    }
    const hr_moe_weights *w = &m->layers[0].moe;
    const uint64_t one = all.bytes[HEARTH_GPU_CAT_FFN] / (uint64_t)all.n_exp_total;
    const uint64_t nb = w->gate.row_bytes + w->up.row_bytes + w->down_t.row_bytes;
    const uint64_t budget = HR_STANDIN_OVERHEAD + all.total - all.bytes[HEARTH_GPU_CAT_FFN] + one + 20 * nb;
    hr_gpu_plan_free(&all);
    hr_gpu_plan own;
    if (own_plan(m, st, budget, 0, &own, &e)) {
        CHECKF(0, "plan: %s", e.msg);
        return;
    }
    CHECKF(own.n_exp_total == 1 && own.n_xneurons_total >= 15 && own.expert_budget > 0, "own plan: %d experts, %lld neurons",
           own.n_exp_total, (long long)own.n_xneurons_total);
    /* hearth place's call writes the index */
    hearth_ctx_params cp = params(budget);
    hearth_gpu_experts x;
    remove(ipath);
    CHECKF(!hearth_gpu_place_experts(m, &cp, spath, ipath, &x, &e) && x.index_written && x.expert_budget == own.expert_budget &&
               x.n_placed == own.n_exp_total && x.n_neurons == own.n_xneurons_total,
           "place: %s (written %d, expert budget %llu, plan's %llu)", e.msg, x.index_written, (unsigned long long)x.expert_budget,
           (unsigned long long)own.expert_budget);
    hearth_gpu_experts_free(&x);
    unsigned char *placed;
    const long np = slurp(ipath, &placed);
    char note[300];
    hearth_ctx *c = open_ctx(m, &cp, note, sizeof note, &e);
    CHECKF(c, "context reading place's index: %s", e.msg);
    if (c) {
        CHECKF(strstr(note, "read from the GPU index") && same_placement(&c->hy->plan, &own), "read back: note '%s', same plan %d",
               note, same_placement(&c->hy->plan, &own));
        hearth_ctx_free(c);
    }
    CHECKF(np > 0 && same_file(placed, np, ipath), "the context changed place's index");
    /* without a file the context writes the same one */
    remove(ipath);
    if ((c = open_ctx(m, &cp, note, sizeof note, &e))) {
        CHECKF(strstr(note, "expert placement written to") && same_placement(&c->hy->plan, &own), "made: note '%s'", note);
        hearth_ctx_free(c);
    } else CHECKF(0, "context without index: %s", e.msg);
    CHECKF(same_file(placed, np, ipath), "the context's own index differs from hearth place's");
    /* a hand-edited placement is used as written: layer 2's expert 0 whole instead of the plan's */
    hr_moeidx ed;
    if (!hr_gpu_plan_moeidx(&own, m, &ed, &e)) {
        memset(ed.whole, 0, (size_t)LAYERS * NE), memset(ed.neurons, 0, (size_t)LAYERS * NE * (size_t)m->hp.n_ff_exp);
        ed.whole[2 * NE + 0] = 1, ed.neurons[(size_t)(1 * NE + 2) * (size_t)m->hp.n_ff_exp + 3] = 1;
        if (!write_idx(&ed) && (c = open_ctx(m, &cp, note, sizeof note, &e))) {
            const hr_gpu_plan *p = &c->hy->plan;
            CHECKF(p->n_exp_total == 1 && p->layers[2].n_exp == 1 && p->layers[2].exps[0].id == 0 && p->n_xneurons_total == 1 &&
                       p->layers[1].n_xhot == 1 && p->layers[1].xhot[0].id == 2 && p->layers[1].xhot[0].hot_ids[0] == 3,
                   "edited placement not used: %d experts, %lld neurons", p->n_exp_total, (long long)p->n_xneurons_total);
            hearth_ctx_free(c);
        } else CHECKF(0, "edited index: %s", e.msg);
        /* --disable-gpu-index: neither read nor written; --reset-gpu-index: made anew */
        hearth_ctx_params v = cp;
        v.disable_gpu_index = true;
        if ((c = open_ctx(m, &v, note, sizeof note, &e))) {
            CHECKF(same_placement(&c->hy->plan, &own) && strstr(note, "not read or written"), "disabled: note '%s'", note);
            hearth_ctx_free(c);
        } else CHECKF(0, "disabled: %s", e.msg);
        v = cp, v.reset_gpu_index = true;
        if ((c = open_ctx(m, &v, note, sizeof note, &e))) {
            CHECKF(same_placement(&c->hy->plan, &own), "reset: not the own plan");
            hearth_ctx_free(c);
        } else CHECKF(0, "reset: %s", e.msg);
        CHECKF(same_file(placed, np, ipath), "reset did not write the context's own index");
        hr_moeidx_free(&ed);
    }
    free(placed);
    check_mismatched(m, st, budget, &own);
    hr_gpu_plan_free(&own);
}

int main(void) {
    hearth_model *m = calibrated();
    CHECKF(m, "model");
    if (!m) return TEST_END();
    hr_stats st;
    if (!write_stats(m, &st)) {
        check_round_trip(m, &st);
        hr_stats_free(&st);
    } else CHECK(0);
    hearth_model_free(m);
    remove(mpath), remove(spath), remove(ipath);
    return TEST_END();
}
