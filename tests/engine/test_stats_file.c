/* Statistics file (docs/stats-format.md): round trip, path rule, and one clear error per
 * kind of broken file. */
#include <stdlib.h>
#include <string.h>
#include "formats/gguf.h"
#include "formats/types.h"
#include "sparse/stats.h"
#include "testutil.h"

#define NL 3
#define NF 40

static void fill(hr_stats *s, hr_rng *r) {
    hr_err e;
    CHECK(hr_stats_init(s, NL, NF, &e) == 0);
    s->n_tokens = 1000;
    for (int i = 0; i < NL * NF; i++) s->counts[i] = (uint32_t)(hr_rng_next(r) % 1001);
    s->recall = malloc(NL * sizeof(float)), s->precision = malloc(NL * sizeof(float)), s->rank = malloc(NL * sizeof(uint32_t));
    for (int l = 0; l < NL; l++) s->recall[l] = hr_rng_uniform(r), s->precision[l] = hr_rng_uniform(r), s->rank[l] = 16u << l;
    strcpy(s->model, "m.gguf");
}

static void round_trip(hr_rng *r) {
    char path[256];
    hr_test_tmp(path, sizeof path, "rt.stats.gguf");
    hr_stats s, t;
    hr_err e;
    fill(&s, r);
    CHECKF(hr_stats_write(path, &s, &e) == 0, "%s", e.msg);
    CHECKF(hr_stats_read(path, &t, &e) == 0, "%s", e.msg);
    CHECK(t.n_layer == NL && t.n_ff == NF && t.n_tokens == 1000 && !strcmp(t.model, "m.gguf"));
    CHECK(t.counts && !memcmp(t.counts, s.counts, sizeof(uint32_t) * NL * NF));
    CHECK(t.recall && !memcmp(t.recall, s.recall, sizeof(float) * NL));
    CHECK(t.precision && !memcmp(t.precision, s.precision, sizeof(float) * NL));
    CHECK(t.rank && !memcmp(t.rank, s.rank, sizeof(uint32_t) * NL));
    hr_stats_free(&t);
    /* optional arrays absent */
    free(s.recall), free(s.precision), free(s.rank);
    s.recall = s.precision = NULL, s.rank = NULL;
    CHECKF(hr_stats_write(path, &s, &e) == 0, "%s", e.msg);
    CHECKF(hr_stats_read(path, &t, &e) == 0, "%s", e.msg);
    CHECK(!t.recall && !t.precision && !t.rank && t.counts && t.counts[5] == s.counts[5]);
    hr_stats_free(&t);
    /* a count above n_tokens is refused at write */
    s.counts[7] = 1001;
    CHECK(hr_stats_write(path, &s, &e) < 0 && strstr(e.msg, "exceeds"));
    hr_stats_free(&s);
    remove(path);
}

/* A stats-like file built by hand, with one defect chosen by `bad`. */
static void write_bad(const char *path, int bad) {
    static int32_t counts[NL][NF];
    static int16_t c16[NF];
    for (int l = 0; l < NL; l++)
        for (int j = 0; j < NF; j++) counts[l][j] = j;
    gguf_writer *w = gguf_writer_new(false);
    gguf_w_str(w, "general.architecture", bad == 1 ? "llama" : "hearth.stats");
    if (bad != 2) gguf_w_u32(w, "hearth.stats.n_layer", NL);
    gguf_w_u32(w, "hearth.stats.n_ff", NF);
    gguf_w_u64(w, "hearth.stats.n_tokens", bad == 3 ? 10 : 100);
    float rec[NL + 1] = {0.5f, 0.5f, bad == 8 ? 1.5f : 0.5f, 0.5f};
    gguf_w_arr_f32(w, "hearth.stats.recall", rec, bad == 7 ? NL + 1 : NL);
    for (int l = 0; l < NL; l++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%d.act_count", l);
        uint64_t ne[2] = {bad == 5 && l == 1 ? NF - 1 : NF, 1};
        if (bad == 4 && l == 2) continue;
        if (bad == 6 && l == 0) gguf_w_tensor(w, name, HR_I16, 1, ne, c16, NF * 2);
        else gguf_w_tensor(w, name, HR_I32, 1, ne, counts[l], ne[0] * 4);
    }
    hr_err e;
    if (gguf_w_write(w, path, &e)) fprintf(stderr, "write: %s\n", e.msg);
    gguf_writer_free(w);
}

static void broken(void) {
    static const char *const want[] = {NULL, "not a statistics file", "hearth.stats.n_layer' is missing", "outside [0, n_tokens",
                                       "2 act_count tensors for 3 layers", "expected {40}", "expected i32", "3 elements",
                                       "not a fraction"};
    char path[256];
    hr_test_tmp(path, sizeof path, "bad.stats.gguf");
    for (int bad = 0; bad <= 8; bad++) {
        write_bad(path, bad);
        hr_stats s;
        hr_err e = {{0}};
        int rc = hr_stats_read(path, &s, &e);
        if (!want[bad]) {
            CHECKF(rc == 0, "case %d: %s", bad, e.msg);
            CHECK(s.n_tokens == 100 && s.counts && s.counts[NF + 3] == 3);
            hr_stats_free(&s);
            continue;
        }
        CHECKF(rc < 0 && strstr(e.msg, want[bad]) && strstr(e.msg, path), "case %d: '%s' lacks '%s'", bad, e.msg, want[bad]);
        CHECK(s.counts == NULL);
    }
    FILE *f = fopen(path, "wb");
    fputs("not a gguf file at all, just text", f);
    fclose(f);
    hr_stats s;
    hr_err e = {{0}};
    CHECK(hr_stats_read(path, &s, &e) < 0 && strstr(e.msg, path));
    remove(path);
    CHECK(hr_stats_read("/nonexistent/x.stats.gguf", &s, &e) < 0 && strstr(e.msg, "/nonexistent/x.stats.gguf"));
}

static void paths(void) {
    char b[64];
    CHECK(hr_stats_path("dir/m.gguf", b, sizeof b) == 0 && !strcmp(b, "dir/m.stats.gguf"));
    CHECK(hr_stats_path("m.bin", b, sizeof b) == 0 && !strcmp(b, "m.bin.stats.gguf"));
    CHECK(hr_stats_path("a-very-long-model-name.gguf", b, 12) < 0);
}

int main(void) {
    hr_rng r = {7};
    round_trip(&r);
    broken();
    paths();
    return TEST_END();
}
