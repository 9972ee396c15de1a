/* One layer's FFN split between the stand-in device (hot neurons) and the CPU (cold ones)
 * against the CPU-only FFN of the same layer on the same inputs, at hot shares 0, about
 * 25% and 100%, for a batch and a single token, in predicted and dense modes; and the
 * index mapping: local row i of each gathered device matrix is the model's row hot_ids[i]. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "backends/device/standin.h"
#include "engine/ffn.h"
#include "engine/hybrid.h"
#include "formats/types.h"
#include "synth/synth.h"
#include "testutil.h"

#define GIB 1073741824.0
enum { EMBD = 128, FF = 512, LAYERS = 2, BATCH = 64 };

static hearth_ctx *ctx(hearth_model *m, hearth_gpu_mode gpu, double gib, hearth_ffn_mode mode) {
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = 64, cp.n_threads = 2, cp.n_batch = BATCH, cp.ffn_mode = mode, cp.gpu = gpu, cp.vram_budget_gib = gib;
    hr_err e = {{0}};
    hearth_ctx *c = hearth_ctx_new(m, &cp, &e);
    if (!c) fprintf(stderr, "ctx: %s\n", e.msg);
    return c;
}

/* Budget for a hot share (no statistics: the neuron budget is spread evenly over layers). */
static double budget(hearth_model *m, hearth_ffn_mode mode, double share) {
    hr_gpu_plan p;
    hr_err e = {{0}};
    hr_gpu_plan_in in = {m, 64, 1, BATCH, 1ull << 34, mode, 0, NULL, 0, NULL, 0, NULL};
    CHECK(!hr_gpu_plan_make(&in, &p, &e));
    const uint64_t b = p.total + HR_STANDIN_OVERHEAD + (share > 0 ? LAYERS * 3 * 255 + (uint64_t)(share * p.ffn_bytes) : 0) + 64;
    hr_gpu_plan_free(&p);
    return b / GIB;
}

/* Gathered rows on the device equal the model's rows hot_ids[i]; local maps back. */
static void check_mapping(hearth_ctx *c) {
    hr_hybrid *h = c->hy;
    hr_err e = {{0}};
    for (int il = 0; il < LAYERS; il++) {
        const hr_gpu_layer *g = &h->plan.layers[il];
        const hr_ffn_weights *f = &c->m->layers[il].ffn;
        const hr_mat *src[3] = {&f->gate, &f->up, &f->down_t};
        const hr_dmat *dst[3] = {&g->gate, &g->up, &g->down};
        uint8_t *row = malloc(f->up.row_bytes);
        int bad = 0;
        for (int i = 0; i < g->n_hot; i++) {
            bad += h->local[il][g->hot_ids[i]] != i;
            for (int k = 0; k < 3; k++) {
                CHECK(!h->dev->ops->to_host(h->dev, row, dst[k]->off + (uint64_t)i * dst[k]->row_bytes, dst[k]->row_bytes, &e));
                bad += memcmp(row, (const uint8_t *)src[k]->data + (size_t)g->hot_ids[i] * src[k]->row_bytes, src[k]->row_bytes) != 0;
            }
        }
        int cold = 0;
        for (int j = 0; j < FF; j++) cold += h->local[il][j] < 0;
        CHECKF(bad == 0 && cold == FF - g->n_hot, "layer %d: %d mismatched rows, %d cold of %d", il, bad, cold, FF - g->n_hot);
        free(row);
    }
}

