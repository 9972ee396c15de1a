#include "reference.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/gguf.h"
#include "formats/types.h"

typedef struct { int64_t n_in, n_out; uint32_t type; double *w; } rmat;

/* Architectures, from their published definitions:
 *   llama, bamboo   RMSNorm, RoPE on pairs (2i, 2i+1), serial blocks;
 *   exaone, smallthinker  the same with RoPE on pairs (i, i + d/2);
 *   falcon          LayerNorm (weight, bias); h = x + attn(LN_a(x)) + mlp(LN(x)), where LN_a is
 *                   the separate attention norm (attn_norm_2) if the file has one, else LN;
 *                   q, k, v are consecutive row blocks of one matrix; RoPE on (i, i + d/2);
 *   opt             LayerNorm (weight, bias), no RoPE, learned position p + 2 added to the
 *                   embedding, biases on q/k/v/output/up/down, logits from token_embd;
 *   gemma2, gemma3  (Gemma 2/3 papers and reference code) embedding times sqrt(n_embd); RMSNorm
 *                   before and after each of attention and FFN, x += post(f(pre(x))); GELU-gated
 *                   FFN gelu(gate) * up; scores q.k / sqrt(head_dim), capped c tanh(s / c);
 *                   logits capped likewise; local layers (gemma2: even ones, gemma3: 5 of 6)
 *                   see the last `window` positions, with their own RoPE base in gemma3
 *                   (default 10000); gemma3 RMS-normalises each head of q and k before RoPE;
 *                   the head size is attention.key_length. */
