/* hearth quantize (library), one type throughout (--pure; the llama.cpp mixes are
 * test_quant_mix.c): a quantized F32 model equals the same seed synthesized directly in the
 * type, and each converted tensor equals hr_quant_row of the F32 rows; vectors stay F32;
 * PowerInfer files keep magic, predictors and ffn_down_t; quantized models load and give
 * logits close to the F32 model's; bad inputs fail clearly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "formats/gguf.h"
#include "formats/types.h"
#include "hearth.h"
#include "sparse/quantize.h"
#include "synth/synth.h"
#include "testutil.h"

static int synth(const char *path, uint32_t type, bool powerinfer, uint32_t n_embd) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.n_embd = n_embd, p.n_layer = 2, p.n_head = 4, p.n_head_kv = 2, p.n_ff = 128, p.n_vocab = 320, p.seed = 21;
    p.type = type, p.powerinfer = powerinfer, p.pred_rank = 32;
    if (powerinfer) p.act = HR_SYNTH_REGLU;
    hr_err e = {{0}};
    int rc = hr_synth_write(&p, path, &e);
    CHECKF(rc == 0, "synth: %s", e.msg);
    return rc;
}

static bool same_bytes(const char *a, const char *b) {
    FILE *x = fopen(a, "rb"), *y = fopen(b, "rb");
    bool same = x && y;
    while (same) {
        int c = fgetc(x), d = fgetc(y);
        if (c != d) same = false;
        if (c == EOF) break;
    }
    if (x) fclose(x);
    if (y) fclose(y);
    return same;
}

static uint64_t file_type(const gguf_file *f) {
    const gguf_kv *kv = gguf_find_kv(f, "general.file_type");
    return kv && kv->val.type == GGUF_VT_UINT32 ? kv->val.v.u : 999;
}

/* Every tensor of q against the F32 file: matrices quantized row by row with
 * hr_quant_row here, everything else byte-identical. */
static void check_against_rows(const char *f32_path, const char *q_path, uint32_t type) {
    gguf_file a, b;
    hr_err e = {{0}};
    if (gguf_open(&a, f32_path, &e) || gguf_open(&b, q_path, &e)) {
        CHECKF(0, "%s", e.msg);
        return;
    }
    CHECK(a.n_tensors == b.n_tensors && b.sparse == a.sparse);
    CHECK(file_type(&b) == hr_quantize_ftype(type));
    CHECK(a.n_kv == b.n_kv);
    for (uint64_t i = 0; i < a.n_tensors && a.n_tensors == b.n_tensors; i++) {
        const gguf_tensor *ta = &a.tensors[i], *tb = &b.tensors[i];
        CHECK(ta->name.len == tb->name.len && !memcmp(ta->name.ptr, tb->name.ptr, ta->name.len));
        CHECK(!memcmp(ta->ne, tb->ne, sizeof ta->ne) && ta->n_dims == tb->n_dims);
        if (ta->n_dims == 1) {
            CHECKF(tb->type == HR_F32 && tb->nbytes == ta->nbytes && !memcmp(ta->data, tb->data, ta->nbytes),
                   "vector '%.*s' changed", (int)ta->name.len, ta->name.ptr);
            continue;
        }
        CHECKF(tb->type == type, "'%.*s' has type %s", (int)ta->name.len, ta->name.ptr, hr_type_name(tb->type));
        const uint64_t rows = ta->ne[1] * ta->ne[2], rb = hr_row_bytes(type, ta->ne[0]);
        uint8_t *want = malloc(rows * rb);
        for (uint64_t r = 0; r < rows; r++)
            hr_quant_row(type, (const float *)ta->data + r * ta->ne[0], want + r * rb, (int64_t)ta->ne[0]);
        CHECKF(tb->nbytes == rows * rb && !memcmp(want, tb->data, rows * rb), "'%.*s' differs from hr_quant_row",
               (int)ta->name.len, ta->name.ptr);
        free(want);
    }
    gguf_close(&a), gguf_close(&b);
}

/* Logits of the last of a few tokens; n_vocab floats, malloc'ed. */
static float *logits(const char *path) {
    hr_err e = {{0}};
    hearth_model *m = hearth_model_load(path, NULL, &e);
    CHECKF(m, "load %s: %s", path, e.msg);
    if (!m) return NULL;
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = 32, cp.n_threads = 2, cp.ffn_mode = HEARTH_FFN_DENSE, cp.gpu = HEARTH_GPU_OFF; /* CPU kernels per type */
    hearth_ctx *c = hearth_ctx_new(m, &cp, &e);
    const int32_t toks[6] = {1, 17, 42, 99, 7, 250};
    float *out = NULL;
    if (c && !hearth_eval(c, toks, 6, 0, false, &e)) {
        int nv = hearth_model_get_info(m)->n_vocab;
        out = malloc(sizeof(float) * (size_t)nv);
        memcpy(out, hearth_logits(c, -1), sizeof(float) * (size_t)nv);
    } else CHECKF(0, "eval %s: %s", path, e.msg);
    hearth_ctx_free(c);
    hearth_model_free(m);
    return out;
}

