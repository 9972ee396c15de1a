#include "reference.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/gguf.h"
#include "formats/types.h"

typedef struct { int64_t n_in, n_out; uint32_t type; double *w; } rmat;

struct ref_model {
    int n_embd, n_layer, n_head, n_kv, hd, n_ff, n_vocab, act; /* act: 0 swiglu 1 reglu 2 drelu 3 relu */
    bool neox;
    double eps, base;
    rmat emb, out;
    double *out_norm;
    struct { double *an, *fn; rmat q, k, v, o, g, u, d; } *L;
};

static double *load_t(const gguf_file *f, const char *name, int64_t *n_in, int64_t *n_out, uint32_t *type) {
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t) return NULL;
    if (type) *type = t->type;
    int64_t a = (int64_t)t->ne[0], b = (int64_t)(t->ne[1] * t->ne[2] * t->ne[3]);
    float *row = malloc(sizeof(float) * (size_t)a);
    double *w = malloc(sizeof(double) * (size_t)(a * b));
    uint64_t rb = hr_row_bytes(t->type, (uint64_t)a);
    for (int64_t r = 0; r < b; r++) {
        hr_dequant_row(t->type, (const uint8_t *)t->data + r * rb, row, a);
        for (int64_t i = 0; i < a; i++) w[r * a + i] = row[i];
    }
    free(row);
    if (n_in) *n_in = a;
    if (n_out) *n_out = b;
    return w;
}

static bool mat(const gguf_file *f, const char *name, rmat *m) {
    m->w = load_t(f, name, &m->n_in, &m->n_out, &m->type);
    return m->w != NULL;
}

static uint32_t key_u32(const gguf_file *f, const char *arch, const char *k, uint32_t def) {
    char key[128];
    uint32_t v = def;
    snprintf(key, sizeof key, "%s.%s", arch, k);
    gguf_get_u32(f, key, &v, NULL);
    return v;
}

static bool load_layers(ref_model *r, const gguf_file *f, bool st) {
    char n[128];
    for (int l = 0; l < r->n_layer; l++) {
#define N(s) (snprintf(n, sizeof n, "blk.%d.%s", l, s), n)
        r->L[l].an = load_t(f, N("attn_norm.weight"), NULL, NULL, NULL);
        r->L[l].fn = load_t(f, N("ffn_norm.weight"), NULL, NULL, NULL);
        if (!r->L[l].an || !r->L[l].fn || !mat(f, N("attn_q.weight"), &r->L[l].q) || !mat(f, N("attn_k.weight"), &r->L[l].k) ||
            !mat(f, N("attn_v.weight"), &r->L[l].v) || !mat(f, N("attn_output.weight"), &r->L[l].o) ||
            !mat(f, N(st ? "ffn_up_exps.weight" : "ffn_up.weight"), &r->L[l].u) ||
            !mat(f, N(st ? "ffn_down_exps.weight" : "ffn_down.weight"), &r->L[l].d))
            return false;
        if (r->act != 3 && !mat(f, N(st ? "ffn_gate_exps.weight" : "ffn_gate.weight"), &r->L[l].g)) return false;
#undef N
    }
    return true;
}

