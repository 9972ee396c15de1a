/* llama.cpp's quantization mixes and per-tensor type rules (quant_mix.h). The rules are data:
 * one table row per (tensor category, mix, condition) -> type, first match wins, which is the
 * shape of llama_tensor_get_type_impl's if/else chains for the mixes Hearth offers (the IQ1-IQ3,
 * TQ and Q2_K_S mixes, imatrix-only rules and per-tensor overrides are left out). */
#include "quant_mix.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "formats/types.h"

/* llama_ftype ids (llama.cpp include/llama.h). */
enum {
    FT_F32 = 0, FT_F16 = 1, FT_Q4_0 = 2, FT_Q4_1 = 3, FT_Q8_0 = 7, FT_Q5_0 = 8, FT_Q5_1 = 9, FT_Q2_K = 10,
    FT_Q3_K_S = 11, FT_Q3_K_M = 12, FT_Q3_K_L = 13, FT_Q4_K_S = 14, FT_Q4_K_M = 15, FT_Q5_K_S = 16, FT_Q5_K_M = 17,
    FT_Q6_K = 18, FT_IQ4_NL = 25, FT_IQ4_XS = 30, FT_BF16 = 32, FT_MXFP4_MOE = 38,
    FT_ANY = 0xffff /* table rows that hold for every mix */
};

/* llama-quantize's listing order. */
static const hr_qmix mixes[] = {
    {"Q4_0", FT_Q4_0, HR_Q4_0, "output (or the tied token_embd) q6_k"},
    {"Q4_1", FT_Q4_1, HR_Q4_1, "output q6_k"},
    {"MXFP4_MOE", FT_MXFP4_MOE, HR_MXFP4, "expert tensors mxfp4, every other matrix q8_0"},
    {"Q5_0", FT_Q5_0, HR_Q5_0, "output q6_k"},
    {"Q5_1", FT_Q5_1, HR_Q5_1, "output q6_k"},
    {"Q2_K", FT_Q2_K, HR_Q2_K, "attn_v q3_k (q4_k if GQA >= 4), ffn_down and attn_output q3_k, output q6_k"},
    {"Q3_K_S", FT_Q3_K_S, HR_Q3_K, "output q6_k"},
    {"Q3_K_M", FT_Q3_K_M, HR_Q3_K,
     "attn_v q5_k in layers 0-1 then q4_k, ffn_down q5_k in the first 1/16 then q4_k, attn_output q4_k, output q6_k"},
    {"Q3_K_L", FT_Q3_K_L, HR_Q3_K, "attn_v, ffn_down and attn_output q5_k, output q6_k"},
    {"IQ4_NL", FT_IQ4_NL, HR_IQ4_NL, "attn_v q5_k if GQA >= 4, ffn_down q5_k in the first 1/8 of layers, output q6_k"},
    {"IQ4_XS", FT_IQ4_XS, HR_IQ4_XS, "attn_v q5_k if GQA >= 4, ffn_down q5_k in the first 1/8 of layers, output q6_k"},
    {"Q4_K_S", FT_Q4_K_S, HR_Q4_K, "attn_v q5_k in layers 0-3, ffn_down q5_k in the first 1/8 of layers, output q6_k"},
    {"Q4_K_M", FT_Q4_K_M, HR_Q4_K,
     "attn_v and ffn_down q6_k in the first and last 1/8 of layers and every third between, output q6_k"},
    {"Q5_K_S", FT_Q5_K_S, HR_Q5_K, "output q6_k"},
    {"Q5_K_M", FT_Q5_K_M, HR_Q5_K,
     "attn_v and ffn_down q6_k in the first and last 1/8 of layers and every third between, output q6_k"},
    {"Q6_K", FT_Q6_K, HR_Q6_K, "every matrix q6_k"},
    {"Q8_0", FT_Q8_0, HR_Q8_0, "every matrix q8_0"},
    {"F16", FT_F16, HR_F16, "every matrix f16"},
    {"BF16", FT_BF16, HR_BF16, "every matrix bf16"},
    {"F32", FT_F32, HR_F32, "every matrix f32"},
};
#define N_MIXES (sizeof mixes / sizeof mixes[0])

/* llama-quantize's aliases: the bare K type names mean the _M mixes. */
static const struct {
    const char *alias, *mix;
} aliases[] = {{"Q3_K", "Q3_K_M"}, {"Q4_K", "Q4_K_M"}, {"Q5_K", "Q5_K_M"}};

