/* Values from files that Hearth refuses or disables, and the load options: a non-finite
 * powerinfer.sparse_threshold or RoPE base is an error naming the key; a BOS/EOS id outside
 * the vocabulary loads with that token disabled and a warning in hearth_model_notices;
 * --no-mmap (read into memory) gives the same logits as the mapping; --mlock loads (locked,
 * or with a notice saying why not). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "formats/gguf.h"
#include "hearth.h"
#include "synth/synth.h"
#include "testutil.h"

/* Rewrites src into dst with one key set: as f32 (f32_key) or u32 (u32_key), added when absent. */
static int rewrite(const char *src, const char *dst, const char *f32_key, float f, const char *u32_key, uint32_t u) {
    gguf_file g;
    hr_err e;
    if (gguf_open(&g, src, &e)) return -1;
    gguf_writer *w = gguf_writer_new(g.sparse);
    for (uint64_t i = 0; i < g.n_kv; i++) {
        const gguf_kv *kv = &g.kv[i];
        if (f32_key && gguf_str_eq(kv->key, f32_key)) continue;
        if (u32_key && gguf_str_eq(kv->key, u32_key)) continue;
        gguf_w_kv_copy(w, kv);
    }
    if (f32_key) gguf_w_f32(w, f32_key, f);
    if (u32_key) gguf_w_u32(w, u32_key, u);
    for (uint64_t i = 0; i < g.n_tensors; i++) {
        const gguf_tensor *t = &g.tensors[i];
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        uint64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
        gguf_w_tensor(w, name, t->type, t->n_dims, ne, t->data, t->nbytes);
    }
    int r = gguf_w_write(w, dst, &e);
    if (r) fprintf(stderr, "rewrite: %s\n", e.msg);
    gguf_writer_free(w);
    gguf_close(&g);
    return r;
}

static void expect_refused(const char *base, const char *key, float v, const char *needle) {
    char path[256];
    hr_test_tmp(path, sizeof path, "bad.gguf");
    CHECK(rewrite(base, path, key, v, NULL, 0) == 0);
    hr_err e = {{0}};
    hearth_model *m = hearth_model_load(path, NULL, &e);
    CHECKF(!m && strstr(e.msg, needle) && strstr(e.msg, "finite"), "%s = %g: want an error naming it, got \"%s\"", key,
           (double)v, m ? "(loaded)" : e.msg);
    hearth_model_free(m);
    remove(path);
}

/* Loads base with tokenizer.ggml.<which>_token_id = 5000 (the vocabulary has 300). */
static hearth_model *bad_special(const char *base, const char *key, char *path, size_t cap) {
    hr_test_tmp(path, cap, "special.gguf");
    CHECK(rewrite(base, path, NULL, 0, key, 5000) == 0);
    hr_err e = {{0}};
    hearth_model *m = hearth_model_load(path, NULL, &e);
    CHECKF(m != NULL, "%s out of range: want a warning, not \"%s\"", key, e.msg);
    return m;
}

static void test_special_ids(const char *base) {
    char path[256];
    hearth_model *ok = hearth_model_load(base, NULL, NULL);
    CHECK(ok && hearth_model_notices(ok)[0] == 0);
    const int32_t bos = ok ? hearth_token_bos(ok) : -1;
    int32_t *t0 = NULL;
    size_t n0 = 0;
    CHECKF(bos >= 0 && ok && !hearth_tokenize(ok, "hello", 5, true, false, &t0, &n0, NULL) && n0 && t0[0] == bos,
           "the base model adds BOS %d", bos);
    free(t0);
    hearth_model_free(ok);

    hearth_model *m = bad_special(base, "tokenizer.ggml.bos_token_id", path, sizeof path);
    if (m) {
        const char *n = hearth_model_notices(m);
        CHECKF(strstr(n, "bos_token_id 5000 is outside the vocabulary (300 tokens)"), "notice: \"%s\"", n);
        CHECK(hearth_token_bos(m) == -1);
        int32_t *t = NULL;
        size_t nt = 0;
        CHECK(hearth_tokenize(m, "hello", 5, true, false, &t, &nt, NULL) == 0);
        bool has_bos = false;
        for (size_t i = 0; i < nt; i++) has_bos |= t[i] == bos;
        CHECKF(nt > 0 && !has_bos, "tokens with the disabled BOS: %zu, BOS %s", nt, has_bos ? "added" : "absent");
        free(t);
    }
    hearth_model_free(m);
    m = bad_special(base, "tokenizer.ggml.eos_token_id", path, sizeof path);
    if (m) {
        CHECKF(strstr(hearth_model_notices(m), "eos_token_id 5000 is outside"), "notice: \"%s\"", hearth_model_notices(m));
        CHECK(hearth_token_eos(m) == -1);
        CHECK(!strchr(hearth_model_notices(m), '\n')); /* one warning, one line */
    }
    hearth_model_free(m);
    remove(path);
}