ref_model *ref_load(const char *path) {
    gguf_file f;
    hr_err e;
    if (gguf_open(&f, path, &e)) { fprintf(stderr, "ref_load: %s\n", e.msg); return NULL; }
    ref_model *r = calloc(1, sizeof *r);
    gguf_str a;
    gguf_get_str(&f, "general.architecture", &a, NULL);
    char arch[32] = {0};
    memcpy(arch, a.ptr, a.len < 31 ? a.len : 31);
    bool st = !strcmp(arch, "smallthinker");
    r->n_embd = (int)key_u32(&f, arch, "embedding_length", 0);
    r->n_layer = (int)key_u32(&f, arch, "block_count", 0);
    r->n_head = (int)key_u32(&f, arch, "attention.head_count", 0);
    r->n_kv = (int)key_u32(&f, arch, "attention.head_count_kv", (uint32_t)r->n_head);
    r->hd = r->n_embd / r->n_head;
    r->n_ff = (int)key_u32(&f, arch, st ? "expert_feed_forward_length" : "feed_forward_length", 0);
    char key[128];
    float eps = 1e-5f, base = 10000.f;
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", arch);
    gguf_get_f32(&f, key, &eps, NULL);
    snprintf(key, sizeof key, "%s.rope.freq_base", arch);
    gguf_get_f32(&f, key, &base, NULL);
    r->eps = eps, r->base = base, r->neox = strcmp(arch, "llama") != 0;
    gguf_str act = {0};
    r->act = st ? 1 : 0;
    if (gguf_get_str(&f, "hearth.ffn_activation", &act, NULL) == 0) {
        const char *names[] = {"swiglu", "reglu", "drelu", "relu"};
        for (int i = 0; i < 4; i++) if (gguf_str_eq(act, names[i])) r->act = i;
    }
    r->L = calloc((size_t)r->n_layer, sizeof *r->L);
    bool ok = mat(&f, "token_embd.weight", &r->emb) && (r->out_norm = load_t(&f, "output_norm.weight", NULL, NULL, NULL)) &&
              load_layers(r, &f, st);
    if (ok && !mat(&f, "output.weight", &r->out)) r->out = r->emb, r->out.w = NULL;
    r->n_vocab = (int)r->emb.n_out;
    gguf_close(&f);
    if (!ok) { fprintf(stderr, "ref_load: missing tensors in %s\n", path); ref_free(r); return NULL; }
    return r;
}

void ref_free(ref_model *r) {
    if (!r) return;
    for (int l = 0; l < r->n_layer && r->L; l++) {
        free(r->L[l].an), free(r->L[l].fn), free(r->L[l].q.w), free(r->L[l].k.w), free(r->L[l].v.w);
        free(r->L[l].o.w), free(r->L[l].g.w), free(r->L[l].u.w), free(r->L[l].d.w);
    }
    free(r->L), free(r->emb.w), free(r->out.w), free(r->out_norm), free(r);
}

int32_t ref_n_vocab(const ref_model *r) { return r->n_vocab; }

/* llama.cpp rounds the activations to the weight type's dot partner before the product:
 * F16/BF16 weights see x in F16/BF16, Q8_0/Q4_0 weights see x quantized to Q8_0 blocks
 * (scale amax/127, nearest integer). Emulated here so quantized models compare tightly. */
static void round_act(uint32_t type, const double *x, double *xr, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float v = (float)x[i];
        if (type == HR_F16) xr[i] = hr_f16_to_f32(hr_f32_to_f16(v));
        else if (type == HR_BF16) xr[i] = hr_bf16_to_f32(hr_f32_to_bf16(v));
        else xr[i] = v;
    }
    if (type != HR_Q8_0 && type != HR_Q4_0) return;
    for (int64_t b = 0; b < n; b += 32) {
        float amax = 0;
        for (int64_t i = b; i < b + 32; i++) amax = fmaxf(amax, fabsf((float)xr[i]));
        float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;
        float dh = hr_f16_to_f32(hr_f32_to_f16(d));
        for (int64_t i = b; i < b + 32; i++) xr[i] = (double)nearbyintf((float)xr[i] * id) * dh;
    }
}

static void mv(const rmat *m, const double *x, double *y) {
    double *xr = malloc(sizeof(double) * (size_t)m->n_in);
    round_act(m->type, x, xr, m->n_in);
    for (int64_t o = 0; o < m->n_out; o++) {
        double s = 0;
        for (int64_t i = 0; i < m->n_in; i++) s += m->w[o * m->n_in + i] * xr[i];
        y[o] = s;
    }
    free(xr);
}

static void rms(const double *x, const double *w, double *y, int n, double eps) {
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i] * x[i];
    double k = 1.0 / sqrt(s / n + eps);
    for (int i = 0; i < n; i++) y[i] = x[i] * k * w[i];
}

