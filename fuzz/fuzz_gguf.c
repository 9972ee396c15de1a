// fuzz-sources: src/util/*.c src/formats/*.c
/* libFuzzer target for the GGUF reader. On inputs it accepts, every KV and tensor is
 * touched through the getters, and the file is rewritten with the writer and read back:
 * what the reader accepts, the writer must reproduce with the same contents. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/gguf.h"
#include "formats/types.h"

/* A weight tensor's first row through the dequantizer and back through the quantizer:
 * hostile scales (NaN, Inf, subnormal) and whatever values they make must not crash.
 * Rows are bounded so one input stays fast. */
static unsigned touch_row(const gguf_tensor *t) {
    enum { MAX_ROW = 4096 };
    _Static_assert(MAX_ROW % 256 == 0, "a whole number of super-blocks");
    if (!hr_type_is_weight(t->type) || t->ne[0] == 0 || t->ne[0] > MAX_ROW) return 0;
    const uint64_t rb = hr_row_bytes(t->type, t->ne[0]);
    if (!rb || rb > t->nbytes) return 0;
    float x[MAX_ROW];
    uint8_t q[MAX_ROW * 4] = {0};
    hr_dequant_row(t->type, t->data, x, (int64_t)t->ne[0]);
    hr_quant_row(t->type, x, q, (int64_t)t->ne[0]);
    unsigned h = 0;
    for (uint64_t i = 0; i < rb; i++) h = h * 31 + q[i];
    return h;
}

static unsigned touch_value(const gguf_value *v) {
    unsigned h = v->type;
    if (v->type == GGUF_VT_STRING) {
        for (uint64_t i = 0; i < v->v.s.len; i++) h = h * 31 + (unsigned char)v->v.s.ptr[i];
    } else if (v->type == GGUF_VT_ARRAY) {
        const gguf_array *a = &v->v.a;
        for (uint64_t i = 0; i < a->n; i++) {
            if (a->items) {
                h += touch_value(&a->items[i]);
            } else {
                double x = gguf_arr_num(a, i);
                uint64_t bits;
                memcpy(&bits, &x, sizeof bits);
                h += (unsigned)bits;
            }
        }
    } else {
        h += (unsigned)v->v.u;
    }
    return h;
}

/* C-string copy of s; false if it holds a NUL (not expressible through the C API). */
static bool cstr(gguf_str s, char *buf, size_t cap) {
    if (s.len >= cap || (s.len && memchr(s.ptr, 0, s.len))) return false;
    memcpy(buf, s.ptr, s.len);
    buf[s.len] = 0;
    return true;
}

static bool touch_all(const gguf_file *f) {
    hr_err e;
    char key[4096];
    bool plain = true; /* every key and name is a C string */
    volatile unsigned sink = 0;
    for (uint64_t i = 0; i < f->n_kv; i++) {
        sink += touch_value(&f->kv[i].val);
        if (!cstr(f->kv[i].key, key, sizeof key)) {
            plain = false;
            continue;
        }
        if (gguf_find_kv(f, key) != &f->kv[i]) __builtin_trap(); /* keys are unique */
        uint32_t u32; uint64_t u64; int32_t i32; float f32; bool b; gguf_str s; const gguf_array *a;
        int rc = gguf_get_u32(f, key, &u32, &e) + gguf_get_u64(f, key, &u64, &e) + gguf_get_i32(f, key, &i32, &e) +
                 gguf_get_f32(f, key, &f32, &e) + gguf_get_bool(f, key, &b, &e) + gguf_get_str(f, key, &s, &e) +
                 gguf_get_arr(f, key, &a, &e);
        sink += (unsigned)rc;
    }
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        const uint8_t *d = t->data;
        if (t->nbytes) sink += d[0] + d[t->nbytes - 1];
        sink += touch_row(t);
        if (!cstr(t->name, key, sizeof key)) {
            plain = false;
            continue;
        }
        if (gguf_find_tensor(f, key) != t) __builtin_trap(); /* names are unique */
    }
    (void)sink;
    return plain;
}

static bool value_eq(const gguf_value *a, const gguf_value *b) {
    if (a->type != b->type) return false;
    switch (a->type) {
    case GGUF_VT_STRING:
        return a->v.s.len == b->v.s.len && (!a->v.s.len || !memcmp(a->v.s.ptr, b->v.s.ptr, a->v.s.len));
    case GGUF_VT_FLOAT32: case GGUF_VT_FLOAT64:
        /* A float32 passes through a double, so NaN payloads may be quieted. */
        return a->v.f == b->v.f || (a->v.f != a->v.f && b->v.f != b->v.f);
    case GGUF_VT_ARRAY: {
        const gguf_array *x = &a->v.a, *y = &b->v.a;
        if (x->type != y->type || x->n != y->n || !x->items != !y->items) return false;
        if (!x->items) return !x->n || !memcmp(x->raw, y->raw, x->n * gguf_vtype_size(x->type));
        for (uint64_t i = 0; i < x->n; i++)
            if (!value_eq(&x->items[i], &y->items[i])) return false;
        return true;
    }
    default: return a->v.u == b->v.u;
    }
}

static void rewrite(const gguf_file *f) {
    char path[256], name[128];
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/fuzz_gguf_%d.gguf", dir ? dir : "/tmp", (int)getpid());
    gguf_writer *w = gguf_writer_new(f->sparse);
    for (uint64_t i = 0; i < f->n_kv; i++) gguf_w_kv_copy(w, &f->kv[i]);
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        if (!cstr(t->name, name, sizeof name)) __builtin_trap();
        gguf_w_tensor(w, name, t->type, t->n_dims, t->ne, t->data, t->nbytes);
    }
    hr_err e;
    int rc = gguf_w_write(w, path, &e);
    gguf_writer_free(w);
    if (rc) {
        fprintf(stderr, "writer rejected what the reader accepted: %s\n", e.msg);
        __builtin_trap();
    }
    gguf_file g;
    if (gguf_open(&g, path, &e)) {
        fprintf(stderr, "reader rejected the rewritten file: %s\n", e.msg);
        __builtin_trap();
    }
    if (g.n_kv != f->n_kv || g.n_tensors != f->n_tensors || g.sparse != f->sparse || g.alignment != f->alignment)
        __builtin_trap();
    for (uint64_t i = 0; i < f->n_kv; i++)
        if (f->kv[i].key.len != g.kv[i].key.len || memcmp(f->kv[i].key.ptr, g.kv[i].key.ptr, f->kv[i].key.len) ||
            !value_eq(&f->kv[i].val, &g.kv[i].val))
            __builtin_trap();
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *a = &f->tensors[i], *b = &g.tensors[i];
        if (a->type != b->type || a->nbytes != b->nbytes || memcmp(a->ne, b->ne, sizeof a->ne) ||
            (a->nbytes && memcmp(a->data, b->data, a->nbytes)))
            __builtin_trap();
    }
    gguf_close(&g);
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gguf_file f;
    hr_err e;
    e.msg[0] = 0;
    if (gguf_parse(&f, data, size, &e)) {
        if (!e.msg[0]) __builtin_trap(); /* every failure explains itself */
        return 0;
    }
    if (touch_all(&f)) rewrite(&f);
    gguf_close(&f);
    return 0;
}