struct ref_model {
    int n_embd, n_layer, n_head, n_kv, hd, n_ff, n_vocab, act; /* act: 0 swiglu 1 reglu 2 drelu 3 relu 4 gelu */
    bool neox, rope, layer_norm, parallel, opt, gemma;
    double eps, base, attn_cap, final_cap;
    int window; /* local layers' window (0: none) */
    rmat emb, out, pos;
    double *out_norm, *out_norm_b;
    struct {
        double *an, *an_b, *an2, *an2_b, *fn, *fn_b, *bq, *bk, *bv, *bo, *bu, *bd;
        double *post_a, *post_f, *qn, *kn; /* Gemma's post norms and per-head q/k norms */
        bool local;
        double base;
        rmat q, k, v, o, g, u, d;
    } *L;
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

/* Rows [r0, r0 + n) of a matrix as a matrix of its own. */
static rmat rows_of(const rmat *m, int64_t r0, int64_t n) {
    rmat s = {m->n_in, n, m->type, malloc(sizeof(double) * (size_t)(n * m->n_in))};
    memcpy(s.w, m->w + r0 * m->n_in, sizeof(double) * (size_t)(n * m->n_in));
    return s;
}

/* The down projection {n_ff, n_embd}: ffn_down, or PowerInfer's transposed ffn_down_t. */
static bool down(const gguf_file *f, const char *name, const char *name_t, rmat *m) {
    if (mat(f, name, m)) return true;
    rmat t;
    if (!mat(f, name_t, &t)) return false;
    *m = (rmat){t.n_out, t.n_in, t.type, malloc(sizeof(double) * (size_t)(t.n_in * t.n_out))};
    for (int64_t r = 0; r < t.n_out; r++)
        for (int64_t i = 0; i < t.n_in; i++) m->w[i * t.n_out + r] = t.w[r * t.n_in + i];
    free(t.w);
    return true;
}

static uint32_t key_u32(const gguf_file *f, const char *arch, const char *k, uint32_t def) {
    char key[128];
    uint32_t v = def;
    snprintf(key, sizeof key, "%s.%s", arch, k);
    gguf_get_u32(f, key, &v, NULL);
    return v;
}

static bool load_attn(ref_model *r, const gguf_file *f, int l) {
    char n[128];
#define N(s) (snprintf(n, sizeof n, "blk.%d.%s", l, s), n)
    if (r->parallel) {
        rmat qkv;
        if (!mat(f, N("attn_qkv.weight"), &qkv)) return false;
        int qd = r->n_head * r->hd, kvd = r->n_kv * r->hd;
        r->L[l].q = rows_of(&qkv, 0, qd), r->L[l].k = rows_of(&qkv, qd, kvd), r->L[l].v = rows_of(&qkv, qd + kvd, kvd);
        free(qkv.w);
    } else if (!mat(f, N("attn_q.weight"), &r->L[l].q) || !mat(f, N("attn_k.weight"), &r->L[l].k) ||
               !mat(f, N("attn_v.weight"), &r->L[l].v)) {
        return false;
    }
    if (!mat(f, N("attn_output.weight"), &r->L[l].o)) return false;
    if (r->opt) {
        r->L[l].bq = load_t(f, N("attn_q.bias"), NULL, NULL, NULL), r->L[l].bk = load_t(f, N("attn_k.bias"), NULL, NULL, NULL);
        r->L[l].bv = load_t(f, N("attn_v.bias"), NULL, NULL, NULL), r->L[l].bo = load_t(f, N("attn_output.bias"), NULL, NULL, NULL);
        if (!r->L[l].bq || !r->L[l].bk || !r->L[l].bv || !r->L[l].bo) return false;
    }
#undef N
    return true;
}

static bool load_layers(ref_model *r, const gguf_file *f, bool st) {
    char n[128], n2[128];
    for (int l = 0; l < r->n_layer; l++) {
#define N(s) (snprintf(n, sizeof n, "blk.%d.%s", l, s), n)
#define N2(s) (snprintf(n2, sizeof n2, "blk.%d.%s", l, s), n2)
        r->L[l].an = load_t(f, N("attn_norm.weight"), NULL, NULL, NULL);
        if (!r->L[l].an || !load_attn(r, f, l)) return false;
        if (!r->parallel && !(r->L[l].fn = load_t(f, N("ffn_norm.weight"), NULL, NULL, NULL))) return false;
        if (r->layer_norm) {
            r->L[l].an_b = load_t(f, N("attn_norm.bias"), NULL, NULL, NULL);
            if (!r->L[l].an_b || (!r->parallel && !(r->L[l].fn_b = load_t(f, N("ffn_norm.bias"), NULL, NULL, NULL)))) return false;
        }
        if ((r->L[l].an2 = load_t(f, N("attn_norm_2.weight"), NULL, NULL, NULL)) &&
            !(r->L[l].an2_b = load_t(f, N("attn_norm_2.bias"), NULL, NULL, NULL)))
            return false;
        if (!mat(f, N(st ? "ffn_up_exps.weight" : "ffn_up.weight"), &r->L[l].u) ||
            !down(f, N(st ? "ffn_down_exps.weight" : "ffn_down.weight"), N2("ffn_down_t.weight"), &r->L[l].d))
            return false;
        if ((r->act < 3 || r->act == 5) && !mat(f, N(st ? "ffn_gate_exps.weight" : "ffn_gate.weight"), &r->L[l].g)) return false;
        if (r->gemma) {
            r->L[l].post_a = load_t(f, N("post_attention_norm.weight"), NULL, NULL, NULL);
            r->L[l].post_f = load_t(f, N("post_ffw_norm.weight"), NULL, NULL, NULL);
            r->L[l].qn = load_t(f, N("attn_q_norm.weight"), NULL, NULL, NULL);
            r->L[l].kn = load_t(f, N("attn_k_norm.weight"), NULL, NULL, NULL);
            if (!r->L[l].post_a || !r->L[l].post_f || (!r->L[l].qn != !r->L[l].kn)) return false;
        }
        if (r->opt) {
            r->L[l].bu = load_t(f, N("ffn_up.bias"), NULL, NULL, NULL);
            r->L[l].bd = load_t(f, N("ffn_down.bias"), NULL, NULL, NULL);
            if (!r->L[l].bd) r->L[l].bd = load_t(f, N("ffn_down_t.bias"), NULL, NULL, NULL);
            if (!r->L[l].bu || !r->L[l].bd) return false;
        }
#undef N
#undef N2
    }
    return true;
}

static float key_f32(const gguf_file *f, const char *arch, const char *k, float def) {
    char key[128];
    float v = def;
    snprintf(key, sizeof key, "%s.%s", arch, k);
    gguf_get_f32(f, key, &v, NULL);
    return v;
}

/* Gemma's settings: gemma2 caps by default (50 on the scores, 30 on the logits) and slides
 * every other layer over 4096 positions; gemma3 caps only where the file says and slides 5
 * layers of 6 where it sets a window. */
static void load_gemma(ref_model *r, const gguf_file *f, const char *arch) {
    const bool g2 = !strcmp(arch, "gemma2");
    r->gemma = true, r->neox = true, r->act = 5;
    r->attn_cap = g2 ? key_f32(f, arch, "attn_logit_softcapping", 50) : 0;
    r->final_cap = key_f32(f, arch, "final_logit_softcapping", g2 ? 30 : 0);
    r->window = (int)key_u32(f, arch, "attention.sliding_window", g2 ? 4096 : 0);
    const uint32_t every = key_u32(f, arch, "attention.sliding_window_pattern", g2 ? 2 : 6);
    const double local_base = key_f32(f, arch, "rope.freq_base_swa", g2 ? (float)r->base : 10000);
    for (int l = 0; l < r->n_layer && r->window; l++) {
        r->L[l].local = !every || (uint32_t)l % every != every - 1;
        if (r->L[l].local) r->L[l].base = local_base;
    }
}

static void load_arch(ref_model *r, const gguf_file *f, const char *arch) {
    bool st = !strcmp(arch, "smallthinker"), falcon = !strcmp(arch, "falcon");
    r->opt = !strcmp(arch, "opt");
    r->layer_norm = falcon || r->opt, r->parallel = falcon, r->rope = !r->opt;
    r->neox = strcmp(arch, "llama") && strcmp(arch, "bamboo");
    r->n_embd = (int)key_u32(f, arch, "embedding_length", 0);
    r->n_layer = (int)key_u32(f, arch, "block_count", 0);
    r->n_head = (int)key_u32(f, arch, "attention.head_count", 0);
    r->n_kv = (int)key_u32(f, arch, "attention.head_count_kv", (uint32_t)r->n_head);
    r->hd = (int)key_u32(f, arch, "attention.key_length", (uint32_t)(r->n_embd / r->n_head));
    r->n_ff = (int)key_u32(f, arch, st ? "expert_feed_forward_length" : "feed_forward_length", 0);
    char key[128];
    float eps = 1e-5f, base = 10000.f;
    snprintf(key, sizeof key, "%s.attention.%s", arch, r->layer_norm ? "layer_norm_epsilon" : "layer_norm_rms_epsilon");
    gguf_get_f32(f, key, &eps, NULL);
    snprintf(key, sizeof key, "%s.rope.freq_base", arch);
    gguf_get_f32(f, key, &base, NULL);
    r->eps = eps, r->base = base;
    /* Activation: smallthinker ReGLU, bamboo dReLU, opt ReLU, falcon GELU (ReLU in
     * PowerInfer files); the hearth.ffn_activation key overrides except for smallthinker. */
    r->act = st ? 1 : !strcmp(arch, "bamboo") ? 2 : r->opt ? 3 : falcon ? (f->sparse ? 3 : 4) : 0;
    for (int l = 0; l < r->n_layer; l++) r->L[l].base = r->base;
    if (!strncmp(arch, "gemma", 5)) {
        load_gemma(r, f, arch);
        return;
    }
    gguf_str act = {0};
    if (!st && gguf_get_str(f, "hearth.ffn_activation", &act, NULL) == 0) {
        const char *names[] = {"swiglu", "reglu", "drelu", "relu", "gelu"};
        for (int i = 0; i < 5; i++) if (gguf_str_eq(act, names[i])) r->act = i;
    }
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
    r->n_layer = (int)key_u32(&f, arch, "block_count", 0);
    r->L = calloc((size_t)r->n_layer, sizeof *r->L);
    load_arch(r, &f, arch);
    bool ok = mat(&f, "token_embd.weight", &r->emb) && (r->out_norm = load_t(&f, "output_norm.weight", NULL, NULL, NULL)) &&
              load_layers(r, &f, !strcmp(arch, "smallthinker"));
    if (ok && r->layer_norm) ok = (r->out_norm_b = load_t(&f, "output_norm.bias", NULL, NULL, NULL)) != NULL;
    if (ok && r->opt) ok = mat(&f, "position_embd.weight", &r->pos);
    if (ok && (r->opt || !mat(&f, "output.weight", &r->out))) r->out = r->emb, r->out.w = NULL;
    r->n_vocab = (int)r->emb.n_out;
    gguf_close(&f);
    if (!ok) { fprintf(stderr, "ref_load: missing tensors in %s\n", path); ref_free(r); return NULL; }
    return r;
}

void ref_free(ref_model *r) {
    if (!r) return;
    for (int l = 0; l < r->n_layer && r->L; l++) {
        free(r->L[l].an), free(r->L[l].an_b), free(r->L[l].an2), free(r->L[l].an2_b), free(r->L[l].fn), free(r->L[l].fn_b);
        free(r->L[l].bq), free(r->L[l].bk), free(r->L[l].bv), free(r->L[l].bo), free(r->L[l].bu), free(r->L[l].bd);
        free(r->L[l].q.w), free(r->L[l].k.w), free(r->L[l].v.w);
        free(r->L[l].o.w), free(r->L[l].g.w), free(r->L[l].u.w), free(r->L[l].d.w);
        free(r->L[l].post_a), free(r->L[l].post_f), free(r->L[l].qn), free(r->L[l].kn);
    }
    free(r->L), free(r->emb.w), free(r->out.w), free(r->pos.w), free(r->out_norm), free(r->out_norm_b), free(r);
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

/* y = W x (+ b). */
static void mv(const rmat *m, const double *x, double *y, const double *b) {
    double *xr = malloc(sizeof(double) * (size_t)m->n_in);
    round_act(m->type, x, xr, m->n_in);
    for (int64_t o = 0; o < m->n_out; o++) {
        double s = 0;
        for (int64_t i = 0; i < m->n_in; i++) s += m->w[o * m->n_in + i] * xr[i];
        y[o] = s + (b ? b[o] : 0);
    }
    free(xr);
}

static void rms(const double *x, const double *w, double *y, int n, double eps) {
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i] * x[i];
    double k = 1.0 / sqrt(s / n + eps);
    for (int i = 0; i < n; i++) y[i] = x[i] * k * w[i];
}

static void layernorm(const double *x, const double *w, const double *b, double *y, int n, double eps) {
    double mean = 0, var = 0;
    for (int i = 0; i < n; i++) mean += x[i];
    mean /= n;
    for (int i = 0; i < n; i++) var += (x[i] - mean) * (x[i] - mean);
    double k = 1.0 / sqrt(var / n + eps);
    for (int i = 0; i < n; i++) y[i] = (x[i] - mean) * k * w[i] + b[i];
}

static void norm(const ref_model *r, const double *x, const double *w, const double *b, double *y) {
    if (r->layer_norm) layernorm(x, w, b, y, r->n_embd, r->eps);
    else rms(x, w, y, r->n_embd, r->eps);
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

static double f16r(double v) { return hr_f16_to_f32(hr_f32_to_f16((float)v)); }

/* GELU, tanh form; ggml evaluates it on the F16-rounded input and rounds the result to
 * F16 (it reads a table), and saturates outside [-10, 10]: emulated. */
static double gelu(double x) {
    if (x <= -10) return 0;
    if (x >= 10) return x;
    x = f16r(x);
    return f16r(0.5 * x * (1 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x))));
}

