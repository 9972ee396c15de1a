/* FFN rows bundled per neuron at load (hearth_model_params.ffn_bundle): on PowerInfer-style
 * files (gate, up, ffn_down_t, predictors) every FFN mode gives the same logits bit for bit as
 * the file's own layout, decoded and batched, at 1 and 2 threads, for a float, a legacy and a
 * K-quant type; the mapping's pages of the bundled tensors are released (resident memory does
 * not grow by the bundle); dense files, --no-mmap and --mlock load unbundled; a context that
 * asks for a GPU (standin) is refused with the reason. */
#include <stdlib.h>
#include <string.h>
#include "formats/types.h"
#include "eval_logits.h"
#include "hearth.h"
#include "synth/synth.h"
#include "testutil.h"

#define N_TOK 7

static const int32_t toks[N_TOK] = {5, 77, 140, 3, 250, 31, 9};

static void synth(const char *path, uint32_t type, bool pwri) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.type = type, p.act = HR_SYNTH_REGLU, p.powerinfer = pwri, p.pred_rank = hr_type_block_elems(type) > 32 ? 256 : 32;
    p.n_embd = 256, p.n_head = 4, p.n_head_kv = 2, p.n_ff = 512, p.n_vocab = 300, p.n_layer = 2, p.seed = 5;
    hr_err e;
    if (hr_synth_write(&p, path, &e)) fprintf(stderr, "synth: %s\n", e.msg), exit(1);
}

static hearth_model *load(const char *path, bool bundle, bool no_mmap, bool mlock) {
    hearth_model_params mp = hearth_model_default_params();
    mp.ffn_bundle = bundle, mp.no_mmap = no_mmap, mp.mlock = mlock;
    mp.has_sparse_threshold = true, mp.sparse_threshold = 0.5f; /* some neurons predicted, not all */
    hr_err e;
    hearth_model *m = hearth_model_load(path, &mp, &e);
    if (!m) fprintf(stderr, "load %s: %s\n", path, e.msg);
    return m;
}

/* Logits of every token, batched (batch > 1) or one at a time. */
static int run(hearth_model *m, hearth_ffn_mode mode, int batch, int threads, float *out) {
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = 16, cp.n_threads = threads, cp.n_batch = batch, cp.ffn_mode = mode, cp.gpu = HEARTH_GPU_OFF;
    return eval_logits(m, &cp, toks, N_TOK, out, NULL);
}

/* Resident kB of the process (VmRSS). */
static long rss_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) v = strtol(line + 6, NULL, 10);
    if (f) fclose(f);
    return v;
}

static void check_type(uint32_t type) {
    char path[512];
    synth(hr_test_tmp(path, sizeof path, "bundle.gguf"), type, true);
    hearth_model *a = load(path, false, false, false), *b = load(path, true, false, false);
    CHECK(a && b);
    if (!a || !b) return;
    size_t bytes = 0;
    CHECK(hearth_model_bundled_layers(a, NULL) == 0);
    CHECKF(hearth_model_bundled_layers(b, &bytes) == 2, "%s: %d layers bundled", hr_type_name(type),
           (int)hearth_model_bundled_layers(b, NULL));
    CHECK(bytes == 2 * 3 * 512 * hr_row_bytes(type, 256));
    const int nv = hearth_model_get_info(a)->n_vocab;
    float *la = malloc(sizeof(float) * N_TOK * nv), *lb = malloc(sizeof(float) * N_TOK * nv);
    const hearth_ffn_mode modes[] = {HEARTH_FFN_PREDICTED, HEARTH_FFN_EXACT, HEARTH_FFN_DENSE};
    for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; mi++)
        for (int batch = 1; batch <= N_TOK; batch += N_TOK - 1)
            for (int th = 1; th <= 2; th++) {
                CHECK(run(a, modes[mi], batch, th, la) == 0 && run(b, modes[mi], batch, th, lb) == 0);
                CHECKF(memcmp(la, lb, sizeof(float) * N_TOK * nv) == 0, "%s, mode %s, batch %d, %d thread(s): bundled logits differ",
                       hr_type_name(type), hearth_ffn_mode_name(modes[mi]), batch, th);
            }
    free(la), free(lb);
    hearth_model_free(a), hearth_model_free(b);
}

/* A bigger file whose FFN pages would show: the bundle replaces them in RSS. */
static void check_memory(void) {
    char path[512];
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.type = HR_F16, p.act = HR_SYNTH_REGLU, p.powerinfer = true, p.pred_rank = 32;
    p.n_embd = 512, p.n_head = 4, p.n_head_kv = 4, p.n_ff = 4096, p.n_vocab = 300, p.n_layer = 4, p.seed = 3;
    hr_err e;
    CHECKF(hr_synth_write(&p, hr_test_tmp(path, sizeof path, "bundle-mem.gguf"), &e) == 0, "%s", e.msg);
    const long ffn_kb = 4L * 3 * 4096 * 512 * 2 / 1024; /* 48 MiB of FFN rows */
    long before = rss_kb();
    hearth_model *a = load(path, false, false, false);
    float *l = malloc(sizeof(float) * N_TOK * 300);
    CHECK(a && run(a, HEARTH_FFN_DENSE, N_TOK, 1, l) == 0); /* touches every FFN page */
    long plain = rss_kb() - before;
    hearth_model_free(a);
    before = rss_kb();
    hearth_model *b = load(path, true, false, false);
    CHECK(b && hearth_model_bundled_layers(b, NULL) == 4);
    CHECK(b && run(b, HEARTH_FFN_DENSE, N_TOK, 1, l) == 0);
    long bundled = rss_kb() - before;
    CHECKF(plain > ffn_kb && bundled < plain + ffn_kb / 4, "RSS grew %ld kB unbundled, %ld kB bundled (FFN %ld kB)", plain,
           bundled, ffn_kb);
    hearth_model_free(b);
    free(l);
}

int main(void) {
    const uint32_t types[] = {HR_F32, HR_Q4_0, HR_Q4_K};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) check_type(types[i]);
    check_memory();

    char path[512];
    synth(hr_test_tmp(path, sizeof path, "bundle-dense.gguf"), HR_Q8_0, false);
    hearth_model *m = load(path, true, false, false); /* no ffn_down_t: nothing to bundle */
    CHECK(m && hearth_model_bundled_layers(m, NULL) == 0);
    hearth_model_free(m);
    synth(path, HR_Q8_0, true);
    m = load(path, true, true, false); /* --no-mmap: its pages could not be released */
    CHECK(m && hearth_model_bundled_layers(m, NULL) == 0);
    hearth_model_free(m);
    m = load(path, true, false, true); /* --mlock */
    CHECK(m && hearth_model_bundled_layers(m, NULL) == 0);
    hearth_model_free(m);

    m = load(path, true, false, false);
    CHECK(m && hearth_model_bundled_layers(m, NULL) == 2);
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = 16, cp.gpu = HEARTH_GPU_STANDIN;
    hr_err e = {{0}};
    hearth_ctx *c = m ? hearth_ctx_new(m, &cp, &e) : NULL;
    CHECK(c == NULL);
    CHECKF(strstr(e.msg, "bundled") && strstr(e.msg, "--no-repack"), "standin on a bundled model: '%s'", e.msg);
    hearth_ctx_free(c);
    hearth_model_free(m);
    return TEST_END();
}
