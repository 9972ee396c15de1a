/* Placement accounting is hybrid execution's: hearth_gpu_plan_budget against sums worked
 * out here from the synthesized shapes (scratch, attention, KV, predictors, output, rounding
 * slack, the stand-in's overhead), equal to what a stand-in context reports; whole-model
 * placement for a given neuron budget (the served share against the top counts, the index
 * on disk with split.vram_capacity = the neuron budget); statistics that do not fit; and the
 * command (`hearth place`, through HEARTH_BIN), whose index a context with the same budget
 * reads unchanged. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "backends/device/standin.h"
#include "formats/gguf.h"
#include "formats/types.h"
#include "hearth.h"
#include "sparse/place.h"
#include "sparse/stats.h"
#include "synth/synth.h"
#include "testutil.h"

#define GIB 1073741824.0
enum { EMBD = 64, LAYERS = 3, FF = 128, VOCAB = 320, HEADS = 4, KVH = 2, RANK = 32, CTX = 256, BATCH = 16, SEQ = 2 };

static uint64_t R(uint64_t n) { return (n + 255) / 256 * 256; }

static int write_model(const char *path, uint32_t type, bool powerinfer) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.n_embd = EMBD, p.n_layer = LAYERS, p.n_head = HEADS, p.n_head_kv = KVH, p.n_ff = FF, p.n_vocab = VOCAB;
    p.type = type, p.powerinfer = powerinfer, p.pred_rank = RANK, p.act = HR_SYNTH_REGLU;
    hr_err e = {{0}};
    int rc = hr_synth_write(&p, path, &e);
    CHECKF(rc == 0, "%s", e.msg);
    return rc;
}

/* The smallest budget leaving a byte for neurons: the stand-in's overhead, 16 scratch
 * buffers for `batch` tokens, every layer's attention matrices and F16 KV cache, the
 * predictors and each layer's two norm vectors (predicted mode), the output matrix, each
 * allocation rounded to 256 bytes,
 * and 255 bytes of rounding per neuron matrix (gate, up, down_t) of every layer. */
static uint64_t expected_need(uint32_t type, bool pred, int n_ctx, int batch, int n_seq) {
    const uint64_t T = (uint64_t)batch, d = EMBD, kvd = KVH * (EMBD / HEADS), rb = hr_row_bytes(type, EMBD);
    const uint64_t scratch = 4 * R(T * d * 4) + 2 * R(T * d * 4) + 2 * R(T * kvd * 4) + R(T * RANK * 4) +
                             4 * R(T * FF * 4) + R(T * VOCAB * 4) + R(FF * 4) + R(T * FF);
    const uint64_t attn = LAYERS * (2 * R(EMBD * rb) + 2 * R(kvd * rb));
    const uint64_t kv = 2 * R((uint64_t)n_seq * LAYERS * (uint64_t)n_ctx * kvd * 2);
    const uint64_t preds = pred ? LAYERS * (R(RANK * rb) + R(FF * hr_row_bytes(type, RANK))) : 0;
    const uint64_t output = R(VOCAB * rb);
    const uint64_t norms = pred ? LAYERS * 2 * R(EMBD * 4) : 0; /* attention and predictor share a round trip */
    return HR_STANDIN_OVERHEAD + scratch + attn + kv + preds + norms + output + LAYERS * 3 * 255;
}

static hearth_ctx_params params(double gib, hearth_ffn_mode mode) {
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = CTX, cp.n_batch = BATCH, cp.n_seq = SEQ, cp.ffn_mode = mode, cp.n_threads = 1;
    cp.gpu = HEARTH_GPU_STANDIN, cp.vram_budget_gib = gib;
    return cp;
}

