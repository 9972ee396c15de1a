/* PowerInfer GPU index: round trip, the exact on-disk layout (PWRI magic, version 3, two
 * I32 tensors of type id 18 per layer in numeric layer order, the three keys), a file
 * written in export_split's layout by the raw GGUF writer, and corrupt files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/gguf.h"
#include "formats/types.h"
#include "sparse/gpuidx.h"
#include "testutil.h"

#define NL 12 /* more than 10 layers, where lexicographic order differs from numeric */
#define NF 40

static void fill_random(hr_gpuidx *g, hr_rng *r) {
    for (int l = 0; l < g->n_layer; l++)
        for (int j = 0; j < g->n_ff; j++) {
            uint8_t v = (uint8_t)(hr_rng_next(r) % 3 == 0);
            if (l == 3) v = 0; /* an empty bucket */
            if (l == 5) v = 1; /* a full layer */
            g->hot[l * g->n_ff + j] = v;
        }
}

static void check_layout(const char *path, const hr_gpuidx *g) {
    FILE *fp = fopen(path, "rb");
    unsigned char h[8] = {0};
    CHECK(fp && fread(h, 1, 8, fp) == 8);
    if (fp) fclose(fp);
    CHECK(!memcmp(h, "PWRI", 4));
    CHECK(h[4] == 3 && h[5] == 0 && h[6] == 0 && h[7] == 0);
    gguf_file f;
    hr_err e = {{0}};
    if (gguf_open(&f, path, &e)) {
        CHECKF(0, "%s", e.msg);
        return;
    }
    CHECK(f.sparse && f.version == 3);
    const gguf_kv *kv = gguf_find_kv(&f, "general.architecture");
    CHECK(kv && kv->val.type == GGUF_VT_STRING && gguf_str_eq(kv->val.v.s, "generic.gpu_index"));
    kv = gguf_find_kv(&f, "generic.gpu_index.block_count");
    CHECK(kv && kv->val.type == GGUF_VT_UINT32 && kv->val.v.u == (uint64_t)g->n_layer);
    kv = gguf_find_kv(&f, "split.vram_capacity");
    CHECK(kv && kv->val.type == GGUF_VT_UINT64 && kv->val.v.u == g->vram_capacity);
    CHECK(f.n_tensors == 2 * (uint64_t)g->n_layer);
    for (int l = 0; l < g->n_layer && f.n_tensors == 2 * (uint64_t)g->n_layer; l++) {
        char n1[32], n2[32];
        snprintf(n1, sizeof n1, "blk.%d.gpu_idx", l);
        snprintf(n2, sizeof n2, "blk.%d.gpu_bucket", l);
        const gguf_tensor *ti = &f.tensors[2 * l], *tb = &f.tensors[2 * l + 1];
        CHECKF(gguf_str_eq(ti->name, n1) && gguf_str_eq(tb->name, n2), "tensor order at layer %d", l);
        CHECK(ti->type == 18 && tb->type == 18 && ti->n_dims == 1 && tb->n_dims == 1);
        CHECK(ti->ne[0] == (uint64_t)g->n_ff);
        int32_t k = 0, prev = -1;
        for (int j = 0; j < g->n_ff; j++) {
            int32_t v;
            memcpy(&v, (const char *)ti->data + 4 * j, 4);
            CHECK(v == g->hot[l * g->n_ff + j]);
            k += v;
        }
        CHECKF(tb->ne[0] == (uint64_t)k, "layer %d bucket %llu, flags %d", l, (unsigned long long)tb->ne[0], k);
        for (int32_t i = 0; i < k && tb->ne[0] == (uint64_t)k; i++) {
            int32_t v;
            memcpy(&v, (const char *)tb->data + 4 * i, 4);
            CHECK(v > prev && v < g->n_ff && g->hot[l * g->n_ff + v]);
            prev = v;
        }
    }
    gguf_close(&f);
}

static void test_round_trip(void) {
    char path[256];
    hr_test_tmp(path, sizeof path, "rt.gpuidx");
    hr_gpuidx g, r;
    hr_err e = {{0}};
    hr_rng rng = {5};
    CHECK(hr_gpuidx_init(&g, NL, NF, &e) == 0);
    fill_random(&g, &rng);
    g.vram_capacity = 12345678901234ull;
    CHECKF(hr_gpuidx_write(path, &g, &e) == 0, "%s", e.msg);
    check_layout(path, &g);
    CHECKF(hr_gpuidx_read(path, &r, &e) == 0, "%s", e.msg);
    CHECK(r.n_layer == NL && r.n_ff == NF && r.vram_capacity == g.vram_capacity);
    if (r.hot) CHECK(!memcmp(r.hot, g.hot, NL * NF));
    int32_t ids[NF];
    CHECK(hr_gpuidx_bucket(&r, 3, ids) == 0 && hr_gpuidx_bucket(&r, 5, ids) == NF && ids[NF - 1] == NF - 1);
    hr_gpuidx_free(&r);
    hr_gpuidx_free(&g);
    remove(path);
    char *d = hr_gpuidx_default_path("/m/x.powerinfer.gguf");
    CHECK(d && !strcmp(d, "/m/x.powerinfer.gguf.generated.gpuidx"));
    free(d);
}

