/* GGUF v3 writer. Setters serialize each KV at once into one buffer and never fail
 * loudly; the first problem (out of memory, bad argument) is kept and reported by
 * gguf_w_write, together with the checks that need the whole file (duplicates,
 * alignment, tensor sizes). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/checked.h"
#include "gguf.h"
#include "gguf_internal.h"
#include "types.h"

typedef struct wbuf {
    uint8_t *p;
    size_t n, cap;
} wbuf;

typedef struct wkey {
    gguf_str key;   /* points into w->keys storage (owned copy) */
    gguf_vtype type;
    uint64_t u;     /* value, for UINT32 (general.alignment) */
} wkey;

typedef struct wtensor {
    gguf_str name; /* owned copy */
    uint32_t type, n_dims;
    uint64_t ne[GGUF_MAX_DIMS];
    const void *data;
    uint64_t nbytes;
    uint64_t offset;
} wtensor;

struct gguf_writer {
    bool sparse;
    bool failed;
    hr_err err;    /* first setter problem */
    wbuf kvs;      /* serialized KV pairs */
    wkey *keys;
    size_t n_keys, cap_keys;
    wtensor *tensors;
    size_t n_tensors, cap_tensors;
};

static void w_fail(gguf_writer *w, const char *msg, const char *what) {
    if (w->failed) return;
    w->failed = true;
    hr_errf(&w->err, "%s%s%s", msg, what ? ": " : "", what ? what : "");
}

static bool grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2 / elem) return false;
        c *= 2;
    }
    void *q = realloc(*p, c * elem);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

static void put(gguf_writer *w, const void *b, size_t n) {
    if (w->failed || n == 0) return;
    size_t need;
    if (__builtin_add_overflow(w->kvs.n, n, &need) || !grow((void **)&w->kvs.p, &w->kvs.cap, need, 1)) {
        w_fail(w, "out of memory", NULL);
        return;
    }
    memcpy(w->kvs.p + w->kvs.n, b, n);
    w->kvs.n += n;
}

static void put_u32(gguf_writer *w, uint32_t v) { put(w, &v, 4); }
static void put_u64(gguf_writer *w, uint64_t v) { put(w, &v, 8); }
static void put_str(gguf_writer *w, const char *s, uint64_t len) {
    put_u64(w, len);
    if (len > SIZE_MAX) w_fail(w, "string too long", NULL);
    else put(w, s, (size_t)len);
}

gguf_writer *gguf_writer_new(bool sparse_magic) {
    gguf_writer *w = calloc(1, sizeof *w);
    if (w) w->sparse = sparse_magic;
    return w;
}

void gguf_writer_free(gguf_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n_keys; i++) free((void *)w->keys[i].key.ptr);
    for (size_t i = 0; i < w->n_tensors; i++) free((void *)w->tensors[i].name.ptr);
    free(w->keys);
    free(w->tensors);
    free(w->kvs.p);
    free(w);
}

static char *dup_bytes(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, s, n);
    d[n] = 0;
    return d;
}

/* Starts a KV: records the key and writes key + type. Returns false if the writer failed. */
static bool kv_begin(gguf_writer *w, const char *key, gguf_vtype type, uint64_t u) {
    if (!w || w->failed) return false;
    if (!key) {
        w_fail(w, "NULL key", NULL);
        return false;
    }
    size_t n = strlen(key);
    char *k = dup_bytes(key, n);
    if (!k || !grow((void **)&w->keys, &w->cap_keys, w->n_keys + 1, sizeof *w->keys)) {
        free(k);
        w_fail(w, "out of memory", NULL);
        return false;
    }
    w->keys[w->n_keys++] = (wkey){{k, n}, type, u};
    put_str(w, key, n);
    put_u32(w, (uint32_t)type);
    return !w->failed;
}

