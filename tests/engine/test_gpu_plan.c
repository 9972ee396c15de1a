/* The GPU plan: sizes against formulas written here from the synthesized shapes, the
 * categories summing to the total, offsets disjoint and inside the arena, the order of
 * value as the budget shrinks, monotone in the budget, budgets below the scratch, the hot
 * set as the index's first k per layer, whole-layer offload (-ngl) and dense files. */
#include <stdlib.h>
#include <string.h>
#include "engine/gpu_plan.h"
#include "formats/types.h"
#include "synth/synth.h"
#include "testutil.h"
#include "util/size.h"

enum { EMBD = 64, LAYERS = 3, FF = 128, VOCAB = 320, HEADS = 4, KVH = 2, RANK = 32, CTX = 48, SEQ = 2, BATCH = 8 };

static uint64_t R(uint64_t n) { return (n + 255) / 256 * 256; }

static hearth_model *model(uint32_t type, bool pwri, char *path, size_t cap) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.n_embd = EMBD, p.n_layer = LAYERS, p.n_head = HEADS, p.n_head_kv = KVH, p.n_ff = FF, p.n_vocab = VOCAB;
    p.type = type, p.powerinfer = pwri, p.pred_rank = RANK, p.act = HR_SYNTH_REGLU;
    hr_err e = {{0}};
    hr_test_tmp(path, cap, "plan.gguf");
    if (hr_synth_write(&p, path, &e)) return fprintf(stderr, "synth: %s\n", e.msg), NULL;
    hearth_model *m = hearth_model_load(path, NULL, &e);
    if (!m) fprintf(stderr, "load: %s\n", e.msg);
    return m;
}

/* Scratch: 16 buffers for BATCH tokens (gpu_plan.h), each rounded; rank 1 without predictors. */
static uint64_t scratch_rank(uint64_t rank) {
    const uint64_t T = BATCH, d = EMBD, q = EMBD, kv = KVH * (EMBD / HEADS);
    return 2 * R(T * d * 4) + 2 * R(T * q * 4) + 2 * R(T * kv * 4) + R(T * d * 4) + R(T * rank * 4) + 4 * R(T * FF * 4) +
           R(T * d * 4) + R(T * VOCAB * 4) + R(FF * 4) + R(T * FF);
}

static int plan(hearth_model *m, uint64_t budget, int ngl, const hr_gpuidx *idx, hearth_ffn_mode mode, hr_gpu_plan *p, hr_err *e) {
    hr_gpu_plan_in in = {m, CTX, SEQ, BATCH, budget, mode, ngl, idx, 0, NULL, 0, NULL};
    return hr_gpu_plan_make(&in, p, e);
}

static uint64_t scratch_bytes(void) { return scratch_rank(RANK); }

typedef struct { uint64_t off, n; } range;
static int cmp_range(const void *a, const void *b) {
    const range *x = a, *y = b;
    return (x->off > y->off) - (x->off < y->off);
}