/* The first token's logits of a model loaded with params p. */
static float *logits_of(const char *path, const hearth_model_params *p, int32_t *n_vocab, hearth_model **keep) {
    hr_err e = {{0}};
    hearth_model *m = hearth_model_load(path, p, &e);
    CHECKF(m, "%s", e.msg);
    if (!m) return NULL;
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = 16, cp.n_threads = 1, cp.gpu = HEARTH_GPU_OFF;
    hearth_ctx *c = hearth_ctx_new(m, &cp, &e);
    const int32_t tok[2] = {1, 7};
    float *out = NULL;
    *n_vocab = hearth_model_get_info(m)->n_vocab;
    if (c && !hearth_eval(c, tok, 2, 0, false, &e) && (out = malloc((size_t)*n_vocab * sizeof *out)))
        memcpy(out, hearth_logits(c, -1), (size_t)*n_vocab * sizeof *out);
    CHECKF(out, "eval: %s", e.msg);
    hearth_ctx_free(c);
    *keep = m;
    return out;
}

static void test_load_options(const char *base) {
    hearth_model_params mp = hearth_model_default_params(), rd = mp, lk = mp;
    rd.no_mmap = true;
    lk.mlock = true;
    int32_t n0 = 0, n1 = 0, n2 = 0;
    hearth_model *m0 = NULL, *m1 = NULL, *m2 = NULL;
    float *a = logits_of(base, &mp, &n0, &m0), *b = logits_of(base, &rd, &n1, &m1), *c = logits_of(base, &lk, &n2, &m2);
    CHECK(a && b && c && n0 == n1 && n0 == n2);
    if (a && b && c && n0 == n1 && n0 == n2) {
        CHECK(memcmp(a, b, (size_t)n0 * sizeof *a) == 0);
        CHECK(memcmp(a, c, (size_t)n0 * sizeof *a) == 0);
    }
    /* locked, or a notice that names --mlock and the reason */
    const char *n = m2 ? hearth_model_notices(m2) : "";
    CHECKF(!n[0] || strstr(n, "--mlock: could not lock"), "mlock notice: \"%s\"", n);
    free(a), free(b), free(c);
    hearth_model_free(m0), hearth_model_free(m1), hearth_model_free(m2);
    hr_err e = {{0}};
    CHECK(hearth_model_load("/", &rd, &e) == NULL && strstr(e.msg, "not a regular file"));
}

int main(void) {
    char base[256], pw[256];
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.n_embd = 64, p.n_head = 4, p.n_head_kv = 2, p.n_ff = 128, p.n_vocab = 300, p.n_layer = 2;
    hr_err e;
    CHECKF(hr_synth_write(&p, hr_test_tmp(base, sizeof base, "base.gguf"), &e) == 0, "%s", e.msg);
    p.act = HR_SYNTH_REGLU, p.powerinfer = true, p.pred_rank = 16;
    CHECKF(hr_synth_write(&p, hr_test_tmp(pw, sizeof pw, "pw.gguf"), &e) == 0, "%s", e.msg);
    if (hr_test_failures) return TEST_END();

    expect_refused(pw, "powerinfer.sparse_threshold", NAN, "powerinfer.sparse_threshold");
    expect_refused(pw, "powerinfer.sparse_threshold", INFINITY, "powerinfer.sparse_threshold");
    expect_refused(base, "llama.rope.freq_base", INFINITY, "llama.rope.freq_base");
    expect_refused(base, "llama.attention.layer_norm_rms_epsilon", NAN, "layer_norm_rms_epsilon");
    /* a finite threshold still loads and is used */
    char fin[256];
    CHECK(rewrite(pw, hr_test_tmp(fin, sizeof fin, "fin.gguf"), "powerinfer.sparse_threshold", 0.25f, NULL, 0) == 0);
    hearth_model *m = hearth_model_load(fin, NULL, &e);
    CHECKF(m && hearth_model_sparse_threshold(m) == 0.25f, "finite threshold: %s", m ? "wrong value" : e.msg);
    hearth_model_free(m);
    remove(fin);

    test_special_ids(base);
    test_load_options(base);
    remove(base);
    remove(pw);
    return TEST_END();
}