void gguf_w_u32(gguf_writer *w, const char *key, uint32_t v) {
    if (kv_begin(w, key, GGUF_VT_UINT32, v)) put_u32(w, v);
}
void gguf_w_i32(gguf_writer *w, const char *key, int32_t v) {
    if (kv_begin(w, key, GGUF_VT_INT32, 0)) put(w, &v, 4);
}
void gguf_w_u64(gguf_writer *w, const char *key, uint64_t v) {
    if (kv_begin(w, key, GGUF_VT_UINT64, 0)) put_u64(w, v);
}
void gguf_w_f32(gguf_writer *w, const char *key, float v) {
    if (kv_begin(w, key, GGUF_VT_FLOAT32, 0)) put(w, &v, 4);
}
void gguf_w_bool(gguf_writer *w, const char *key, bool v) {
    uint8_t b = v;
    if (kv_begin(w, key, GGUF_VT_BOOL, 0)) put(w, &b, 1);
}
void gguf_w_str(gguf_writer *w, const char *key, const char *v) {
    if (!v) {
        if (w) w_fail(w, "NULL string value", key);
        return;
    }
    gguf_w_str_n(w, key, v, strlen(v));
}
void gguf_w_str_n(gguf_writer *w, const char *key, const char *v, uint64_t len) {
    if (w && !v && len) w_fail(w, "NULL string value", key);
    else if (kv_begin(w, key, GGUF_VT_STRING, 0)) put_str(w, v, len);
}

void gguf_w_arr_str(gguf_writer *w, const char *key, const char *const *v, const uint64_t *lens, uint64_t n) {
    if (w && n && !v) { w_fail(w, "NULL array", key); return; }
    if (!kv_begin(w, key, GGUF_VT_ARRAY, 0)) return;
    put_u32(w, GGUF_VT_STRING);
    put_u64(w, n);
    for (uint64_t i = 0; i < n && !w->failed; i++) {
        uint64_t len = lens ? lens[i] : (v[i] ? strlen(v[i]) : 0);
        if (!v[i] && len) { w_fail(w, "NULL string in array", key); return; }
        put_str(w, v[i], len);
    }
}

void gguf_w_arr_raw(gguf_writer *w, const char *key, gguf_vtype elem, const void *v, uint64_t n) {
    size_t sz = gguf_vtype_size(elem);
    if (w && !sz) { w_fail(w, "gguf_w_arr_raw needs a scalar element type", key); return; }
    if (w && n && !v) { w_fail(w, "NULL array", key); return; }
    if (w && n > SIZE_MAX / (sz ? sz : 1)) { w_fail(w, "array too large", key); return; }
    if (!kv_begin(w, key, GGUF_VT_ARRAY, 0)) return;
    put_u32(w, (uint32_t)elem);
    put_u64(w, n);
    put(w, v, (size_t)n * sz);
}

void gguf_w_arr_f32(gguf_writer *w, const char *key, const float *v, uint64_t n) {
    gguf_w_arr_raw(w, key, GGUF_VT_FLOAT32, v, n);
}
void gguf_w_arr_i32(gguf_writer *w, const char *key, const int32_t *v, uint64_t n) {
    gguf_w_arr_raw(w, key, GGUF_VT_INT32, v, n);
}

/* Payload of a parsed value (without its type tag), arrays recursively. */
static void put_value(gguf_writer *w, const gguf_value *v, int depth) {
    size_t sz = gguf_vtype_size(v->type);
    if (sz) {
        uint8_t b[8];
        switch (v->type) {
        case GGUF_VT_FLOAT32: { float x = (float)v->v.f; memcpy(b, &x, 4); break; }
        case GGUF_VT_FLOAT64: memcpy(b, &v->v.f, 8); break;
        case GGUF_VT_INT8: case GGUF_VT_INT16: case GGUF_VT_INT32: case GGUF_VT_INT64:
            memcpy(b, &v->v.i, 8); break; /* little-endian: the low bytes come first */
        default: memcpy(b, &v->v.u, 8); break;
        }
        put(w, b, sz);
        return;
    }
    if (v->type == GGUF_VT_STRING) { put_str(w, v->v.s.ptr, v->v.s.len); return; }
    if (v->type != GGUF_VT_ARRAY) { w_fail(w, "value of unknown type", NULL); return; }
    if (depth >= GGUF_MAX_DEPTH) { w_fail(w, "arrays nested too deeply", NULL); return; }
    const gguf_array *a = &v->v.a;
    size_t esz = gguf_vtype_size(a->type);
    put_u32(w, (uint32_t)a->type);
    put_u64(w, a->n);
    if (esz) {
        if (a->n > SIZE_MAX / esz || (a->n && !a->raw)) { w_fail(w, "bad numeric array", NULL); return; }
        { put(w, a->raw, (size_t)a->n * esz); return; }
    }
    if (a->n && !a->items) { w_fail(w, "array without items", NULL); return; }
    for (uint64_t i = 0; i < a->n && !w->failed; i++) {
        if (a->items[i].type != a->type) { w_fail(w, "array item of the wrong type", NULL); return; }
        put_value(w, &a->items[i], depth + 1);
    }
}