size_t hr_qmix_count(void) { return N_MIXES; }
const hr_qmix *hr_qmix_at(size_t i) { return i < N_MIXES ? &mixes[i] : NULL; }

const hr_qmix *hr_qmix_by_ftype(uint32_t ftype) {
    for (size_t i = 0; i < N_MIXES; i++)
        if (mixes[i].ftype == ftype) return &mixes[i];
    return NULL;
}

static const hr_qmix *by_name(const char *name) {
    for (size_t i = 0; i < N_MIXES; i++)
        if (!strcasecmp(mixes[i].name, name)) return &mixes[i];
    return NULL;
}

const hr_qmix *hr_qmix_find(const char *name) {
    if (!name || !*name) return NULL;
    const hr_qmix *m = by_name(name);
    for (size_t i = 0; !m && i < sizeof aliases / sizeof aliases[0]; i++)
        if (!strcasecmp(aliases[i].alias, name)) m = by_name(aliases[i].mix);
    if (m) return m;
    char *end;
    unsigned long id = strtoul(name, &end, 10);
    return *end == 0 && name[0] >= '0' && name[0] <= '9' ? hr_qmix_by_ftype((uint32_t)id) : NULL;
}

const hr_qmix *hr_qmix_for_type(uint32_t type) {
    for (size_t i = 0; i < N_MIXES; i++)
        if (mixes[i].base == type) return &mixes[i];
    return NULL;
}

double hr_type_bpw(uint32_t type) {
    const uint64_t n = hr_type_block_elems(type);
    return n && hr_type_is_weight(type) ? 8.0 * (double)hr_type_block_bytes(type) / (double)n : 0;
}

/* llama.cpp's LLM_TYPE_70B, the only model size its rules look at: block counts per
 * architecture (llama: only with grouped KV heads and not the 8-expert models). */
static const struct {
    const char *arch;
    uint32_t n_layer;
    bool needs_gqa;
} size_70b[] = {{"llama", 80, true}, {"qwen2", 80, false}, {"olmo", 80, false}, {"deci", 80, false}, {"jais2", 68, false}};

void hr_qmix_model_init(hr_qmix_model *m, const char *arch, uint32_t n_layer, uint32_t n_head, uint32_t n_head_kv,
                        uint32_t n_expert) {
    memset(m, 0, sizeof *m);
    m->falcon = !strcmp(arch, "falcon");
    m->n_layer = n_layer, m->n_head = n_head, m->n_head_kv = n_head_kv, m->n_expert = n_expert;
    for (size_t i = 0; i < sizeof size_70b / sizeof size_70b[0]; i++)
        if (!strcmp(arch, size_70b[i].arch) && n_layer == size_70b[i].n_layer)
            m->is_70b = !size_70b[i].needs_gqa || (n_head != n_head_kv && n_expert != 8);
}

/* ---- which tensors are quantized ---- */

/* Name parts llama.cpp never quantizes: norms, MoE routers, positions, and small special
 * matrices of other architectures (kept so files of those quantize the same way). */
static const char *const keep_parts[] = {
    "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel", "per_layer_model_proj",
    "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight", "indexer.q_proj.weight",
    "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight",
    "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight", "time_mix_a0.weight", "time_mix_a1.weight",
    "time_mix_a2.weight", "time_mix_g1.weight", "time_mix_g2.weight", "time_mix_decay_w1.weight",
    "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight", "attn_rel_b.weight", ".position_embd", "sam.pos_embd",
    "sam.neck.", "sam.net_", ".rel_pos", ".patch_embd", ".patch_merger", "a.rvq.codebook", "mm.a.code_embd",
};
static const char *const keep_names[] = {"position_embd.weight", "token_types.weight"};

/* ggml_n_dims: trailing dimensions of 1 do not count. */
static uint32_t real_dims(const hr_qmix_tensor *t) {
    for (uint32_t d = 3; d > 0; d--)
        if (t->ne[d] > 1) return d + 1;
    return 1;
}

bool hr_qmix_quantizable(const hr_qmix_tensor *t) {
    const size_t len = strlen(t->name);
    if (real_dims(t) < 2 || len < 6 || strcmp(t->name + len - 6, "weight")) return false;
    for (size_t i = 0; i < sizeof keep_parts / sizeof keep_parts[0]; i++)
        if (strstr(t->name, keep_parts[i])) return false;
    for (size_t i = 0; i < sizeof keep_names / sizeof keep_names[0]; i++)
        if (!strcmp(t->name, keep_names[i])) return false;
    return true;
}

/* ---- tensor categories (llama.cpp's tensor_get_category) ---- */