/* Budget B: the neuron budget is B - need, what a stand-in context with B reports too. */
static void check_budget(hearth_model *m, uint32_t type, hearth_ffn_mode mode, uint64_t B) {
    const bool pred = mode == HEARTH_FFN_PREDICTED;
    const uint64_t need = expected_need(type, pred, CTX, BATCH, SEQ), rb = hr_row_bytes(type, EMBD);
    hearth_ctx_params cp = params((double)B / GIB, mode);
    hearth_gpu_budget b;
    hr_err e = {{0}};
    int rc = hearth_gpu_plan_budget(m, &cp, &b, &e);
    CHECKF(rc == 0, "%s", e.msg);
    if (!rc) {
        CHECKF(b.need == need, "%s %s: need %llu, expected %llu", hr_type_name(type), hearth_ffn_mode_name(mode),
               (unsigned long long)b.need, (unsigned long long)need);
        CHECK(b.budget == B && b.overhead == HR_STANDIN_OVERHEAD && !strcmp(b.device, "standin"));
        CHECK(b.n_ctx == CTX && b.n_batch == BATCH && b.n_seq == SEQ && b.ffn_mode == mode && b.n_layer == LAYERS);
        CHECKF(b.takes_index == (B > need) && b.neuron_budget == (B > need ? B - need : 0), "B %llu: neuron budget %llu",
               (unsigned long long)B, (unsigned long long)b.neuron_budget);
        CHECK(b.bytes[HEARTH_GPU_CAT_NEURONS] == 0 && b.bytes[HEARTH_GPU_CAT_FFN] == 0);
        if (B >= need) CHECK(b.bytes[HEARTH_GPU_CAT_NORMS] == (pred ? LAYERS * 2 * R(EMBD * 4) : 0));
        if (B >= need) /* every dense part on the device */
            CHECK(b.layers_attn == LAYERS && b.layers_pred == (pred ? LAYERS : 0) && b.output_on_device);
        uint64_t sum = 0;
        for (int c = 0; c < HEARTH_GPU_CAT_COUNT; c++) sum += b.bytes[c];
        CHECK(sum == b.fixed && b.fixed <= B - HR_STANDIN_OVERHEAD);
        if (B >= need) CHECK(b.fixed == need - HR_STANDIN_OVERHEAD - LAYERS * 3 * 255);
        for (int l = 0; l < LAYERS; l++) CHECK(b.neuron_bytes[l] == 3 * rb); /* gate, up and down_t rows */
        CHECK(b.ffn_bytes == (uint64_t)LAYERS * FF * 3 * rb);
    }
    hearth_gpu_budget_free(&b);
    hearth_ctx *c = B > need ? hearth_ctx_new(m, &cp, &e) : NULL;
    hearth_gpu_status st;
    if (B > need) CHECKF(c && !hearth_ctx_gpu_status(c, &st) && st.neuron_budget == B - need, "context: %s %llu",
                         c ? "neuron budget" : e.msg, c ? (unsigned long long)st.neuron_budget : 0ull);
    hearth_ctx_free(c);
}

