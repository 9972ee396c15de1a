/* GGUF writer -> reader round trips: every KV type, nested arrays, strings with NULs
 * and UTF-8, every weight type's data byte for byte, PWRI magic, alignment, rewrite
 * through gguf_w_kv_copy, typed getters, and writer errors. One file is also checked
 * against a hand-encoded byte image of the format. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "formats/types.h"
#include "testutil.h"

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long sz = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *b = malloc(sz > 0 ? (size_t)sz : 1);
    *n = fread(b, 1, (size_t)sz, fp);
    fclose(fp);
    return b;
}

/* ---- hand-encoded image of a tiny file ---- */
static size_t le(uint8_t *p, uint64_t v, int n) {
    for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
    return (size_t)n;
}

static void test_exact_bytes(void) {
    char path[256];
    hr_test_tmp(path, sizeof path, "exact.gguf");
    float data[3] = {1.0f, -2.0f, 0.5f};
    uint64_t ne[1] = {3};
    gguf_writer *w = gguf_writer_new(false);
    gguf_w_u32(w, "a.b", 7);
    gguf_w_tensor(w, "t", HR_F32, 1, ne, data, sizeof data);
    hr_err e = {0};
    CHECKF(gguf_w_write(w, path, &e) == 0, "%s", e.msg);
    gguf_writer_free(w);

    uint8_t want[128] = {0};
    size_t o = 0;
    memcpy(want, "GGUF", 4), o = 4;
    o += le(want + o, 3, 4);          /* version */
    o += le(want + o, 1, 8);          /* tensors */
    o += le(want + o, 1, 8);          /* kvs */
    o += le(want + o, 3, 8);          /* key length */
    memcpy(want + o, "a.b", 3), o += 3;
    o += le(want + o, 4, 4);          /* UINT32 */
    o += le(want + o, 7, 4);
    o += le(want + o, 1, 8);          /* name length */
    want[o++] = 't';
    o += le(want + o, 1, 4);          /* n_dims */
    o += le(want + o, 3, 8);
    o += le(want + o, 0, 4);          /* F32 */
    o += le(want + o, 0, 8);          /* offset */
    o = (o + 31) / 32 * 32;
    memcpy(want + o, data, sizeof data), o += sizeof data;
    o = (o + 31) / 32 * 32;

    size_t n = 0;
    uint8_t *got = slurp(path, &n);
    CHECKF(got && n == o, "size %zu, want %zu", n, o);
    CHECK(got && n == o && !memcmp(got, want, o));
    free(got);
    remove(path);
}

/* ---- every KV type ---- */
static const char nul_str[] = "a\0b\xc3\xa9\xe2\x82\xac\xf0\x9f\x94\xa5z"; /* NUL and UTF-8 */
#define NUL_STR_LEN (sizeof nul_str - 1)

static gguf_value scalar(gguf_vtype t, uint64_t u, int64_t i, double f) {
    gguf_value v = {.type = t};
    if (t == GGUF_VT_FLOAT32 || t == GGUF_VT_FLOAT64) v.v.f = f;
    else if (t == GGUF_VT_INT8 || t == GGUF_VT_INT16 || t == GGUF_VT_INT32 || t == GGUF_VT_INT64) v.v.i = i;
    else v.v.u = u;
    return v;
}