/* Categories sum to the total, total <= budget, every matrix inside and none overlapping. */
static void check_layout(const hr_gpu_plan *p) {
    uint64_t sum = 0;
    for (int c = 0; c < HEARTH_GPU_CAT_COUNT; c++) sum += p->bytes[c];
    CHECKF(sum == p->total && p->total <= p->budget, "categories %llu, total %llu, budget %llu", (unsigned long long)sum,
           (unsigned long long)p->total, (unsigned long long)p->budget);
    range r[LAYERS * 20 + 5];
    int n = 0;
    uint64_t norms = 0;
    for (int il = 0; il < p->n_layer; il++) {
        const hr_gpu_layer *g = &p->layers[il];
        const hr_dmat *ms[] = {&g->wq, &g->wk, &g->wv, &g->wo, &g->fc1, &g->fc2, &g->gate, &g->up, &g->down};
        for (int k = 0; k < 9; k++)
            if (ms[k]->n_out) r[n++] = (range){ms[k]->off, (uint64_t)ms[k]->n_out * ms[k]->row_bytes};
        /* norms only with whole layers that compute every neuron (resident), or with
         * attention and predictor together (one round trip) */
        CHECK(!g->norms || (g->attn && (g->pred || g->ffn_dense || g->n_hot == FF)));
        if (g->norms) r[n++] = (range){g->attn_norm, EMBD * 4}, r[n++] = (range){g->ffn_norm, EMBD * 4}, norms += 2 * R(EMBD * 4);
        /* attention vectors where the layer has them (offset 0, in scratch, where not) */
        const uint64_t hd = EMBD / HEADS, vo[] = {g->bq, g->bk, g->bv, g->bo, g->q_norm, g->k_norm};
        const uint64_t vn[] = {EMBD * 4, KVH * hd * 4, KVH * hd * 4, EMBD * 4, hd * 4, hd * 4};
        for (int k = 0; g->attn && k < 6; k++)
            if (vo[k]) r[n++] = (range){vo[k], vn[k]};
    }
    if (p->rope_ff_src) r[n++] = (range){p->rope_ff, EMBD / HEADS / 2 * 4};
    CHECK(p->bytes[HEARTH_GPU_CAT_NORMS] == norms);
    if (p->output) r[n++] = (range){p->out.off, (uint64_t)p->out.n_out * p->out.row_bytes};
    if (p->kv_layers) {
        const uint64_t kvb = (uint64_t)SEQ * p->kv_layers * CTX * KVH * (EMBD / HEADS) * 2;
        CHECK(p->bytes[HEARTH_GPU_CAT_KV] == 2 * R(kvb));
        r[n++] = (range){p->k_cache, kvb}, r[n++] = (range){p->v_cache, kvb};
    }
    qsort(r, (size_t)n, sizeof *r, cmp_range);
    for (int i = 0; i < n; i++) {
        CHECKF(r[i].off % 256 == 0 && r[i].off >= p->bytes[HEARTH_GPU_CAT_SCRATCH] && r[i].off + r[i].n <= p->total,
               "allocation at %llu (+%llu) outside [scratch %llu, total %llu)", (unsigned long long)r[i].off,
               (unsigned long long)r[i].n, (unsigned long long)p->bytes[HEARTH_GPU_CAT_SCRATCH],
               (unsigned long long)p->total);
        if (i) CHECKF(r[i - 1].off + r[i - 1].n <= r[i].off, "allocations overlap at %llu", (unsigned long long)r[i].off);
    }
}

static int n_pred(const hr_gpu_plan *p) {
    int k = 0;
    for (int il = 0; il < p->n_layer; il++) k += p->layers[il].pred;
    return k;
}

/* Order of value: neurons only with the output, output only with every predictor,
 * predictors only with every attention layer. */
static void check_order(const hr_gpu_plan *p) {
    if (p->n_hot_total) CHECK(p->output);
    if (p->output) CHECK(n_pred(p) == LAYERS);
    if (n_pred(p)) CHECK(p->n_attn == LAYERS);
    for (int il = 0; il < p->n_layer; il++) {
        CHECK(p->layers[il].attn == (il < p->n_attn));
        if (il && p->layers[il].pred) CHECK(p->layers[il - 1].pred);
    }
}

