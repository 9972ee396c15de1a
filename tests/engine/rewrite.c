#include "rewrite.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rewrite_tensors(const char *src, const char *dst, rewrite_fn fn, void *ud) {
    gguf_file f;
    hr_err e;
    if (gguf_open(&f, src, &e)) return fprintf(stderr, "rewrite: %s\n", e.msg), -1;
    gguf_writer *w = gguf_writer_new(f.sparse);
    for (uint64_t i = 0; i < f.n_kv; i++) gguf_w_kv_copy(w, &f.kv[i]);
    void **copies = calloc(f.n_tensors, sizeof *copies);
    for (uint64_t i = 0; i < f.n_tensors; i++) {
        const gguf_tensor *t = &f.tensors[i];
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        copies[i] = malloc(t->nbytes ? t->nbytes : 1);
        memcpy(copies[i], t->data, t->nbytes);
        fn(ud, name, t, copies[i]);
        gguf_w_tensor(w, name, t->type, t->n_dims, t->ne, copies[i], t->nbytes);
    }
    int r = gguf_w_write(w, dst, &e);
    if (r) fprintf(stderr, "rewrite: %s\n", e.msg);
    gguf_writer_free(w);
    for (uint64_t i = 0; i < f.n_tensors; i++) free(copies[i]);
    free(copies);
    gguf_close(&f);
    return r;
}
