/* Lookups and typed getters over a parsed GGUF file. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "gguf_internal.h"

static const struct {
    const char *name;
    size_t size;
} vtypes[GGUF_VT_COUNT] = {
    [GGUF_VT_UINT8] = {"uint8", 1},   [GGUF_VT_INT8] = {"int8", 1},       [GGUF_VT_UINT16] = {"uint16", 2},
    [GGUF_VT_INT16] = {"int16", 2},   [GGUF_VT_UINT32] = {"uint32", 4},   [GGUF_VT_INT32] = {"int32", 4},
    [GGUF_VT_FLOAT32] = {"float32", 4}, [GGUF_VT_BOOL] = {"bool", 1},     [GGUF_VT_STRING] = {"string", 0},
    [GGUF_VT_ARRAY] = {"array", 0},   [GGUF_VT_UINT64] = {"uint64", 8},   [GGUF_VT_INT64] = {"int64", 8},
    [GGUF_VT_FLOAT64] = {"float64", 8},
};

size_t gguf_vtype_size(gguf_vtype t) { return (unsigned)t < GGUF_VT_COUNT ? vtypes[t].size : 0; }

const char *gguf_vtype_name(gguf_vtype t) { return (unsigned)t < GGUF_VT_COUNT ? vtypes[t].name : "unknown"; }

bool gguf_str_eq(gguf_str s, const char *c) {
    size_t n = strlen(c);
    return s.len == n && (n == 0 || !memcmp(s.ptr, c, n));
}

const gguf_kv *gguf_find_kv(const gguf_file *f, const char *key) {
    for (uint64_t i = 0; i < f->n_kv; i++)
        if (gguf_str_eq(f->kv[i].key, key)) return &f->kv[i];
    return NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name) {
    for (uint64_t i = 0; i < f->n_tensors; i++)
        if (gguf_str_eq(f->tensors[i].name, name)) return &f->tensors[i];
    return NULL;
}

const char *gguf_escape(gguf_str s, char buf[GGUF_ESC_MAX]) {
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (uint64_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (o + 8 > GGUF_ESC_MAX) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            buf[o++] = (char)c;
        } else {
            buf[o++] = '\\';
            buf[o++] = 'x';
            buf[o++] = hex[c >> 4];
            buf[o++] = hex[c & 15];
        }
    }
    buf[o] = 0;
    return buf;
}

static int cmp_str(const void *a, const void *b) {
    const gguf_str *x = a, *y = b;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return x->len ? memcmp(x->ptr, y->ptr, x->len) : 0;
}

int gguf_find_dup(const void *recs, uint64_t n, size_t stride, size_t off, gguf_str *dup) {
    if (n < 2) return 0;
    gguf_str *s = malloc(n * sizeof *s);
    if (!s) return -1;
    for (uint64_t i = 0; i < n; i++) memcpy(&s[i], (const char *)recs + i * stride + off, sizeof *s);
    qsort(s, n, sizeof *s, cmp_str);
    int found = 0;
    for (uint64_t i = 1; i < n && !found; i++)
        if (!cmp_str(&s[i - 1], &s[i])) {
            *dup = s[i];
            found = 1;
        }
    free(s);
    return found;
}

/* ---- typed getters ---- */

static bool is_uint(gguf_vtype t) {
    return t == GGUF_VT_UINT8 || t == GGUF_VT_UINT16 || t == GGUF_VT_UINT32 || t == GGUF_VT_UINT64;
}
static bool is_sint(gguf_vtype t) {
    return t == GGUF_VT_INT8 || t == GGUF_VT_INT16 || t == GGUF_VT_INT32 || t == GGUF_VT_INT64;
}

/* Finds key and checks its type class; 1 if absent, -1 on a type mismatch. */
static int lookup(const gguf_file *f, const char *key, const char *want, bool (*ok)(gguf_vtype),
                  const gguf_value **v, hr_err *e) {
    const gguf_kv *kv = gguf_find_kv(f, key);
    if (!kv) return 1;
    if (!ok(kv->val.type))
        return hr_errf(e, "key '%s' has type %s, expected %s", key, gguf_vtype_name(kv->val.type), want);
    *v = &kv->val;
    return 0;
}

static bool ok_int(gguf_vtype t) { return is_uint(t) || is_sint(t); }
static bool ok_float(gguf_vtype t) { return t == GGUF_VT_FLOAT32 || t == GGUF_VT_FLOAT64; }
static bool ok_bool(gguf_vtype t) { return t == GGUF_VT_BOOL; }
static bool ok_str(gguf_vtype t) { return t == GGUF_VT_STRING; }
static bool ok_arr(gguf_vtype t) { return t == GGUF_VT_ARRAY; }

