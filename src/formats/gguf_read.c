/* GGUF reader. Every count, length and offset taken from the file is checked against
 * the bytes that remain before it is used or allocated for, so a hostile or truncated
 * file fails with one message that names the problem and never reads out of bounds. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util/checked.h"
#include "gguf.h"
#include "gguf_internal.h"
#include "types.h"

/* Smallest encodings, used to bound counts by the bytes left before allocating. */
#define MIN_KV_BYTES 13     /* key length (8) + type (4) + a 1-byte value */
#define MIN_TINFO_BYTES 32  /* name length (8) + n_dims (4) + ne0 (8) + type (4) + offset (8) */
#define MIN_STR_BYTES 8     /* length prefix */
#define MIN_ARR_BYTES 12    /* element type (4) + count (8) */

typedef struct rd {
    const uint8_t *p;
    uint64_t size, pos;
    hr_err *e;
} rd;

static uint64_t rd_left(const rd *r) { return r->size - r->pos; }

static int rd_bytes(rd *r, uint64_t n, const char *what, const uint8_t **out) {
    if (n > rd_left(r))
        return hr_errf(r->e, "truncated file: %s at offset %llu needs %llu bytes, only %llu left", what,
                       (unsigned long long)r->pos, (unsigned long long)n, (unsigned long long)rd_left(r));
    *out = r->p + r->pos;
    r->pos += n;
    return 0;
}

static int rd_u32(rd *r, const char *what, uint32_t *v) {
    const uint8_t *b = NULL;
    if (rd_bytes(r, 4, what, &b)) return -1;
    memcpy(v, b, 4);
    return 0;
}

static int rd_u64(rd *r, const char *what, uint64_t *v) {
    const uint8_t *b = NULL;
    if (rd_bytes(r, 8, what, &b)) return -1;
    memcpy(v, b, 8);
    return 0;
}

static int rd_str(rd *r, const char *what, gguf_str *s) {
    uint64_t at = r->pos, len;
    if (rd_u64(r, what, &len)) return -1;
    if (len > rd_left(r))
        return hr_errf(r->e, "%s at offset %llu: length %llu exceeds the %llu bytes left in the file", what,
                       (unsigned long long)at, (unsigned long long)len, (unsigned long long)rd_left(r));
    s->ptr = (const char *)(r->p + r->pos);
    s->len = len;
    r->pos += len;
    return 0;
}

static void scalar_decode(gguf_vtype t, const uint8_t *b, gguf_value *v) {
    switch (t) {
    case GGUF_VT_UINT8: v->v.u = b[0]; break;
    case GGUF_VT_BOOL: v->v.u = b[0] != 0; break;
    case GGUF_VT_INT8: { int8_t x; memcpy(&x, b, 1); v->v.i = x; break; }
    case GGUF_VT_UINT16: { uint16_t x; memcpy(&x, b, 2); v->v.u = x; break; }
    case GGUF_VT_INT16: { int16_t x; memcpy(&x, b, 2); v->v.i = x; break; }
    case GGUF_VT_UINT32: { uint32_t x; memcpy(&x, b, 4); v->v.u = x; break; }
    case GGUF_VT_INT32: { int32_t x; memcpy(&x, b, 4); v->v.i = x; break; }
    case GGUF_VT_UINT64: memcpy(&v->v.u, b, 8); break;
    case GGUF_VT_INT64: memcpy(&v->v.i, b, 8); break;
    case GGUF_VT_FLOAT32: { float x; memcpy(&x, b, 4); v->v.f = x; break; }
    case GGUF_VT_FLOAT64: memcpy(&v->v.f, b, 8); break;
    default: break;
    }
}

static int rd_value(rd *r, gguf_vtype t, gguf_value *v, int depth);

static int rd_array(rd *r, gguf_array *a, int depth) {
    uint64_t at = r->pos;
    uint32_t et;
    if (depth >= GGUF_MAX_DEPTH)
        return hr_errf(r->e, "array at offset %llu: arrays nested deeper than %d levels", (unsigned long long)at,
                       GGUF_MAX_DEPTH);
    if (rd_u32(r, "array element type", &et)) return -1;
    if (et >= GGUF_VT_COUNT)
        return hr_errf(r->e, "array at offset %llu: unknown element type %u", (unsigned long long)at, et);
    a->type = (gguf_vtype)et;
    if (rd_u64(r, "array length", &a->n)) return -1;
    size_t esz = gguf_vtype_size(a->type);
    uint64_t min = esz ? esz : (a->type == GGUF_VT_STRING ? MIN_STR_BYTES : MIN_ARR_BYTES);
    if (a->n > rd_left(r) / min)
        return hr_errf(r->e, "array at offset %llu: %llu elements of type %s cannot fit in the %llu bytes left",
                       (unsigned long long)at, (unsigned long long)a->n, gguf_vtype_name(a->type),
                       (unsigned long long)rd_left(r));
    if (esz) return rd_bytes(r, a->n * esz, "array data", &a->raw);
    if (a->n == 0) return 0;
    a->items = calloc(a->n, sizeof *a->items);
    if (!a->items) return hr_errf(r->e, "out of memory for an array of %llu elements", (unsigned long long)a->n);
    for (uint64_t i = 0; i < a->n; i++)
        if (rd_value(r, a->type, &a->items[i], depth + 1)) return -1;
    return 0;
}

