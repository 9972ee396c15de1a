/* Hostile GGUF inputs: each must fail with a message naming the problem, never read
 * out of bounds (inputs are exact-size heap copies, so ASan sees any overread). */
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "formats/types.h"
#include "testutil.h"

/* ---- byte builder for hand-made files ---- */
typedef struct {
    uint8_t b[8192];
    size_t n;
} bb;

static void put(bb *x, const void *p, size_t n) {
    memcpy(x->b + x->n, p, n);
    x->n += n;
}
static void u32(bb *x, uint32_t v) { put(x, &v, 4); }
static void u64(bb *x, uint64_t v) { put(x, &v, 8); }
static void str(bb *x, const char *s) {
    u64(x, strlen(s));
    put(x, s, strlen(s));
}
static void header(bb *x, const char *magic, uint32_t ver, uint64_t nt, uint64_t nkv) {
    x->n = 0;
    put(x, magic, 4);
    u32(x, ver);
    u64(x, nt);
    u64(x, nkv);
}
static void kv_u32(bb *x, const char *k, uint32_t v) {
    str(x, k);
    u32(x, GGUF_VT_UINT32);
    u32(x, v);
}
static void tinfo(bb *x, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t off) {
    str(x, name);
    u32(x, n_dims);
    for (uint32_t d = 0; d < n_dims; d++) u64(x, ne[d]);
    u32(x, type);
    u64(x, off);
}
static void pad(bb *x, size_t a) {
    while (x->n % a) x->b[x->n++] = 0;
}
static void zeros(bb *x, size_t n) {
    memset(x->b + x->n, 0, n);
    x->n += n;
}

static int parse_copy(const uint8_t *p, size_t n, gguf_file *f, hr_err *e) {
    uint8_t *c = malloc(n ? n : 1);
    if (n) memcpy(c, p, n);
    int rc = gguf_parse(f, c, n, e);
    if (rc == 0) {
        /* Touch everything the reader exposes, so ASan checks the pointers it made. */
        volatile uint8_t sink = 0;
        for (uint64_t i = 0; i < f->n_tensors; i++)
            if (f->tensors[i].nbytes)
                sink ^= ((const uint8_t *)f->tensors[i].data)[0] ^
                        ((const uint8_t *)f->tensors[i].data)[f->tensors[i].nbytes - 1];
        for (uint64_t i = 0; i < f->n_kv; i++)
            if (f->kv[i].key.len) sink ^= (uint8_t)f->kv[i].key.ptr[f->kv[i].key.len - 1];
        (void)sink;
        gguf_close(f);
    }
    free(c);
    return rc;
}

#define EXPECT_FAIL(x, needle)                                                                            \
    do {                                                                                                  \
        gguf_file f_;                                                                                     \
        hr_err e_ = {{0}};                                                                                \
        int rc_ = parse_copy((x)->b, (x)->n, &f_, &e_);                                                   \
        CHECKF(rc_ < 0 && strstr(e_.msg, needle), "want failure with '%s', got rc %d '%s'", needle, rc_, \
               e_.msg);                                                                                   \
    } while (0)

#define EXPECT_OK(x)                                                             \
    do {                                                                         \
        gguf_file f_;                                                            \
        hr_err e_ = {{0}};                                                       \
        int rc_ = parse_copy((x)->b, (x)->n, &f_, &e_);                          \
        CHECKF(rc_ == 0, "want success, got '%s'", e_.msg);                      \
    } while (0)

/* A valid small file with one KV of each kind of structure and two tensors. */
static void valid(bb *x, size_t *data_end) {
    header(x, "GGUF", 3, 2, 3);
    kv_u32(x, "general.alignment", 32);
    str(x, "tok");
    u32(x, GGUF_VT_ARRAY);
    u32(x, GGUF_VT_STRING);
    u64(x, 2);
    str(x, "a");
    str(x, "bc");
    str(x, "nest");
    u32(x, GGUF_VT_ARRAY);
    u32(x, GGUF_VT_ARRAY);
    u64(x, 1);
    u32(x, GGUF_VT_INT16);
    u64(x, 2);
    u32(x, 0x00020001);
    uint64_t ne1[2] = {32, 2}, ne2[1] = {3};
    tinfo(x, "w", 2, ne1, HR_Q8_0, 0);
    tinfo(x, "b", 1, ne2, HR_F32, 96);
    pad(x, 32);
    for (int i = 0; i < 96; i++) x->b[x->n++] = (uint8_t)i;
    for (int i = 0; i < 12; i++) x->b[x->n++] = (uint8_t)(200 + i);
    *data_end = x->n;
    pad(x, 32);
}