/* Integer value checked against [lo, hi]; -1 with a message if it does not fit. */
static int get_int(const gguf_file *f, const char *key, int64_t lo, uint64_t hi, const char *tname, uint64_t *u,
                   int64_t *s, hr_err *e) {
    const gguf_value *v = NULL;
    int rc = lookup(f, key, "an integer", ok_int, &v, e);
    if (rc) return rc;
    if (is_uint(v->type)) {
        if (v->v.u > hi)
            return hr_errf(e, "key '%s': value %llu does not fit in %s", key, (unsigned long long)v->v.u, tname);
        *u = v->v.u;
        *s = (int64_t)(v->v.u <= (uint64_t)INT64_MAX ? v->v.u : 0);
        return 0;
    }
    if (v->v.i < lo || (v->v.i >= 0 && (uint64_t)v->v.i > hi))
        return hr_errf(e, "key '%s': value %lld does not fit in %s", key, (long long)v->v.i, tname);
    *s = v->v.i;
    *u = (uint64_t)v->v.i;
    return 0;
}

int gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out, hr_err *e) {
    uint64_t u;
    int64_t s;
    int rc = get_int(f, key, 0, UINT32_MAX, "uint32", &u, &s, e);
    if (!rc) *out = (uint32_t)u;
    return rc;
}

int gguf_get_u64(const gguf_file *f, const char *key, uint64_t *out, hr_err *e) {
    uint64_t u;
    int64_t s;
    int rc = get_int(f, key, 0, UINT64_MAX, "uint64", &u, &s, e);
    if (!rc) *out = u;
    return rc;
}

int gguf_get_i32(const gguf_file *f, const char *key, int32_t *out, hr_err *e) {
    uint64_t u;
    int64_t s;
    int rc = get_int(f, key, INT32_MIN, INT32_MAX, "int32", &u, &s, e);
    if (!rc) *out = (int32_t)s;
    return rc;
}

int gguf_get_f32(const gguf_file *f, const char *key, float *out, hr_err *e) {
    const gguf_value *v = NULL;
    int rc = lookup(f, key, "a float", ok_float, &v, e);
    if (rc) return rc;
    if (isfinite(v->v.f) && fabs(v->v.f) > FLT_MAX)
        return hr_errf(e, "key '%s': value %g does not fit in float32", key, v->v.f);
    *out = (float)v->v.f;
    return 0;
}

int gguf_get_bool(const gguf_file *f, const char *key, bool *out, hr_err *e) {
    const gguf_value *v = NULL;
    int rc = lookup(f, key, "bool", ok_bool, &v, e);
    if (!rc) *out = v->v.u != 0;
    return rc;
}

int gguf_get_str(const gguf_file *f, const char *key, gguf_str *out, hr_err *e) {
    const gguf_value *v = NULL;
    int rc = lookup(f, key, "string", ok_str, &v, e);
    if (!rc) *out = v->v.s;
    return rc;
}

int gguf_get_arr(const gguf_file *f, const char *key, const gguf_array **out, hr_err *e) {
    const gguf_value *v = NULL;
    int rc = lookup(f, key, "array", ok_arr, &v, e);
    if (!rc) *out = &v->v.a;
    return rc;
}

double gguf_arr_num(const gguf_array *a, uint64_t i) {
    size_t sz = gguf_vtype_size(a->type);
    if (!sz || !a->raw || i >= a->n) return 0.0;
    const uint8_t *p = a->raw + i * sz;
    switch (a->type) {
    case GGUF_VT_UINT8: return p[0];
    case GGUF_VT_BOOL: return p[0] != 0;
    case GGUF_VT_INT8: { int8_t x; memcpy(&x, p, 1); return x; }
    case GGUF_VT_UINT16: { uint16_t x; memcpy(&x, p, 2); return x; }
    case GGUF_VT_INT16: { int16_t x; memcpy(&x, p, 2); return x; }
    case GGUF_VT_UINT32: { uint32_t x; memcpy(&x, p, 4); return x; }
    case GGUF_VT_INT32: { int32_t x; memcpy(&x, p, 4); return x; }
    case GGUF_VT_UINT64: { uint64_t x; memcpy(&x, p, 8); return (double)x; }
    case GGUF_VT_INT64: { int64_t x; memcpy(&x, p, 8); return (double)x; }
    case GGUF_VT_FLOAT32: { float x; memcpy(&x, p, 4); return x; }
    case GGUF_VT_FLOAT64: { double x; memcpy(&x, p, 8); return x; }
    default: return 0.0;
    }
}
