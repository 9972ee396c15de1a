/* hearth inspect: a GGUF file's header, metadata and tensors, as text (like
 * llama.cpp's gguf-dump) or JSON. Long arrays and strings are abbreviated unless --all. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "formats/gguf.h"
#include "formats/type_mix.h"
#include "formats/types.h"

#define ARRAY_HEAD 8    /* array elements shown before abbreviating */
#define STRING_HEAD 120 /* string bytes shown in text mode before abbreviating */

typedef struct ictx {
    FILE *o;
    bool json;
    bool all;
} ictx;

static void usage(FILE *f) {
    fprintf(f,
            "usage: hearth inspect FILE [--json] [--all]\n"
            "Print a GGUF file's header, metadata (KV pairs) and tensors.\n\n"
            "  --json    machine-readable output\n"
            "  --all     print arrays and strings in full (default: first %d elements, %d bytes)\n"
            "  -h, --help\n",
            ARRAY_HEAD, STRING_HEAD);
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid. */
static int utf8_len(const unsigned char *p, uint64_t n) {
    int len = p[0] < 0x80 ? 1 : (p[0] & 0xe0) == 0xc0 ? 2 : (p[0] & 0xf0) == 0xe0 ? 3 : (p[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (len == 0 || (uint64_t)len > n) return 0;
    uint32_t cp = len == 1 ? p[0] : len == 2 ? p[0] & 0x1fu : len == 3 ? p[0] & 0x0fu : p[0] & 0x07u;
    for (int i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (p[i] & 0x3fu);
    }
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return len;
}

/* Quoted, escaped string. Text mode shows invalid UTF-8 as \xNN; JSON as U+FFFD. */
static void put_str(const ictx *c, const char *s, uint64_t n, bool quote, bool abbreviate) {
    const unsigned char *p = (const unsigned char *)s;
    uint64_t limit = abbreviate && !c->all && !c->json && n > STRING_HEAD ? STRING_HEAD : n;
    if (quote) fputc('"', c->o);
    for (uint64_t i = 0; i < limit;) {
        unsigned char ch = p[i];
        int len = utf8_len(p + i, n - i);
        if (ch == '"' || ch == '\\') fprintf(c->o, "\\%c", ch);
        else if (ch == '\n') fputs("\\n", c->o);
        else if (ch == '\t') fputs("\\t", c->o);
        else if (ch == '\r') fputs("\\r", c->o);
        else if (len == 0 && c->json) fputs("\\ufffd", c->o);
        else if (len == 0) fprintf(c->o, "\\x%02x", ch);
        else if (ch < 0x20 || ch == 0x7f) fprintf(c->o, c->json ? "\\u%04x" : "\\x%02x", ch);
        else fwrite(p + i, 1, (size_t)len, c->o);
        i += len ? (uint64_t)len : 1;
    }
    if (quote) fputc('"', c->o);
    if (limit < n) fprintf(c->o, "...(%llu bytes)", (unsigned long long)n);
}

/* Shortest decimal that reads back as the same float32/float64. */
static void put_double(const ictx *c, double x, bool single) {
    if (!isfinite(x)) {
        fputs(c->json ? "null" : isnan(x) ? "nan" : x > 0 ? "inf" : "-inf", c->o);
        return;
    }
    char buf[40];
    for (int prec = single ? 6 : 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, x);
        double y = strtod(buf, NULL);
        if (single ? (float)y == (float)x : y == x) break;
    }
    fputs(buf, c->o);
}

/* Numeric/bool array element i as a scalar value (elements may be unaligned). */
static gguf_value elem(const gguf_array *a, uint64_t i) {
    gguf_value v = {.type = a->type};
    size_t sz = gguf_vtype_size(a->type);
    const uint8_t *p = a->raw + i * sz;
    switch (a->type) {
    case GGUF_VT_UINT8: v.v.u = p[0]; break;
    case GGUF_VT_BOOL: v.v.u = p[0] != 0; break;
    case GGUF_VT_UINT16: { uint16_t x; memcpy(&x, p, 2); v.v.u = x; break; }
    case GGUF_VT_UINT32: { uint32_t x; memcpy(&x, p, 4); v.v.u = x; break; }
    case GGUF_VT_FLOAT32: { float x; memcpy(&x, p, 4); v.v.f = x; break; }
    case GGUF_VT_INT8: { int8_t x; memcpy(&x, p, 1); v.v.i = x; break; }
    case GGUF_VT_INT16: { int16_t x; memcpy(&x, p, 2); v.v.i = x; break; }
    case GGUF_VT_INT32: { int32_t x; memcpy(&x, p, 4); v.v.i = x; break; }
    case GGUF_VT_INT64: memcpy(&v.v.i, p, 8); break;
    case GGUF_VT_UINT64: memcpy(&v.v.u, p, 8); break;
    case GGUF_VT_FLOAT64: memcpy(&v.v.f, p, 8); break;
    default: break;
    }
    return v;
}

static void put_value(const ictx *c, const gguf_value *v);

static void put_array(const ictx *c, const gguf_array *a) {
    uint64_t shown = !c->all && a->n > ARRAY_HEAD ? ARRAY_HEAD : a->n;
    fputc('[', c->o);
    for (uint64_t i = 0; i < shown; i++) {
        if (i) fputs(", ", c->o);
        if (a->items) {
            put_value(c, &a->items[i]);
        } else {
            gguf_value v = elem(a, i);
            put_value(c, &v);
        }
    }
    if (shown < a->n && !c->json) fprintf(c->o, ", ... (%llu items)", (unsigned long long)a->n);
    fputc(']', c->o);
}

static void put_value(const ictx *c, const gguf_value *v) {
    switch (v->type) {
    case GGUF_VT_UINT8: case GGUF_VT_UINT16: case GGUF_VT_UINT32: case GGUF_VT_UINT64:
        fprintf(c->o, "%llu", (unsigned long long)v->v.u);
        break;
    case GGUF_VT_INT8: case GGUF_VT_INT16: case GGUF_VT_INT32: case GGUF_VT_INT64:
        fprintf(c->o, "%lld", (long long)v->v.i);
        break;
    case GGUF_VT_BOOL: fputs(v->v.u ? "true" : "false", c->o); break;
    case GGUF_VT_FLOAT32: put_double(c, v->v.f, true); break;
    case GGUF_VT_FLOAT64: put_double(c, v->v.f, false); break;
    case GGUF_VT_STRING: put_str(c, v->v.s.ptr, v->v.s.len, true, true); break;
    case GGUF_VT_ARRAY: put_array(c, &v->v.a); break;
    default: fputs("null", c->o); break;
    }
}

/* "uint32", "[string]", "[[int32]]": the type with its array nesting (from the first elements). */
static void put_type(const gguf_value *v, char *buf, size_t cap) {
    const gguf_value *x = v;
    int depth = 0;
    while (x->type == GGUF_VT_ARRAY && x->v.a.type == GGUF_VT_ARRAY && x->v.a.n && x->v.a.items && depth < 8) {
        x = &x->v.a.items[0];
        depth++;
    }
    bool arr = x->type == GGUF_VT_ARRAY;
    int brackets = depth + arr;
    snprintf(buf, cap, "%.*s%s%.*s", brackets, "[[[[[[[[[", gguf_vtype_name(arr ? x->v.a.type : x->type), brackets,
             "]]]]]]]]]");
}

static void print_kvs(const ictx *c, const gguf_file *f) {
    if (!c->json) fprintf(c->o, "KV pairs: %llu\n", (unsigned long long)f->n_kv);
    for (uint64_t i = 0; i < f->n_kv; i++) {
        const gguf_kv *kv = &f->kv[i];
        char tn[32];
        put_type(&kv->val, tn, sizeof tn);
        bool arr = kv->val.type == GGUF_VT_ARRAY;
        if (c->json) {
            fprintf(c->o, "%s\n    {\"key\": ", i ? "," : "");
            put_str(c, kv->key.ptr, kv->key.len, true, false);
            fprintf(c->o, ", \"type\": \"%s\"", arr ? "array" : tn);
            if (arr)
                fprintf(c->o, ", \"element_type\": \"%s\", \"count\": %llu", gguf_vtype_name(kv->val.v.a.type),
                        (unsigned long long)kv->val.v.a.n);
            fputs(", \"value\": ", c->o);
            put_value(c, &kv->val);
            fputc('}', c->o);
        } else {
            fprintf(c->o, "  %5llu: %-10s ", (unsigned long long)i + 1, tn);
            put_str(c, kv->key.ptr, kv->key.len, false, false);
            if (arr) fprintf(c->o, " (%llu)", (unsigned long long)kv->val.v.a.n);
            fputs(" = ", c->o);
            put_value(c, &kv->val);
            fputc('\n', c->o);
        }
    }
}

static void print_tensors(const ictx *c, const gguf_file *f, uint64_t *elems, uint64_t *bytes) {
    uint64_t width = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++)
        if (f->tensors[i].name.len > width) width = f->tensors[i].name.len;
    if (!c->json) fprintf(c->o, "tensors: %llu\n", (unsigned long long)f->n_tensors);
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        uint64_t n = 1;
        char shape[128];
        size_t o = 0;
        for (uint32_t d = 0; d < t->n_dims; d++) {
            n *= t->ne[d]; /* the reader bounded the product by INT64_MAX */
            o += (size_t)snprintf(shape + o, sizeof shape - o, "%s%llu", d ? ", " : "", (unsigned long long)t->ne[d]);
        }
        *elems += n;
        *bytes += t->nbytes;
        if (c->json) {
            fprintf(c->o, "%s\n    {\"name\": ", i ? "," : "");
            put_str(c, t->name.ptr, t->name.len, true, false);
            fprintf(c->o, ", \"type\": \"%s\", \"type_id\": %u, \"shape\": [%s], \"offset\": %llu, \"bytes\": %llu}",
                    hr_type_name(t->type), t->type, shape, (unsigned long long)t->offset,
                    (unsigned long long)t->nbytes);
        } else {
            fprintf(c->o, "  %5llu: ", (unsigned long long)i + 1);
            put_str(c, t->name.ptr, t->name.len, false, false);
            fprintf(c->o, "%*s  %-5s [%s]  offset %llu  bytes %llu\n", (int)(width - t->name.len), "",
                    hr_type_name(t->type), shape,
                    (unsigned long long)t->offset, (unsigned long long)t->nbytes);
        }
    }
}