typedef enum cat { C_OTHER, C_TOKEN_EMBD, C_OUTPUT, C_ATTN_Q, C_ATTN_K, C_ATTN_V, C_ATTN_OUT, C_FFN_UP, C_FFN_GATE,
                   C_FFN_DOWN } cat;

/* First match wins. Fused QKV and MLA's kv_b count as attn_v: llama.cpp routes them through
 * its attn_v rules (its separate QKV branch is never reached) and counts them with attn_v. */
static const struct {
    const char *part;
    cat c;
} cat_parts[] = {
    {"attn_qkv.weight", C_ATTN_V}, {"attn_kv_b.weight", C_ATTN_V}, {"attn_v.weight", C_ATTN_V},
    {"attn_k.weight", C_ATTN_K},   {"attn_q.weight", C_ATTN_Q},    {"attn_output.weight", C_ATTN_OUT},
    {"ffn_up", C_FFN_UP},          {"ffn_gate", C_FFN_GATE},       {"ffn_down", C_FFN_DOWN},
};

static cat category(const char *name) {
    if (!strcmp(name, "output.weight")) return C_OUTPUT;
    if (!strcmp(name, "token_embd.weight") || !strcmp(name, "per_layer_token_embd.weight")) return C_TOKEN_EMBD;
    for (size_t i = 0; i < sizeof cat_parts / sizeof cat_parts[0]; i++)
        if (strstr(name, cat_parts[i].part)) return cat_parts[i].c;
    return C_OTHER;
}

/* ---- the rules ---- */

/* Conditions a row may require (all of them). i and n are the tensor's index and count in its
 * category: for attn_v the attn_v tensors before it and their number, for ffn_down its layer
 * and the layer count. */
enum {
    R_FALCON = 1 << 0, R_NOT_FALCON = 1 << 1, R_E8 = 1 << 2, /* n_expert == 8 */
    R_NOT_E8 = 1 << 3, R_GQA4 = 1 << 4,                      /* n_head / n_head_kv >= 4 */
    R_FIRST2 = 1 << 5, R_FIRST4 = 1 << 6,                    /* i < 2, i < 4 */
    R_LT8 = 1 << 7, R_LT16 = 1 << 8,                         /* i < n/8, i < n/16 */
    R_MORE = 1 << 9, /* first and last eighth, and every third between (llama.cpp's use_more_bits) */
};

typedef struct rule {
    cat c;
    uint32_t ftype;
    uint32_t need;
    uint32_t type;
} rule;

static const rule rules[] = {
    {C_ATTN_V, FT_Q2_K, R_GQA4, HR_Q4_K},
    {C_ATTN_V, FT_Q2_K, 0, HR_Q3_K},
    {C_ATTN_V, FT_Q3_K_M, R_FIRST2, HR_Q5_K},
    {C_ATTN_V, FT_Q3_K_M, 0, HR_Q4_K},
    {C_ATTN_V, FT_Q3_K_L, 0, HR_Q5_K},
    {C_ATTN_V, FT_IQ4_NL, R_GQA4, HR_Q5_K},
    {C_ATTN_V, FT_IQ4_XS, R_GQA4, HR_Q5_K},
    {C_ATTN_V, FT_Q4_K_M, R_MORE, HR_Q6_K},
    {C_ATTN_V, FT_Q5_K_M, R_MORE, HR_Q6_K},
    {C_ATTN_V, FT_Q4_K_S, R_FIRST4, HR_Q5_K},

    {C_ATTN_K, FT_ANY, R_E8, HR_Q8_0},

    {C_FFN_DOWN, FT_Q2_K, 0, HR_Q3_K},
    {C_FFN_DOWN, FT_Q3_K_M, R_LT16, HR_Q5_K},
    {C_FFN_DOWN, FT_Q3_K_M, R_NOT_FALCON, HR_Q4_K},
    {C_FFN_DOWN, FT_Q3_K_M, R_MORE, HR_Q4_K},
    {C_FFN_DOWN, FT_Q3_K_M, 0, HR_Q3_K},
    {C_FFN_DOWN, FT_Q3_K_L, R_FALCON, HR_Q4_K},
    {C_FFN_DOWN, FT_Q3_K_L, 0, HR_Q5_K},
    {C_FFN_DOWN, FT_Q4_K_M, R_FALCON | R_LT16, HR_Q6_K},
    {C_FFN_DOWN, FT_Q4_K_M, R_FALCON | R_MORE, HR_Q5_K},
    {C_FFN_DOWN, FT_Q4_K_M, R_FALCON, HR_Q4_K},
    {C_FFN_DOWN, FT_Q4_K_M, R_MORE, HR_Q6_K},
    {C_FFN_DOWN, FT_IQ4_NL, R_LT8, HR_Q5_K},
    {C_FFN_DOWN, FT_IQ4_XS, R_LT8, HR_Q5_K},
    {C_FFN_DOWN, FT_Q5_K_M, R_MORE, HR_Q6_K},
    {C_FFN_DOWN, FT_Q4_K_S, R_NOT_FALCON | R_LT8, HR_Q5_K},

    {C_ATTN_OUT, FT_Q2_K, R_NOT_FALCON | R_E8, HR_Q5_K},
    {C_ATTN_OUT, FT_Q3_K_S, R_NOT_FALCON | R_E8, HR_Q5_K},
    {C_ATTN_OUT, FT_Q3_K_M, R_NOT_FALCON | R_E8, HR_Q5_K},
    {C_ATTN_OUT, FT_IQ4_NL, R_NOT_FALCON | R_E8, HR_Q5_K},
    {C_ATTN_OUT, FT_Q4_K_S, R_NOT_FALCON | R_E8, HR_Q5_K},
    {C_ATTN_OUT, FT_Q4_K_M, R_NOT_FALCON | R_E8, HR_Q5_K},
    {C_ATTN_OUT, FT_IQ4_XS, R_NOT_FALCON | R_E8, HR_Q5_K},
    {C_ATTN_OUT, FT_Q2_K, R_NOT_FALCON | R_NOT_E8, HR_Q3_K},
    {C_ATTN_OUT, FT_Q3_K_M, R_NOT_FALCON | R_NOT_E8, HR_Q4_K},
    {C_ATTN_OUT, FT_Q3_K_L, R_NOT_FALCON | R_NOT_E8, HR_Q5_K},
    {C_ATTN_OUT, FT_Q3_K_L, R_FALCON, HR_Q4_K},
};