/* Relative RMS difference of the logits. */
static double logit_err(const float *a, const float *b, int n) {
    double d = 0, s = 0;
    for (int i = 0; i < n; i++) d += (a[i] - b[i]) * (double)(a[i] - b[i]), s += (double)a[i] * a[i];
    return sqrt(d / s);
}

static void test_types(const char *dir, bool powerinfer) {
    const uint32_t types[4] = {HR_Q8_0, HR_Q4_0, HR_F16, HR_BF16};
    /* Random two-layer models amplify weight noise; measured: q8_0 0.035, q4_0 0.30, f16 0.001,
     * bf16 0.008. The byte comparisons above are the exact checks; this one catches a
     * conversion that loads but computes something else. */
    const double tol[4] = {0.08, 0.5, 0.005, 0.03};
    char f32[512], direct[512], conv[512];
    snprintf(f32, sizeof f32, "%s/f32-%d.gguf", dir, powerinfer);
    if (synth(f32, HR_F32, powerinfer, 64)) return;
    float *ref = logits(f32);
    double errs[4] = {0};
    for (int k = 0; k < 4; k++) {
        const char *tn = hr_type_name(types[k]);
        snprintf(direct, sizeof direct, "%s/direct-%s-%d.gguf", dir, tn, powerinfer);
        snprintf(conv, sizeof conv, "%s/conv-%s-%d.gguf", dir, tn, powerinfer);
        hr_quantize_result r;
        hr_err e = {{0}};
        int rc = hr_quantize_file(f32, conv, hr_qmix_for_type(types[k]), true, NULL, NULL, &r, &e);
        CHECKF(rc == 0, "%s: %s", tn, e.msg);
        if (rc) continue;
        CHECK(r.sparse == powerinfer && r.n_fallback == 0 && r.n_requant == 0);
        CHECK(r.n_converted == (powerinfer ? 2 + 2 * 9 : 2 + 2 * 7)); /* embd, output; q k v o gate up down (fc1 fc2) */
        if (!synth(direct, types[k], powerinfer, 64))
            CHECKF(same_bytes(direct, conv), "%s%s: quantized file differs from the directly synthesized one", tn,
                   powerinfer ? " (powerinfer)" : "");
        check_against_rows(f32, conv, types[k]);
        float *got = logits(conv);
        if (ref && got) {
            double err = logit_err(ref, got, 320);
            if (k == 1) CHECKF(err > errs[0], "q4_0 error %g not above q8_0's %g", err, errs[0]);
            errs[k] = err;
            printf("%s%s: relative logit error %.4f\n", tn, powerinfer ? " powerinfer" : "", err);
            CHECKF(err < tol[k] && err > 0, "%s: relative logit error %g (tolerance %g)", tn, err, tol[k]);
        }
        free(got);
        remove(direct), remove(conv);
    }
    free(ref);
    remove(f32);
}

static void test_powerinfer_layout(const char *dir) {
    char f32[512], q[512];
    snprintf(f32, sizeof f32, "%s/pi.gguf", dir);
    snprintf(q, sizeof q, "%s/pi-q4.gguf", dir);
    if (synth(f32, HR_F32, true, 64)) return;
    hr_quantize_result r;
    hr_err e = {{0}};
    CHECKF(hr_quantize_file(f32, q, hr_qmix_for_type(HR_Q4_0), true, NULL, NULL, &r, &e) == 0, "%s", e.msg);
    FILE *fp = fopen(q, "rb");
    char magic[4] = {0};
    CHECK(fp && fread(magic, 1, 4, fp) == 4 && !memcmp(magic, "PWRI", 4));
    if (fp) fclose(fp);
    gguf_file f;
    if (gguf_open(&f, q, &e) == 0) {
        const char *want[] = {"blk.0.fc1.weight", "blk.0.fc2.weight", "blk.1.ffn_down_t.weight"};
        for (int i = 0; i < 3; i++) {
            const gguf_tensor *t = gguf_find_tensor(&f, want[i]);
            CHECKF(t && t->type == HR_Q4_0, "%s missing or not q4_0", want[i]);
        }
        CHECK(!gguf_find_tensor(&f, "blk.0.ffn_down.weight"));
        CHECK(file_type(&f) == 2);
        gguf_close(&f);
    } else CHECKF(0, "%s", e.msg);
    hearth_model *m = hearth_model_load(q, NULL, &e);
    CHECKF(m && hearth_model_has_predictors(m), "%s", m ? "no predictors" : e.msg);
    hearth_model_free(m);
    /* q4_0 -> q8_0 again: allowed, counted as requantization */
    char q8[512];
    snprintf(q8, sizeof q8, "%s/pi-q8.gguf", dir);
    CHECK(hr_quantize_file(q, q8, hr_qmix_for_type(HR_Q8_0), true, NULL, NULL, &r, &e) == 0 && r.n_requant == r.n_converted &&
          r.n_converted > 0);
    remove(f32), remove(q), remove(q8);
}