static double act(int a, double g, double u) {
    double rg = g > 0 ? g : 0, ru = u > 0 ? u : 0;
    switch (a) {
    case 0: return g / (1 + exp(-g)) * u;
    case 1: return rg * u;
    case 2: return rg * ru;
    case 3: return ru;
    case 5: return gelu(g) * u;
    default: return gelu(u);
    }
}

/* Attention of token t over positions p0..t. */
static void attend(const ref_model *r, const double *q, const double *K, const double *V, int t, int p0, double *out) {
    int kvd = r->n_kv * r->hd;
    double *s = malloc(sizeof(double) * (size_t)(t + 1));
    for (int h = 0; h < r->n_head; h++) {
        int kh = h / (r->n_head / r->n_kv);
        double mx = -INFINITY, sum = 0;
        for (int p = p0; p <= t; p++) {
            double d = 0;
            for (int i = 0; i < r->hd; i++) d += q[h * r->hd + i] * K[p * kvd + kh * r->hd + i];
            s[p] = d / sqrt((double)r->hd);
            if (r->attn_cap > 0) s[p] = r->attn_cap * tanh(s[p] / r->attn_cap);
            if (s[p] > mx) mx = s[p];
        }
        for (int p = p0; p <= t; p++) sum += (s[p] = exp(s[p] - mx));
        for (int i = 0; i < r->hd; i++) {
            double acc = 0;
            for (int p = p0; p <= t; p++) acc += s[p] / sum * V[p * kvd + kh * r->hd + i];
            out[h * r->hd + i] = acc;
        }
    }
    free(s);
}