static void test_sweep(uint32_t type) {
    char path[256];
    hearth_model *m = model(type, true, path, sizeof path);
    if (!m) return;
    hr_err e = {{0}};
    hr_gpuidx idx;
    hr_gpuidx_init(&idx, LAYERS, FF, &e);
    memset(idx.hot, 1, (size_t)LAYERS * FF); /* every neuron wanted: the budget decides */
    const uint64_t S = scratch_bytes();
    hr_gpu_plan p;
    /* below the scratch: an error naming both numbers */
    CHECK(plan(m, S - 1, 0, &idx, HEARTH_FFN_PREDICTED, &p, &e) == -1);
    char want[64];
    snprintf(want, sizeof want, "needs %llu bytes", (unsigned long long)S);
    CHECKF(strstr(e.msg, want) && strstr(e.msg, "leaves"), "%s (want '%s')", e.msg, want);
    /* the budget also in a readable unit: a few MiB, not "0.000 GiB" */
    char sz[HR_SIZE_STR];
    CHECKF(strstr(e.msg, hr_size_str(S - 1, sz)) && !strstr(e.msg, "0.000 GiB"), "%s (want '%s')", e.msg, sz);
    hr_gpu_plan_free(&p);
    CHECK(plan(m, 0, 0, &idx, HEARTH_FFN_PREDICTED, &p, &e) == -1);
    hr_gpu_plan_free(&p);
    /* exactly the scratch: nothing else */
    CHECKF(!plan(m, S, 0, &idx, HEARTH_FFN_PREDICTED, &p, &e), "%s", e.msg);
    CHECK(p.total == S && p.bytes[HEARTH_GPU_CAT_SCRATCH] == S && !hr_gpu_plan_uses_device(&p));
    hr_gpu_plan_free(&p);
    /* sweep: monotone in every category, order respected, layout sound */
    const uint64_t full = S + 4 * 1024 * 1024;
    uint64_t prev_total = 0;
    int prev_attn = 0, prev_pred = 0, prev_out = 0;
    int64_t prev_hot = 0;
    int steps = 0;
    for (uint64_t b = S; b <= full; b += (full - S) / 97 + 1, steps++) {
        if (plan(m, b, 0, &idx, HEARTH_FFN_PREDICTED, &p, &e)) {
            CHECKF(0, "budget %llu: %s", (unsigned long long)b, e.msg);
            hr_gpu_plan_free(&p);
            break;
        }
        check_layout(&p);
        check_order(&p);
        CHECK(p.total >= prev_total && p.n_attn >= prev_attn && n_pred(&p) >= prev_pred && p.output >= prev_out &&
              p.n_hot_total >= prev_hot);
        prev_total = p.total, prev_attn = p.n_attn, prev_pred = n_pred(&p), prev_out = p.output, prev_hot = p.n_hot_total;
        /* hot neurons: the same share of every layer's bucket (first k), bytes by the formula */
        uint64_t nb = 0;
        for (int il = 0; il < LAYERS; il++) {
            const hr_gpu_layer *g = &p.layers[il];
            for (int i = 0; i < g->n_hot; i++) CHECK(g->hot_ids[i] == i);
            const uint64_t rb = hr_row_bytes(type, EMBD);
            if (g->n_hot) nb += 3 * R((uint64_t)g->n_hot * rb);
            CHECK(p.neuron_bytes[il] == 3 * rb);
        }
        CHECK(p.bytes[HEARTH_GPU_CAT_NEURONS] == nb);
        hr_gpu_plan_free(&p);
    }
    CHECK(steps > 50 && prev_hot == LAYERS * FF && prev_out && prev_attn == LAYERS);
    /* the attention unit: matrices plus that layer's KV; the first layer alone */
    const uint64_t rb = hr_row_bytes(type, EMBD), kvd = KVH * (EMBD / HEADS);
    const uint64_t attn1 = 2 * R(EMBD * rb) + 2 * R(kvd * rb) + 2 * R((uint64_t)SEQ * CTX * kvd * 2);
    CHECK(!plan(m, S + attn1, 0, &idx, HEARTH_FFN_PREDICTED, &p, &e) && p.n_attn == 1 && p.total == S + attn1);
    hr_gpu_plan_free(&p);
    CHECK(!plan(m, S + attn1 - 1, 0, &idx, HEARTH_FFN_PREDICTED, &p, &e) && p.n_attn == 0);
    hr_gpu_plan_free(&p);
    /* dense FFN mode: no predictors on the device */
    CHECK(!plan(m, full, 0, &idx, HEARTH_FFN_DENSE, &p, &e) && n_pred(&p) == 0 && p.n_hot_total == LAYERS * FF);
    hr_gpu_plan_free(&p);
    /* exact mode: no hot neurons (the split serves predicted and dense) */
    CHECK(!plan(m, full, 0, &idx, HEARTH_FFN_EXACT, &p, &e) && p.n_hot_total == 0 && !p.hot_ok);
    hr_gpu_plan_free(&p);
    hr_gpuidx_free(&idx);
    hearth_model_free(m);
    remove(path);
}

/* An index with random buckets: a budget that holds it takes it whole; a smaller one the
 * first k of each bucket; no index or a wrong shape. */
