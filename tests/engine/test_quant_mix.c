/* hearth quantize against llama.cpp's own quantizer (tests/tools/llama_quantize_ref.c, which
 * runs llama_model_quantize from the prebuilt libllama): on random-weight F32 models of several
 * shapes (rows that are and are not whole 256- and 32-blocks, tied and untied output, 4 to 16
 * layers so the by-layer rules show, GQA and not, falcon's own rules), every mix gives every
 * tensor the type llama.cpp gives it, the same general.file_type, and the same bytes wherever
 * Hearth has the type's quantizer. PowerInfer files keep their layout under a mix. Bad requests
 * fail with a message naming the tensor. Without the library the llama.cpp comparisons skip
 * (exit 77, after the checks that need no library). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "formats/gguf.h"
#include "formats/types.h"
#include "sparse/quant_mix.h"
#include "sparse/quantize.h"
#include "synth/synth.h"
#include "testutil.h"

typedef struct model {
    const char *label;
    const char * arch;
    uint32_t n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab;
    bool tied, powerinfer;
} model;

/* Shapes: ffn_down rows of 384 and 704 are whole 32- but not 256-blocks; 48/80 not even 32. */
static const model models[] = {
    {"llama-gqa4-8l", "llama", 256, 8, 8, 2, 384, 320, false, false},
    {"llama-tied-4l", "llama", 256, 4, 4, 4, 704, 300, true, false},
    {"falcon-mqa-16l", "falcon", 256, 16, 8, 1, 256, 300, false, false},
    {"llama-odd-rows", "llama", 48, 4, 4, 2, 80, 300, false, false},
};

static int write_model(const model *m, const char *path, bool powerinfer) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.arch = m->arch, p.n_embd = m->n_embd, p.n_layer = m->n_layer, p.n_head = m->n_head, p.n_head_kv = m->n_head_kv;
    p.n_ff = m->n_ff, p.n_vocab = m->n_vocab, p.tied = m->tied, p.seed = 5, p.n_ctx_train = 256;
    if (!strcmp(m->arch, "falcon")) p.act = HR_SYNTH_GELU;
    if (powerinfer) p.powerinfer = true, p.act = HR_SYNTH_REGLU, p.pred_rank = 64;
    hr_err e = {{0}};
    int rc = hr_synth_write(&p, path, &e);
    CHECKF(rc == 0, "synth %s: %s", m->label, e.msg);
    return rc;
}

/* Whether hr_quant_row has this type yet (the block quantizers land separately). */
static bool have_quantizer(uint32_t t) {
    if (t == HR_F32 || t == HR_F16 || t == HR_BF16 || t == HR_Q8_0 || t == HR_Q4_0) return true;
    float x[HR_QK_K];
    for (int i = 0; i < HR_QK_K; i++) x[i] = (float)((i * 37) % 19) - 9.0f;
    static const size_t cap = 8 * HR_QK_K;
    uint8_t buf[8 * HR_QK_K];
    return hr_row_bytes(t, HR_QK_K) <= cap && hr_quant_row_blocks(t, x, buf, HR_QK_K);
}

/* Runs the reference tool: its exit status (77: no library), output in log. */
static int run_ref(const char *tool, const char *in, const char *out, const char *mix, bool pure, const char *log) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' -t 2 %s '%s' '%s' %s >'%s' 2>&1", tool, pure ? "--pure" : "", in, out, mix, log);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void first_line(const char *path, char *buf, size_t n) {
    FILE *f = fopen(path, "r");
    buf[0] = 0;
    if (f && fgets(buf, (int)n, f)) buf[strcspn(buf, "\n")] = 0;
    if (f) fclose(f);
}

static uint64_t file_type(const gguf_file *f) {
    const gguf_kv *kv = gguf_find_kv(f, "general.file_type");
    return kv && kv->val.type == GGUF_VT_UINT32 ? kv->val.v.u : 999;
}