static void test_budget(const char *dir, uint32_t type) {
    char path[512];
    snprintf(path, sizeof path, "%s/b-%s.gguf", dir, hr_type_name(type));
    if (write_model(path, type, true)) return;
    hr_err e = {{0}};
    hearth_model *m = hearth_model_load(path, NULL, &e);
    CHECKF(m != NULL, "%s", e.msg);
    if (!m) return;
    const uint64_t need = expected_need(type, true, CTX, BATCH, SEQ), nb = 3 * hr_row_bytes(type, EMBD);
    const uint64_t budgets[] = {need + 1, need + 7 * nb + 100, need + (uint64_t)LAYERS * FF * nb * 2, need, need - 1000};
    for (size_t i = 0; i < sizeof budgets / sizeof *budgets; i++) check_budget(m, type, HEARTH_FFN_PREDICTED, budgets[i]);
    check_budget(m, type, HEARTH_FFN_DENSE, expected_need(type, false, CTX, BATCH, SEQ) + 5 * nb);
    /* exact mode and -ngl read no index: no need, no neuron budget */
    hearth_ctx_params cp = params((double)(need * 2) / GIB, HEARTH_FFN_EXACT);
    hearth_gpu_budget b;
    CHECK(!hearth_gpu_plan_budget(m, &cp, &b, &e) && !b.takes_index && b.need == 0 && b.neuron_budget == 0);
    hearth_gpu_budget_free(&b);
    cp = params((double)(need * 2) / GIB, HEARTH_FFN_PREDICTED);
    cp.n_gpu_layers = 1;
    CHECK(!hearth_gpu_plan_budget(m, &cp, &b, &e) && !b.takes_index && b.need == 0 && b.layers_whole == 1);
    hearth_gpu_budget_free(&b);
    /* errors: no device, no budget, a budget below the scratch */
    cp = params(1.0, HEARTH_FFN_PREDICTED);
    cp.gpu = HEARTH_GPU_OFF;
    CHECK(hearth_gpu_plan_budget(m, &cp, &b, &e) < 0 && strstr(e.msg, "off"));
    hearth_gpu_budget_free(&b);
    cp = params(0, HEARTH_FFN_PREDICTED);
    CHECK(hearth_gpu_plan_budget(m, &cp, &b, &e) < 0 && strstr(e.msg, "budget"));
    hearth_gpu_budget_free(&b);
    cp = params((double)(HR_STANDIN_OVERHEAD + 1024) / GIB, HEARTH_FFN_PREDICTED);
    CHECK(hearth_gpu_plan_budget(m, &cp, &b, &e) < 0 && strstr(e.msg, "scratch"));
    hearth_gpu_budget_free(&b);
    hearth_model_free(m);
    remove(path);
    /* a dense file takes whole layers, never hot neurons */
    snprintf(path, sizeof path, "%s/d-%s.gguf", dir, hr_type_name(type));
    if (write_model(path, type, false)) return;
    m = hearth_model_load(path, NULL, &e);
    cp = params(1.0, HEARTH_FFN_AUTO);
    CHECK(m && !hearth_gpu_plan_budget(m, &cp, &b, &e) && !b.takes_index && b.need == 0 && b.layers_whole == LAYERS);
    hearth_gpu_budget_free(&b);
    hearth_model_free(m);
    remove(path);
}

static void random_stats(hr_stats *s, int n_layer, int n_ff, uint64_t seed) {
    hr_err e = {{0}};
    CHECK(hr_stats_init(s, n_layer, n_ff, &e) == 0);
    s->n_tokens = 5000;
    hr_rng r = {seed};
    for (int i = 0; i < n_layer * n_ff; i++) {
        float u = hr_rng_uniform(&r);
        s->counts[i] = (uint32_t)(5000.0 * u * u * u); /* skewed, like real activation counts */
    }
}

static int cmp_desc(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x < y) - (x > y);
}

/* X neurons' worth of budget (plus less than one more): the X hottest of all layers. */
static void test_placement(const char *dir) {
    char model[512], stats[600], out[600];
    snprintf(model, sizeof model, "%s/m.gguf", dir);
    snprintf(stats, sizeof stats, "%s.stats.gguf", model);
    snprintf(out, sizeof out, "%s.generated.gpuidx", model);
    hr_stats s;
    random_stats(&s, LAYERS, FF, 7);
    hr_err e = {{0}};
    CHECKF(hr_stats_write(stats, &s, &e) == 0, "%s", e.msg);
    const uint64_t nb = 204, nbs[LAYERS] = {nb, nb, nb};
    const int X = 100;
    hr_place_params p = {model, NULL, NULL, LAYERS, FF, nbs, X * nb + nb - 1, 1};
    hr_place_result r;
    int rc = hr_place_model(&p, &r, &e);
    CHECKF(rc == 0, "%s", e.msg);
    if (rc) goto done;
    CHECK(!strcmp(r.stats_path, stats) && !strcmp(r.out_path, out) && r.neuron_budget == X * nb + nb - 1);
    uint64_t hot = 0, n_hot = 0;
    for (int l = 0; l < LAYERS; l++) hot += r.layers[l].hot_count, n_hot += (uint64_t)r.layers[l].n_hot;
    CHECK(n_hot == (uint64_t)X && r.neuron_used == X * nb && r.ffn_bytes == (uint64_t)LAYERS * FF * nb);
    uint32_t sorted[LAYERS * FF];
    memcpy(sorted, s.counts, sizeof sorted);
    qsort(sorted, LAYERS * FF, sizeof *sorted, cmp_desc);
    uint64_t want = 0;
    for (int i = 0; i < X; i++) want += sorted[i];
    CHECKF(hot == want, "served %llu, top-%d counts sum to %llu", (unsigned long long)hot, X, (unsigned long long)want);
    /* the index on disk is the same placement, stamped with the budget it was chosen for */
    hr_gpuidx g;
    CHECKF(hr_gpuidx_read(out, &g, &e) == 0, "%s", e.msg);
    if (g.hot) {
        CHECK(g.vram_capacity == X * nb + nb - 1);
        for (int l = 0; l < LAYERS; l++) {
            uint64_t hc = 0;
            for (int j = 0; j < FF; j++) hc += g.hot[l * FF + j] ? s.counts[l * FF + j] : 0;
            CHECK(hr_gpuidx_bucket(&g, l, NULL) == r.layers[l].n_hot && hc == r.layers[l].hot_count);
        }
    }
    hr_gpuidx_free(&g);
    hr_place_result_free(&r);
    p.neuron_budget = 0;
    CHECK(hr_place_model(&p, &r, &e) < 0 && strstr(e.msg, "no bytes"));
done:
    hr_stats_free(&s);
    remove(stats), remove(out);
}