static void rope(double *v, int heads, int hd, int pos, double base, bool neox) {
    for (int h = 0; h < heads; h++)
        for (int i = 0; i < hd / 2; i++) {
            double th = pos * pow(base, -2.0 * i / hd), c = cos(th), s = sin(th);
            int a = neox ? i : 2 * i, b = neox ? i + hd / 2 : 2 * i + 1;
            double x0 = v[h * hd + a], x1 = v[h * hd + b];
            v[h * hd + a] = x0 * c - x1 * s;
            v[h * hd + b] = x0 * s + x1 * c;
        }
}

static double act(int a, double g, double u) {
    double rg = g > 0 ? g : 0, ru = u > 0 ? u : 0;
    switch (a) {
    case 0: return g / (1 + exp(-g)) * u;
    case 1: return rg * u;
    case 2: return rg * ru;
    default: return ru;
    }
}

static void attend(const ref_model *r, const double *q, const double *K, const double *V, int t, double *out) {
    int kvd = r->n_kv * r->hd;
    double *s = malloc(sizeof(double) * (size_t)(t + 1));
    for (int h = 0; h < r->n_head; h++) {
        int kh = h / (r->n_head / r->n_kv);
        double mx = -INFINITY, sum = 0;
        for (int p = 0; p <= t; p++) {
            double d = 0;
            for (int i = 0; i < r->hd; i++) d += q[h * r->hd + i] * K[p * kvd + kh * r->hd + i];
            s[p] = d / sqrt((double)r->hd);
            if (s[p] > mx) mx = s[p];
        }
        for (int p = 0; p <= t; p++) sum += (s[p] = exp(s[p] - mx));
        for (int i = 0; i < r->hd; i++) {
            double acc = 0;
            for (int p = 0; p <= t; p++) acc += s[p] / sum * V[p * kvd + kh * r->hd + i];
            out[h * r->hd + i] = acc;
        }
    }
    free(s);
}

void ref_forward(ref_model *r, const int32_t *tokens, int32_t n, double *logits) {
    int d = r->n_embd, qd = r->n_head * r->hd, kvd = r->n_kv * r->hd;
    double *x = calloc((size_t)(n * d), 8), *xn = malloc(8 * (size_t)d), *q = malloc(8 * (size_t)qd), *att = malloc(8 * (size_t)qd);
    double *K = malloc(8 * (size_t)(n * kvd)), *V = malloc(8 * (size_t)(n * kvd)), *tmp = malloc(8 * (size_t)d);
    double *g = malloc(8 * (size_t)r->n_ff), *u = malloc(8 * (size_t)r->n_ff);
    for (int t = 0; t < n; t++) memcpy(x + t * d, r->emb.w + (int64_t)tokens[t] * d, 8 * (size_t)d);
    for (int l = 0; l < r->n_layer; l++) {
        for (int t = 0; t < n; t++) { /* causal: token t only sees K/V of 0..t, filled in order */
            double *xt = x + t * d;
            rms(xt, r->L[l].an, xn, d, r->eps);
            mv(&r->L[l].q, xn, q), mv(&r->L[l].k, xn, K + t * kvd), mv(&r->L[l].v, xn, V + t * kvd);
            rope(q, r->n_head, r->hd, t, r->base, r->neox), rope(K + t * kvd, r->n_kv, r->hd, t, r->base, r->neox);
            attend(r, q, K, V, t, att);
            mv(&r->L[l].o, att, tmp);
            for (int i = 0; i < d; i++) xt[i] += tmp[i];
            rms(xt, r->L[l].fn, xn, d, r->eps);
            if (r->act != 3) mv(&r->L[l].g, xn, g);
            mv(&r->L[l].u, xn, u);
            for (int j = 0; j < r->n_ff; j++) g[j] = act(r->act, r->act != 3 ? g[j] : 0, u[j]);
            mv(&r->L[l].d, g, tmp);
            for (int i = 0; i < d; i++) xt[i] += tmp[i];
        }
    }
    const rmat *out = r->out.w ? &r->out : &r->emb;
    for (int t = 0; t < n; t++) {
        rms(x + t * d, r->out_norm, xn, d, r->eps);
        mv(out, xn, logits + (int64_t)t * r->n_vocab);
    }
    free(x), free(xn), free(q), free(att), free(K), free(V), free(tmp), free(g), free(u);
}
