/* Loading a GGUF model: architecture hyperparameters, tensor lookup with shape checks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/types.h"
#include "model.h"
#include "util/checked.h"

static const char *const act_names[HR_ACT_COUNT] = {"swiglu", "reglu", "drelu", "relu", "gelu"};

const char *hr_act_name(hr_act a) { return act_names[a]; }

int hr_act_from_name(const char *s, size_t len) {
    for (int i = 0; i < HR_ACT_COUNT; i++)
        if (strlen(act_names[i]) == len && !memcmp(act_names[i], s, len)) return i;
    return -1;
}

/* Reads "<arch>.<suffix>" as u32; required keys give an error when absent. */
static int arch_u32(const hearth_model *m, const char *suffix, bool required, uint32_t *out, hr_err *e) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->arch, suffix);
    int r = gguf_get_u32(&m->file, key, out, e);
    if (r < 0) return r;
    if (r == 1 && required) return hr_errf(e, "missing metadata key '%s'", key);
    return 0;
}

static int arch_f32(const hearth_model *m, const char *suffix, float *out, hr_err *e) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->arch, suffix);
    return gguf_get_f32(&m->file, key, out, e) < 0 ? -1 : 0;
}

static int positive(const char *what, uint32_t v, uint32_t max, hr_err *e) {
    if (v == 0 || v > max) return hr_errf(e, "%s = %u is out of range [1, %u]", what, v, max);
    return 0;
}

static int load_hparams(hearth_model *m, const hr_arch *a, hr_err *e) {
    hr_hparams *hp = &m->hp;
    uint32_t n_embd, n_layer, n_head, n_head_kv = 0, n_ff, n_ctx = 2048, key_len = 0, n_rot = 0;
    if (arch_u32(m, "embedding_length", true, &n_embd, e) || arch_u32(m, "block_count", true, &n_layer, e) ||
        arch_u32(m, "attention.head_count", true, &n_head, e) ||
        arch_u32(m, "attention.head_count_kv", false, &n_head_kv, e) ||
        arch_u32(m, "context_length", false, &n_ctx, e) || arch_u32(m, "attention.key_length", false, &key_len, e) ||
        arch_u32(m, "rope.dimension_count", false, &n_rot, e))
        return -1;
    if (arch_u32(m, a->ff_key, true, &n_ff, e)) return -1;
    if (!n_head_kv) n_head_kv = n_head;
    if (positive("embedding_length", n_embd, 1 << 16, e) || positive("block_count", n_layer, 4096, e) ||
        positive("attention.head_count", n_head, 1024, e) || positive(a->ff_key, n_ff, 1 << 20, e) ||
        positive("context_length", n_ctx, 1 << 24, e))
        return -1;
    if (n_head_kv > n_head || n_head % n_head_kv)
        return hr_errf(e, "attention.head_count_kv = %u must divide head_count = %u", n_head_kv, n_head);
    if (!key_len) {
        if (n_embd % n_head) return hr_errf(e, "embedding_length %u is not a multiple of head_count %u", n_embd, n_head);
        key_len = n_embd / n_head;
    }
    if (key_len % 2 || key_len > 1024) return hr_errf(e, "attention head size %u must be even and <= 1024", key_len);
    if (!n_rot) n_rot = key_len;
    if (n_rot > key_len || n_rot % 2) return hr_errf(e, "rope.dimension_count %u must be even and <= head size %u", n_rot, key_len);
    *hp = (hr_hparams){.n_embd = (int32_t)n_embd, .n_layer = (int32_t)n_layer, .n_head = (int32_t)n_head,
                       .n_head_kv = (int32_t)n_head_kv, .head_dim = (int32_t)key_len, .n_ff = (int32_t)n_ff,
                       .n_ctx_train = (int32_t)n_ctx, .n_rot = (int32_t)n_rot, .rms_eps = 1e-5f,
                       .rope_base = 10000.0f, .rope_freq_scale = 1.0f, .has_gate = true, .arch = a,
                       .rope_neox = a->rope == HR_ROPE_NEOX, .attn_scale = 1.0f / sqrtf((float)key_len)};
    float scale = 0;
    if (arch_f32(m, a->eps_key, &hp->rms_eps, e) || arch_f32(m, "rope.freq_base", &hp->rope_base, e) ||
        arch_f32(m, "rope.scaling.factor", &scale, e))
        return -1;
    gguf_str stype = {0};
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.type", m->arch);
    if (gguf_get_str(&m->file, key, &stype, e) < 0) return -1;
    if (stype.len && !gguf_str_eq(stype, "none") && !gguf_str_eq(stype, "linear"))
        return hr_errf(e, "rope scaling type '%.*s' is not supported (only none and linear)", (int)stype.len, stype.ptr);
    /* llama.cpp's default scaling type is linear. */
    if (scale > 0 && !gguf_str_eq(stype, "none")) hp->rope_freq_scale = 1.0f / scale;
    if (!(hp->rms_eps > 0 && hp->rms_eps < 1)) return hr_errf(e, "%s.%s %g is out of range", m->arch, a->eps_key, hp->rms_eps);
    if (!(hp->rope_base > 0)) return hr_errf(e, "rope.freq_base %g must be positive", hp->rope_base);
    return 0;
}

