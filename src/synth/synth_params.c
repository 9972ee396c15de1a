/* Synthesizer parameters: defaults, names and validation. */
#include <math.h>
#include <string.h>
#include "engine/arch.h"
#include "formats/types.h"
#include "synth.h"
#include "synth_internal.h"

static const char *const act_names[] = {"swiglu", "reglu", "drelu", "relu", "gelu", "geglu"};
#define N_ACT (sizeof act_names / sizeof act_names[0])
_Static_assert(N_ACT == HR_ACT_COUNT, "synth activations are the engine's");

void hr_synth_defaults(hr_synth_params *p) {
    *p = (hr_synth_params){.arch = "llama", .type = HR_F32, .n_embd = 256, .n_layer = 2, .n_head = 8,
                           .n_head_kv = 8, .n_ff = 512, .n_vocab = 1000, .n_ctx_train = 2048, .rope_base = 10000.0f,
                           .rms_eps = 1e-5f, .act = HR_SYNTH_SWIGLU, .tokenizer = HR_TOK_SPM, .seed = 1, .pred_rank = 64};
}

const hr_arch *synth_arch(const hr_synth_params *p) {
    const char *n = p->arch ? p->arch : "llama";
    return hr_arch_find(n, strlen(n));
}

uint32_t hr_synth_n_expert(const hr_synth_params *p) {
    const hr_arch *a = synth_arch(p);
    return p->n_expert ? p->n_expert : a ? a->one_expert : 0;
}

uint32_t hr_synth_n_expert_used(const hr_synth_params *p) {
    const uint32_t ne = hr_synth_n_expert(p);
    return p->n_expert_used ? p->n_expert_used : ne < 2 ? ne : 2;
}

hr_synth_act hr_synth_default_act(const char *arch, bool powerinfer) {
    const hr_arch *a = arch ? hr_arch_find(arch, strlen(arch)) : NULL;
    if (!a) return HR_SYNTH_SWIGLU;
    /* PowerInfer has no GELU FFN: its files of a GELU arch (falcon) are ReLU. */
    return (hr_synth_act)(powerinfer && a->act == HR_ACT_GELU ? a->sparse_act : a->act);
}

const char *hr_synth_act_name(hr_synth_act a) { return (unsigned)a < N_ACT ? act_names[a] : "?"; }


int hr_synth_act_from_name(const char *s) {
    for (int i = 0; i < (int)N_ACT; i++)
        if (!strcmp(s, act_names[i])) return i;
    return -1;
}

uint32_t hr_synth_ftype(uint32_t type) {
    switch (type) {
    case HR_F32: return 0;
    case HR_F16: return 1;
    case HR_Q4_0: return 2;
    case HR_Q8_0: return 7;
    case HR_BF16: return 32;
    /* One type throughout: the llama.cpp file type whose main type it is (the _S mixes). */
    case HR_Q4_1: return 3;
    case HR_Q5_0: return 8;
    case HR_Q5_1: return 9;
    case HR_Q2_K: return 10;
    case HR_Q3_K: return 11;
    case HR_Q4_K: return 14;
    case HR_Q5_K: return 16;
    case HR_Q6_K: return 18;
    case HR_IQ4_NL: return 25;
    case HR_IQ4_XS: return 30;
    case HR_MXFP4: return 38;
    default: return UINT32_MAX;
    }
}

static int in_range(const char *what, uint32_t v, uint32_t lo, uint32_t hi, hr_err *e) {
    if (v < lo || v > hi) return hr_errf(e, "%s = %u is out of range [%u, %u]", what, v, lo, hi);
    return 0;
}

/* Block types store rows in whole blocks (32 elements, 256 for the K-quants and IQ4_XS). */
static int row_ok(const hr_synth_params *p, const char *what, uint32_t len, hr_err *e) {
    const uint64_t blk = hr_type_block_elems(p->type);
    if (blk > 1 && len % blk)
        return hr_errf(e, "%s = %u must be a multiple of %llu for type %s", what, len, (unsigned long long)blk,
                       hr_type_name(p->type));
    return 0;
}

/* What the architecture's entry allows: its own activation where it fixes one, GELU only
 * where llama.cpp has a GELU FFN, no gate where its layout has none, PowerInfer files only
 * of archs PowerInfer reads. */