typedef struct { double *xn, *xa, *q, *att, *K, *V, *tmp, *tmp2, *g, *u; } scratch;

/* Attention output of token t of layer l, from its normed input xn, into out. */
static void attn_token(const ref_model *r, int l, int t, const double *xn, scratch *s, double *out) {
    int kvd = r->n_kv * r->hd;
    mv(&r->L[l].q, xn, s->q, r->L[l].bq), mv(&r->L[l].k, xn, s->K + t * kvd, r->L[l].bk);
    mv(&r->L[l].v, xn, s->V + t * kvd, r->L[l].bv);
    if (r->L[l].qn)
        for (int h = 0; h < r->n_head; h++) rms(s->q + h * r->hd, r->L[l].qn, s->q + h * r->hd, r->hd, r->eps);
    if (r->L[l].kn)
        for (int h = 0; h < r->n_kv; h++) rms(s->K + t * kvd + h * r->hd, r->L[l].kn, s->K + t * kvd + h * r->hd, r->hd, r->eps);
    const double base = r->L[l].base;
    if (r->rope) rope(s->q, r->n_head, r->hd, t, base, r->neox), rope(s->K + t * kvd, r->n_kv, r->hd, t, base, r->neox);
    const int p0 = r->L[l].local && t >= r->window ? t - r->window + 1 : 0;
    attend(r, s->q, s->K, s->V, t, p0, s->att);
    mv(&r->L[l].o, s->att, out, r->L[l].bo);
}