/* Statistics that do not belong to the model. */
static void test_bad_stats(const char *dir) {
    char model[512], stats[600], alt[600];
    snprintf(model, sizeof model, "%s/bad.gguf", dir);
    snprintf(stats, sizeof stats, "%s/bad.stats.gguf", dir); /* the .gguf-less default */
    const uint64_t nbs[LAYERS] = {100, 100, 100};
    hr_place_params p = {model, NULL, NULL, LAYERS, FF, nbs, 1000, 1};
    hr_place_result r;
    hr_err e = {{0}};
    CHECK(hr_place_model(&p, &r, &e) < 0 && strstr(e.msg, "bad.gguf.stats.gguf"));

    hr_stats s;
    random_stats(&s, LAYERS, FF / 2, 3);
    CHECK(hr_stats_write(stats, &s, &e) == 0);
    hr_stats_free(&s);
    CHECK(hr_place_model(&p, &r, &e) < 0 && strstr(e.msg, "n_ff 64") && strstr(e.msg, "n_ff 128"));
    random_stats(&s, LAYERS + 1, FF, 3);
    CHECK(hr_stats_write(stats, &s, &e) == 0);
    hr_stats_free(&s);
    CHECK(hr_place_model(&p, &r, &e) < 0 && strstr(e.msg, "4 layers"));

    /* A count above n_tokens, written raw (the stats writer refuses it). */
    static uint32_t counts[LAYERS][FF];
    gguf_writer *w = gguf_writer_new(false);
    gguf_w_str(w, "general.architecture", "hearth.stats");
    gguf_w_u32(w, "hearth.stats.n_layer", LAYERS);
    gguf_w_u32(w, "hearth.stats.n_ff", FF);
    gguf_w_u64(w, "hearth.stats.n_tokens", 10);
    counts[1][5] = 11;
    for (int l = 0; l < LAYERS; l++) {
        char name[32];
        uint64_t ne[1] = {FF};
        snprintf(name, sizeof name, "blk.%d.act_count", l);
        gguf_w_tensor(w, name, HR_I32, 1, ne, counts[l], FF * 4);
    }
    snprintf(alt, sizeof alt, "%s/over.stats.gguf", dir);
    CHECK(gguf_w_write(w, alt, &e) == 0);
    gguf_writer_free(w);
    p.stats_path = alt;
    CHECK(hr_place_model(&p, &r, &e) < 0 && strstr(e.msg, "count 11") && strstr(e.msg, "over.stats.gguf"));
    p.group = 0;
    CHECK(hr_place_model(&p, &r, &e) < 0 && strstr(e.msg, "group"));
    remove(stats), remove(alt);
}

static const char *bin;

static int run(const char *args, char *out, size_t cap) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", bin, args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static long file_bytes(const char *path, unsigned char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    long n = (long)fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

