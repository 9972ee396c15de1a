/* Whole-file weight conversion (quantize.h). */
#include "quantize.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "formats/gguf.h"

uint32_t hr_quantize_ftype(uint32_t type) {
    const hr_qmix *m = hr_type_is_weight(type) ? hr_qmix_for_type(type) : NULL;
    return m ? m->ftype : UINT32_MAX;
}

static int same_file(const char *a, const char *b) {
    struct stat sa, sb;
    if (!strcmp(a, b)) return 1;
    if (stat(a, &sa) || stat(b, &sb)) return 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* A u32 hyper-parameter "ARCH.suffix"; the first element of a per-layer array; def if absent. */
static uint32_t arch_u32(const gguf_file *f, const char *arch, const char *suffix, uint32_t def) {
    char key[160];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    const gguf_kv *kv = gguf_find_kv(f, key);
    if (!kv) return def;
    if (kv->val.type == GGUF_VT_ARRAY) {
        const gguf_array *a = &kv->val.v.a;
        return a->n && !a->items ? (uint32_t)gguf_arr_num(a, 0) : def;
    }
    uint32_t v = def;
    return gguf_get_u32(f, key, &v, NULL) == 0 ? v : def;
}

/* What the mix rules need: architecture, layers, heads, experts (llama.cpp's defaults when a
 * key is absent: as many KV heads as heads, no experts). */
static void model_info(const gguf_file *f, hr_qmix_model *m) {
    char arch[64] = "";
    gguf_str s;
    if (gguf_get_str(f, "general.architecture", &s, NULL) == 0 && s.len < sizeof arch) {
        memcpy(arch, s.ptr, s.len);
        arch[s.len] = 0;
    }
    const uint32_t n_head = arch_u32(f, arch, "attention.head_count", 0);
    hr_qmix_model_init(m, arch, arch_u32(f, arch, "block_count", 0), n_head,
                       arch_u32(f, arch, "attention.head_count_kv", n_head), arch_u32(f, arch, "expert_count", 0));
}

/* NUL-terminated copies of the tensor names (the mapping's are not), in one block. */
static hr_qmix_tensor *tensor_table(const gguf_file *f, char **names) {
    uint64_t chars = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++) chars += f->tensors[i].name.len + 1;
    hr_qmix_tensor *ts = malloc((f->n_tensors ? f->n_tensors : 1) * sizeof *ts);
    char *buf = malloc(chars ? chars : 1);
    if (!ts || !buf) {
        free(ts), free(buf);
        return NULL;
    }
    char *p = buf;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        memcpy(p, t->name.ptr, t->name.len);
        p[t->name.len] = 0;
        ts[i] = (hr_qmix_tensor){.name = p, .n_dims = t->n_dims, .type = t->type};
        memcpy(ts[i].ne, t->ne, sizeof ts[i].ne);
        p += t->name.len + 1;
    }
    *names = buf;
    return ts;
}

static void *convert(const gguf_tensor *t, uint32_t type, uint64_t *nbytes, float *row) {
    const uint64_t ne0 = t->ne[0], rows = t->ne[1] * t->ne[2] * t->ne[3];
    const uint64_t in_rb = hr_row_bytes(t->type, ne0), out_rb = hr_row_bytes(type, ne0);
    const uint64_t size = rows * out_rb;
    uint8_t *out = malloc(size ? size : 1);
    if (!out) return NULL;
    for (uint64_t r = 0; r < rows; r++) {
        hr_dequant_row(t->type, (const uint8_t *)t->data + r * in_rb, row, (int64_t)ne0);
        hr_quant_row_file(type, row, out + r * out_rb, (int64_t)ne0);
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

/* Adds every tensor to w in its planned type; converted data goes to bufs[i] (freed by the
 * caller). A tensor Hearth cannot read as floats (integer types) is copied. */
static int add_tensors(gguf_writer *w, const gguf_file *f, const hr_qmix_tensor *ts, const uint32_t *types, void **bufs,
                       hr_quantize_progress_fn progress, void *ud, hr_quantize_result *res, hr_err *e) {
    float *row = malloc(max_row(f) * sizeof *row);
    if (!row) return hr_errf(e, "out of memory");
    uint64_t total = 0, done = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++) total += f->tensors[i].nbytes;
    res->in_bytes = total;
    int rc = 0;
    for (uint64_t i = 0; i < f->n_tensors && !rc; i++) {
        const gguf_tensor *t = &f->tensors[i];
        const void *data = t->data;
        uint64_t nbytes = t->nbytes;
        uint32_t out_type = t->type;
        if (types[i] != t->type && hr_type_is_weight(t->type)) {
            if (!(bufs[i] = convert(t, types[i], &nbytes, row))) rc = hr_errf(e, "out of memory converting '%s'", ts[i].name);
            data = bufs[i], out_type = types[i];
            res->n_converted++;
            res->n_requant += hr_type_is_quant(t->type);
        } else res->n_copied++;
        /* Empty tensors still need a non-NULL pointer for the writer. */
        if (!rc) gguf_w_tensor(w, ts[i].name, out_type, t->n_dims, t->ne, data ? data : (const void *)row, nbytes);
        res->n_of_type[out_type < HR_TYPE_MAX ? out_type : 0]++;
        res->out_bytes += nbytes;
        done += t->nbytes;
        if (progress) progress(ud, done, total);
    }
    free(row);
    return rc;
}

/* Plans every tensor's type, then writes the file. */
static int quantize_open(const gguf_file *f, const char *out_path, const hr_qmix *mix, bool pure,
                         hr_quantize_progress_fn progress, void *ud, hr_quantize_result *res, hr_err *e) {
    char *names = NULL;
    hr_qmix_tensor *ts = tensor_table(f, &names);
    uint32_t *types = malloc((f->n_tensors ? f->n_tensors : 1) * sizeof *types);
    void **bufs = calloc(f->n_tensors ? f->n_tensors : 1, sizeof *bufs);
    gguf_writer *w = ts && types && bufs ? gguf_writer_new(f->sparse) : NULL;
    int rc = w ? 0 : hr_errf(e, "out of memory");
    hr_qmix_model m;
    model_info(f, &m);
    if (!rc) rc = hr_qmix_plan(mix, pure, &m, ts, f->n_tensors, types, &res->n_fallback, e);
    if (!rc) {
        write_kvs(w, f, mix->ftype);
        rc = add_tensors(w, f, ts, types, bufs, progress, ud, res, e);
    }
    if (!rc && gguf_w_write(w, out_path, e)) rc = hr_errctx(e, "writing %s", out_path);
    gguf_writer_free(w);
    for (uint64_t i = 0; bufs && i < f->n_tensors; i++) free(bufs[i]);
    free(bufs), free(types), free(ts), free(names);
    return rc;
}

int hr_quantize_file(const char *in_path, const char *out_path, const hr_qmix *mix, bool pure,
                     hr_quantize_progress_fn progress, void *ud, hr_quantize_result *res, hr_err *e) {
    memset(res, 0, sizeof *res);
    if (!mix) return hr_errf(e, "no quantization type given");
    if (same_file(in_path, out_path)) return hr_errf(e, "input and output are the same file (%s)", out_path);
    gguf_file f;
    if (gguf_open(&f, in_path, e)) return hr_errctx(e, "%s", in_path);
    res->sparse = f.sparse;
    int rc = quantize_open(&f, out_path, mix, pure, progress, ud, res, e);
    gguf_close(&f);
    return rc;
}