/* The Hearth name of a llama.cpp tensor: ffn_down is ffn_down_t in a PowerInfer file. */
static void hearth_name(const gguf_tensor *t, bool powerinfer, char *buf, size_t n) {
    snprintf(buf, n, "%.*s", (int)t->name.len, t->name.ptr);
    char *p = strstr(buf, "ffn_down.weight");
    if (powerinfer && p && strlen(buf) + 2 < n) memcpy(p, "ffn_down_t.weight", 18);
}

typedef struct tally {
    unsigned tensors, byte_checked, byte_skipped;
    bool missing[HR_TYPE_MAX];
} tally;

/* Every tensor of llama.cpp's file against Hearth's: type and shape, and the bytes wherever the
 * type has a Hearth quantizer (a PowerInfer ffn_down_t is a transpose: its type only). */
static void compare(const char *label, const char *ref_path, const char *h_path, bool powerinfer, tally *ty) {
    gguf_file a, b;
    hr_err e = {{0}};
    if (gguf_open(&a, ref_path, &e)) {
        CHECKF(0, "%s: %s", label, e.msg);
        return;
    }
    if (gguf_open(&b, h_path, &e)) {
        CHECKF(0, "%s: %s", label, e.msg);
        gguf_close(&a);
        return;
    }
    CHECKF(file_type(&a) == file_type(&b), "%s: general.file_type %llu, llama.cpp %llu", label,
           (unsigned long long)file_type(&b), (unsigned long long)file_type(&a));
    CHECKF(a.n_tensors + (powerinfer ? 2 * 8 : 0) == b.n_tensors, "%s: %llu tensors, llama.cpp %llu", label,
           (unsigned long long)b.n_tensors, (unsigned long long)a.n_tensors);
    for (uint64_t i = 0; i < a.n_tensors; i++) {
        const gguf_tensor *ta = &a.tensors[i];
        char name[256];
        hearth_name(ta, powerinfer, name, sizeof name);
        const gguf_tensor *tb = gguf_find_tensor(&b, name);
        ty->tensors++;
        if (!tb) {
            CHECKF(0, "%s: %s missing", label, name);
            continue;
        }
        CHECKF(ta->type == tb->type, "%s: %s is %s, llama.cpp made it %s", label, name, hr_type_name(tb->type),
               hr_type_name(ta->type));
        if (ta->type != tb->type || strstr(name, "ffn_down_t")) continue;
        CHECKF(!memcmp(ta->ne, tb->ne, sizeof ta->ne), "%s: %s shape differs", label, name);
        if (!have_quantizer(ta->type)) {
            ty->byte_skipped++, ty->missing[ta->type] = true;
            continue;
        }
        ty->byte_checked++;
        CHECKF(ta->nbytes == tb->nbytes && !memcmp(ta->data, tb->data, ta->nbytes), "%s: %s (%s): bytes differ from llama.cpp's",
               label, name, hr_type_name(ta->type));
    }
    gguf_close(&a), gguf_close(&b);
}

/* One model, every mix (and two pure ones): llama.cpp's file against Hearth's. */
static void check_model(const char *tool, const char *dir, const model *m, tally *ty) {
    char f32[512], ref[512], h[512], log[512], label[128];
    snprintf(f32, sizeof f32, "%s/%s.gguf", dir, m->label);
    snprintf(ref, sizeof ref, "%s/ref.gguf", dir);
    snprintf(h, sizeof h, "%s/h.gguf", dir);
    snprintf(log, sizeof log, "%s/ref.log", dir);
    if (write_model(m, f32, false)) return;
    for (size_t k = 0; k < hr_qmix_count() + 2; k++) {
        const bool pure = k >= hr_qmix_count();
        const hr_qmix *mix = pure ? hr_qmix_find(k == hr_qmix_count() ? "Q4_K_M" : "IQ4_XS") : hr_qmix_at(k);
        snprintf(label, sizeof label, "%s %s%s", m->label, mix->name, pure ? " --pure" : "");
        int rc = run_ref(tool, f32, ref, mix->name, pure, log);
        if (rc) {
            char line[256];
            first_line(log, line, sizeof line);
            CHECKF(0, "%s: llama-quantize-ref exit %d: %s", label, rc, line);
            continue;
        }
        hr_quantize_result r;
        hr_err e = {{0}};
        rc = hr_quantize_file(f32, h, mix, pure, NULL, NULL, &r, &e);
        CHECKF(rc == 0, "%s: %s", label, e.msg);
        if (!rc) compare(label, ref, h, false, ty);
    }
    remove(f32), remove(ref), remove(h), remove(log);
}