/* The type mix: a Q4_K_M file is mostly q4_k with q6_k and f32; users check it here. */
static void print_types(const ictx *c, const gguf_file *f) {
    hr_type_share mix[HR_TYPE_MIX_MAX];
    int n = hr_type_mix(f, mix);
    uint64_t total = 0;
    for (int i = 0; i < n; i++) total += mix[i].bytes;
    if (!c->json) fprintf(c->o, "types:\n");
    for (int i = 0; i < n; i++) {
        const hr_type_share *s = &mix[i];
        double pct = total ? 100.0 * (double)s->bytes / (double)total : 0.0;
        if (c->json)
            fprintf(c->o, "%s\n    {\"type\": \"%s\", \"type_id\": %u, \"tensors\": %u, \"elements\": %llu, "
                          "\"bytes\": %llu, \"bits_per_weight\": %.4f}",
                    i ? "," : "", hr_type_name(s->type), s->type, s->n_tensors, (unsigned long long)s->elems,
                    (unsigned long long)s->bytes, hr_type_share_bpw(s));
        else
            fprintf(c->o, "  %-7s %4u tensors  %12llu bytes  %5.1f%%  %6.3f bits/weight\n", hr_type_name(s->type),
                    s->n_tensors, (unsigned long long)s->bytes, pct, hr_type_share_bpw(s));
    }
}