static int rd_value(rd *r, gguf_vtype t, gguf_value *v, int depth) {
    v->type = t;
    if (t == GGUF_VT_STRING) return rd_str(r, "string", &v->v.s);
    if (t == GGUF_VT_ARRAY) return rd_array(r, &v->v.a, depth);
    const uint8_t *b = NULL;
    if (rd_bytes(r, gguf_vtype_size(t), gguf_vtype_name(t), &b)) return -1;
    scalar_decode(t, b, v);
    return 0;
}

void gguf_value_free(gguf_value *v) {
    if (v->type != GGUF_VT_ARRAY || !v->v.a.items) return;
    for (uint64_t i = 0; i < v->v.a.n; i++) gguf_value_free(&v->v.a.items[i]);
    free(v->v.a.items);
    v->v.a.items = NULL;
}

static int parse_header(rd *r, gguf_file *f) {
    const uint8_t *m = NULL;
    if (r->size < 24)
        return hr_errf(r->e, "file of %llu bytes is too small for a GGUF header (24 bytes)",
                       (unsigned long long)r->size);
    if (rd_bytes(r, 4, "magic", &m)) return -1;
    if (!memcmp(m, "PWRI", 4)) f->sparse = true;
    else if (memcmp(m, "GGUF", 4))
        return hr_errf(r->e, "bad magic %02x %02x %02x %02x: not a GGUF file (expected 'GGUF' or 'PWRI')", m[0],
                       m[1], m[2], m[3]);
    if (rd_u32(r, "version", &f->version)) return -1;
    if (f->version == 0x03000000u || f->version == 0x02000000u)
        return hr_errf(r->e, "big-endian GGUF files are not supported");
    if (f->version != 2 && f->version != 3)
        return hr_errf(r->e, "unsupported GGUF version %u (supported: 3, and 2)", f->version);
    if (rd_u64(r, "tensor count", &f->n_tensors) || rd_u64(r, "KV count", &f->n_kv)) return -1;
    uint64_t left = rd_left(r);
    if (f->n_kv > left / MIN_KV_BYTES)
        return hr_errf(r->e, "header claims %llu KV pairs, more than the %llu bytes left can hold",
                       (unsigned long long)f->n_kv, (unsigned long long)left);
    if (f->n_tensors > left / MIN_TINFO_BYTES ||
        f->n_kv * MIN_KV_BYTES + f->n_tensors * MIN_TINFO_BYTES > left)
        return hr_errf(r->e, "header claims %llu tensors and %llu KV pairs, more than the %llu bytes left can hold",
                       (unsigned long long)f->n_tensors, (unsigned long long)f->n_kv, (unsigned long long)left);
    return 0;
}

static int parse_kvs(rd *r, gguf_file *f) {
    if (f->n_kv) {
        f->kv = calloc(f->n_kv, sizeof *f->kv);
        if (!f->kv) return hr_errf(r->e, "out of memory for %llu KV pairs", (unsigned long long)f->n_kv);
    }
    for (uint64_t i = 0; i < f->n_kv; i++) {
        gguf_kv *kv = &f->kv[i];
        uint32_t t;
        char kb[GGUF_ESC_MAX];
        if (rd_str(r, "key", &kv->key)) return hr_errctx(r->e, "KV %llu", (unsigned long long)i);
        if (rd_u32(r, "value type", &t))
            return hr_errctx(r->e, "KV '%s'", gguf_escape(kv->key, kb));
        if (t >= GGUF_VT_COUNT)
            return hr_errf(r->e, "KV '%s': unknown value type %u", gguf_escape(kv->key, kb), t);
        if (rd_value(r, (gguf_vtype)t, &kv->val, 0))
            return hr_errctx(r->e, "KV '%s'", gguf_escape(kv->key, kb));
    }
    gguf_str dup;
    int d = gguf_find_dup(f->kv, f->n_kv, sizeof *f->kv, offsetof(gguf_kv, key), &dup);
    if (d < 0) return hr_errf(r->e, "out of memory checking KV keys");
    if (d) {
        char kb[GGUF_ESC_MAX];
        return hr_errf(r->e, "duplicate KV key '%s'", gguf_escape(dup, kb));
    }
    return 0;
}

