/* Loading one layer's mixture-of-experts tensors: the router and the three 3-D expert
 * tensors, shapes checked against expert_count and the experts' FFN size. */
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "formats/types.h"
#include "moe.h"

/* The 3-D tensor "name" {n_in, n_out, n_expert} as expert 0's matrix. */
static int get_experts(const hearth_model *m, const char *name, int64_t n_in, int64_t n_out, hr_mat *out, hr_err *e) {
    const gguf_tensor *t = gguf_find_tensor(&m->file, name);
    const int64_t ne = m->hp.n_expert;
    memset(out, 0, sizeof *out);
    if (!t) return hr_errf(e, "missing tensor '%s' (the experts of a %lld-expert layer)", name, (long long)ne);
    if ((int64_t)t->ne[0] != n_in || (int64_t)t->ne[1] != n_out || (int64_t)t->ne[2] != ne || t->ne[3] != 1)
        return hr_errf(e, "tensor '%s' has shape {%llu, %llu, %llu, %llu}, expected {%lld, %lld, %lld} (%lld experts)", name,
                       (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], (unsigned long long)t->ne[2],
                       (unsigned long long)t->ne[3], (long long)n_in, (long long)n_out, (long long)ne, (long long)ne);
    if (!hr_type_is_weight(t->type))
        return hr_errf(e, "tensor '%s' has type %s, which is not a weight type Hearth computes with", name,
                       hr_type_name(t->type) ? hr_type_name(t->type) : "unknown");
    *out = (hr_mat){.type = t->type, .n_in = n_in, .n_out = n_out, .row_bytes = hr_row_bytes(t->type, (uint64_t)n_in), .data = t->data};
    return 0;
}

/* The F32 bias "name" {n, n_expert} (n_expert 1: the router's {n}), as expert 0's vector. */
static int get_bias(const hearth_model *m, const char *name, int64_t n, int64_t ne, const float **out, hr_err *e) {
    const gguf_tensor *t = gguf_find_tensor(&m->file, name);
    *out = NULL;
    if (!t) return hr_errf(e, "missing tensor '%s'", name);
    const bool ok = ne == 1 ? t->ne[1] == 1 : (int64_t)t->ne[1] == ne;
    if ((int64_t)t->ne[0] != n || !ok || t->ne[2] != 1 || t->ne[3] != 1)
        return hr_errf(e, "tensor '%s' has shape {%llu, %llu, %llu, %llu}, expected {%lld, %lld}", name,
                       (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], (unsigned long long)t->ne[2],
                       (unsigned long long)t->ne[3], (long long)n, (long long)ne);
    if (t->type != HR_F32) return hr_errf(e, "tensor '%s' has type %s, expected f32", name, hr_type_name(t->type) ? hr_type_name(t->type) : "unknown");
    if ((uintptr_t)t->data % sizeof(float)) return hr_errf(e, "tensor '%s' data is not 4-byte aligned", name);
    *out = t->data;
    return 0;
}

/* gpt-oss's biases of the router and of each expert's three products. */
static int load_moe_bias(const hearth_model *m, int il, hr_moe_weights *w, hr_err *e) {
    const hr_hparams *hp = &m->hp;
    const int64_t d = hp->n_embd, ff = hp->n_ff_exp, ne = hp->n_expert;
    char n[96];
#define NAME(fmt) (snprintf(n, sizeof n, "blk.%d." fmt, il), n)
    return get_bias(m, NAME("ffn_gate_inp.bias"), ne, 1, &w->router_b, e) ||
                   get_bias(m, NAME("ffn_gate_exps.bias"), ff, ne, &w->gate_b, e) ||
                   get_bias(m, NAME("ffn_up_exps.bias"), ff, ne, &w->up_b, e) ||
                   get_bias(m, NAME("ffn_down_exps.bias"), d, ne, &w->down_b, e)
               ? -1
               : 0;
#undef NAME
}