static int check_arch(const hr_synth_params *p, hr_err *e) {
    const hr_arch *a = synth_arch(p);
    if (!a) return hr_errf(e, "unknown arch '%s'", p->arch);
    if ((unsigned)p->act >= N_ACT) return hr_errf(e, "unknown activation %d", (int)p->act);
    const hr_act act = (hr_act)p->act;
    if (a->act_fixed && act != a->act)
        return hr_errf(e, "arch %s computes %s: activation must be %s, not %s", a->name, act_names[a->act],
                       act_names[a->act], act_names[act]);
    if (act == HR_ACT_GELU && !a->gelu) return hr_errf(e, "activation gelu is not an FFN of arch %s", a->name);
    if (act == HR_ACT_GEGLU && a->act != HR_ACT_GEGLU) return hr_errf(e, "activation geglu is not an FFN of arch %s", a->name);
    if (!hr_arch_gated(a->act) && hr_arch_gated(act))
        return hr_errf(e, "arch %s has no gate: activation must be relu%s, not %s", a->name, a->gelu ? " or gelu" : "",
                       act_names[act]);
    if (p->falcon_40b && !hr_arch_has(a, HR_AT_ATTN_NORM_2))
        return hr_errf(e, "falcon_40b (attn_norm_2) needs an arch that has it (falcon), not %s", a->name);
    if (p->powerinfer && !a->powerinfer) return hr_errf(e, "powerinfer files of arch %s do not exist", a->name);
    return 0;
}

static int check_shape(const hr_synth_params *p, hr_err *e) {
    if (in_range("n_embd", p->n_embd, 1, 65536, e) || in_range("n_layer", p->n_layer, 1, 512, e) ||
        in_range("n_head", p->n_head, 1, 1024, e) || in_range("n_head_kv", p->n_head_kv, 1, p->n_head, e) ||
        in_range("n_ff", p->n_ff, 1, 1u << 20, e) || in_range("n_ctx", p->n_ctx_train, 1, 1u << 24, e) ||
        in_range("n_vocab", p->n_vocab, p->tokenizer == HR_TOK_SPM ? 300 : 260, 1u << 22, e))
        return -1;
    if (p->n_head % p->n_head_kv)
        return hr_errf(e, "n_head = %u must be a multiple of n_head_kv = %u", p->n_head, p->n_head_kv);
    uint32_t hd = p->head_dim;
    if (!hd) {
        if (p->n_embd % p->n_head)
            return hr_errf(e, "n_embd = %u must be a multiple of n_head = %u", p->n_embd, p->n_head);
        hd = p->n_embd / p->n_head;
    }
    if (hd % 2 || hd > 1024) return hr_errf(e, "head_dim = %u must be even and at most 1024", hd);
    const hr_arch *a = synth_arch(p);
    /* llama.cpp's parallel-block graph (falcon) adds attention and FFN outputs of n_embd. */
    if (a->parallel && hd * p->n_head != p->n_embd)
        return hr_errf(e, "%s needs n_head * head_dim = n_embd (%u * %u != %u)", a->name, p->n_head, hd, p->n_embd);
    if (a->learned_pos && p->n_ctx_train > (1u << 24) - (uint32_t)a->pos_offset)
        return hr_errf(e, "n_ctx = %u is too large for %s", p->n_ctx_train, a->name);
    if ((uint64_t)hd * p->n_head > 65536) return hr_errf(e, "n_head * head_dim = %llu is too large", (unsigned long long)hd * p->n_head);
    if (row_ok(p, "n_embd", p->n_embd, e) || row_ok(p, "n_head * head_dim", hd * p->n_head, e) ||
        row_ok(p, "n_ff", p->n_ff, e))
        return -1;
    if (p->powerinfer && (in_range("pred_rank", p->pred_rank, 1, 65536, e) || row_ok(p, "pred_rank", p->pred_rank, e)))
        return -1;
    if (p->pred_linear && !p->powerinfer) return hr_errf(e, "pred_linear needs powerinfer");
    return 0;
}

static bool positive_finite(float x) { return x > 0 && isfinite(x); }

/* The sliding-window and soft-cap keys: only for archs that read them, with usable values. */
static int check_keys(const hr_synth_params *p, hr_err *e) {
    const hr_arch *a = synth_arch(p);
    if ((p->n_swa || p->has_swa_pattern || p->rope_base_swa != 0) && !a->swa_pattern)
        return hr_errf(e, "arch %s has no sliding window (swa, swa_pattern, rope_base_swa)", a->name);
    if (p->n_swa > (1u << 24)) return hr_errf(e, "swa = %u is out of range [0, %u]", p->n_swa, 1u << 24);
    if (p->has_swa_pattern && p->swa_pattern > 4096) return hr_errf(e, "swa_pattern = %u is out of range [0, 4096]", p->swa_pattern);
    if (p->rope_base_swa != 0 && !positive_finite(p->rope_base_swa))
        return hr_errf(e, "rope_base_swa = %g must be positive", p->rope_base_swa);
    if (p->attn_softcap != 0 && !(a->attn_softcap > 0))
        return hr_errf(e, "arch %s has no attention soft-cap", a->name);
    if (p->final_softcap != 0 && !a->final_softcap) return hr_errf(e, "arch %s has no final soft-cap", a->name);
    if ((p->attn_softcap != 0 && !positive_finite(p->attn_softcap)) ||
        (p->final_softcap != 0 && !positive_finite(p->final_softcap)))
        return hr_errf(e, "soft-caps must be positive (attn %g, final %g)", p->attn_softcap, p->final_softcap);
    return 0;
}