static int parse_alignment(rd *r, gguf_file *f) {
    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_kv *kv = gguf_find_kv(f, "general.alignment");
    if (!kv) return 0;
    if (kv->val.type != GGUF_VT_UINT32)
        return hr_errf(r->e, "general.alignment has type %s (must be uint32)", gguf_vtype_name(kv->val.type));
    uint64_t a = kv->val.v.u;
    if (a == 0 || (a & (a - 1)))
        return hr_errf(r->e, "general.alignment = %llu is not a nonzero power of two", (unsigned long long)a);
    f->alignment = a;
    return 0;
}

/* Element count and byte size of a tensor, overflow-checked, with ggml's limits
 * (element counts fit int64_t; ne0 whole blocks). */
static int tensor_size(rd *r, gguf_tensor *t, const char *name) {
    uint64_t n = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        if (t->ne[d] > (uint64_t)INT64_MAX)
            return hr_errf(r->e, "tensor '%s': ne%u = %llu is negative as int64", name, d,
                           (unsigned long long)t->ne[d]);
        if (!hr_mul_u64(n, t->ne[d], &n) || n > (uint64_t)INT64_MAX)
            return hr_errf(r->e, "tensor '%s': element count overflows int64", name);
    }
    uint64_t blk = hr_type_block_elems(t->type);
    if (blk == 0 || t->ne[0] % blk)
        return hr_errf(r->e, "tensor '%s': ne0 = %llu is not a multiple of the %s block size %llu", name,
                       (unsigned long long)t->ne[0], hr_type_name(t->type), (unsigned long long)blk);
    uint64_t bytes = hr_row_bytes(t->type, t->ne[0]);
    if (bytes == 0 && t->ne[0] != 0) return hr_errf(r->e, "tensor '%s': row size overflows", name);
    for (uint32_t d = 1; d < GGUF_MAX_DIMS; d++)
        if (!hr_mul_u64(bytes, t->ne[d], &bytes)) return hr_errf(r->e, "tensor '%s': byte size overflows", name);
    t->nbytes = bytes;
    return 0;
}

static int parse_tensor_info(rd *r, gguf_tensor *t, uint64_t idx) {
    char nb[GGUF_ESC_MAX];
    if (rd_str(r, "tensor name", &t->name)) return hr_errctx(r->e, "tensor %llu", (unsigned long long)idx);
    const char *name = gguf_escape(t->name, nb);
    if (t->name.len == 0) return hr_errf(r->e, "tensor %llu has an empty name", (unsigned long long)idx);
    if (t->name.len >= GGUF_MAX_NAME)
        return hr_errf(r->e, "tensor '%s': name is %llu bytes long (limit %d)", name,
                       (unsigned long long)t->name.len, GGUF_MAX_NAME - 1);
    if (rd_u32(r, "n_dims", &t->n_dims)) return hr_errctx(r->e, "tensor '%s'", name);
    if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS)
        return hr_errf(r->e, "tensor '%s': %u dimensions (must be 1..%d)", name, t->n_dims, GGUF_MAX_DIMS);
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++)
        if (rd_u64(r, "dimension", &t->ne[d])) return hr_errctx(r->e, "tensor '%s'", name);
    if (rd_u32(r, "type", &t->type)) return hr_errctx(r->e, "tensor '%s'", name);
    if (!hr_type_known(t->type)) {
        const char *gn = hr_type_ggml_name(t->type);
        if (gn) return hr_errf(r->e, "tensor '%s': type %s (ggml id %u) is not supported by Hearth", name, gn, t->type);
        return hr_errf(r->e, "tensor '%s': unknown type id %u", name, t->type);
    }
    if (tensor_size(r, t, name)) return -1;
    if (rd_u64(r, "offset", &t->offset)) return hr_errctx(r->e, "tensor '%s'", name);
    return 0;
}