/* A PowerInfer file under a mix: PWRI kept; ffn_down_t typed as llama.cpp types the dense twin's
 * ffn_down; everything else as the twin; predictors in the base type (fc2's 64-long rows take
 * q4_k's fallback, q5_0); the file still loads with its predictors. */
static void check_powerinfer(const char *tool, const char *dir, tally *ty) {
    const model m = {"llama-pi-8l", "llama", 256, 8, 8, 2, 512, 320, false, true};
    char dense[512], pi[512], ref[512], h[512], log[512];
    snprintf(dense, sizeof dense, "%s/pi-dense.gguf", dir);
    snprintf(pi, sizeof pi, "%s/pi.gguf", dir);
    snprintf(ref, sizeof ref, "%s/pi-ref.gguf", dir);
    snprintf(h, sizeof h, "%s/pi-h.gguf", dir);
    snprintf(log, sizeof log, "%s/pi-ref.log", dir);
    if (write_model(&m, dense, false) || write_model(&m, pi, true)) return;
    hr_quantize_result r;
    hr_err e = {{0}};
    int rc = hr_quantize_file(pi, h, hr_qmix_find("Q4_K_M"), false, NULL, NULL, &r, &e);
    CHECKF(rc == 0 && r.sparse, "powerinfer Q4_K_M: %s", e.msg);
    gguf_file f;
    if (!rc && gguf_open(&f, h, &e) == 0) {
        CHECK(f.sparse);
        for (uint32_t l = 0; l < m.n_layer; l++) {
            char n1[64], n2[64];
            snprintf(n1, sizeof n1, "blk.%u.fc1.weight", l);
            snprintf(n2, sizeof n2, "blk.%u.fc2.weight", l);
            const gguf_tensor *a = gguf_find_tensor(&f, n1), *b = gguf_find_tensor(&f, n2);
            CHECKF(a && a->type == HR_Q4_K && b && b->type == HR_Q5_0, "layer %u predictors: %s %s", l,
                   a ? hr_type_name(a->type) : "-", b ? hr_type_name(b->type) : "-");
        }
        gguf_close(&f);
    }
    if (tool) {
        rc = run_ref(tool, dense, ref, "Q4_K_M", false, log);
        CHECKF(rc == 0, "powerinfer twin: llama-quantize-ref exit %d", rc);
        if (!rc) compare("powerinfer Q4_K_M", ref, h, true, ty);
    }
    remove(dense), remove(pi), remove(ref), remove(h), remove(log);
}

/* HEARTH_QMIX_MODELS, a comma-separated list of labels, limits the shapes compared: the
 * sanitizer pass takes the small ones (the rules and bytes are checked in full by the plain
 * build; there the point is the quantizers' memory accesses on ragged rows). */
static bool wanted(const char *label) {
    const char *w = getenv("HEARTH_QMIX_MODELS");
    if (!w || !*w) return true;
    const size_t n = strlen(label);
    for (const char *p = w; *p;) {
        const char *end = strchr(p, ',');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && !strncmp(p, label, n)) return true;
        p += len + (end != NULL);
    }
    return false;
}

/* ---- checks that need no llama.cpp ---- */