/* Sets the activation named s (from the file's key or the load parameters, `what`). */
static int set_activation(hearth_model *m, const hr_arch *a, const char *s, size_t len, const char *what, hr_err *e) {
    int k = hr_act_from_name(s, len);
    if (k < 0)
        return hr_errf(e, "%s '%.*s' is unknown (swiglu, reglu, drelu, relu, gelu)", what, (int)(len > 32 ? 32 : len), s);
    /* ggml's GELU FFN exists in llama.cpp only for some architectures. */
    if (k == HR_ACT_GELU && !a->gelu) return hr_errf(e, "%s 'gelu' is not an FFN of %s", what, a->name);
    m->hp.act = (hr_act)k;
    return 0;
}

/* FFN activation: the architecture's (its PowerInfer one in PWRI files, which mark nothing
 * but the magic), or the Hearth key (then the --ffn-act override) where the architecture
 * allows. */
static int load_activation(hearth_model *m, const hr_arch *a, hr_err *e) {
    m->hp.act = m->file.sparse && a->sparse_act != HR_ACT_COUNT ? a->sparse_act : a->act;
    gguf_str s = {0};
    int r = a->act_fixed ? 1 : gguf_get_str(&m->file, "hearth.ffn_activation", &s, e);
    if (r < 0 || (r == 0 && set_activation(m, a, s.ptr, s.len, "hearth.ffn_activation", e))) return -1;
    if (m->ffn_act) {
        if (a->act_fixed)
            return hr_errf(e, "--ffn-act: the %s architecture fixes its activation (%s)", a->name, hr_act_name(a->act));
        if (set_activation(m, a, m->ffn_act, strlen(m->ffn_act), "--ffn-act", e)) return -1;
    }
    m->hp.has_gate = hr_arch_gated(m->hp.act);
    return 0;
}

/* Mixture-of-experts layouts are read in their dense form only (one expert, whose router
 * weight is exactly 1); other archs must have no experts. */
static int check_experts(hearth_model *m, const hr_arch *a, hr_err *e) {
    uint32_t n_expert = 0, n_used = 0;
    if (arch_u32(m, "expert_count", false, &n_expert, e) || arch_u32(m, "expert_used_count", false, &n_used, e)) return -1;
    if (a->one_expert && n_expert != a->one_expert)
        return hr_errf(e, "%s with %u experts is not supported (only the %u-expert dense form)", m->arch, n_expert,
                       a->one_expert);
    if (!a->one_expert && n_expert > 1)
        return hr_errf(e, "%s with %u experts (mixture of experts) is not supported", m->arch, n_expert);
    return 0;
}

/* Which layers slide (model.h hr_layer.swa), from the entry's pattern or the file's
 * attention.sliding_window_pattern: a count n (layer il slides iff n <= 1 or
 * il % n < n - 1) or one bool per layer. Architectures without a window ignore the keys,
 * as llama.cpp does. */
static int load_swa(hearth_model *m, const hr_arch *a, hr_err *e) {
    uint32_t swa = 0;
    if (!a->swa_pattern) return 0;
    if (arch_u32(m, "attention.sliding_window", false, &swa, e)) return -1;
    if (!swa) return 0;
    if (swa > (1u << 24)) return hr_errf(e, "%s.attention.sliding_window = %u is out of range", m->arch, swa);
    m->hp.n_swa = (int32_t)swa;
    char key[128];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", m->arch);
    const gguf_kv *kv = gguf_find_kv(&m->file, key);
    uint32_t n = a->swa_pattern;
    if (kv && kv->val.type == GGUF_VT_ARRAY) {
        const gguf_array *arr = &kv->val.v.a;
        if (arr->type != GGUF_VT_BOOL || arr->n != (uint64_t)m->hp.n_layer)
            return hr_errf(e, "%s must hold one bool per layer (%d)", key, m->hp.n_layer);
        for (int il = 0; il < m->hp.n_layer; il++) m->layers[il].swa = gguf_arr_num(arr, (uint64_t)il) != 0;
        return 0;
    }
    if (kv && gguf_get_u32(&m->file, key, &n, e)) return -1;
    for (int il = 0; il < m->hp.n_layer; il++) m->layers[il].swa = n <= 1 || (uint32_t)il % n < n - 1;
    return 0;
}

int hr_load_arch(hearth_model *m, hr_err *e) {
    gguf_str arch;
    int r = gguf_get_str(&m->file, "general.architecture", &arch, e);
    if (r < 0) return -1;
    if (r == 1) return hr_errf(e, "missing metadata key 'general.architecture'");
    const hr_arch *a = hr_arch_find(arch.ptr, arch.len);
    char names[256];
    if (!a)
        return hr_errf(e, "unknown architecture '%.*s' (supported: %s)", (int)(arch.len > 64 ? 64 : arch.len), arch.ptr,
                       hr_arch_list(names, sizeof names));
    memcpy(m->arch, arch.ptr, arch.len);
    m->arch[arch.len] = 0;
    return load_hparams(m, a, e) || load_activation(m, a, e) || check_experts(m, a, e) ? -1 : 0;
}

/* Per-layer attention kinds, once the layers exist. */
int hr_load_layer_kinds(hearth_model *m, hr_err *e) { return load_swa(m, m->hp.arch, e); }
