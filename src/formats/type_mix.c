/* Tensor type mix of a GGUF file. */
#include "type_mix.h"

#include <string.h>

#include "types.h"

int hr_type_mix(const gguf_file *f, hr_type_share out[HR_TYPE_MIX_MAX]) {
    hr_type_share all[HR_TYPE_MAX];
    memset(all, 0, sizeof all);
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        if (t->type >= HR_TYPE_MAX) continue; /* the reader refuses unknown ids; be safe anyway */
        uint64_t n = 1;
        for (uint32_t d = 0; d < t->n_dims; d++) n *= t->ne[d];
        hr_type_share *s = &all[t->type];
        s->type = t->type;
        s->n_tensors++;
        s->elems += n;
        s->bytes += t->nbytes;
    }
    int k = 0;
    for (uint32_t t = 0; t < HR_TYPE_MAX && k < HR_TYPE_MIX_MAX; t++) {
        if (!all[t].n_tensors) continue;
        int j = k++;
        while (j > 0 && out[j - 1].bytes < all[t].bytes) { /* insertion: stable, so ties keep id order */
            out[j] = out[j - 1];
            j--;
        }
        out[j] = all[t];
    }
    return k;
}

double hr_type_share_bpw(const hr_type_share *s) { return s->elems ? (double)s->bytes * 8.0 / (double)s->elems : 0.0; }