static void check_split(hearth_model *m, uint32_t type, hearth_ffn_mode mode) {
    hearth_ctx *cpu = ctx(m, HEARTH_GPU_OFF, 0, mode);
    const double shares[] = {0, 0.25, 1.0};
    hr_rng r = {17};
    float *x = malloc(sizeof(float) * BATCH * EMBD), *xn = malloc(sizeof(float) * BATCH * EMBD);
    float *a = malloc(sizeof(float) * BATCH * EMBD), *b = malloc(sizeof(float) * BATCH * EMBD);
    for (int i = 0; i < BATCH * EMBD; i++) x[i] = hr_rng_normal(&r), xn[i] = hr_rng_normal(&r);
    /* same kernels and rows; only the order of the down-projection sums differs */
    const double tol = type == HR_F32 ? 1e-5 : 1e-4;
    for (int k = 0; k < 3 && cpu; k++) {
        hearth_ctx *hy = ctx(m, HEARTH_GPU_STANDIN, budget(m, mode, shares[k]), mode);
        if (!hy) {
            CHECK(0);
            continue;
        }
        hearth_gpu_status st;
        hearth_ctx_gpu_status(hy, &st);
        const double placed = (double)st.hot_neurons / (LAYERS * FF);
        CHECKF(fabs(placed - shares[k]) < 0.02, "placed %.3f, wanted %.2f", placed, shares[k]);
        if (k) check_mapping(hy);
        const int ns[] = {7, 1, 25, 34, 64};
        for (int t = 0; t < 5; t++)
            for (int il = 0; il < LAYERS; il++) {
                const hr_layer *L = &m->layers[il];
                hr_err e = {{0}};
                CHECKF(!hr_ffn(cpu, L, il, x, xn, ns[t], a, &e) && !hr_ffn(hy, L, il, x, xn, ns[t], b, &e), "%s", e.msg);
                double d = 0, scale = 0;
                for (int i = 0; i < ns[t] * EMBD; i++) d = fmax(d, fabs((double)a[i] - b[i])), scale = fmax(scale, fabs(a[i]));
                CHECKF(d <= tol * fmax(scale, 1.0), "%s %s share %.2f, %d tokens, layer %d: split differs by %g (scale %g)",
                       hr_type_name(type), hearth_ffn_mode_name(mode), shares[k], ns[t], il, d, scale);
                if (ns[t] > 1) CHECK(scale > 0.1); /* a single token may have nothing active at threshold 1 */
            }
        hearth_ctx_gpu_status(hy, &st);
        if (k == 2) CHECK(st.act_device == st.act_total && st.act_total > 0);
        if (k == 1) CHECK(st.act_device > 0 && st.act_device < st.act_total);
        printf("%-5s %-9s share %.2f: %llu of %llu activations on the device\n", hr_type_name(type), hearth_ffn_mode_name(mode),
               shares[k], (unsigned long long)st.act_device, (unsigned long long)st.act_total);
        hearth_ctx_free(hy);
    }
    hearth_ctx_free(cpu);
    free(x), free(xn), free(a), free(b);
}

int main(void) {
    const uint32_t types[] = {HR_F32, HR_Q4_0, HR_Q8_0};
    const hr_synth_act acts[] = {HR_SYNTH_REGLU, HR_SYNTH_DRELU, HR_SYNTH_REGLU};
    for (int i = 0; i < 3; i++) {
        hr_synth_params p;
        hr_synth_defaults(&p);
        p.type = types[i], p.act = acts[i], p.powerinfer = true, p.pred_rank = 32, p.seed = 3;
        p.n_embd = EMBD, p.n_head = 4, p.n_head_kv = 4, p.n_ff = FF, p.n_vocab = 300, p.n_layer = LAYERS;
        char path[256];
        hr_err e = {{0}};
        if (hr_synth_write(&p, hr_test_tmp(path, sizeof path, "split.gguf"), &e)) {
            CHECKF(0, "%s", e.msg);
            continue;
        }
        /* threshold 0: about half the neurons per token (the batch's union is nearly all);
         * 1: about 2% (the union of a batch stays sparse, so the CPU gathers rows) */
        hearth_model_params mp = hearth_model_default_params();
        mp.has_sparse_threshold = true;
        for (int k = 0; k < 2; k++) {
            mp.sparse_threshold = (float)k;
            hearth_model *m = hearth_model_load(path, &mp, &e);
            CHECKF(m != NULL, "%s", e.msg);
            if (m) check_split(m, types[i], HEARTH_FFN_PREDICTED);
            if (m && !k) check_split(m, types[i], HEARTH_FFN_DENSE);
            hearth_model_free(m);
        }
        remove(path);
    }
    return TEST_END();
}