static int cmp_offset(const void *a, const void *b) {
    const gguf_tensor *x = *(const gguf_tensor *const *)a, *y = *(const gguf_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int check_overlap(rd *r, gguf_file *f) {
    if (f->n_tensors < 2) return 0;
    const gguf_tensor **by = malloc(f->n_tensors * sizeof *by);
    if (!by) return hr_errf(r->e, "out of memory checking tensor offsets");
    for (uint64_t i = 0; i < f->n_tensors; i++) by[i] = &f->tensors[i];
    qsort(by, f->n_tensors, sizeof *by, cmp_offset);
    int rc = 0;
    for (uint64_t i = 1; i < f->n_tensors && !rc; i++) {
        const gguf_tensor *a = by[i - 1], *b = by[i];
        if (b->offset - a->offset < a->nbytes) {
            char na[GGUF_ESC_MAX], nb[GGUF_ESC_MAX];
            rc = hr_errf(r->e, "tensors '%s' [offset %llu, %llu bytes] and '%s' [offset %llu, %llu bytes] overlap",
                         gguf_escape(a->name, na), (unsigned long long)a->offset, (unsigned long long)a->nbytes,
                         gguf_escape(b->name, nb), (unsigned long long)b->offset, (unsigned long long)b->nbytes);
        }
    }
    free(by);
    return rc;
}

static int place_tensors(rd *r, gguf_file *f) {
    if (!hr_add_u64(r->pos, f->alignment - 1, &f->data_offset))
        return hr_errf(r->e, "data section offset overflows");
    f->data_offset -= f->data_offset % f->alignment;
    if (f->n_tensors == 0) return 0;
    if (f->data_offset > f->size)
        return hr_errf(r->e, "data section would start at offset %llu, past the end of the file (size %llu)",
                       (unsigned long long)f->data_offset, (unsigned long long)f->size);
    uint64_t avail = f->size - f->data_offset;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        char nb[GGUF_ESC_MAX];
        if (t->offset % f->alignment)
            return hr_errf(r->e, "tensor '%s': offset %llu is not a multiple of the alignment %llu",
                           gguf_escape(t->name, nb), (unsigned long long)t->offset,
                           (unsigned long long)f->alignment);
        if (t->offset > avail || t->nbytes > avail - t->offset)
            return hr_errf(r->e,
                           "tensor '%s': data [offset %llu, %llu bytes] extends past end of file "
                           "(data section starts at %llu, file size %llu)",
                           gguf_escape(t->name, nb), (unsigned long long)t->offset, (unsigned long long)t->nbytes,
                           (unsigned long long)f->data_offset, (unsigned long long)f->size);
        t->data = f->base + f->data_offset + t->offset;
    }
    return check_overlap(r, f);
}

static int parse_tensors(rd *r, gguf_file *f) {
    if (f->n_tensors) {
        f->tensors = calloc(f->n_tensors, sizeof *f->tensors);
        if (!f->tensors) return hr_errf(r->e, "out of memory for %llu tensors", (unsigned long long)f->n_tensors);
    }
    for (uint64_t i = 0; i < f->n_tensors; i++)
        if (parse_tensor_info(r, &f->tensors[i], i)) return -1;
    gguf_str dup;
    int d = gguf_find_dup(f->tensors, f->n_tensors, sizeof *f->tensors, offsetof(gguf_tensor, name), &dup);
    if (d < 0) return hr_errf(r->e, "out of memory checking tensor names");
    if (d) {
        char nb[GGUF_ESC_MAX];
        return hr_errf(r->e, "duplicate tensor name '%s'", gguf_escape(dup, nb));
    }
    return place_tensors(r, f);
}

int gguf_parse(gguf_file *f, const void *buf, size_t size, hr_err *e) {
    memset(f, 0, sizeof *f);
    f->base = buf;
    f->size = size;
    rd r = {buf, size, 0, e};
    if (!buf && size) return hr_errf(e, "no buffer");
    if (parse_header(&r, f) || parse_kvs(&r, f) || parse_alignment(&r, f) || parse_tensors(&r, f)) {
        gguf_close(f);
        return -1;
    }
    return 0;
}

int gguf_open(gguf_file *f, const char *path, hr_err *e) {
    memset(f, 0, sizeof *f);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return hr_errf(e, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return hr_errf(e, "%s: not a regular file", path);
    }
    if (st.st_size == 0) {
        close(fd);
        return hr_errf(e, "%s: empty file", path);
    }
    size_t size = (size_t)st.st_size;
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int err = errno;
    close(fd);
    if (map == MAP_FAILED) return hr_errf(e, "%s: cannot map: %s", path, strerror(err));
    gguf_advise_huge(map, size);
    if (gguf_parse(f, map, size, e)) {
        munmap(map, size);
        return hr_errctx(e, "%s", path);
    }
    f->mapped = true;
    return 0;
}

void gguf_close(gguf_file *f) {
    if (!f) return;
    for (uint64_t i = 0; f->kv && i < f->n_kv; i++) gguf_value_free(&f->kv[i].val);
    free(f->kv);
    free(f->tensors);
    if (f->mapped) munmap((void *)f->base, f->size);
    memset(f, 0, sizeof *f);
}
