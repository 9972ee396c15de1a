/* Whole-model placement: fixed VRAM and neuron sizes against sums worked out here from
 * the synthesized shapes, the served share against the top counts, the written index,
 * statistics that do not fit the model, a budget that is too small, and the command
 * (`hearth place`, through HEARTH_BIN). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "formats/gguf.h"
#include "formats/types.h"
#include "sparse/place.h"
#include "sparse/stats.h"
#include "synth/synth.h"
#include "testutil.h"

enum { EMBD = 64, LAYERS = 3, FF = 128, VOCAB = 320, HEADS = 4, RANK = 32, CTX = 256 };

static hr_place_shape shape(void) { return (hr_place_shape){LAYERS, FF, EMBD, HEADS, HEADS, EMBD / HEADS, VOCAB}; }

static int write_model(const char *path, uint32_t type, bool powerinfer) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.n_embd = EMBD, p.n_layer = LAYERS, p.n_head = HEADS, p.n_head_kv = HEADS, p.n_ff = FF, p.n_vocab = VOCAB;
    p.type = type, p.powerinfer = powerinfer, p.pred_rank = RANK, p.act = HR_SYNTH_REGLU;
    hr_err e = {{0}};
    int rc = hr_synth_write(&p, path, &e);
    CHECKF(rc == 0, "%s", e.msg);
    return rc;
}

/* What the layout contract (synth.h) puts in each class, for n_ctx tokens. */
static uint64_t expected_fixed(uint32_t type, bool powerinfer, int n_ctx) {
    const uint64_t attn = LAYERS * 4 * hr_row_bytes(type, EMBD) * EMBD;
    const uint64_t norms = (2 * LAYERS + 1) * EMBD * 4;
    const uint64_t output = hr_row_bytes(type, EMBD) * VOCAB;
    const uint64_t pred = powerinfer ? LAYERS * (hr_row_bytes(type, EMBD) * RANK + hr_row_bytes(type, RANK) * FF) : 0;
    const uint64_t kv = 2ull * LAYERS * n_ctx * EMBD * 2;
    const uint64_t scratch = 4ull * HR_PLACE_SCRATCH_TOKENS * (3 * EMBD + EMBD + 2 * EMBD + (uint64_t)HEADS * n_ctx + 4 * FF + VOCAB);
    return attn + norms + output + pred + kv + scratch;
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

static void test_accounting(const char *dir, uint32_t type, bool powerinfer) {
    char model[512], stats[600], out[600];
    snprintf(model, sizeof model, "%s/m-%s-%d.gguf", dir, hr_type_name(type), powerinfer);
    snprintf(stats, sizeof stats, "%s.stats.gguf", model);
    snprintf(out, sizeof out, "%s.generated.gpuidx", model);
    if (write_model(model, type, powerinfer)) return;
    hr_stats s;
    random_stats(&s, LAYERS, FF, 7);
    hr_err e = {{0}};
    CHECKF(hr_stats_write(stats, &s, &e) == 0, "%s", e.msg);

    const uint64_t fixed = expected_fixed(type, powerinfer, CTX);
    const uint64_t nb = 3 * hr_row_bytes(type, EMBD); /* gate row + up row + down column */
    const int X = 100;
    hr_place_params p = {model, NULL, NULL, (double)(fixed + X * nb + nb - 1) / 1073741824.0, CTX, 1};
    hr_place_shape sh = shape();
    hr_place_result r;
    int rc = hr_place_model(&p, &sh, &r, &e);
    CHECKF(rc == 0, "%s", e.msg);
    if (rc) goto done;
    CHECKF(r.fixed.total == fixed, "%s pi=%d: fixed %llu, expected %llu", hr_type_name(type), powerinfer,
           (unsigned long long)r.fixed.total, (unsigned long long)fixed);
    CHECK(r.budget == fixed + X * nb + nb - 1);
    CHECK(!strcmp(r.stats_path, stats) && !strcmp(r.out_path, out));
    uint64_t hot = 0, n_hot = 0;
    for (int l = 0; l < LAYERS; l++) {
        CHECKF(r.neuron_bytes[l] == nb, "layer %d: neuron %llu bytes, expected %llu", l,
               (unsigned long long)r.neuron_bytes[l], (unsigned long long)nb);
        hot += r.layers[l].hot_count, n_hot += (uint64_t)r.layers[l].n_hot;
    }
    CHECK(n_hot == (uint64_t)X && r.neuron_used == X * nb);
    CHECK(r.ffn_bytes == (uint64_t)LAYERS * FF * nb);
    uint32_t sorted[LAYERS * FF];
    memcpy(sorted, s.counts, sizeof sorted);
    qsort(sorted, LAYERS * FF, sizeof *sorted, cmp_desc);
    uint64_t want = 0;
    for (int i = 0; i < X; i++) want += sorted[i];
    CHECKF(hot == want, "served %llu, top-%d counts sum to %llu", (unsigned long long)hot, X, (unsigned long long)want);
    /* the index on disk is the same placement */
    hr_gpuidx g;
    CHECKF(hr_gpuidx_read(out, &g, &e) == 0, "%s", e.msg);
    if (g.hot) {
        CHECK(g.vram_capacity == X * nb);
        for (int l = 0; l < LAYERS; l++) {
            uint64_t hc = 0;
            for (int j = 0; j < FF; j++) hc += g.hot[l * FF + j] ? s.counts[l * FF + j] : 0;
            CHECK(hr_gpuidx_bucket(&g, l, NULL) == r.layers[l].n_hot && hc == r.layers[l].hot_count);
        }
    }
    hr_gpuidx_free(&g);
    hr_place_result_free(&r);

    /* One byte short of the fixed part: the error gives the exact need. */
    p.vram_budget_gib = (double)(fixed - 1) / 1073741824.0;
    rc = hr_place_model(&p, &sh, &r, &e);
    char need[64];
    snprintf(need, sizeof need, "hold %llu bytes", (unsigned long long)fixed);
    CHECKF(rc < 0 && strstr(e.msg, "too small") && strstr(e.msg, need), "budget error: %s", e.msg);
    /* Exactly the fixed part: placement succeeds with no neurons. */
    p.vram_budget_gib = (double)fixed / 1073741824.0;
    CHECKF(hr_place_model(&p, &sh, &r, &e) == 0, "%s", e.msg);
    CHECK(r.neuron_used == 0 && r.layers && r.layers[0].n_hot == 0);
    hr_place_result_free(&r);
done:
    hr_stats_free(&s);
    remove(model), remove(stats), remove(out);
}

/* Statistics that do not belong to the model. */
static void test_bad_stats(const char *dir) {
    char model[512], stats[600], alt[600];
    snprintf(model, sizeof model, "%s/bad.gguf", dir);
    snprintf(stats, sizeof stats, "%s/bad.stats.gguf", dir); /* the .gguf-less default */
    if (write_model(model, HR_F32, false)) return;
    hr_place_shape sh = shape();
    hr_place_params p = {model, NULL, NULL, 1.0, CTX, 1};
    hr_place_result r;
    hr_err e = {{0}};
    CHECK(hr_place_model(&p, &sh, &r, &e) < 0 && strstr(e.msg, "bad.gguf.stats.gguf"));

    hr_stats s;
    random_stats(&s, LAYERS, FF / 2, 3);
    CHECK(hr_stats_write(stats, &s, &e) == 0);
    hr_stats_free(&s);
    CHECK(hr_place_model(&p, &sh, &r, &e) < 0 && strstr(e.msg, "n_ff 64") && strstr(e.msg, "n_ff 128"));
    random_stats(&s, LAYERS + 1, FF, 3);
    CHECK(hr_stats_write(stats, &s, &e) == 0);
    hr_stats_free(&s);
    CHECK(hr_place_model(&p, &sh, &r, &e) < 0 && strstr(e.msg, "4 layers"));

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
    CHECK(hr_place_model(&p, &sh, &r, &e) < 0 && strstr(e.msg, "count 11") && strstr(e.msg, "over.stats.gguf"));
    p.group = 0;
    CHECK(hr_place_model(&p, &sh, &r, &e) < 0 && strstr(e.msg, "group"));
    p.group = 1, p.vram_budget_gib = -1;
    CHECK(hr_place_model(&p, &sh, &r, &e) < 0 && strstr(e.msg, "budget"));
    remove(model), remove(stats), remove(alt);
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

static void test_cli(const char *dir) {
    bin = getenv("HEARTH_BIN");
    CHECKF(bin && access(bin, X_OK) == 0, "HEARTH_BIN must name the hearth binary");
    if (!bin || access(bin, X_OK)) return;
    char model[512], stats[600], idx[600], args[2048];
    static char out[65536];
    snprintf(model, sizeof model, "%s/cli.gguf", dir);
    snprintf(stats, sizeof stats, "%s/cli.stats.gguf", dir);
    snprintf(idx, sizeof idx, "%s/cli.idx", dir);
    if (write_model(model, HR_Q8_0, true)) return;
    hr_stats s;
    random_stats(&s, LAYERS, FF, 9);
    hr_err e = {{0}};
    CHECK(hr_stats_write(stats, &s, &e) == 0);
    hr_stats_free(&s);
    const uint64_t fixed = expected_fixed(HR_Q8_0, true, CTX), nb = 3 * 68;
    snprintf(args, sizeof args, "place -m '%s' --vram-budget %.17g -c %d --group 8 -o '%s' --json", model,
             (double)(fixed + 40 * nb) / 1073741824.0, CTX, idx);
    int rc = run(args, out, sizeof out);
    CHECKF(rc == 0, "exit %d: %s", rc, out);
    CHECKF(strstr(out, "\"n_hot\": 40,"), "json lacks n_hot 40: %s", out);
    CHECK(strstr(out, "\"neuron_bytes\": 204") && strstr(out, "\"group\": 8"));
    hr_gpuidx g;
    CHECKF(hr_gpuidx_read(idx, &g, &e) == 0, "%s", e.msg);
    for (int l = 0; l < LAYERS && g.hot; l++) CHECK(hr_gpuidx_bucket(&g, l, NULL) % 8 == 0);
    hr_gpuidx_free(&g);
    snprintf(args, sizeof args, "place -m '%s' --vram-budget 0.0001 -c %d", model, CTX);
    rc = run(args, out, sizeof out);
    CHECKF(rc == 1 && strstr(out, "too small") && strstr(out, "--vram-budget 0.001"), "exit %d: %s", rc, out);
    snprintf(args, sizeof args, "place -m '%s' --vram-budget 1 -c %d --stats '%s'", model, CTX, stats);
    rc = run(args, out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "overall: ") && strstr(out, "100.00% of activations"), "exit %d: %s", rc, out);
    snprintf(args, sizeof args, "place -m '%s'", model);
    CHECK(run(args, out, sizeof out) == 2 && strstr(out, "--vram-budget"));
    CHECK(run("place --vram-budget 1", out, sizeof out) == 2);
    snprintf(args, sizeof args, "place -m '%s' --vram-budget 1 --group 0", model);
    CHECK(run(args, out, sizeof out) == 2);
    CHECK(run("place -m /nonexistent.gguf --vram-budget 1", out, sizeof out) == 1);
    char dflt[700];
    snprintf(dflt, sizeof dflt, "%s.generated.gpuidx", model);
    remove(model), remove(stats), remove(idx), remove(dflt);
}

int main(void) {
    char dir[256];
    hr_test_tmp(dir, sizeof dir, "place");
    char cmd[300];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    CHECK(system(cmd) == 0);
    test_accounting(dir, HR_F32, false);
    test_accounting(dir, HR_Q8_0, false);
    test_accounting(dir, HR_F16, true);
    test_accounting(dir, HR_Q4_0, true);
    test_bad_stats(dir);
    test_cli(dir);
    rmdir(dir);
    return TEST_END();
}