static void write_kvs(gguf_writer *w) {
    gguf_w_u32(w, "k.u32", 4000000000u);
    gguf_w_i32(w, "k.i32", -123456789);
    gguf_w_u64(w, "k.u64", 0xfedcba9876543210ull);
    gguf_w_f32(w, "k.f32", 3.25f);
    gguf_w_bool(w, "k.bool", true);
    gguf_w_str(w, "k.str", "hello");
    gguf_w_str_n(w, "k.strn", nul_str, NUL_STR_LEN);
    gguf_w_str(w, "k.empty", "");
    const char *strs[] = {"x", nul_str, "", "\xe4\xb8\xad\xe6\x96\x87"};
    uint64_t lens[] = {1, NUL_STR_LEN, 0, 6};
    gguf_w_arr_str(w, "k.arr_str", strs, lens, 4);
    const char *strs2[] = {"one", "two"};
    gguf_w_arr_str(w, "k.arr_str2", strs2, NULL, 2);
    float fs[] = {1.5f, -0.0f, INFINITY};
    gguf_w_arr_f32(w, "k.arr_f32", fs, 3);
    int32_t is[] = {-1, 0, 2147483647};
    gguf_w_arr_i32(w, "k.arr_i32", is, 3);
    gguf_w_arr_i32(w, "k.arr_empty", NULL, 0);
    /* Every scalar element type as a raw array: bytes 0..n*size-1. */
    for (int t = 0; t < GGUF_VT_COUNT; t++) {
        size_t sz = gguf_vtype_size((gguf_vtype)t);
        if (!sz) continue;
        uint8_t raw[5 * 8];
        for (size_t i = 0; i < sizeof raw; i++) raw[i] = (uint8_t)(i * 37 + t);
        if (t == GGUF_VT_BOOL)
            for (size_t i = 0; i < 5; i++) raw[i] = (uint8_t)(i & 1);
        char key[64];
        snprintf(key, sizeof key, "raw.%s", gguf_vtype_name((gguf_vtype)t));
        gguf_w_arr_raw(w, key, (gguf_vtype)t, raw, 5);
    }
    /* Scalars without a dedicated setter go through gguf_w_kv_copy. */
    gguf_kv kv = {.key = {"s.u8", 4}, .val = scalar(GGUF_VT_UINT8, 250, 0, 0)};
    gguf_w_kv_copy(w, &kv);
    kv = (gguf_kv){.key = {"s.i8", 4}, .val = scalar(GGUF_VT_INT8, 0, -128, 0)};
    gguf_w_kv_copy(w, &kv);
    kv = (gguf_kv){.key = {"s.u16", 5}, .val = scalar(GGUF_VT_UINT16, 65535, 0, 0)};
    gguf_w_kv_copy(w, &kv);
    kv = (gguf_kv){.key = {"s.i16", 5}, .val = scalar(GGUF_VT_INT16, 0, -32768, 0)};
    gguf_w_kv_copy(w, &kv);
    kv = (gguf_kv){.key = {"s.i64", 5}, .val = scalar(GGUF_VT_INT64, 0, INT64_MIN, 0)};
    gguf_w_kv_copy(w, &kv);
    kv = (gguf_kv){.key = {"s.f64", 5}, .val = scalar(GGUF_VT_FLOAT64, 0, 0, 1e300)};
    gguf_w_kv_copy(w, &kv);
    /* Nested: [[["p","q"]], [[]]] and [[1,2,3],[4]] as int32 arrays. */
    int32_t a123[] = {1, 2, 3}, a4[] = {4};
    gguf_value ints[2] = {{.type = GGUF_VT_ARRAY, .v.a = {GGUF_VT_INT32, 3, (const uint8_t *)a123, NULL}},
                          {.type = GGUF_VT_ARRAY, .v.a = {GGUF_VT_INT32, 1, (const uint8_t *)a4, NULL}}};
    kv = (gguf_kv){.key = {"n.ints", 6}, .val = {.type = GGUF_VT_ARRAY, .v.a = {GGUF_VT_ARRAY, 2, NULL, ints}}};
    gguf_w_kv_copy(w, &kv);
    gguf_value pq[2] = {{.type = GGUF_VT_STRING, .v.s = {"p", 1}}, {.type = GGUF_VT_STRING, .v.s = {nul_str, NUL_STR_LEN}}};
    gguf_value lvl2[2] = {{.type = GGUF_VT_ARRAY, .v.a = {GGUF_VT_STRING, 2, NULL, pq}},
                          {.type = GGUF_VT_ARRAY, .v.a = {GGUF_VT_STRING, 0, NULL, NULL}}};
    gguf_value lvl1[1] = {{.type = GGUF_VT_ARRAY, .v.a = {GGUF_VT_ARRAY, 2, NULL, lvl2}}};
    kv = (gguf_kv){.key = {"n.deep", 6}, .val = {.type = GGUF_VT_ARRAY, .v.a = {GGUF_VT_ARRAY, 1, NULL, lvl1}}};
    gguf_w_kv_copy(w, &kv);
}