static void print_file(const ictx *c, const char *path, const gguf_file *f) {
    uint64_t elems = 0, bytes = 0;
    const char *magic = f->sparse ? "PWRI" : "GGUF";
    if (c->json) {
        fputs("{\"file\": ", c->o);
        put_str(c, path, strlen(path), true, false);
        fprintf(c->o,
                ", \"magic\": \"%s\", \"version\": %u, \"alignment\": %llu, \"data_offset\": %llu, "
                "\"size\": %llu,\n  \"kv\": [",
                magic, f->version, (unsigned long long)f->alignment, (unsigned long long)f->data_offset,
                (unsigned long long)f->size);
        print_kvs(c, f);
        fputs("],\n  \"tensors\": [", c->o);
        print_tensors(c, f, &elems, &bytes);
        fputs("],\n  \"types\": [", c->o);
        print_types(c, f);
        fprintf(c->o, "],\n  \"n_kv\": %llu, \"n_tensors\": %llu, \"total_elements\": %llu, \"total_bytes\": %llu}\n",
                (unsigned long long)f->n_kv, (unsigned long long)f->n_tensors, (unsigned long long)elems,
                (unsigned long long)bytes);
        return;
    }
    fprintf(c->o, "%s: magic %s, version %u, alignment %llu, data offset %llu, file size %llu\n", path, magic,
            f->version, (unsigned long long)f->alignment, (unsigned long long)f->data_offset,
            (unsigned long long)f->size);
    print_kvs(c, f);
    print_tensors(c, f, &elems, &bytes);
    print_types(c, f);
    fprintf(c->o, "total: %llu tensors, %llu elements, %llu bytes\n", (unsigned long long)f->n_tensors,
            (unsigned long long)elems, (unsigned long long)bytes);
}

int hr_cmd_inspect(int argc, char **argv) {
    ictx c = {stdout, false, false};
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--json")) c.json = true;
        else if (!strcmp(a, "--all")) c.all = true;
        else if (a[0] == '-' && a[1]) return hr_usage_error("inspect", "unknown flag '%s'", a);
        else if (path) return hr_usage_error("inspect", "more than one file given ('%s' and '%s')", path, a);
        else path = a;
    }
    if (!path) return hr_usage_error("inspect", "no file given");
    gguf_file f;
    hr_err e = {{0}};
    if (gguf_open(&f, path, &e)) {
        fprintf(stderr, "hearth inspect: %s\n", e.msg);
        return 1;
    }
    print_file(&c, path, &f);
    gguf_close(&f);
    if (fflush(stdout)) {
        fprintf(stderr, "hearth inspect: cannot write output\n");
        return 1;
    }
    return 0;
}
