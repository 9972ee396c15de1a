/* GPU memory accounting for placement: what must be resident before any FFN neuron,
 * and the exact bytes of one neuron per layer, from the file's tensor types. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/types.h"
#include "place.h"

typedef struct layer_acc {
    uint64_t gate, up, up_bias, down, down_t;
} layer_acc;

static bool str_has(gguf_str s, const char *sub) {
    size_t n = strlen(sub);
    for (uint64_t i = 0; i + n <= s.len; i++)
        if (!memcmp(s.ptr + i, sub, n)) return true;
    return false;
}

/* "blk.<il>.<rest>": returns il and sets *rest, or -1 if the name has no layer prefix. */
static int64_t layer_of(gguf_str s, gguf_str *rest) {
    if (s.len < 6 || memcmp(s.ptr, "blk.", 4)) return -1;
    int64_t il = 0;
    uint64_t i = 4;
    for (; i < s.len && s.ptr[i] >= '0' && s.ptr[i] <= '9' && il < (1 << 20); i++) il = il * 10 + (s.ptr[i] - '0');
    if (i == 4 || i >= s.len || s.ptr[i] != '.') return -1;
    rest->ptr = s.ptr + i + 1, rest->len = s.len - i - 1;
    return il;
}

static bool is(gguf_str s, const char *a) { return gguf_str_eq(s, a); }

/* Row tensors {n_in, n_ff}: one neuron is one row. */
static int neuron_row(const gguf_tensor *t, int32_t n_ff, uint64_t *out, hr_err *e) {
    if (t->ne[1] != (uint64_t)n_ff || t->ne[2] != 1 || t->ne[3] != 1)
        return hr_errf(e, "tensor '%.*s' has %llu rows, expected n_ff = %d", (int)t->name.len, t->name.ptr,
                       (unsigned long long)t->ne[1], n_ff);
    *out = hr_row_bytes(t->type, t->ne[0]);
    return 0;
}

/* ffn_down {n_ff, n_embd}: one neuron is one column, as GPU memory would hold it
 * (a row of the transpose; rounded up when n_embd is not a whole number of blocks). */
static int neuron_col(const gguf_tensor *t, int32_t n_ff, uint64_t *out, hr_err *e) {
    if (t->ne[0] != (uint64_t)n_ff || t->ne[2] != 1 || t->ne[3] != 1)
        return hr_errf(e, "tensor '%.*s' has rows of %llu, expected n_ff = %d", (int)t->name.len, t->name.ptr,
                       (unsigned long long)t->ne[0], n_ff);
    uint64_t b = hr_row_bytes(t->type, t->ne[1]);
    *out = b ? b : (t->nbytes + (uint64_t)n_ff - 1) / (uint64_t)n_ff;
    return 0;
}

/* Per-layer tensor: a neuron part (accumulated in a) or a fixed part. */
static int classify_layer(const gguf_tensor *t, gguf_str r, int32_t n_ff, layer_acc *a, hr_vram_fixed *fx, hr_err *e) {
    if (is(r, "ffn_gate.weight") || is(r, "ffn_gate_exps.weight")) return neuron_row(t, n_ff, &a->gate, e);
    if (is(r, "ffn_up.weight") || is(r, "ffn_up_exps.weight")) return neuron_row(t, n_ff, &a->up, e);
    if (is(r, "ffn_down_t.weight")) return neuron_row(t, n_ff, &a->down_t, e);
    if (is(r, "ffn_down.weight") || is(r, "ffn_down_exps.weight")) return neuron_col(t, n_ff, &a->down, e);
    if (is(r, "ffn_up.bias")) {
        if (t->ne[0] != (uint64_t)n_ff) return hr_errf(e, "tensor '%.*s' has %llu entries, expected n_ff = %d",
                                                        (int)t->name.len, t->name.ptr, (unsigned long long)t->ne[0], n_ff);
        a->up_bias = hr_row_bytes(t->type, 1);
        return 0;
    }
    if (str_has(r, "norm")) fx->norms += t->nbytes;
    else if (r.len > 5 && !memcmp(r.ptr, "attn_", 5)) fx->attn += t->nbytes;
    else if (is(r, "fc1.weight") || is(r, "fc2.weight")) fx->predictor += t->nbytes;
    else fx->other += t->nbytes;
    return 0;
}

/* Global tensor. The token and position embeddings are looked up one row per token,
 * which the CPU does for free, so they stay in host memory unless the embedding is also
 * the output matrix. */
static void classify_global(const gguf_file *f, const gguf_tensor *t, hr_vram_fixed *fx) {
    gguf_str n = t->name;
    if (is(n, "token_embd.weight")) {
        if (!gguf_find_tensor(f, "output.weight")) fx->output += t->nbytes;
    } else if (is(n, "position_embd.weight")) {
    } else if (is(n, "output.weight")) fx->output += t->nbytes;
    else if (str_has(n, "norm")) fx->norms += t->nbytes;
    else fx->other += t->nbytes;
}

static void runtime_bytes(const hr_place_shape *s, int32_t n_ctx, hr_vram_fixed *fx) {
    const uint64_t nkv = (uint64_t)s->n_head_kv * (uint64_t)s->head_dim, nq = (uint64_t)s->n_head * (uint64_t)s->head_dim;
    fx->kv = 2 * (uint64_t)s->n_layer * (uint64_t)n_ctx * nkv * 2;
    fx->scratch = 4 * (uint64_t)HR_PLACE_SCRATCH_TOKENS *
                  (3 * (uint64_t)s->n_embd + nq + 2 * nkv + (uint64_t)s->n_head * (uint64_t)n_ctx +
                   4 * (uint64_t)s->n_ff + (uint64_t)s->n_vocab);
}

int hr_vram_account(const gguf_file *f, const hr_place_shape *s, int32_t n_ctx, hr_vram_fixed *fx,
                    uint64_t *neuron_bytes, hr_err *e) {
    memset(fx, 0, sizeof *fx);
    if (s->n_layer < 1 || s->n_ff < 1 || n_ctx < 1) return hr_errf(e, "bad model shape for VRAM accounting");
    layer_acc *acc = calloc((size_t)s->n_layer, sizeof *acc);
    if (!acc) return hr_errf(e, "out of memory");
    int rc = 0;
    for (uint64_t i = 0; i < f->n_tensors && !rc; i++) {
        const gguf_tensor *t = &f->tensors[i];
        gguf_str rest;
        int64_t il = layer_of(t->name, &rest);
        if (il < 0) classify_global(f, t, fx);
        else if (il >= s->n_layer)
            rc = hr_errf(e, "tensor '%.*s' belongs to layer %lld, but the model has %d layers", (int)t->name.len,
                         t->name.ptr, (long long)il, s->n_layer);
        else rc = classify_layer(t, rest, s->n_ff, &acc[il], fx, e);
    }
    for (int32_t l = 0; l < s->n_layer && !rc; l++) {
        const layer_acc *a = &acc[l];
        if (!a->up) rc = hr_errf(e, "layer %d has no ffn_up matrix", l);
        else if (!a->down && !a->down_t) rc = hr_errf(e, "layer %d has no ffn_down or ffn_down_t matrix", l);
        /* The engine reads ffn_down_t when both exist; only that copy goes to the GPU. */
        neuron_bytes[l] = a->gate + a->up + a->up_bias + (a->down_t ? a->down_t : a->down);
    }
    free(acc);
    if (rc) return -1;
    runtime_bytes(s, n_ctx, fx);
    fx->total = fx->attn + fx->predictor + fx->norms + fx->output + fx->other + fx->kv + fx->scratch;
    return 0;
}