/* Experts: an architecture with them (required where its entry says), a used count within
 * the experts, gated activations, no PowerInfer layout. */
static int check_experts(const hr_synth_params *p, const hr_arch *a, hr_err *e) {
    const uint32_t ne = hr_synth_n_expert(p);
    if (!ne) {
        if (a->moe_required) return hr_errf(e, "arch %s is a mixture of experts: n_expert must be > 0", a->name);
        if (p->n_expert_used || p->moe_sigmoid || p->has_expert_type)
            return hr_errf(e, "n_expert_used, moe_sigmoid and expert_type need n_expert > 0");
        if (p->expert_gate_rank) return hr_errf(e, "expert_gate_rank needs n_expert > 0");
        return 0;
    }
    if (p->has_expert_type) {
        const uint32_t t = p->expert_type;
        const uint64_t blk = hr_type_is_weight(t) ? hr_type_block_elems(t) : 0;
        if (!blk || hr_synth_ftype(t) == UINT32_MAX) return hr_errf(e, "expert type %u is not a type hearth synth writes", t);
        if (p->n_embd % blk || p->n_ff % blk)
            return hr_errf(e, "n_embd = %u and n_ff = %u must be multiples of %llu for expert type %s", p->n_embd, p->n_ff,
                           (unsigned long long)blk, hr_type_name(t));
    }
    if (!a->moe) return hr_errf(e, "arch %s has no mixture-of-experts layout (n_expert must be 0)", a->name);
    if (in_range("n_expert", ne, 1, 256, e) || in_range("n_expert_used", hr_synth_n_expert_used(p), 1, ne, e)) return -1;
    if (p->moe_sigmoid && !a->moe_gate_key) return hr_errf(e, "moe_sigmoid: arch %s's router gating is fixed", a->name);
    if (p->expert_gate_rank > p->n_embd) return hr_errf(e, "expert_gate_rank %u is above n_embd %u", p->expert_gate_rank, p->n_embd);
    if (p->powerinfer) return hr_errf(e, "powerinfer files have no experts");
    if (!hr_arch_gated((hr_act)p->act)) return hr_errf(e, "experts need a gated activation, not %s", act_names[p->act]);
    return 0;
}

/* RoPE scaling: the types llama.cpp's loaders and Hearth share, factors only where the
 * architecture reads them. */
static int check_rope(const hr_synth_params *p, const hr_arch *a, hr_err *e) {
    const char *t = p->rope_scaling;
    if (t && strcmp(t, "none") && strcmp(t, "linear") && strcmp(t, "yarn"))
        return hr_errf(e, "rope_scaling '%s' is not none, linear or yarn", t);
    if ((t || p->rope_scale != 0 || p->rope_orig_ctx || p->rope_freqs) && a->rope == HR_ROPE_NONE)
        return hr_errf(e, "arch %s has no RoPE (rope_scaling, rope_scale, rope_orig_ctx, rope_freqs)", a->name);
    if (p->rope_scale != 0 && !positive_finite(p->rope_scale)) return hr_errf(e, "rope_scale = %g must be positive", p->rope_scale);
    if (p->rope_orig_ctx > (1u << 24)) return hr_errf(e, "rope_orig_ctx = %u is out of range [0, %u]", p->rope_orig_ctx, 1u << 24);
    if (p->rope_freqs && !hr_arch_has(a, HR_AT_ROPE_FREQS)) return hr_errf(e, "arch %s has no rope_freqs tensor", a->name);
    return 0;
}

int hr_synth_validate(const hr_synth_params *p, hr_err *e) {
    if (!p) return hr_errf(e, "no parameters");
    if (!hr_type_is_weight(p->type) || hr_synth_ftype(p->type) == UINT32_MAX)
        return hr_errf(e, "weight type %u is not a type hearth synth writes", p->type);
    if ((unsigned)p->tokenizer > HR_TOK_BPE) return hr_errf(e, "unknown tokenizer kind %d", (int)p->tokenizer);
    if (check_arch(p, e) || check_shape(p, e) || check_keys(p, e) || check_experts(p, synth_arch(p), e) ||
        check_rope(p, synth_arch(p), e))
        return -1;
    if (!(p->rope_base > 0) || !isfinite(p->rope_base)) return hr_errf(e, "rope_base = %g must be positive", p->rope_base);
    if (!(p->rms_eps > 0) || !(p->rms_eps < 1)) return hr_errf(e, "rms_eps = %g must be in (0, 1)", p->rms_eps);
    if (p->has_sparse_threshold && (!p->powerinfer || !isfinite(p->sparse_threshold)))
        return hr_errf(e, "sparse_threshold needs powerinfer and a finite value");
    if (p->name && (!*p->name || strlen(p->name) > 256)) return hr_errf(e, "name must have 1 to 256 characters");
    return 0;
}