static void test_index(void) {
    char path[256];
    hearth_model *m = model(HR_F32, true, path, sizeof path);
    if (!m) return;
    hr_err e = {{0}};
    hr_gpuidx idx, bad;
    hr_gpuidx_init(&idx, LAYERS, FF, &e);
    hr_rng r = {9};
    for (int i = 0; i < LAYERS * FF; i++) idx.hot[i] = hr_rng_uniform(&r) < 0.4f;
    hr_gpu_plan p;
    CHECK(!plan(m, 64 << 20, 0, &idx, HEARTH_FFN_PREDICTED, &p, &e));
    int32_t ids[FF];
    uint64_t want_hot = 0;
    for (int il = 0; il < LAYERS; il++) {
        int32_t nb = hr_gpuidx_bucket(&idx, il, ids);
        CHECK(p.layers[il].n_hot == nb && !memcmp(p.layers[il].hot_ids, ids, sizeof(int32_t) * (size_t)nb));
        want_hot += (uint64_t)nb * p.neuron_bytes[il];
    }
    CHECK(p.hot_bytes == want_hot);
    const uint64_t nbudget_big = p.neuron_budget, dense_total = p.total - p.bytes[HEARTH_GPU_CAT_NEURONS];
    hr_gpu_plan_free(&p);
    /* a third of what the index needs */
    const uint64_t budget = dense_total + LAYERS * 3 * 255 + want_hot / 3;
    CHECK(!plan(m, budget, 0, &idx, HEARTH_FFN_PREDICTED, &p, &e));
    CHECK(p.hot_bytes <= p.neuron_budget && p.total <= budget && nbudget_big > p.neuron_budget);
    for (int il = 0; il < LAYERS; il++) {
        int32_t nb = hr_gpuidx_bucket(&idx, il, ids);
        const hr_gpu_layer *g = &p.layers[il];
        CHECKF(g->n_hot < nb && g->n_hot >= nb / 3 - 1 && !memcmp(g->hot_ids, ids, sizeof(int32_t) * (size_t)g->n_hot),
               "layer %d: %d of %d hot", il, g->n_hot, nb);
    }
    hr_gpu_plan_free(&p);
    CHECK(!plan(m, 64 << 20, 0, NULL, HEARTH_FFN_PREDICTED, &p, &e) && p.n_hot_total == 0 && p.neuron_budget > 0);
    hr_gpu_plan_free(&p);
    hr_gpuidx_init(&bad, LAYERS + 1, FF, &e);
    CHECK(plan(m, 64 << 20, 0, &bad, HEARTH_FFN_PREDICTED, &p, &e) == -1 && strstr(e.msg, "GPU index has 4 layers"));
    hr_gpu_plan_free(&p);
    hr_gpuidx_free(&bad), hr_gpuidx_free(&idx);
    hearth_model_free(m);
    remove(path);
}

/* -ngl on a PowerInfer file and on a dense one; dense files fill whole layers by themselves. */
static void test_layers(void) {
    char pp[256], dp[256];
    hearth_model *pm = model(HR_Q8_0, true, pp, sizeof pp), *dm = model(HR_Q8_0, false, dp, sizeof dp);
    if (!pm || !dm) return;
    hr_err e = {{0}};
    hr_gpu_plan p;
    const uint64_t big = 64 << 20;
    CHECK(!plan(pm, big, 2, NULL, HEARTH_FFN_PREDICTED, &p, &e) && p.n_whole == 2 && p.n_attn == 2 && !p.output);
    CHECK(p.layers[0].n_hot == FF && !p.layers[0].norms && p.layers[1].pred && p.layers[2].n_hot == 0 && !p.layers[2].attn);
    check_layout(&p);
    hr_gpu_plan_free(&p);
    CHECK(!plan(pm, big, LAYERS + 1, NULL, HEARTH_FFN_PREDICTED, &p, &e) && p.n_whole == LAYERS && p.output);
    hr_gpu_plan_free(&p);
    /* dense mode: no predictor, every neuron row, so the whole layers carry their norms */
    CHECK(!plan(pm, big, 2, NULL, HEARTH_FFN_DENSE, &p, &e) && p.n_whole == 2 && !p.layers[0].pred && p.layers[0].norms &&
          p.layers[1].norms && !p.layers[2].norms && p.bytes[HEARTH_GPU_CAT_NORMS] == 2 * 2 * R(EMBD * 4));
    check_layout(&p);
    hr_gpu_plan_free(&p);
    /* dense file: whole FFN matrices; a budget for exactly two layers */
    const uint64_t rb = hr_row_bytes(HR_Q8_0, EMBD), rbf = hr_row_bytes(HR_Q8_0, FF), kvd = KVH * (EMBD / HEADS);
    const uint64_t attn = 2 * R(EMBD * rb) + 2 * R(kvd * rb), ffn = 2 * R(FF * rb) + R(EMBD * rbf);
    const uint64_t norms = 2 * R(EMBD * 4); /* whole dense layers of a serial RMSNorm model run device-resident */
    const uint64_t two = scratch_rank(1) + 2 * (attn + ffn + norms) + 2 * R((uint64_t)SEQ * 2 * CTX * kvd * 2);
    CHECK(!plan(dm, two, 0, NULL, HEARTH_FFN_DENSE, &p, &e) && p.n_whole == 2 && p.layers[1].ffn_dense && p.total == two);
    CHECK(p.layers[0].norms && p.layers[1].norms && !p.layers[2].norms && p.bytes[HEARTH_GPU_CAT_NORMS] == 2 * norms);
    CHECK(p.bytes[HEARTH_GPU_CAT_FFN] == 2 * ffn && !p.output);
    check_layout(&p);
    hr_gpu_plan_free(&p);
    CHECK(!plan(dm, two - 1, 0, NULL, HEARTH_FFN_DENSE, &p, &e) && p.n_whole == 1);
    hr_gpu_plan_free(&p);
    CHECK(plan(dm, two, 3, NULL, HEARTH_FFN_DENSE, &p, &e) == -1 && strstr(e.msg, "holds 2 whole layers"));
    hr_gpu_plan_free(&p);
    CHECK(!plan(dm, big, 0, NULL, HEARTH_FFN_EXACT, &p, &e) && p.n_whole == LAYERS && p.output);
    hr_gpu_plan_free(&p);
    hearth_model_free(pm), hearth_model_free(dm);
    remove(pp), remove(dp);
}