static void test_names(void) {
    CHECK(hr_qmix_find("q4_k_m") && hr_qmix_find("q4_k_m")->ftype == 15);
    CHECK(hr_qmix_find("Q4_K") == hr_qmix_find("Q4_K_M")); /* llama-quantize's alias */
    CHECK(hr_qmix_find("15") == hr_qmix_find("Q4_K_M") && hr_qmix_find("0") == hr_qmix_find("F32"));
    CHECK(hr_qmix_find("iq4_xs")->base == HR_IQ4_XS && hr_qmix_find("Q6_K")->base == HR_Q6_K);
    CHECK(!hr_qmix_find("Q4_K_Z") && !hr_qmix_find("") && !hr_qmix_find("99") && !hr_qmix_find("15x"));
    CHECK(hr_qmix_for_type(HR_Q4_K)->ftype == 14 && hr_qmix_for_type(HR_MXFP4)->ftype == 38);
    CHECK(hr_quantize_ftype(HR_Q8_0) == 7 && hr_quantize_ftype(HR_I8) == UINT32_MAX);
    for (size_t i = 0; i < hr_qmix_count(); i++) {
        const hr_qmix *m = hr_qmix_at(i);
        CHECKF(hr_qmix_find(m->name) == m && hr_qmix_by_ftype(m->ftype) == m && hr_type_bpw(m->base) > 0, "%s", m->name);
    }
    CHECK(hr_type_bpw(HR_Q4_0) == 4.5 && hr_type_bpw(HR_Q6_K) == 6.5625);
}

/* llama.cpp sorts the tensors (by layer, then name) before its counters run, so the file's
 * order must not change any type: the table reversed gives the same plan. */
static void test_order_independent(void) {
    hr_qmix_tensor ts[64];
    size_t n = 0;
    static const char *parts[] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
    char names[64][48];
    for (int l = 0; l < 8; l++)
        for (int p = 0; p < 7; p++, n++) {
            snprintf(names[n], sizeof names[n], "blk.%d.%s.weight", l, parts[p]);
            ts[n] = (hr_qmix_tensor){names[n], 2, {p == 6 ? 512 : 256, 256, 1, 1}, HR_F32};
        }
    ts[n++] = (hr_qmix_tensor){"token_embd.weight", 2, {256, 300, 1, 1}, HR_F32};
    hr_qmix_tensor rev[64];
    for (size_t i = 0; i < n; i++) rev[i] = ts[n - 1 - i];
    hr_qmix_model m;
    hr_qmix_model_init(&m, "llama", 8, 8, 2, 0);
    for (size_t k = 0; k < hr_qmix_count(); k++) {
        uint32_t a[64], b[64];
        hr_err e = {{0}};
        CHECK(hr_qmix_plan(hr_qmix_at(k), false, &m, ts, n, a, NULL, &e) == 0);
        CHECK(hr_qmix_plan(hr_qmix_at(k), false, &m, rev, n, b, NULL, &e) == 0);
        for (size_t i = 0; i < n; i++) CHECKF(a[i] == b[n - 1 - i], "%s %s", hr_qmix_at(k)->name, ts[i].name);
    }
}