/* The index hearth place wrote is the one a stand-in context with the same budget reads. */
static void check_reused(const char *model, const char *idx, uint64_t B) {
    static unsigned char before[1 << 16], after[1 << 16];
    long n0 = file_bytes(idx, before, sizeof before);
    hr_err e = {{0}};
    hearth_model *m = hearth_model_load(model, NULL, &e);
    hearth_ctx_params cp = params((double)B / GIB, HEARTH_FFN_AUTO);
    cp.gpu_index_path = idx;
    hearth_ctx *c = m ? hearth_ctx_new(m, &cp, &e) : NULL;
    hearth_gpu_status st;
    CHECKF(c && !hearth_ctx_gpu_status(c, &st) && strstr(st.note, "GPU index read from"), "%s", c ? st.note : e.msg);
    hearth_ctx_free(c);
    hearth_model_free(m);
    long n1 = file_bytes(idx, after, sizeof after);
    CHECK(n0 > 0 && n0 == n1 && !memcmp(before, after, (size_t)n0));
}

/* An index for this budget whose neurons do not fit, or one for another budget, is not
 * read (without statistics beside it the context spreads the budget evenly instead). */
static void check_not_reused(const char *model, const char *idx, uint64_t B, uint64_t capacity, int per_layer) {
    hr_gpuidx g;
    hr_err e = {{0}};
    CHECK(hr_gpuidx_init(&g, LAYERS, FF, &e) == 0);
    for (int l = 0; l < LAYERS; l++) memset(g.hot + l * FF, 1, (size_t)per_layer);
    g.vram_capacity = capacity;
    CHECKF(hr_gpuidx_write(idx, &g, &e) == 0, "%s", e.msg);
    hr_gpuidx_free(&g);
    hearth_model *m = hearth_model_load(model, NULL, &e);
    hearth_ctx_params cp = params((double)B / GIB, HEARTH_FFN_AUTO);
    cp.gpu_index_path = idx;
    hearth_ctx *c = m ? hearth_ctx_new(m, &cp, &e) : NULL;
    hearth_gpu_status st;
    CHECKF(c && !hearth_ctx_gpu_status(c, &st) && !strstr(st.note, "read from") && strstr(st.note, "spread evenly"),
           "capacity %llu, %d per layer: %s", (unsigned long long)capacity, per_layer, c ? st.note : e.msg);
    hearth_ctx_free(c);
    hearth_model_free(m);
}