static void test_truncations(void) {
    bb x;
    size_t data_end;
    valid(&x, &data_end);
    EXPECT_OK(&x);
    /* Every prefix that cuts into the tensor data (or earlier) must fail; trailing padding is optional. */
    for (size_t n = 0; n < x.n; n++) {
        gguf_file f;
        hr_err e = {{0}};
        int rc = parse_copy(x.b, n, &f, &e);
        if (n < data_end) CHECKF(rc < 0 && e.msg[0], "prefix %zu of %zu parsed (%s)", n, x.n, e.msg);
        else CHECKF(rc == 0, "prefix %zu: %s", n, e.msg);
    }
    /* Random byte corruption must never crash (result may be either). */
    hr_rng rng = {7};
    for (int it = 0; it < 3000; it++) {
        bb y = x;
        int flips = 1 + (int)(hr_rng_next(&rng) % 4);
        for (int k = 0; k < flips; k++) y.b[hr_rng_next(&rng) % y.n] = (uint8_t)hr_rng_next(&rng);
        gguf_file f;
        hr_err e;
        parse_copy(y.b, y.n, &f, &e);
    }
}

static void test_header(void) {
    bb x;
    header(&x, "GGML", 3, 0, 0);
    EXPECT_FAIL(&x, "bad magic");
    header(&x, "GGUF", 1, 0, 0);
    EXPECT_FAIL(&x, "version 1");
    header(&x, "GGUF", 4, 0, 0);
    EXPECT_FAIL(&x, "version 4");
    header(&x, "GGUF", 0x03000000u, 0, 0);
    EXPECT_FAIL(&x, "big-endian");
    header(&x, "GGUF", 2, 0, 0);
    EXPECT_OK(&x);
    header(&x, "PWRI", 3, 0, 0);
    EXPECT_OK(&x);
    header(&x, "GGUF", 3, 0, UINT64_MAX);
    EXPECT_FAIL(&x, "KV pairs");
    header(&x, "GGUF", 3, 1ull << 40, 0);
    zeros(&x, 64);
    EXPECT_FAIL(&x, "tensors");
    header(&x, "GGUF", 3, UINT64_MAX / 16, UINT64_MAX / 16);
    EXPECT_FAIL(&x, "KV pairs");
    x.n = 10;
    EXPECT_FAIL(&x, "too small");
}

static void test_kvs(void) {
    bb x;
    header(&x, "GGUF", 3, 0, 1);
    u64(&x, UINT64_MAX); /* key length */
    zeros(&x, 16);
    EXPECT_FAIL(&x, "exceeds");

    header(&x, "GGUF", 3, 0, 1);
    str(&x, "k");
    u32(&x, 13);
    u32(&x, 0);
    EXPECT_FAIL(&x, "unknown value type 13");

    header(&x, "GGUF", 3, 0, 1);
    str(&x, "k");
    u32(&x, GGUF_VT_STRING);
    u64(&x, 1ull << 62);
    zeros(&x, 8);
    EXPECT_FAIL(&x, "exceeds");

    header(&x, "GGUF", 3, 0, 1);
    str(&x, "k");
    u32(&x, GGUF_VT_ARRAY);
    u32(&x, GGUF_VT_UINT64);
    u64(&x, 1ull << 61); /* 2^64 bytes: would overflow a naive n*8 */
    zeros(&x, 8);
    EXPECT_FAIL(&x, "cannot fit");

    header(&x, "GGUF", 3, 0, 1);
    str(&x, "k");
    u32(&x, GGUF_VT_ARRAY);
    u32(&x, GGUF_VT_STRING);
    u64(&x, UINT64_MAX);
    zeros(&x, 8);
    EXPECT_FAIL(&x, "cannot fit");

    header(&x, "GGUF", 3, 0, 1);
    str(&x, "k");
    u32(&x, GGUF_VT_ARRAY);
    u32(&x, 99);
    u64(&x, 0);
    EXPECT_FAIL(&x, "unknown element type 99");

    /* Nesting: depth 8 accepted, 9 rejected. */
    for (int depth = 8; depth <= 9; depth++) {
        header(&x, "GGUF", 3, 0, 1);
        str(&x, "deep");
        u32(&x, GGUF_VT_ARRAY);
        for (int d = 0; d < depth - 1; d++) {
            u32(&x, GGUF_VT_ARRAY);
            u64(&x, 1);
        }
        u32(&x, GGUF_VT_UINT8);
        u64(&x, 1);
        x.b[x.n++] = 5;
        if (depth == 8) EXPECT_OK(&x);
        else EXPECT_FAIL(&x, "nested deeper");
    }

    header(&x, "GGUF", 3, 0, 2);
    kv_u32(&x, "dup", 1);
    kv_u32(&x, "dup", 2);
    EXPECT_FAIL(&x, "duplicate KV key 'dup'");

    const uint32_t bad_align[] = {0, 3, 48};
    for (int i = 0; i < 3; i++) {
        header(&x, "GGUF", 3, 0, 1);
        kv_u32(&x, "general.alignment", bad_align[i]);
        EXPECT_FAIL(&x, "general.alignment");
    }
    header(&x, "GGUF", 3, 0, 1);
    str(&x, "general.alignment");
    u32(&x, GGUF_VT_UINT64);
    u64(&x, 32);
    EXPECT_FAIL(&x, "must be uint32");
}