static void ffn_token(const ref_model *r, int l, const double *xn, scratch *s, double *out) {
    const bool gated = r->act < 3 || r->act == 5;
    if (gated) mv(&r->L[l].g, xn, s->g, NULL);
    mv(&r->L[l].u, xn, s->u, r->L[l].bu);
    for (int j = 0; j < r->n_ff; j++) s->g[j] = act(r->act, gated ? s->g[j] : 0, s->u[j]);
    mv(&r->L[l].d, s->g, out, r->L[l].bd);
}

void ref_forward(ref_model *r, const int32_t *tokens, int32_t n, double *logits) {
    int d = r->n_embd, qd = r->n_head * r->hd, kvd = r->n_kv * r->hd;
    double *x = calloc((size_t)(n * d), 8);
    scratch s = {malloc(8 * (size_t)d), malloc(8 * (size_t)d), malloc(8 * (size_t)qd), malloc(8 * (size_t)qd),
                 malloc(8 * (size_t)(n * kvd)), malloc(8 * (size_t)(n * kvd)), malloc(8 * (size_t)d), malloc(8 * (size_t)d),
                 malloc(8 * (size_t)r->n_ff), malloc(8 * (size_t)r->n_ff)};
    for (int t = 0; t < n; t++) {
        memcpy(x + t * d, r->emb.w + (int64_t)tokens[t] * d, 8 * (size_t)d);
        if (r->gemma)
            for (int i = 0; i < d; i++) x[t * d + i] *= sqrt((double)d);
        if (r->opt)
            for (int i = 0; i < d; i++) x[t * d + i] += r->pos.w[(int64_t)(t + 2) * d + i];
    }
    for (int l = 0; l < r->n_layer; l++) {
        for (int t = 0; t < n; t++) { /* causal: token t only sees K/V of 0..t, filled in order */
            double *xt = x + t * d;
            norm(r, xt, r->L[l].an, r->L[l].an_b, s.xn);
            if (r->parallel) {
                const double *ain = s.xn;
                if (r->L[l].an2) norm(r, xt, r->L[l].an2, r->L[l].an2_b, s.xa), ain = s.xa;
                attn_token(r, l, t, ain, &s, s.tmp);
                ffn_token(r, l, s.xn, &s, s.tmp2);
                for (int i = 0; i < d; i++) xt[i] += s.tmp[i] + s.tmp2[i];
                continue;
            }
            attn_token(r, l, t, s.xn, &s, s.tmp);
            if (r->gemma) rms(s.tmp, r->L[l].post_a, s.tmp, d, r->eps);
            for (int i = 0; i < d; i++) xt[i] += s.tmp[i];
            norm(r, xt, r->L[l].fn, r->L[l].fn_b, s.xn);
            ffn_token(r, l, s.xn, &s, s.tmp);
            if (r->gemma) rms(s.tmp, r->L[l].post_f, s.tmp, d, r->eps);
            for (int i = 0; i < d; i++) xt[i] += s.tmp[i];
        }
    }
    const rmat *out = r->out.w ? &r->out : &r->emb;
    for (int t = 0; t < n; t++) {
        norm(r, x + t * d, r->out_norm, r->out_norm_b, s.xn);
        double *lt = logits + (int64_t)t * r->n_vocab;
        mv(out, s.xn, lt, NULL);
        for (int j = 0; r->final_cap > 0 && j < r->n_vocab; j++) lt[j] = r->final_cap * tanh(lt[j] / r->final_cap);
    }
    free(x), free(s.xn), free(s.xa), free(s.q), free(s.att), free(s.K), free(s.V), free(s.tmp), free(s.tmp2), free(s.g), free(s.u);
}
