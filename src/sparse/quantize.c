/* Whole-file weight conversion (quantize.h). */
#include "quantize.h"
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "formats/gguf.h"
#include "formats/types.h"

uint32_t hr_quantize_ftype(uint32_t type) {
    switch (type) {
    case HR_F32: return 0;
    case HR_F16: return 1;
    case HR_Q4_0: return 2;
    case HR_Q8_0: return 7;
    case HR_BF16: return 32;
    default: return UINT32_MAX;
    }
}

static bool ends_with(gguf_str s, const char *suf) {
    size_t n = strlen(suf);
    return s.len >= n && !memcmp(s.ptr + s.len - n, suf, n);
}

typedef enum action { KEEP, CONVERT, UNFIT } action;

/* llama.cpp leaves the MoE router and learned positions unquantized; vectors stay as they are. */
static action choose(const gguf_tensor *t, uint32_t type) {
    if (!ends_with(t->name, ".weight") || t->n_dims < 2 || !hr_type_is_weight(t->type)) return KEEP;
    if (ends_with(t->name, "ffn_gate_inp.weight") || gguf_str_eq(t->name, "position_embd.weight")) return KEEP;
    if (t->type == type) return KEEP;
    if (t->ne[0] % hr_type_block_elems(type)) return UNFIT;
    return CONVERT;
}

static int same_file(const char *a, const char *b) {
    struct stat sa, sb;
    if (!strcmp(a, b)) return 1;
    if (stat(a, &sa) || stat(b, &sb)) return 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static void *convert(const gguf_tensor *t, uint32_t type, uint64_t *nbytes, float *row) {
    const uint64_t ne0 = t->ne[0], rows = t->ne[1] * t->ne[2] * t->ne[3];
    const uint64_t in_rb = hr_row_bytes(t->type, ne0), out_rb = hr_row_bytes(type, ne0);
    const uint64_t size = rows * out_rb;
    uint8_t *out = malloc(size ? size : 1);
    if (!out) return NULL;
    for (uint64_t r = 0; r < rows; r++) {
        hr_dequant_row(t->type, (const uint8_t *)t->data + r * in_rb, row, (int64_t)ne0);
        hr_quant_row(type, row, out + r * out_rb, (int64_t)ne0);
    }
    *nbytes = size;
    return out;
}

static void write_kvs(gguf_writer *w, const gguf_file *f, uint32_t ftype) {
    bool had = false;
    for (uint64_t i = 0; i < f->n_kv; i++) {
        if (gguf_str_eq(f->kv[i].key, "general.file_type")) {
            gguf_w_u32(w, "general.file_type", ftype);
            had = true;
        } else gguf_w_kv_copy(w, &f->kv[i]);
    }
    if (!had) gguf_w_u32(w, "general.file_type", ftype);
}

static uint64_t max_row(const gguf_file *f) {
    uint64_t m = 1;
    for (uint64_t i = 0; i < f->n_tensors; i++) m = f->tensors[i].ne[0] > m ? f->tensors[i].ne[0] : m;
    return m;
}

/* Adds every tensor to w; converted data goes to bufs[i] (freed by the caller). */
static int add_tensors(gguf_writer *w, const gguf_file *f, uint32_t type, void **bufs, hr_quantize_progress_fn progress,
                       void *ud, hr_quantize_result *res, hr_err *e) {
    float *row = malloc(max_row(f) * sizeof *row);
    if (!row) return hr_errf(e, "out of memory");
    uint64_t total = 0, done = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++) total += f->tensors[i].nbytes;
    res->in_bytes = total;
    int rc = 0;
    for (uint64_t i = 0; i < f->n_tensors && !rc; i++) {
        const gguf_tensor *t = &f->tensors[i];
        char name[256];
        size_t nl = t->name.len < sizeof name - 1 ? (size_t)t->name.len : sizeof name - 1;
        memcpy(name, t->name.ptr, nl);
        name[nl] = 0;
        action a = choose(t, type);
        const void *data = t->data;
        uint64_t nbytes = t->nbytes;
        uint32_t out_type = t->type;
        if (a == CONVERT) {
            if (!(bufs[i] = convert(t, type, &nbytes, row))) rc = hr_errf(e, "out of memory converting '%s'", name);
            data = bufs[i], out_type = type;
            res->n_converted++;
            res->n_requant += t->type == HR_Q8_0 || t->type == HR_Q4_0;
        } else if (a == UNFIT) res->n_unfit++;
        else res->n_copied++;
        /* Empty tensors still need a non-NULL pointer for the writer. */
        if (!rc) gguf_w_tensor(w, name, out_type, t->n_dims, t->ne, data ? data : (const void *)row, nbytes);
        res->out_bytes += nbytes;
        done += t->nbytes;
        if (progress) progress(ud, done, total);
    }
    free(row);
    return rc;
}

int hr_quantize_file(const char *in_path, const char *out_path, uint32_t type, hr_quantize_progress_fn progress,
                     void *ud, hr_quantize_result *res, hr_err *e) {
    memset(res, 0, sizeof *res);
    if (hr_quantize_ftype(type) == UINT32_MAX)
        return hr_errf(e, "cannot convert to type %s (supported: f32, f16, bf16, q8_0, q4_0)",
                       hr_type_name(type) ? hr_type_name(type) : "?");
    if (same_file(in_path, out_path)) return hr_errf(e, "input and output are the same file (%s)", out_path);
    gguf_file f;
    if (gguf_open(&f, in_path, e)) return hr_errctx(e, "%s", in_path);
    res->sparse = f.sparse;
    void **bufs = calloc(f.n_tensors ? f.n_tensors : 1, sizeof *bufs);
    gguf_writer *w = bufs ? gguf_writer_new(f.sparse) : NULL;
    int rc = w ? 0 : hr_errf(e, "out of memory");
    if (!rc) {
        write_kvs(w, &f, hr_quantize_ftype(type));
        rc = add_tensors(w, &f, type, bufs, progress, ud, res, e);
    }
    if (!rc && gguf_w_write(w, out_path, e)) rc = hr_errctx(e, "writing %s", out_path);
    gguf_writer_free(w);
    for (uint64_t i = 0; bufs && i < f.n_tensors; i++) free(bufs[i]);
    free(bufs);
    gguf_close(&f);
    return rc;
}