static void test_bad_requests(const char *dir) {
    hr_qmix_model moe;
    hr_qmix_model_init(&moe, "llama", 4, 8, 8, 4);
    hr_err e = {{0}};
    uint32_t types[2];
    /* Expert tensors take their layer from the name: one outside the model or without one fails. */
    hr_qmix_tensor bad_layer = {"blk.9.ffn_down_exps.weight", 3, {256, 256, 4, 1}, HR_F32};
    CHECK(hr_qmix_plan(hr_qmix_find("Q4_K_M"), false, &moe, &bad_layer, 1, types, NULL, &e) < 0 &&
          strstr(e.msg, "blk.9.ffn_down_exps.weight") && strstr(e.msg, "layer 9"));
    hr_qmix_tensor no_layer = {"ffn_up_exps.weight", 3, {256, 256, 4, 1}, HR_F32};
    CHECK(hr_qmix_plan(hr_qmix_find("Q4_K_M"), false, &moe, &no_layer, 1, types, NULL, &e) < 0 &&
          strstr(e.msg, "ffn_up_exps.weight"));
    /* A 256-block type with no smaller sibling: an error naming the tensor, not a silent type. */
    const hr_qmix odd = {"test", 15, HR_Q8_K, ""};
    hr_qmix_tensor rows = {"blk.0.attn_q.weight", 2, {384, 256, 1, 1}, HR_F32};
    hr_qmix_model dense;
    hr_qmix_model_init(&dense, "llama", 4, 8, 8, 0);
    CHECK(hr_qmix_plan(&odd, true, &dense, &rows, 1, types, NULL, &e) < 0 && strstr(e.msg, "blk.0.attn_q.weight") &&
          strstr(e.msg, "no fallback"));
    /* ... while the real types fall back, and rows of 48 end in f16, as llama.cpp does. */
    hr_qmix_tensor odd_rows[2] = {{"blk.0.attn_q.weight", 2, {384, 256, 1, 1}, HR_F32},
                                  {"blk.0.attn_k.weight", 2, {48, 256, 1, 1}, HR_F32}};
    uint32_t fb = 0;
    CHECK(hr_qmix_plan(hr_qmix_find("Q6_K"), false, &dense, odd_rows, 2, types, &fb, &e) == 0 && types[0] == HR_Q8_0 &&
          types[1] == HR_F16 && fb == 2);
    hr_quantize_result r;
    char out[512];
    snprintf(out, sizeof out, "%s/none.gguf", dir);
    CHECK(hr_quantize_file("/nonexistent.gguf", out, NULL, false, NULL, NULL, &r, &e) < 0 && strstr(e.msg, "no quantization type"));
}

int main(void) {
    char dir[256], cmd[300];
    hr_test_tmp(dir, sizeof dir, "qmix");
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    CHECK(system(cmd) == 0);
    test_names();
    test_order_independent();
    test_bad_requests(dir);

    const char *tool = getenv("HEARTH_QREF");
    CHECKF(!tool || access(tool, X_OK) == 0, "HEARTH_QREF=%s is not an executable (build llama-quantize-ref)", tool);
    char probe_log[512], line[256] = "HEARTH_QREF is not set";
    snprintf(probe_log, sizeof probe_log, "%s/probe.log", dir);
    const bool runnable = tool && access(tool, X_OK) == 0;
    int probe = runnable ? run_ref(tool, "/nonexistent.gguf", "/nonexistent-out.gguf", "Q8_0", false, probe_log) : 77;
    if (runnable) first_line(probe_log, line, sizeof line);
    remove(probe_log);
    const bool have_ref = runnable && probe != 77;
    tally ty = {0};
    check_powerinfer(have_ref ? tool : NULL, dir, &ty);
    for (size_t i = 0; have_ref && i < sizeof models / sizeof models[0]; i++) {
        if (wanted(models[i].label)) check_model(tool, dir, &models[i], &ty);
        else printf("not compared here (HEARTH_QMIX_MODELS): %s\n", models[i].label);
    }
    rmdir(dir);
    if (hr_test_failures || !have_ref) {
        const char *why = strncmp(line, "SKIP: ", 6) ? line : line + 6;
        if (!have_ref && !hr_test_failures) printf("SKIP: llama.cpp comparisons: %s\n", why);
        return hr_test_failures ? TEST_END() : 77;
    }
    printf("%u tensors compared with llama.cpp's types; bytes identical for %u", ty.tensors, ty.byte_checked);
    if (ty.byte_skipped) {
        printf(", not compared for %u (no Hearth quantizer yet:", ty.byte_skipped);
        for (uint32_t t = 0; t < HR_TYPE_MAX; t++)
            if (ty.missing[t]) printf(" %s", hr_type_name(t));
        printf(")");
    }
    printf("\n");
    return TEST_END();
}