static bool str_is(gguf_str s, const char *p, uint64_t n) { return s.len == n && (!n || !memcmp(s.ptr, p, n)); }

static void check_kvs(const gguf_file *f) {
    hr_err e = {0};
    uint32_t u32 = 0;
    int32_t i32 = 0;
    uint64_t u64 = 0;
    float f32 = 0;
    bool b = false;
    gguf_str s = {0};
    const gguf_array *a = NULL;
    CHECK(gguf_get_u32(f, "k.u32", &u32, &e) == 0 && u32 == 4000000000u);
    CHECK(gguf_get_i32(f, "k.i32", &i32, &e) == 0 && i32 == -123456789);
    CHECK(gguf_get_u64(f, "k.u64", &u64, &e) == 0 && u64 == 0xfedcba9876543210ull);
    CHECK(gguf_get_f32(f, "k.f32", &f32, &e) == 0 && f32 == 3.25f);
    CHECK(gguf_get_bool(f, "k.bool", &b, &e) == 0 && b);
    CHECK(gguf_get_str(f, "k.str", &s, &e) == 0 && str_is(s, "hello", 5));
    CHECK(gguf_get_str(f, "k.strn", &s, &e) == 0 && str_is(s, nul_str, NUL_STR_LEN));
    CHECK(gguf_get_str(f, "k.empty", &s, &e) == 0 && s.len == 0);
    CHECK(gguf_get_arr(f, "k.arr_str", &a, &e) == 0 && a->type == GGUF_VT_STRING && a->n == 4);
    if (a && a->n == 4 && a->items) {
        CHECK(str_is(a->items[0].v.s, "x", 1));
        CHECK(str_is(a->items[1].v.s, nul_str, NUL_STR_LEN));
        CHECK(a->items[2].v.s.len == 0);
        CHECK(str_is(a->items[3].v.s, "\xe4\xb8\xad\xe6\x96\x87", 6));
    }
    CHECK(gguf_get_arr(f, "k.arr_str2", &a, &e) == 0 && a->n == 2 && str_is(a->items[1].v.s, "two", 3));
    CHECK(gguf_get_arr(f, "k.arr_f32", &a, &e) == 0 && a->type == GGUF_VT_FLOAT32 && a->n == 3);
    CHECK(gguf_arr_num(a, 0) == 1.5 && gguf_arr_num(a, 1) == 0.0 && signbit(gguf_arr_num(a, 1)) &&
          isinf(gguf_arr_num(a, 2)));
    CHECK(gguf_get_arr(f, "k.arr_i32", &a, &e) == 0 && a->type == GGUF_VT_INT32 && a->n == 3);
    CHECK(gguf_arr_num(a, 0) == -1 && gguf_arr_num(a, 2) == 2147483647.0);
    CHECK(gguf_get_arr(f, "k.arr_empty", &a, &e) == 0 && a->n == 0);
    for (int t = 0; t < GGUF_VT_COUNT; t++) {
        size_t sz = gguf_vtype_size((gguf_vtype)t);
        if (!sz) continue;
        char key[64];
        snprintf(key, sizeof key, "raw.%s", gguf_vtype_name((gguf_vtype)t));
        a = NULL;
        CHECKF(gguf_get_arr(f, key, &a, &e) == 0 && a->type == (gguf_vtype)t && a->n == 5, "%s", key);
        if (!a || a->n != 5) continue;
        for (size_t i = 0; i < 5 * sz; i++) {
            uint8_t want = t == GGUF_VT_BOOL ? (uint8_t)(i & 1) : (uint8_t)(i * 37 + t);
            CHECKF(a->raw[i] == want, "%s byte %zu", key, i);
        }
        if (t == GGUF_VT_INT8) CHECK(gguf_arr_num(a, 4) == (double)(int8_t)(4 * 37 + t));
        if (t == GGUF_VT_UINT16) CHECK(gguf_arr_num(a, 1) == (double)(uint16_t)((2 * 37 + t) | ((3 * 37 + t) << 8)));
    }
    const gguf_kv *kv;
    CHECK((kv = gguf_find_kv(f, "s.u8")) && kv->val.type == GGUF_VT_UINT8 && kv->val.v.u == 250);
    CHECK((kv = gguf_find_kv(f, "s.i8")) && kv->val.type == GGUF_VT_INT8 && kv->val.v.i == -128);
    CHECK((kv = gguf_find_kv(f, "s.u16")) && kv->val.type == GGUF_VT_UINT16 && kv->val.v.u == 65535);
    CHECK((kv = gguf_find_kv(f, "s.i16")) && kv->val.type == GGUF_VT_INT16 && kv->val.v.i == -32768);
    CHECK((kv = gguf_find_kv(f, "s.i64")) && kv->val.type == GGUF_VT_INT64 && kv->val.v.i == INT64_MIN);
    CHECK((kv = gguf_find_kv(f, "s.f64")) && kv->val.type == GGUF_VT_FLOAT64 && kv->val.v.f == 1e300);
    CHECK(gguf_get_arr(f, "n.ints", &a, &e) == 0 && a->type == GGUF_VT_ARRAY && a->n == 2);
    if (a && a->n == 2 && a->items) {
        CHECK(a->items[0].v.a.n == 3 && gguf_arr_num(&a->items[0].v.a, 2) == 3);
        CHECK(a->items[1].v.a.n == 1 && gguf_arr_num(&a->items[1].v.a, 0) == 4);
    }
    CHECK(gguf_get_arr(f, "n.deep", &a, &e) == 0 && a->type == GGUF_VT_ARRAY && a->n == 1);
    if (a && a->n == 1 && a->items) {
        const gguf_array *l1 = &a->items[0].v.a;
        CHECK(l1->type == GGUF_VT_ARRAY && l1->n == 2);
        if (l1->n == 2 && l1->items) {
            const gguf_array *s2 = &l1->items[0].v.a;
            CHECK(s2->type == GGUF_VT_STRING && s2->n == 2 && str_is(s2->items[1].v.s, nul_str, NUL_STR_LEN));
            CHECK(l1->items[1].v.a.type == GGUF_VT_STRING && l1->items[1].v.a.n == 0);
        }
    }
}