/* Rows that are not whole blocks: the type llama.cpp demotes each 256-block type to. */
static const struct {
    uint32_t from, to;
} fallbacks[] = {{HR_Q2_K, HR_Q4_0}, {HR_Q3_K, HR_Q4_0}, {HR_Q4_K, HR_Q5_0},
                 {HR_Q5_K, HR_Q5_1}, {HR_Q6_K, HR_Q8_0}, {HR_IQ4_XS, HR_IQ4_NL}};

static bool more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

static uint32_t conditions(const hr_qmix_model *m, int i, int n) {
    uint32_t f = m->falcon ? R_FALCON : R_NOT_FALCON;
    f |= m->n_expert == 8 ? R_E8 : R_NOT_E8;
    if (m->n_head_kv && m->n_head / m->n_head_kv >= 4) f |= R_GQA4;
    if (i < 2) f |= R_FIRST2;
    if (i < 4) f |= R_FIRST4;
    if (i < n / 8) f |= R_LT8;
    if (i < n / 16) f |= R_LT16;
    if (more_bits(i, n)) f |= R_MORE;
    return f;
}

static uint32_t lookup(cat c, uint32_t ftype, uint32_t have, uint32_t type) {
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        const rule *r = &rules[i];
        if (r->c == c && (r->ftype == ftype || r->ftype == FT_ANY) && (have & r->need) == r->need) return r->type;
    }
    return type;
}

/* Running counts, in llama.cpp's tensor order. */
typedef struct plan_state {
    const hr_qmix *mix;
    const hr_qmix_model *m;
    bool tied;      /* no output.weight: token_embd is quantized as the output */
    int n_attn_v;   /* attn_v-like tensors in the file */
    int i_attn_v, i_ffn_down;
    uint32_t n_fallback;
} plan_state;

/* The layer an FFN tensor's rules use: its place among its kind, or with experts (whose
 * tensors need not come one per layer) the number in its name. */
static int layer_of(const plan_state *s, const char *name, int counted, int *layer, hr_err *e) {
    *layer = counted;
    if (s->m->n_expert <= 1) return 0;
    if (sscanf(name, "blk.%d.", layer) != 1) return hr_errf(e, "tensor '%s': cannot tell its layer", name);
    if (*layer < 0 || *layer >= (int)s->m->n_layer)
        return hr_errf(e, "tensor '%s': layer %d is outside [0, %u)", name, *layer, s->m->n_layer);
    return 0;
}