/* Expert x's predictor fc1 {n_embd, r}, fc2 {r, n_ff_exp} into p[0], p[1] (both absent: none). */
static int get_expert_pred(const hearth_model *m, int il, int32_t x, hr_mat *p1, hr_mat *p2, hr_err *e) {
    char n1[96], n2[96];
    snprintf(n1, sizeof n1, "blk.%d.fc1_exps.%d.weight", il, x);
    snprintf(n2, sizeof n2, "blk.%d.fc2_exps.%d.weight", il, x);
    const gguf_tensor *t1 = gguf_find_tensor(&m->file, n1), *t2 = gguf_find_tensor(&m->file, n2);
    if (!t1 && !t2) return 0;
    if (!t1 || !t2) return hr_errf(e, "expert %d of layer %d has '%s' but not '%s' (its predictor needs both)", x, il, t1 ? n1 : n2, t1 ? n2 : n1);
    const int64_t r = (int64_t)t1->ne[1];
    if (r < 1 || t1->n_dims != 2 || t2->n_dims != 2 || (int64_t)t2->ne[0] != r)
        return hr_errf(e, "predictor of expert %d in layer %d: '%s' has shape {%llu, %llu} and '%s' {%llu, %llu}, expected {%d, r} and {r, %d}", x, il,
                       n1, (unsigned long long)t1->ne[0], (unsigned long long)t1->ne[1], n2, (unsigned long long)t2->ne[0],
                       (unsigned long long)t2->ne[1], m->hp.n_embd, m->hp.n_ff_exp);
    return hr_get_mat(m, n1, m->hp.n_embd, r, true, p1, e) || hr_get_mat(m, n2, r, m->hp.n_ff_exp, true, p2, e) ? -1 : 0;
}

/* The per-expert predictors where the file has any (w->pred stays NULL otherwise). */
static int load_expert_preds(const hearth_model *m, int il, hr_moe_weights *w, hr_err *e) {
    const int32_t ne = m->hp.n_expert;
    char n[96];
    bool any = false;
    for (int32_t x = 0; x < ne && !any; x++) {
        snprintf(n, sizeof n, "blk.%d.fc1_exps.%d.weight", il, x), any = gguf_find_tensor(&m->file, n) != NULL;
        if (!any) snprintf(n, sizeof n, "blk.%d.fc2_exps.%d.weight", il, x), any = gguf_find_tensor(&m->file, n) != NULL;
    }
    if (!any) return 0;
    if (!hr_act_relu_family(m->hp.act))
        return hr_errf(e, "layer %d has expert predictors but its experts are %s: predictors need ReLU-family experts (reglu, drelu)", il,
                       hr_act_name(m->hp.act));
    if (!(w->pred = calloc(2 * (size_t)ne, sizeof *w->pred))) return hr_errf(e, "out of memory");
    for (int32_t x = 0; x < ne; x++) {
        if (get_expert_pred(m, il, x, &w->pred[x], &w->pred[ne + x], e)) return -1;
        w->n_pred += w->pred[x].data != NULL;
    }
    return 0;
}

int hr_load_moe(const hearth_model *m, int il, hr_moe_weights *w, hr_err *e) {
    const hr_hparams *hp = &m->hp;
    const int64_t d = hp->n_embd, ff = hp->n_ff_exp;
    char n[96];
    memset(w, 0, sizeof *w);
    if (!hp->has_gate)
        return hr_errf(e, "mixture-of-experts layers need a gated activation (swiglu, reglu, drelu), not %s", hr_act_name(hp->act));
#define NAME(fmt) (snprintf(n, sizeof n, "blk.%d." fmt, il), n)
    if (hr_get_mat(m, NAME("ffn_gate_inp.weight"), d, hp->n_expert, true, &w->router, e)) return -1;
    /* Gated experts only: llama.cpp's ungated SiLU experts have no Hearth activation. */
    if (get_experts(m, NAME("ffn_gate_exps.weight"), d, ff, &w->gate, e) || get_experts(m, NAME("ffn_up_exps.weight"), d, ff, &w->up, e))
        return -1;
    /* The transposed down matrices, where the file has them, replace ffn_down_exps. */
    if (gguf_find_tensor(&m->file, NAME("ffn_down_exps_t.weight"))) {
        if (get_experts(m, n, d, ff, &w->down_t, e)) return -1;
    } else if (get_experts(m, NAME("ffn_down_exps.weight"), ff, d, &w->down, e))
        return -1;
#undef NAME
    if (hp->arch->moe_bias && load_moe_bias(m, il, w, e)) return -1;
    return load_expert_preds(m, il, w, e);
}

uint64_t hr_moe_expert_bytes(const hr_moe_weights *w) {
    return (uint64_t)(w->gate.row_bytes * (size_t)w->gate.n_out + w->up.row_bytes * (size_t)w->up.n_out +
                      w->down.row_bytes * (size_t)w->down.n_out + w->down_t.row_bytes * (size_t)w->down_t.n_out);
}