static void check_getters(const gguf_file *f) {
    hr_err e = {0};
    uint32_t u32 = 99;
    int32_t i32 = 0;
    uint64_t u64 = 0;
    float f32 = 0;
    bool b;
    gguf_str s;
    CHECK(gguf_get_u32(f, "absent", &u32, &e) == 1 && u32 == 99);
    CHECK(gguf_get_u32(f, "s.u8", &u32, &e) == 0 && u32 == 250);        /* widening */
    CHECK(gguf_get_i32(f, "s.u16", &i32, &e) == 0 && i32 == 65535);
    CHECK(gguf_get_i32(f, "s.i8", &i32, &e) == 0 && i32 == -128);
    CHECK(gguf_get_u64(f, "k.u32", &u64, &e) == 0 && u64 == 4000000000u);
    e.msg[0] = 0;
    CHECK(gguf_get_u32(f, "s.i8", &u32, &e) == -1 && strstr(e.msg, "s.i8"));     /* negative */
    CHECK(gguf_get_i32(f, "k.u32", &i32, &e) == -1 && strstr(e.msg, "int32"));  /* too big */
    CHECK(gguf_get_u32(f, "k.u64", &u32, &e) == -1);
    CHECK(gguf_get_i32(f, "s.i64", &i32, &e) == -1);
    CHECK(gguf_get_u64(f, "s.i64", &u64, &e) == -1);
    CHECK(gguf_get_u32(f, "k.str", &u32, &e) == -1 && strstr(e.msg, "string"));
    CHECK(gguf_get_f32(f, "s.f64", &f32, &e) == -1);                              /* 1e300 */
    CHECK(gguf_get_f32(f, "k.u32", &f32, &e) == -1);
    CHECK(gguf_get_bool(f, "k.u32", &b, &e) == -1);
    CHECK(gguf_get_str(f, "k.bool", &s, &e) == -1);
    CHECK(gguf_find_kv(f, "k.st") == NULL && gguf_find_kv(f, "k.strx") == NULL);
}