void gguf_w_kv_copy(gguf_writer *w, const gguf_kv *kv) {
    if (!w) return;
    if (!kv) { w_fail(w, "NULL KV", NULL); return; }
    char *key = dup_bytes(kv->key.ptr ? kv->key.ptr : "", kv->key.ptr ? (size_t)kv->key.len : 0);
    if (!key) { w_fail(w, "out of memory", NULL); return; }
    /* Keys with NUL bytes cannot pass through the C-string setter. */
    if (strlen(key) != kv->key.len) {
        free(key);
        w_fail(w, "KV key contains a NUL byte", NULL);
        return;
    }
    uint64_t u = kv->val.type == GGUF_VT_UINT32 ? kv->val.v.u : 0;
    if (kv_begin(w, key, kv->val.type, u)) put_value(w, &kv->val, 0);
    free(key);
}

void gguf_w_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims, const uint64_t *ne,
                   const void *data, uint64_t nbytes) {
    if (!w || w->failed) return;
    if (!name) { w_fail(w, "NULL tensor name", NULL); return; }
    if (!ne && n_dims) { w_fail(w, "NULL tensor shape", name); return; }
    size_t n = strlen(name);
    char *nm = dup_bytes(name, n);
    if (!nm || !grow((void **)&w->tensors, &w->cap_tensors, w->n_tensors + 1, sizeof *w->tensors)) {
        free(nm);
        w_fail(w, "out of memory", NULL);
        return;
    }
    wtensor *t = &w->tensors[w->n_tensors++];
    *t = (wtensor){.name = {nm, n}, .type = type, .n_dims = n_dims, .data = data, .nbytes = nbytes};
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = d < n_dims ? ne[d] : 1;
}

/* ---- write ---- */

static int check_tensor(const wtensor *t, hr_err *e) {
    const char *nm = t->name.ptr;
    if (t->name.len == 0) return hr_errf(e, "tensor with an empty name");
    if (t->name.len >= GGUF_MAX_NAME)
        return hr_errf(e, "tensor '%s': name longer than %d bytes", nm, GGUF_MAX_NAME - 1);
    if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS)
        return hr_errf(e, "tensor '%s': %u dimensions (must be 1..%d)", nm, t->n_dims, GGUF_MAX_DIMS);
    if (!hr_type_known(t->type)) return hr_errf(e, "tensor '%s': unknown type id %u", nm, t->type);
    uint64_t blk = hr_type_block_elems(t->type), n = 1;
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++)
        if (t->ne[d] > (uint64_t)INT64_MAX || !hr_mul_u64(n, t->ne[d], &n) || n > (uint64_t)INT64_MAX)
            return hr_errf(e, "tensor '%s': shape overflows", nm);
    if (!blk || t->ne[0] % blk)
        return hr_errf(e, "tensor '%s': ne0 = %llu is not a multiple of the %s block size %llu", nm,
                       (unsigned long long)t->ne[0], hr_type_name(t->type), (unsigned long long)blk);
    uint64_t bytes = hr_row_bytes(t->type, t->ne[0]);
    if (bytes == 0 && t->ne[0] != 0) return hr_errf(e, "tensor '%s': row size overflows", nm);
    for (uint32_t d = 1; d < GGUF_MAX_DIMS; d++)
        if (!hr_mul_u64(bytes, t->ne[d], &bytes)) return hr_errf(e, "tensor '%s': byte size overflows", nm);
    if (bytes != t->nbytes)
        return hr_errf(e, "tensor '%s': nbytes %llu does not match its type and shape (%llu bytes)", nm,
                       (unsigned long long)t->nbytes, (unsigned long long)bytes);
    if (bytes && !t->data) return hr_errf(e, "tensor '%s': NULL data", nm);
    return 0;
}