static void test_cli(const char *dir) {
    bin = getenv("HEARTH_BIN");
    CHECKF(bin && access(bin, X_OK) == 0, "HEARTH_BIN must name the hearth binary");
    if (!bin || access(bin, X_OK)) return;
    char model[512], stats[600], idx[600], dense[600], args[2048], want[128];
    static char out[65536];
    snprintf(model, sizeof model, "%s/cli.gguf", dir);
    snprintf(stats, sizeof stats, "%s/cli.stats.gguf", dir);
    snprintf(idx, sizeof idx, "%s/cli.idx", dir);
    snprintf(dense, sizeof dense, "%s/dense.gguf", dir);
    if (write_model(model, HR_Q8_0, true) || write_model(dense, HR_Q8_0, false)) return;
    hr_stats s;
    random_stats(&s, LAYERS, FF, 9);
    hr_err e = {{0}};
    CHECK(hr_stats_write(stats, &s, &e) == 0);
    hr_stats_free(&s);
    const uint64_t need = expected_need(HR_Q8_0, true, CTX, BATCH, SEQ), nb = 3 * 68, B = need + 40 * nb;
    const char *shape = "-c 256 -b 16 -np 2 --gpu standin";
    snprintf(args, sizeof args, "place -m '%s' --vram-budget %.17g %s --group 8 -o '%s' --json", model, (double)B / GIB,
             shape, idx);
    int rc = run(args, out, sizeof out);
    CHECKF(rc == 0, "exit %d: %s", rc, out);
    CHECKF(strstr(out, "\"n_hot\": 40,"), "json lacks n_hot 40: %s", out);
    snprintf(want, sizeof want, "\"neuron_budget\": %llu,", (unsigned long long)(40 * nb));
    CHECKF(strstr(out, want) && strstr(out, "\"overhead_bytes\": 65536,"), "json lacks %s: %s", want, out);
    CHECK(strstr(out, "\"neuron_bytes\": 204") && strstr(out, "\"group\": 8") && strstr(out, "\"n_seq\": 2"));
    hr_gpuidx g;
    CHECKF(hr_gpuidx_read(idx, &g, &e) == 0, "%s", e.msg);
    CHECK(g.vram_capacity == 40 * nb);
    for (int l = 0; l < LAYERS && g.hot; l++) CHECK(hr_gpuidx_bucket(&g, l, NULL) % 8 == 0);
    hr_gpuidx_free(&g);
    check_reused(model, idx, B);
    check_not_reused(model, idx, B, 40 * nb, 14);     /* 42 neurons for a budget of 40 */
    check_not_reused(model, idx, B, 40 * nb - 1, 13); /* another budget */
    /* no byte left for neurons: the error names the need and a budget that leaves some */
    snprintf(args, sizeof args, "place -m '%s' --vram-budget %.17g %s", model, (double)need / GIB, shape);
    rc = run(args, out, sizeof out);
    snprintf(want, sizeof want, "take %llu bytes", (unsigned long long)need);
    CHECKF(rc == 1 && strstr(out, "leaves no bytes for neurons") && strstr(out, want), "exit %d: %s", rc, out);
    const char *sug = strstr(out, "--vram-budget ");
    const double g_sug = sug ? atof(sug + 14) : 0;
    CHECKF(g_sug > (double)need / GIB && g_sug <= (double)need / GIB + 0.001, "suggested %g for %llu bytes", g_sug,
           (unsigned long long)need);
    snprintf(args, sizeof args, "place -m '%s' --vram-budget %.3f %s -o '%s'", model, g_sug, shape, idx);
    CHECKF(run(args, out, sizeof out) == 0, "the suggested budget fails: %s", out);
    snprintf(args, sizeof args, "place -m '%s' --vram-budget 1 %s --stats '%s' -o '%s'", model, shape, stats, idx);
    rc = run(args, out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "overall: ") && strstr(out, "100.00% of activations") && strstr(out, "KV cache"),
           "exit %d: %s", rc, out);
    snprintf(args, sizeof args, "place -m '%s' --vram-budget 1 --gpu standin", dense);
    CHECK(run(args, out, sizeof out) == 1 && strstr(out, "no hot neurons"));
    snprintf(args, sizeof args, "place -m '%s' --vram-budget 1 --gpu standin --ffn exact", model);
    CHECK(run(args, out, sizeof out) == 1 && strstr(out, "FFN mode exact"));
    snprintf(args, sizeof args, "place -m '%s'", model);
    CHECK(run(args, out, sizeof out) == 2 && strstr(out, "--vram-budget"));
    CHECK(run("place --vram-budget 1", out, sizeof out) == 2);
    snprintf(args, sizeof args, "place -m '%s' --vram-budget 1 --group 0", model);
    CHECK(run(args, out, sizeof out) == 2);
    snprintf(args, sizeof args, "place -m '%s' --vram-budget 1 --gpu off", model);
    CHECK(run(args, out, sizeof out) == 2);
    snprintf(args, sizeof args, "place -m '%s' --vram-budget 1 --ffn sometimes", model);
    CHECK(run(args, out, sizeof out) == 2);
    CHECK(run("place -m /nonexistent.gguf --vram-budget 1", out, sizeof out) == 1);
    char dflt[700];
    snprintf(dflt, sizeof dflt, "%s.generated.gpuidx", model);
    remove(model), remove(dense), remove(stats), remove(idx), remove(dflt);
}

int main(void) {
    char dir[256];
    hr_test_tmp(dir, sizeof dir, "place");
    char cmd[300];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    CHECK(system(cmd) == 0);
    test_budget(dir, HR_F32);
    test_budget(dir, HR_Q8_0);
    test_budget(dir, HR_F16);
    test_budget(dir, HR_Q4_0);
    test_placement(dir);
    test_bad_stats(dir);
    test_cli(dir);
    rmdir(dir);
    return TEST_END();
}