/* A dense file of arch (llama with rope_freqs where asked), the test's shapes. */
static hearth_model *model_arch(const char *arch, bool rope_freqs, const char *name, char *path, size_t cap) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.arch = arch, p.n_embd = EMBD, p.n_layer = LAYERS, p.n_head = HEADS, p.n_head_kv = KVH, p.n_ff = FF, p.n_vocab = VOCAB;
    p.rope_freqs = rope_freqs, p.act = hr_synth_default_act(arch, false);
    hr_err e = {{0}};
    hr_test_tmp(path, cap, name);
    if (hr_synth_write(&p, path, &e)) return fprintf(stderr, "synth %s: %s\n", arch, e.msg), NULL;
    hearth_model *m = hearth_model_load(path, NULL, &e);
    if (!m) fprintf(stderr, "load %s: %s\n", arch, e.msg);
    return m;
}

/* Attention bytes of a whole-layer plan of m over a large budget (every layer, the output). */
static uint64_t attn_cat(hearth_model *m, int ngl, hr_gpu_plan *g) {
    hr_err e = {{0}};
    CHECKF(!plan(m, 64 << 20, ngl, NULL, HEARTH_FFN_DENSE, g, &e), "%s", e.msg);
    CHECK(g->n_whole == LAYERS && g->n_attn == LAYERS);
    check_layout(g);
    return g->bytes[HEARTH_GPU_CAT_ATTN];
}

/* Layers with RoPE frequency factors, q/k/v biases or per-head q/k norms have their
 * attention on the device: the plan counts their vectors (the factors once, with layer 0)
 * in the attention bytes, at offsets inside the arena and apart. Sliding-window layers
 * (Gemma) stay on the host, and -ngl says why. */