/* One tensor of the given shape/type at offset off, followed by data_bytes of data. */
static void one_tensor(bb *x, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t off,
                       size_t data_bytes) {
    header(x, "GGUF", 3, 1, 0);
    tinfo(x, name, n_dims, ne, type, off);
    pad(x, 32);
    zeros(x, data_bytes);
}

static void test_tensors(void) {
    bb x;
    uint64_t ne[4] = {32, 2, 1, 1};
    one_tensor(&x, "ok", 2, ne, HR_F32, 0, 256);
    EXPECT_OK(&x);
    one_tensor(&x, "short", 2, ne, HR_F32, 0, 255);
    EXPECT_FAIL(&x, "tensor 'short': data [offset 0, 256 bytes] extends past end of file");
    one_tensor(&x, "far", 2, ne, HR_F32, UINT64_MAX - 31, 256);
    EXPECT_FAIL(&x, "extends past end of file");
    one_tensor(&x, "unal", 2, ne, HR_F32, 16, 512);
    EXPECT_FAIL(&x, "not a multiple of the alignment");
    one_tensor(&x, "ty", 2, ne, 77, 0, 256);
    EXPECT_FAIL(&x, "unknown type id 77");
    one_tensor(&x, "ty16", 2, ne, 16, 0, 256); /* IQ2_XXS: not supported by Hearth */
    EXPECT_FAIL(&x, "tensor 'ty16': type IQ2_XXS (ggml id 16) is not supported by Hearth");
    one_tensor(&x, "ty35", 2, ne, 35, 0, 256);
    EXPECT_FAIL(&x, "type TQ2_0 (ggml id 35) is not supported");
    one_tensor(&x, "k32", 2, ne, HR_Q4_K, 0, 256); /* a row of 32 cannot hold a 256-element super-block */
    EXPECT_FAIL(&x, "ne0 = 32 is not a multiple");
    uint64_t ne33[1] = {33};
    one_tensor(&x, "blk", 1, ne33, HR_Q8_0, 0, 64);
    EXPECT_FAIL(&x, "ne0 = 33 is not a multiple");
    one_tensor(&x, "d0", 0, ne, HR_F32, 0, 256);
    EXPECT_FAIL(&x, "0 dimensions");
    uint64_t ne5[5] = {1, 1, 1, 1, 1};
    one_tensor(&x, "d5", 5, ne5, HR_F32, 0, 256);
    EXPECT_FAIL(&x, "5 dimensions");
    uint64_t big[4] = {1ull << 32, 1ull << 32, 1, 1};
    one_tensor(&x, "ovf", 2, big, HR_F32, 0, 256);
    EXPECT_FAIL(&x, "overflows");
    uint64_t big2[4] = {1ull << 62, 1, 1, 1}; /* elements fit int64, bytes (x4) do not */
    one_tensor(&x, "ovf2", 1, big2, HR_F32, 0, 256);
    EXPECT_FAIL(&x, "overflows");
    uint64_t neg[1] = {UINT64_MAX};
    one_tensor(&x, "neg", 1, neg, HR_F32, 0, 256);
    EXPECT_FAIL(&x, "negative");
    uint64_t zero[2] = {0, 4};
    one_tensor(&x, "empty", 2, zero, HR_F32, 0, 0);
    EXPECT_OK(&x); /* ggml allows zero-size dimensions */
    one_tensor(&x, "", 2, ne, HR_F32, 0, 256);
    EXPECT_FAIL(&x, "empty name");
    one_tensor(&x, "a_name_that_is_much_too_long_for_ggml_because_it_has_sixty_four_", 2, ne, HR_F32, 0, 256);
    EXPECT_FAIL(&x, "name is 64 bytes");

    header(&x, "GGUF", 3, 2, 0);
    tinfo(&x, "same", 2, ne, HR_F32, 0);
    tinfo(&x, "same", 2, ne, HR_F32, 256);
    pad(&x, 32);
    zeros(&x, 512);
    EXPECT_FAIL(&x, "duplicate tensor name 'same'");

    header(&x, "GGUF", 3, 2, 0);
    tinfo(&x, "a", 2, ne, HR_F32, 0);
    tinfo(&x, "b", 2, ne, HR_F32, 224);
    pad(&x, 32);
    zeros(&x, 512);
    EXPECT_FAIL(&x, "overlap");

    /* Infos claim data but the file ends before the data section starts. */
    header(&x, "GGUF", 3, 1, 0);
    tinfo(&x, "x", 1, ne, HR_F32, 0);
    EXPECT_FAIL(&x, "past");

    /* Tensor names appear escaped in messages. */
    one_tensor(&x, "bad\x01name", 2, ne, 77, 0, 256);
    EXPECT_FAIL(&x, "bad\\x01name");
}

int main(void) {
    test_header();
    test_kvs();
    test_tensors();
    test_truncations();
    return TEST_END();
}