/* ---- tensors of every type ---- */
static const uint32_t all_types[] = {HR_F32, HR_F16, HR_Q4_0, HR_Q8_0, HR_I32_OLD, HR_I8, HR_I16, HR_I32, HR_BF16};
#define N_TYPES (sizeof all_types / sizeof all_types[0])

typedef struct {
    char name[32];
    uint32_t type, n_dims;
    uint64_t ne[4];
    uint8_t *data;
    uint64_t nbytes;
} tcase;

/* Sizes computed here from ggml's block layouts, independently of types.c. */
static uint64_t ref_bytes(uint32_t t, uint64_t n) {
    switch (t) {
    case HR_Q4_0: return n / 32 * 18;
    case HR_Q8_0: return n / 32 * 34;
    case HR_I8: return n;
    case HR_F16: case HR_BF16: case HR_I16: return 2 * n;
    default: return 4 * n;
    }
}

static void make_tensors(tcase *tc, hr_rng *rng) {
    for (size_t i = 0; i < N_TYPES; i++) {
        tcase *t = &tc[i];
        snprintf(t->name, sizeof t->name, "blk.%zu.w_%s", i, hr_type_name(all_types[i]));
        t->type = all_types[i];
        t->n_dims = (uint32_t)(i % 4) + 1;
        uint64_t blk = (t->type == HR_Q4_0 || t->type == HR_Q8_0) ? 32 : 1;
        t->ne[0] = blk * (1 + hr_rng_next(rng) % 5) + (blk == 1 ? 2 : 0);
        for (uint32_t d = 1; d < 4; d++) t->ne[d] = d < t->n_dims ? 1 + hr_rng_next(rng) % 3 : 1;
        t->nbytes = ref_bytes(t->type, t->ne[0]) * t->ne[1] * t->ne[2] * t->ne[3];
        t->data = malloc(t->nbytes);
        for (uint64_t j = 0; j < t->nbytes; j++) t->data[j] = (uint8_t)hr_rng_next(rng);
    }
}

static void check_tensors(const gguf_file *f, const tcase *tc) {
    CHECK(f->n_tensors == N_TYPES);
    for (size_t i = 0; i < N_TYPES; i++) {
        const gguf_tensor *t = gguf_find_tensor(f, tc[i].name);
        CHECKF(t != NULL, "%s missing", tc[i].name);
        if (!t) continue;
        CHECK(t->type == tc[i].type && t->n_dims == tc[i].n_dims && t->nbytes == tc[i].nbytes);
        CHECK(!memcmp(t->ne, tc[i].ne, sizeof t->ne));
        CHECKF(!memcmp(t->data, tc[i].data, tc[i].nbytes), "%s data differs", tc[i].name);
        CHECK(((const uint8_t *)t->data - f->base) % f->alignment == 0);
        CHECK(t->offset % f->alignment == 0);
    }
}

