/* Mixture-of-experts statistics (docs/stats-format.md): the file's round trip with and
 * without neuron counts, the dense reader's refusal, one clear error per broken file, and
 * hr_calib_moe's counts against a second run's own counters (the per-neuron counts against
 * a float64 reference are in test_moe.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/gguf.h"
#include "formats/types.h"
#include "hearth.h"
#include "sparse/moe_calib.h"
#include "synth/synth.h"
#include "testutil.h"

#define NL 3
#define NE 6
#define NK 2
#define NF 40
#define NT 50

/* Routing counts that sum to NT * NK per layer (each <= NT), neuron counts <= their expert's. */
static void fill(hr_stats *s, bool neurons, hr_rng *r) {
    hr_err e = {{0}};
    CHECKF(hr_stats_init_moe(s, NL, NE, NK, NF, neurons, &e) == 0, "%s", e.msg);
    s->n_tokens = NT;
    for (int l = 0; l < NL; l++) {
        uint32_t *ec = s->expert_counts + l * NE;
        for (int t = 0; t < NT; t++) { /* each token picks NK distinct experts */
            int a = (int)(hr_rng_next(r) % NE), b = (a + 1 + (int)(hr_rng_next(r) % (NE - 1))) % NE;
            ec[a]++, ec[b]++;
        }
        for (int x = 0; neurons && x < NE; x++)
            for (int j = 0; j < NF; j++) s->counts[(l * NE + x) * NF + j] = (uint32_t)(hr_rng_next(r) % (ec[x] + 1));
    }
    strcpy(s->model, "moe.gguf");
}

static void round_trip(bool neurons, hr_rng *r) {
    char path[256];
    hr_test_tmp(path, sizeof path, "moe-rt.stats.gguf");
    hr_stats s, t;
    hr_err e = {{0}};
    fill(&s, neurons, r);
    CHECKF(hr_stats_write(path, &s, &e) == 0, "%s", e.msg);
    CHECKF(hr_stats_read_any(path, &t, &e) == 0, "%s", e.msg);
    CHECK(t.n_layer == NL && t.n_ff == NF && t.n_expert == NE && t.n_expert_used == NK && t.n_tokens == NT && !strcmp(t.model, "moe.gguf"));
    CHECK(t.expert_counts && !memcmp(t.expert_counts, s.expert_counts, sizeof(uint32_t) * NL * NE));
    CHECK(neurons ? t.counts && !memcmp(t.counts, s.counts, sizeof(uint32_t) * NL * NE * NF) : !t.counts);
    hr_stats_free(&t);
    /* the dense readers (hearth place, the GPU index) must not take expert counts for neurons */
    CHECKF(hr_stats_read(path, &t, &e) < 0 && strstr(e.msg, "mixture of experts") && strstr(e.msg, path), "dense reader: %s", e.msg);
    /* what the writer refuses */
    if (neurons) {
        s.counts[NF + 3] = s.expert_counts[1] + 1;
        CHECKF(hr_stats_write(path, &s, &e) < 0 && strstr(e.msg, "routed to its expert"), "%s", e.msg);
        s.counts[NF + 3] = 0;
    }
    s.expert_counts[4]++;
    CHECKF(hr_stats_write(path, &s, &e) < 0 && strstr(e.msg, "sum to"), "%s", e.msg);
    hr_stats_free(&s);
    remove(path);
}

/* A file written key by key, broken in one way each (bad); 0: a good one. */
static void write_bad(const char *path, int bad) {
    static uint32_t ec[NL][NE], cnt[NL][NE * NF];
    for (int l = 0; l < NL; l++) {
        for (int x = 0; x < NE; x++) ec[l][x] = x < 4 ? 25 : 0; /* 4 x 25 = NT x NK */
        for (int i = 0; i < NE * NF; i++) cnt[l][i] = ec[l][i / NF] / 2;
    }
    if (bad == 3) ec[1][0] = 24, ec[1][5] = 1;    /* sums fine, but neurons of expert 0 at 12 still fit: */
    if (bad == 3) cnt[1][5 * NF + 2] = 2;         /* ...expert 5 routed once, its neuron fired twice */
    if (bad == 4) ec[2][0] = 26;                  /* sum 101 */
    gguf_writer *w = gguf_writer_new(false);
    gguf_w_str(w, "general.architecture", "hearth.stats");
    gguf_w_u32(w, "hearth.stats.n_layer", NL);
    gguf_w_u32(w, "hearth.stats.n_ff", NF);
    gguf_w_u64(w, "hearth.stats.n_tokens", NT);
    gguf_w_u32(w, "hearth.stats.n_expert", NE);
    if (bad != 1) gguf_w_u32(w, "hearth.stats.n_expert_used", bad == 6 ? NE + 1 : NK);
    for (int l = 0; l < NL; l++) {
        char name[64];
        uint64_t ne[2] = {NE, 1}, na[2] = {NF, bad == 5 && l == 0 ? NE - 1 : NE};
        snprintf(name, sizeof name, "blk.%d.expert_count", l);
        if (!(bad == 2 && l == 1)) gguf_w_tensor(w, name, HR_I32, 1, ne, ec[l], NE * 4);
        snprintf(name, sizeof name, "blk.%d.act_count", l);
        gguf_w_tensor(w, name, HR_I32, 2, na, cnt[l], na[0] * na[1] * 4);
    }
    hr_err e = {{0}};
    if (gguf_w_write(w, path, &e)) fprintf(stderr, "write: %s\n", e.msg);
    gguf_writer_free(w);
}