/* Mutations of a file written the way powerinfer-py's export_split writes it. */
typedef enum {
    OK = 0, UNSORTED, NO_CAPACITY, ODD_COUNT, LEX_ORDER, BAD_FLAG, FOREIGN_ID, SHORT_BUCKET, BAD_BLOCKS, F32_TYPE,
    NFF_DIFFERS, OUT_OF_RANGE, WRONG_ARCH, EXTRA_LAYERS, N_MUT
} mutation;

static const char *const want_msg[N_MUT] = {
    [UNSORTED] = "not sorted", [NO_CAPACITY] = "split.vram_capacity", [ODD_COUNT] = "2 per layer",
    [LEX_ORDER] = "expected 'blk.2.gpu_idx'", [BAD_FLAG] = "must be 0 or 1", [FOREIGN_ID] = "does not flag",
    [SHORT_BUCKET] = "gpu_idx flags", [BAD_BLOCKS] = "block_count is 11", [F32_TYPE] = "expected i32 (id 18)",
    [NFF_DIFFERS] = "n_ff", [OUT_OF_RANGE] = "is not a neuron id", [WRONG_ARCH] = "not a GPU index",
    [EXTRA_LAYERS] = "block_count is 12",
};

/* Layer l flags neurons j with (j + l) % 4 == 0. */
static int write_powerinfer_layout(const char *path, mutation m) {
    static int32_t flags[NL + 1][NF + 1], bucket[NL + 1][NF];
    const int nl = m == EXTRA_LAYERS ? NL + 1 : NL;
    gguf_writer *w = gguf_writer_new(true);
    gguf_w_str(w, "general.architecture", m == WRONG_ARCH ? "llama" : "generic.gpu_index");
    gguf_w_u32(w, "generic.gpu_index.block_count", m == BAD_BLOCKS ? NL - 1 : NL);
    if (m != NO_CAPACITY) gguf_w_u64(w, "split.vram_capacity", 4000000000ull);
    /* lexicographic order of the layer numbers: 0, 1, 10, 11, 2, ... */
    int order[NL + 1];
    for (int i = 0; i < nl; i++) order[i] = i;
    if (m == LEX_ORDER) {
        int lex[NL] = {0, 1, 10, 11, 2, 3, 4, 5, 6, 7, 8, 9};
        memcpy(order, lex, sizeof lex);
    }
    for (int i = 0; i < nl; i++) {
        int l = order[i], k = 0, nf = m == NFF_DIFFERS && l == 7 ? NF + 1 : NF;
        for (int j = 0; j < nf; j++) {
            flags[l][j] = (j + l) % 4 == 0;
            if (flags[l][j]) bucket[l][k++] = j;
        }
        if (l == 4 && m == UNSORTED) { int t = bucket[l][0]; bucket[l][0] = bucket[l][1]; bucket[l][1] = t; }
        if (l == 4 && m == BAD_FLAG) flags[l][2] = 2;
        if (l == 4 && m == FOREIGN_ID) bucket[l][1] = bucket[l][1] + 1;
        if (l == 4 && m == SHORT_BUCKET) k--;
        if (l == 4 && m == OUT_OF_RANGE) bucket[l][k - 1] = NF + 3;
        char name[32];
        uint64_t ne_f[1] = {(uint64_t)nf}, ne_b[1] = {(uint64_t)k};
        uint32_t type = m == F32_TYPE && l == 6 ? HR_F32 : HR_I32_OLD;
        snprintf(name, sizeof name, "blk.%d.gpu_idx", l);
        gguf_w_tensor(w, name, type, 1, ne_f, flags[l], (uint64_t)nf * 4);
        snprintf(name, sizeof name, "blk.%d.gpu_bucket", l);
        if (!(m == ODD_COUNT && l == nl - 1)) gguf_w_tensor(w, name, HR_I32_OLD, 1, ne_b, bucket[l], (uint64_t)k * 4);
    }
    hr_err e = {{0}};
    int rc = gguf_w_write(w, path, &e);
    CHECKF(rc == 0, "%s", e.msg);
    gguf_writer_free(w);
    return rc;
}

static void test_powerinfer_layout_and_corruption(void) {
    char path[256];
    hr_test_tmp(path, sizeof path, "pi.gpuidx");
    hr_err e = {{0}};
    hr_gpuidx g;
    write_powerinfer_layout(path, OK);
    CHECKF(hr_gpuidx_read(path, &g, &e) == 0, "%s", e.msg);
    CHECK(g.n_layer == NL && g.n_ff == NF && g.vram_capacity == 4000000000ull);
    for (int l = 0; l < NL && g.hot; l++)
        for (int j = 0; j < NF; j++) CHECKF(g.hot[l * NF + j] == ((j + l) % 4 == 0), "layer %d neuron %d", l, j);
    hr_gpuidx_free(&g);
    for (int m = 1; m < N_MUT; m++) {
        write_powerinfer_layout(path, (mutation)m);
        memset(&e, 0, sizeof e);
        int rc = hr_gpuidx_read(path, &g, &e);
        CHECKF(rc < 0 && strstr(e.msg, want_msg[m]) && strstr(e.msg, path),
               "mutation %d: rc %d, message '%s' lacks '%s'", m, rc, e.msg, want_msg[m]);
        CHECK(g.hot == NULL);
    }
    remove(path);
    CHECK(hr_gpuidx_read("/nonexistent/x.gpuidx", &g, &e) < 0 && strstr(e.msg, "/nonexistent/x.gpuidx"));
}

int main(void) {
    test_round_trip();
    test_powerinfer_layout_and_corruption();
    return TEST_END();
}