static int check_all(gguf_writer *w, uint64_t *align, hr_err *e) {
    gguf_str dup;
    int d = gguf_find_dup(w->keys, w->n_keys, sizeof *w->keys, offsetof(wkey, key), &dup);
    if (d) return d < 0 ? hr_errf(e, "out of memory") : hr_errf(e, "duplicate KV key '%s'", dup.ptr);
    d = gguf_find_dup(w->tensors, w->n_tensors, sizeof *w->tensors, offsetof(wtensor, name), &dup);
    if (d) return d < 0 ? hr_errf(e, "out of memory") : hr_errf(e, "duplicate tensor name '%s'", dup.ptr);
    *align = GGUF_DEFAULT_ALIGNMENT;
    for (size_t i = 0; i < w->n_keys; i++) {
        if (!gguf_str_eq(w->keys[i].key, "general.alignment")) continue;
        if (w->keys[i].type != GGUF_VT_UINT32)
            return hr_errf(e, "general.alignment has type %s (must be uint32)", gguf_vtype_name(w->keys[i].type));
        *align = w->keys[i].u;
        if (*align == 0 || (*align & (*align - 1)))
            return hr_errf(e, "general.alignment = %llu is not a nonzero power of two", (unsigned long long)*align);
    }
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_tensors; i++) {
        wtensor *t = &w->tensors[i];
        if (check_tensor(t, e)) return -1;
        t->offset = off;
        if (!hr_add_u64(off, t->nbytes, &off) || !hr_add_u64(off, *align - 1, &off))
            return hr_errf(e, "data section size overflows");
        off -= off % *align;
    }
    return 0;
}

typedef struct wfile {
    FILE *fp;
    uint64_t pos;
    bool bad;
} wfile;

static void wf_put(wfile *f, const void *b, size_t n) {
    if (f->bad || n == 0) return;
    if (fwrite(b, 1, n, f->fp) != n) f->bad = true;
    f->pos += n;
}

static void wf_pad(wfile *f, uint64_t align) {
    static const uint8_t zeros[64];
    uint64_t pad = (align - f->pos % align) % align;
    while (pad && !f->bad) {
        size_t k = pad < sizeof zeros ? (size_t)pad : sizeof zeros;
        wf_put(f, zeros, k);
        pad -= k;
    }
}

static void wf_all(wfile *f, gguf_writer *w, uint64_t align) {
    uint32_t version = 3;
    uint64_t nt = w->n_tensors, nk = w->n_keys;
    wf_put(f, w->sparse ? "PWRI" : "GGUF", 4);
    wf_put(f, &version, 4);
    wf_put(f, &nt, 8);
    wf_put(f, &nk, 8);
    wf_put(f, w->kvs.p, w->kvs.n);
    for (size_t i = 0; i < w->n_tensors; i++) {
        const wtensor *t = &w->tensors[i];
        wf_put(f, &t->name.len, 8);
        wf_put(f, t->name.ptr, (size_t)t->name.len);
        wf_put(f, &t->n_dims, 4);
        wf_put(f, t->ne, 8 * (size_t)t->n_dims);
        wf_put(f, &t->type, 4);
        wf_put(f, &t->offset, 8);
    }
    wf_pad(f, align);
    for (size_t i = 0; i < w->n_tensors && !f->bad; i++) {
        const wtensor *t = &w->tensors[i];
        for (uint64_t done = 0; done < t->nbytes && !f->bad;) {
            uint64_t k = t->nbytes - done < (1u << 30) ? t->nbytes - done : (1u << 30);
            wf_put(f, (const uint8_t *)t->data + done, (size_t)k);
            done += k;
        }
        wf_pad(f, align);
    }
}

int gguf_w_write(gguf_writer *w, const char *path, hr_err *e) {
    if (!w) return hr_errf(e, "%s: out of memory creating the GGUF writer", path);
    if (w->failed) return hr_errf(e, "%s: %s", path, w->err.msg);
    uint64_t align = GGUF_DEFAULT_ALIGNMENT;
    if (check_all(w, &align, e)) return hr_errctx(e, "%s", path);
    wfile f = {fopen(path, "wb"), 0, false};
    if (!f.fp) return hr_errf(e, "%s: cannot create: %s", path, strerror(errno));
    wf_all(&f, w, align);
    int err = f.bad ? errno : 0;
    if (fclose(f.fp) && !f.bad) {
        f.bad = true;
        err = errno;
    }
    if (f.bad) {
        remove(path);
        return hr_errf(e, "%s: write failed: %s", path, strerror(err ? err : EIO));
    }
    return 0;
}