static void broken(void) {
    static const char *const want[] = {NULL, "n_expert_used' is missing", "2 expert_count tensors for 3 layers",
                                       "tokens routed to the expert = 1", "sum to 101", "expected {40, 6}", "implausible experts"};
    char path[256];
    hr_test_tmp(path, sizeof path, "moe-bad.stats.gguf");
    for (int bad = 0; bad < (int)(sizeof want / sizeof *want); bad++) {
        write_bad(path, bad);
        hr_stats s;
        hr_err e = {{0}};
        const int rc = hr_stats_read_any(path, &s, &e);
        if (!want[bad]) {
            CHECKF(rc == 0 && s.counts && s.counts[NF + 1] == 12 && s.expert_counts[NE + 3] == 25, "good file: %s", e.msg);
            hr_stats_free(&s);
            continue;
        }
        CHECKF(rc < 0 && strstr(e.msg, want[bad]) && strstr(e.msg, path), "case %d: '%s' lacks '%s'", bad, e.msg, want[bad]);
        CHECK(!s.counts && !s.expert_counts);
    }
    remove(path);
}

/* hr_calib_moe over 3 chunks of a ReGLU-expert model: token count with the BOS of each chunk,
 * routings per layer, and the neuron counts summed per layer equal to the fired neurons a
 * second context counts (hearth_ctx_ffn_stats) over the same chunks. */
static void calib(void) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.arch = "smallthinker", p.type = HR_F32, p.n_embd = 64, p.n_head = 4, p.n_head_kv = 2, p.n_ff = 48, p.n_vocab = 300;
    p.n_layer = 2, p.n_expert = NE, p.n_expert_used = NK, p.seed = 3;
    p.act = hr_synth_default_act("smallthinker", false);
    char path[256];
    hr_err e = {{0}};
    CHECKF(hr_synth_write(&p, hr_test_tmp(path, sizeof path, "moe-calib.gguf"), &e) == 0, "%s", e.msg);
    hearth_model *m = hearth_model_load(path, NULL, &e);
    CHECKF(m, "%s", e.msg);
    remove(path);
    if (!m) return;
    enum { N = 40, CTX = 16 };
    int32_t toks[N];
    for (int i = 0; i < N; i++) toks[i] = (int32_t)((i * 41 + 7) % 300);
    hr_collect_opts co = {.n_ctx = CTX, .n_threads = 2, .bos = 1};
    hr_stats s;
    CHECKF(hr_calib_moe(m, toks, N, &co, &s, NULL, &e) == 0, "%s", e.msg);
    const uint64_t n_eval = N + 3; /* 15 text tokens per chunk after its BOS: 15 + 15 + 10 */
    CHECKF(s.n_tokens == n_eval && s.n_expert == NE && s.n_expert_used == NK && s.n_ff == 48 && s.counts, "%llu tokens",
           (unsigned long long)s.n_tokens);
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = CTX, cp.n_threads = 1, cp.gpu = HEARTH_GPU_OFF, cp.ffn_stats = true, cp.kv_k = cp.kv_v = HEARTH_KV_F32;
    hearth_ctx *c = hearth_ctx_new(m, &cp, &e);
    CHECKF(c, "%s", e.msg);
    for (int done = 0; c && done < N;) { /* the same chunks, decoded token by token */
        int32_t chunk[CTX] = {1};
        const int n = N - done < CTX - 1 ? N - done : CTX - 1;
        memcpy(chunk + 1, toks + done, sizeof(int32_t) * (size_t)n);
        for (int i = 0; i < n + 1; i++) CHECK(hearth_eval(c, &chunk[i], 1, i, false, &e) == 0);
        done += n;
    }
    for (int l = 0; c && l < 2; l++) {
        uint64_t routed[NE], fired = 0, sum = 0;
        hearth_ffn_stats fs;
        CHECK(hearth_ctx_moe_routed(c, l, routed) == 0 && hearth_ctx_ffn_stats(c, l, &fs) == 0);
        int bad = 0;
        for (int x = 0; x < NE; x++) bad += routed[x] != s.expert_counts[l * NE + x], sum += s.expert_counts[l * NE + x];
        for (int i = 0; i < NE * 48; i++) fired += s.counts[(size_t)l * NE * 48 + (size_t)i];
        fprintf(stderr, "calib layer %d: %llu routings, %llu neuron firings (%.1f%% of routed experts' neurons)\n", l,
                (unsigned long long)sum, (unsigned long long)fired, 100.0 * (double)fired / ((double)sum * 48));
        CHECKF(!bad && sum == n_eval * NK && fired == fs.fired && fired > 0, "layer %d: %d routing counts differ; %llu fired, the decoded run %llu",
               l, bad, (unsigned long long)fired, (unsigned long long)fs.fired);
    }
    hearth_ctx_free(c);
    hr_stats_free(&s);
    CHECK(hr_write_moe_down_t(m, "/nonexistent/dir/x.gguf", &e) < 0 && strstr(e.msg, "/nonexistent/dir/x.gguf"));
    hearth_model_free(m);
}

int main(void) {
    hr_rng r = {42};
    round_trip(true, &r);
    round_trip(false, &r);
    broken();
    calib();
    return TEST_END();
}