static void test_attn_vectors(void) {
    const uint64_t hd = EMBD / HEADS, qd = EMBD, kvd = KVH * hd, n_rot = hd;
    char bp[256], fp[256], q2[256], q3[256], gp[256];
    hearth_model *base = model_arch("llama", false, "plan_base.gguf", bp, sizeof bp);
    hearth_model *ff = model_arch("llama", true, "plan_rope.gguf", fp, sizeof fp);
    hearth_model *qw2 = model_arch("qwen2", false, "plan_qwen2.gguf", q2, sizeof q2);
    hearth_model *qw3 = model_arch("qwen3", false, "plan_qwen3.gguf", q3, sizeof q3);
    hearth_model *gem = model_arch("gemma2", false, "plan_gemma2.gguf", gp, sizeof gp);
    CHECK(base && ff && qw2 && qw3 && gem);
    if (!base || !ff || !qw2 || !qw3 || !gem) return;
    hr_gpu_plan g;
    const uint64_t a0 = attn_cat(base, 0, &g);
    CHECK(g.rope_ff_src == NULL);
    hr_gpu_plan_free(&g);
    /* rope_freqs: n_rot/2 floats once */
    CHECK(ff->rope_freqs && ff->layers[0].rope_ext);
    CHECKF(attn_cat(ff, 0, &g) == a0 + R(n_rot / 2 * 4), "rope_freqs: attention bytes %llu, want %llu",
           (unsigned long long)g.bytes[HEARTH_GPU_CAT_ATTN], (unsigned long long)(a0 + R(n_rot / 2 * 4)));
    CHECK(g.rope_ff_src == ff->rope_freqs && g.rope_ff >= g.bytes[HEARTH_GPU_CAT_SCRATCH] && g.rope_ff + n_rot / 2 * 4 <= g.total);
    hr_gpu_plan_free(&g);
    CHECK(attn_cat(ff, 1 + LAYERS, &g) == a0 + R(n_rot / 2 * 4) && g.output);
    hr_gpu_plan_free(&g);
    /* qwen2: bq {q}, bk, bv {kv} per layer */
    CHECK(qw2->layers[0].bq && qw2->layers[0].bk && qw2->layers[0].bv && !qw2->layers[0].bo);
    CHECKF(attn_cat(qw2, 0, &g) == a0 + LAYERS * (R(qd * 4) + 2 * R(kvd * 4)), "qwen2: attention bytes %llu",
           (unsigned long long)g.bytes[HEARTH_GPU_CAT_ATTN]);
    for (int il = 0; il < LAYERS; il++) {
        const hr_gpu_layer *L = &g.layers[il];
        CHECK(L->norms && L->bq >= g.bytes[HEARTH_GPU_CAT_SCRATCH] && L->bk >= L->bq + R(qd * 4) && L->bv >= L->bk + R(kvd * 4) &&
              L->bv + kvd * 4 <= g.total);
    }
    hr_gpu_plan_free(&g);
    /* qwen3: q_norm, k_norm {head_dim} per layer */
    CHECK(qw3->layers[0].q_norm && qw3->layers[0].k_norm);
    CHECKF(attn_cat(qw3, 0, &g) == a0 + LAYERS * 2 * R(hd * 4), "qwen3: attention bytes %llu",
           (unsigned long long)g.bytes[HEARTH_GPU_CAT_ATTN]);
    CHECK(g.layers[0].norms && g.layers[LAYERS - 1].k_norm > g.layers[LAYERS - 1].q_norm);
    hr_gpu_plan_free(&g);
    /* gemma2: sliding window, q scale, soft-cap: on the host */
    hr_err e = {{0}};
    CHECK(!plan(gem, 64 << 20, 0, NULL, HEARTH_FFN_DENSE, &g, &e) && g.n_attn == 0 && !g.layers[0].attn);
    hr_gpu_plan_free(&g);
    CHECK(plan(gem, 64 << 20, 1, NULL, HEARTH_FFN_DENSE, &g, &e) == -1 && strstr(e.msg, "sliding window"));
    hr_gpu_plan_free(&g);
    hearth_model_free(base), hearth_model_free(ff), hearth_model_free(qw2), hearth_model_free(qw3), hearth_model_free(gem);
    remove(bp), remove(fp), remove(q2), remove(q3), remove(gp);
}

/* hr_size_str: the unit changes at 1 KiB, 1 MiB and 1 GiB */
static void test_size_str(void) {
    const struct { uint64_t b; const char *want; } c[] = {
        {0, "0 bytes"}, {1023, "1023 bytes"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"}, {(1ull << 20) - 1, "1024.0 KiB"},
        {5ull << 20, "5.0 MiB"}, {(1ull << 30) + (1ull << 28), "1.25 GiB"}, {3ull << 40, "3072.00 GiB"}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char out[HR_SIZE_STR];
        CHECKF(!strcmp(hr_size_str(c[i].b, out), c[i].want), "%llu: '%s', want '%s'", (unsigned long long)c[i].b, out, c[i].want);
    }
}

int main(void) {
    test_size_str();
    test_attn_vectors();
    test_sweep(HR_F32);
    test_sweep(HR_Q4_0);
    test_index();
    test_layers();
    return TEST_END();
}