/* Rows of 48 are not whole q8_0 blocks: those matrices fall back to F16 as in llama.cpp, the
 * rest convert to q8_0, and the mixed file still loads. */
static void test_unfit_rows(const char *dir) {
    char f32[512], q[512];
    snprintf(f32, sizeof f32, "%s/u.gguf", dir);
    snprintf(q, sizeof q, "%s/u-q8.gguf", dir);
    if (synth(f32, HR_F32, false, 48)) return;
    hr_quantize_result r;
    hr_err e = {{0}};
    CHECKF(hr_quantize_file(f32, q, hr_qmix_for_type(HR_Q8_0), true, NULL, NULL, &r, &e) == 0, "%s", e.msg);
    CHECKF(r.n_fallback == 14 && r.n_converted == 16 && r.n_of_type[HR_F16] == 14 && r.n_of_type[HR_Q8_0] == 2,
           "fallback %u converted %llu", r.n_fallback, (unsigned long long)r.n_converted);
    float *a = logits(f32), *b = logits(q);
    if (a && b) CHECK(logit_err(a, b, 320) < 0.02);
    free(a), free(b);
    remove(f32), remove(q);
}

static uint64_t last_done, calls;
static void progress(void *ud, uint64_t done, uint64_t total) {
    (void)ud;
    CHECK(done >= last_done && done <= total);
    last_done = done, calls++;
}

static void test_bad_inputs(const char *dir) {
    char f32[512], out[512], link_path[512];
    snprintf(f32, sizeof f32, "%s/b.gguf", dir);
    snprintf(out, sizeof out, "%s/b-out.gguf", dir);
    snprintf(link_path, sizeof link_path, "%s/b-link.gguf", dir);
    if (synth(f32, HR_F32, false, 64)) return;
    const hr_qmix *q8m = hr_qmix_for_type(HR_Q8_0);
    hr_quantize_result r;
    hr_err e = {{0}};
    CHECK(!hr_qmix_for_type(HR_I8));
    CHECK(hr_quantize_file(f32, out, NULL, false, NULL, NULL, &r, &e) < 0 && strstr(e.msg, "no quantization type"));
    CHECK(hr_quantize_file(f32, f32, q8m, true, NULL, NULL, &r, &e) < 0 && strstr(e.msg, "same file"));
    CHECK(link(f32, link_path) == 0);
    CHECK(hr_quantize_file(f32, link_path, q8m, true, NULL, NULL, &r, &e) < 0 && strstr(e.msg, "same file"));
    CHECK(hr_quantize_file("/nonexistent/in.gguf", out, q8m, true, NULL, NULL, &r, &e) < 0 &&
          strstr(e.msg, "/nonexistent/in.gguf"));
    CHECK(hr_quantize_file(f32, "/nonexistent/dir/out.gguf", q8m, true, NULL, NULL, &r, &e) < 0 &&
          strstr(e.msg, "/nonexistent/dir/out.gguf"));
    /* truncated input */
    FILE *in = fopen(f32, "rb"), *tr = fopen(out, "wb");
    char buf[4000];
    size_t n = in ? fread(buf, 1, sizeof buf, in) : 0;
    if (tr) fwrite(buf, 1, n, tr);
    if (in) fclose(in);
    if (tr) fclose(tr);
    CHECK(hr_quantize_file(out, link_path, q8m, true, NULL, NULL, &r, &e) < 0 && strstr(e.msg, "b-out.gguf"));
    remove(link_path);
    last_done = calls = 0;
    CHECK(hr_quantize_file(f32, out, hr_qmix_for_type(HR_Q4_0), true, progress, NULL, &r, &e) == 0);
    CHECK(calls > 10 && last_done == r.in_bytes);
    remove(f32), remove(out);
}

int main(void) {
    char dir[256], cmd[300];
    hr_test_tmp(dir, sizeof dir, "quant");
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    CHECK(system(cmd) == 0);
    test_types(dir, false);
    test_types(dir, true);
    test_powerinfer_layout(dir);
    test_unfit_rows(dir);
    test_bad_inputs(dir);
    rmdir(dir);
    return TEST_END();
}