static void test_roundtrip(bool sparse, uint32_t align) {
    char path[256];
    hr_test_tmp(path, sizeof path, "rt.gguf");
    hr_rng rng = {42 + align};
    tcase tc[N_TYPES];
    make_tensors(tc, &rng);
    gguf_writer *w = gguf_writer_new(sparse);
    if (align) gguf_w_u32(w, "general.alignment", align);
    write_kvs(w);
    for (size_t i = 0; i < N_TYPES; i++)
        gguf_w_tensor(w, tc[i].name, tc[i].type, tc[i].n_dims, tc[i].ne, tc[i].data, tc[i].nbytes);
    hr_err e = {0};
    CHECKF(gguf_w_write(w, path, &e) == 0, "%s", e.msg);
    gguf_writer_free(w);

    gguf_file f;
    CHECKF(gguf_open(&f, path, &e) == 0, "%s", e.msg);
    CHECK(f.mapped && f.sparse == sparse && f.version == 3);
    CHECK(f.alignment == (align ? align : 32));
    CHECK(f.data_offset % f.alignment == 0);
    check_kvs(&f);
    check_getters(&f);
    check_tensors(&f, tc);

    /* Rewriting every KV through gguf_w_kv_copy and every tensor must reproduce the file exactly. */
    char path2[256];
    hr_test_tmp(path2, sizeof path2, "rt2.gguf");
    w = gguf_writer_new(f.sparse);
    for (uint64_t i = 0; i < f.n_kv; i++) gguf_w_kv_copy(w, &f.kv[i]);
    for (uint64_t i = 0; i < f.n_tensors; i++) {
        const gguf_tensor *t = &f.tensors[i];
        char nm[64];
        memcpy(nm, t->name.ptr, t->name.len);
        nm[t->name.len] = 0;
        gguf_w_tensor(w, nm, t->type, t->n_dims, t->ne, t->data, t->nbytes);
    }
    CHECKF(gguf_w_write(w, path2, &e) == 0, "%s", e.msg);
    gguf_writer_free(w);
    size_t n1 = 0, n2 = 0;
    uint8_t *b1 = slurp(path, &n1), *b2 = slurp(path2, &n2);
    CHECK(b1 && b2 && n1 == n2 && !memcmp(b1, b2, n1));
    CHECK(n1 == f.size);
    free(b1);
    free(b2);
    gguf_close(&f);
    CHECK(f.kv == NULL && f.base == NULL);
    remove(path);
    remove(path2);
    for (size_t i = 0; i < N_TYPES; i++) free(tc[i].data);
}

/* ---- writer errors ---- */
static void expect_write_error(gguf_writer *w, const char *needle) {
    char path[256];
    hr_test_tmp(path, sizeof path, "err.gguf");
    hr_err e = {0};
    CHECKF(gguf_w_write(w, path, &e) < 0 && strstr(e.msg, needle), "want '%s', got '%s'", needle, e.msg);
    FILE *fp = fopen(path, "rb");
    CHECKF(fp == NULL, "a failed write left %s behind", path);
    if (fp) fclose(fp);
    remove(path);
    gguf_writer_free(w);
}