/* The mix's type for one quantizable tensor before the block-size fallback. */
static int mix_type(plan_state *s, const hr_qmix_tensor *t, cat c, uint32_t *type, hr_err *e) {
    const hr_qmix_model *m = s->m;
    const uint32_t ft = s->mix->ftype;
    if (c == C_OUTPUT || (s->tied && c == C_TOKEN_EMBD)) {
        if (ft == FT_MXFP4_MOE || m->falcon || t->ne[0] % hr_type_block_elems(*type)) *type = HR_Q8_0;
        else if (*type != HR_Q8_0) *type = HR_Q6_K;
        return 0;
    }
    if (ft == FT_MXFP4_MOE) {
        *type = t->ne[2] > 1 ? HR_MXFP4 : HR_Q8_0;
        return 0;
    }
    if (c == C_ATTN_V) {
        *type = lookup(c, ft, conditions(m, s->i_attn_v, s->n_attn_v), *type);
        if (m->is_70b && (*type == HR_Q3_K || *type == HR_Q4_K)) *type = HR_Q5_K;
        if (m->n_expert == 8) *type = HR_Q8_0;
        s->i_attn_v++;
        return 0;
    }
    /* gate and up take no rule in these mixes, but llama.cpp still checks their layer. */
    int layer = 0;
    if (c == C_FFN_DOWN || c == C_FFN_GATE || c == C_FFN_UP) {
        if (layer_of(s, t->name, s->i_ffn_down, &layer, e)) return -1;
        if (c == C_FFN_DOWN) s->i_ffn_down++;
    }
    *type = lookup(c, ft, conditions(m, layer, (int)m->n_layer), *type);
    return 0;
}

static int fallback(plan_state *s, const hr_qmix_tensor *t, uint32_t *type, hr_err *e) {
    const uint64_t blk = hr_type_block_elems(*type);
    if (t->ne[0] % blk == 0) return 0;
    s->n_fallback++;
    uint32_t to = blk <= HR_QK ? *type : UINT32_MAX;
    for (size_t i = 0; i < sizeof fallbacks / sizeof fallbacks[0]; i++)
        if (fallbacks[i].from == *type) to = fallbacks[i].to;
    if (to == UINT32_MAX)
        return hr_errf(e, "tensor '%s': rows of %llu are not whole %s blocks (%llu) and %s has no fallback type", t->name,
                       (unsigned long long)t->ne[0], hr_type_name(*type), (unsigned long long)blk, hr_type_name(*type));
    *type = t->ne[0] % hr_type_block_elems(to) ? HR_F16 : to;
    return 0;
}

static int tensor_type(plan_state *s, bool pure, const hr_qmix_tensor *t, uint32_t *out, hr_err *e) {
    *out = t->type;
    if (!hr_qmix_quantizable(t)) return 0;
    uint32_t type = s->mix->base;
    /* Float targets take no rules and need no fallback, as in llama.cpp. */
    if (hr_type_is_quant(type)) {
        if (!pure && mix_type(s, t, category(t->name), &type, e)) return -1;
        if (fallback(s, t, &type, e)) return -1;
    }
    *out = type;
    return 0;
}

/* llama.cpp visits tensors sorted by layer number (tensors outside blocks first), then name;
 * the attn_v counter follows that order. */
typedef struct order_key {
    int layer;
    const char *name;
    size_t idx;
} order_key;

static int cmp_order(const void *a, const void *b) {
    const order_key *x = a, *y = b;
    if (x->layer != y->layer) return x->layer < y->layer ? -1 : 1;
    return strcmp(x->name, y->name);
}

int hr_qmix_plan(const hr_qmix *mix, bool pure, const hr_qmix_model *m, const hr_qmix_tensor *ts, size_t n,
                 uint32_t *types, uint32_t *n_fallback, hr_err *e) {
    if (!mix) return hr_errf(e, "no quantization type given");
    plan_state s = {.mix = mix, .m = m, .tied = true};
    order_key *order = malloc((n ? n : 1) * sizeof *order);
    if (!order) return hr_errf(e, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const cat c = category(ts[i].name);
        s.tied &= c != C_OUTPUT;
        s.n_attn_v += c == C_ATTN_V;
        order[i] = (order_key){-1, ts[i].name, i};
        sscanf(ts[i].name, "blk.%d.", &order[i].layer);
    }
    qsort(order, n, sizeof *order, cmp_order);
    int rc = 0;
    for (size_t k = 0; k < n && !rc; k++) rc = tensor_type(&s, pure, &ts[order[k].idx], &types[order[k].idx], e);
    free(order);
    if (n_fallback) *n_fallback = s.n_fallback;
    return rc;
}