static void test_writer_errors(void) {
    float d[64] = {0};
    uint64_t ne[2] = {8, 2};
    gguf_writer *w = gguf_writer_new(false);
    gguf_w_u32(w, "x", 1);
    gguf_w_str(w, "x", "again");
    expect_write_error(w, "duplicate KV key 'x'");

    w = gguf_writer_new(false);
    gguf_w_tensor(w, "t", HR_F32, 2, ne, d, 64);
    gguf_w_tensor(w, "t", HR_F32, 2, ne, d, 64);
    expect_write_error(w, "duplicate tensor name 't'");

    w = gguf_writer_new(false);
    gguf_w_tensor(w, "t", HR_F32, 2, ne, d, 60);
    expect_write_error(w, "nbytes 60");

    w = gguf_writer_new(false);
    uint64_t ne33[1] = {33};
    gguf_w_tensor(w, "q", HR_Q8_0, 1, ne33, d, 34);
    expect_write_error(w, "not a multiple");

    w = gguf_writer_new(false);
    gguf_w_tensor(w, "u", 77, 1, ne, d, 32);
    expect_write_error(w, "unknown type");

    w = gguf_writer_new(false);
    gguf_w_tensor(w, "z", HR_F32, 5, (uint64_t[5]){1, 1, 1, 1, 1}, d, 4);
    expect_write_error(w, "dimensions");

    w = gguf_writer_new(false);
    gguf_w_u64(w, "general.alignment", 64);
    expect_write_error(w, "uint32");

    w = gguf_writer_new(false);
    gguf_w_u32(w, "general.alignment", 48);
    expect_write_error(w, "power of two");

    w = gguf_writer_new(false);
    gguf_w_tensor(w, "a_name_that_is_much_too_long_for_ggml_because_it_has_sixty_four_", HR_F32, 1, ne, d, 32);
    expect_write_error(w, "name longer");

    w = gguf_writer_new(false);
    gguf_w_arr_raw(w, "bad", GGUF_VT_STRING, d, 1);
    expect_write_error(w, "scalar element type");

    w = gguf_writer_new(false);
    gguf_w_u32(w, "k", 1);
    hr_err e = {0};
    CHECK(gguf_w_write(w, "/nonexistent-dir-hearth/x.gguf", &e) < 0 && strstr(e.msg, "cannot create"));
    gguf_writer_free(w);

    /* Zero-size dimensions are valid (as in ggml): no data, nothing to point at. */
    char zpath[256];
    hr_test_tmp(zpath, sizeof zpath, "zero.gguf");
    w = gguf_writer_new(false);
    gguf_w_tensor(w, "z0", HR_Q8_0, 2, (uint64_t[2]){0, 3}, NULL, 0);
    gguf_w_tensor(w, "z1", HR_F16, 3, (uint64_t[3]){4, 0, 2}, NULL, 0);
    gguf_w_tensor(w, "one", HR_F32, 1, (uint64_t[1]){1}, d, 4);
    CHECKF(gguf_w_write(w, zpath, &e) == 0, "%s", e.msg);
    gguf_writer_free(w);
    gguf_file zf;
    CHECKF(gguf_open(&zf, zpath, &e) == 0, "%s", e.msg);
    const gguf_tensor *zt = gguf_find_tensor(&zf, "z1");
    CHECK(zt && zt->nbytes == 0 && zt->ne[1] == 0 && zt->ne[2] == 2 && zt->ne[3] == 1);
    CHECK(gguf_find_tensor(&zf, "one") && gguf_find_tensor(&zf, "one")->nbytes == 4);
    gguf_close(&zf);
    remove(zpath);

    /* An empty file (no KVs, no tensors) is valid. */
    char path[256];
    hr_test_tmp(path, sizeof path, "empty.gguf");
    w = gguf_writer_new(true);
    CHECKF(gguf_w_write(w, path, &e) == 0, "%s", e.msg);
    gguf_writer_free(w);
    gguf_file f;
    CHECKF(gguf_open(&f, path, &e) == 0, "%s", e.msg);
    CHECK(f.sparse && f.n_kv == 0 && f.n_tensors == 0);
    gguf_close(&f);
    remove(path);

    CHECK(gguf_open(&f, "/nonexistent-dir-hearth/x.gguf", &e) < 0 && strstr(e.msg, "cannot open"));
}

int main(void) {
    test_exact_bytes();
    test_roundtrip(false, 0);
    test_roundtrip(true, 0);
    test_roundtrip(false, 64);
    test_roundtrip(true, 8);
    test_writer_errors();
    return TEST_END();
}
