/* Loading a GGUF model: the file (mapped or read), architecture hyperparameters, tensor
 * lookup with shape checks. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "formats/types.h"
#include "model.h"
#include "util/checked.h"

static const char *const act_names[HR_ACT_COUNT] = {"swiglu", "reglu", "drelu", "relu", "gelu", "geglu"};

const char *hr_act_name(hr_act a) { return act_names[a]; }

int hr_act_from_name(const char *s, size_t len) {
    for (int i = 0; i < HR_ACT_COUNT; i++)
        if (strlen(act_names[i]) == len && !memcmp(act_names[i], s, len)) return i;
    return -1;
}

void hr_model_note(hearth_model *m, const char *fmt, ...) {
    size_t n = strlen(m->notes.msg), cap = sizeof m->notes.msg;
    if (n && n + 1 < cap) m->notes.msg[n++] = '\n', m->notes.msg[n] = 0;
    if (n + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->notes.msg + n, cap - n, fmt, ap);
    va_end(ap);
}

/* --no-mmap: the whole file in anonymous memory, so gguf_close's munmap frees it as it frees
 * a mapping. */
static void *read_whole(int fd, size_t size, const char *path, hr_err *e) {
    void *buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        hr_errf(e, "%s: --no-mmap: cannot allocate %zu bytes to read the file into: %s", path, size, strerror(errno));
        return NULL;
    }
    gguf_advise_huge(buf, size);
    for (size_t got = 0; got < size;) {
        ssize_t r = read(fd, (char *)buf + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            hr_errf(e, "%s: read failed at byte %zu of %zu: %s", path, got, size, r ? strerror(errno) : "unexpected end");
            munmap(buf, size);
            return NULL;
        }
        got += (size_t)r;
    }
    mprotect(buf, size, PROT_READ);
    return buf;
}

/* --mlock as llama.cpp treats it: a lock the limit refuses is a warning, not a failure. */
static void lock_pages(hearth_model *m) {
    if (!mlock(m->file.base, m->file.size)) return;
    const int err = errno;
    struct rlimit rl;
    char lim[64] = "";
    if (!getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != RLIM_INFINITY)
        snprintf(lim, sizeof lim, "; RLIMIT_MEMLOCK allows %.1f MiB (ulimit -l)", (double)rl.rlim_cur / 1048576.0);
    hr_model_note(m, "--mlock: could not lock the model's %.1f MiB in RAM (%s%s); its pages may be swapped out",
                  (double)m->file.size / 1048576.0, strerror(err), lim);
}

int hr_model_open_file(hearth_model *m, const char *path, const hearth_model_params *p, hr_err *e) {
    if (!p || !p->no_mmap) {
        if (gguf_open(&m->file, path, e)) return -1;
    } else {
        int fd = open(path, O_RDONLY);
        if (fd < 0) return hr_errf(e, "%s: cannot open: %s", path, strerror(errno));
        struct stat st;
        if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size == 0) {
            close(fd);
            return hr_errf(e, "%s: %s", path, st.st_size == 0 && S_ISREG(st.st_mode) ? "empty file" : "not a regular file");
        }
        void *buf = read_whole(fd, (size_t)st.st_size, path, e);
        close(fd);
        if (!buf) return -1;
        if (gguf_parse(&m->file, buf, (size_t)st.st_size, e)) {
            munmap(buf, (size_t)st.st_size);
            return hr_errctx(e, "%s", path);
        }
        m->file.mapped = true; /* gguf_close unmaps it */
    }
    if (p && p->mlock) lock_pages(m);
    return 0;
}

int hr_model_f32(const hearth_model *m, const char *key, float *out, hr_err *e) {
    float v = *out;
    int r = gguf_get_f32(&m->file, key, &v, e);
    if (r < 0) return -1;
    if (r == 0 && !isfinite(v)) return hr_errf(e, "%s is %g: values from the file must be finite", key, (double)v);
    if (r == 0) *out = v;
    return r;
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
    return hr_model_f32(m, key, out, e) < 0 ? -1 : 0;
}

static int positive(const char *what, uint32_t v, uint32_t max, hr_err *e) {
    if (v == 0 || v > max) return hr_errf(e, "%s = %u is out of range [1, %u]", what, v, max);
    return 0;
}

/* ggml_rope_yarn_corr_dim's float steps: the pair index whose wavelength fits n_rot_beta
 * times into the original context. */
static float yarn_corr_dim(int32_t n_dims, int32_t n_ctx_orig, float beta, float base) {
    return (float)n_dims * logf((float)n_ctx_orig / (beta * 2 * 3.14159265358979323846f)) / (2 * logf(base));
}

/* YaRN as llama.cpp sets it up for rope.scaling.type yarn: ext_factor 1, beta_fast 32 and
 * beta_slow 1 (the only values its llama, phi3 and qwen loaders know), the correction dims over
 * the original context, and the magnitude get_mscale(factor) / (1 + 0.1 ln factor), which
 * cancels the kernel's own YaRN scale up to float rounding (kept: the logits see it). */
static void setup_yarn(hr_hparams *hp) {
    const float factor = 1.0f / hp->rope_freq_scale;
    float mscale = factor <= 1.0f ? 1.0f : 0.1f * logf(factor) + 1.0f;
    mscale *= 1.0f / (1.0f + 0.1f * logf(factor));
    const float lo = floorf(yarn_corr_dim(hp->n_rot, hp->n_ctx_orig, 32.0f, hp->rope_base));
    const float hi = ceilf(yarn_corr_dim(hp->n_rot, hp->n_ctx_orig, 1.0f, hp->rope_base));
    hp->rope_yarn.ext_factor = 1.0f;
    hp->rope_yarn.attn_factor = mscale;
    hp->rope_yarn.corr_dims[0] = lo > 0 ? lo : 0;
    hp->rope_yarn.corr_dims[1] = hi < (float)(hp->n_rot - 1) ? hi : (float)(hp->n_rot - 1);
}

/* RoPE scaling as llama.cpp reads it: rope.scaling.type (default linear) with
 * rope.scaling.factor (or the older rope.scale_linear). none ignores the factor; linear and
 * longrope divide the angles by it; yarn too, plus setup_yarn. longrope's long/short factor
 * tensors exist only where the entry has them (llama: with this type; phi3: always).
 * rope.scaling.attn_factor scales every rotation (phi3's LongRoPE files carry it);
 * rope.scaling.original_context_length sets YaRN's range and LongRoPE's long/short choice. */
static int load_rope_scaling(hearth_model *m, const hr_arch *a, hr_err *e) {
    hr_hparams *hp = &m->hp;
    float factor = 0, attn = 1.0f;
    uint32_t orig = (uint32_t)hp->n_ctx_train;
    if (arch_f32(m, "rope.scaling.factor", &factor, e) || (!factor && arch_f32(m, "rope.scale_linear", &factor, e)) ||
        arch_f32(m, "rope.scaling.attn_factor", &attn, e) ||
        arch_u32(m, "rope.scaling.original_context_length", false, &orig, e))
        return -1;
    gguf_str t = {0};
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.type", m->arch);
    if (gguf_get_str(&m->file, key, &t, e) < 0) return -1;
    const bool none = gguf_str_eq(t, "none"), yarn = gguf_str_eq(t, "yarn"), longrope = gguf_str_eq(t, "longrope");
    if (t.len && !none && !yarn && !longrope && !gguf_str_eq(t, "linear"))
        return hr_errf(e, "rope scaling type '%.*s' is not supported (none, linear, yarn, longrope)",
                       (int)(t.len > 32 ? 32 : t.len), t.ptr);
    if (longrope && !hr_arch_has(a, HR_AT_ROPE_FREQS) && !hr_arch_has(a, HR_AT_ROPE_LONG_SHORT))
        return hr_errf(e, "rope scaling type 'longrope' is not supported for %s (llama.cpp reads LongRoPE factors for llama and phi3)",
                       a->name);
    if (!(factor >= 0) || !isfinite(factor)) return hr_errf(e, "rope.scaling.factor %g must be positive", factor);
    if (!(attn > 0) || !isfinite(attn)) return hr_errf(e, "rope.scaling.attn_factor %g must be positive", attn);
    if (positive("rope.scaling.original_context_length", orig, 1 << 24, e)) return -1;
    hp->n_ctx_orig = (int32_t)orig;
    hp->rope_longrope = hr_arch_has(a, HR_AT_ROPE_LONG_SHORT) || longrope;
    if (factor > 0 && !none) hp->rope_freq_scale = 1.0f / factor;
    hp->rope_yarn = (hr_rope_yarn){.attn_factor = 1.0f};
    if (yarn) setup_yarn(hp);
    hp->rope_yarn.attn_factor *= attn;
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
    if (arch_f32(m, a->eps_key, &hp->rms_eps, e) || arch_f32(m, "rope.freq_base", &hp->rope_base, e)) return -1;
    if (!(hp->rope_base > 0) || !isfinite(hp->rope_base)) return hr_errf(e, "rope.freq_base %g must be positive", hp->rope_base);
    if (load_rope_scaling(m, a, e)) return -1;
    if (!(hp->rms_eps > 0 && hp->rms_eps < 1)) return hr_errf(e, "%s.%s %g is out of range", m->arch, a->eps_key, hp->rms_eps);
    return 0;
}

/* Sets the activation named s (from the file's key or the load parameters, `what`). */
static int set_activation(hearth_model *m, const hr_arch *a, const char *s, size_t len, const char *what, hr_err *e) {
    int k = hr_act_from_name(s, len);
    if (k < 0)
        return hr_errf(e, "%s '%.*s' is unknown (swiglu, reglu, drelu, relu, gelu, geglu)", what, (int)(len > 32 ? 32 : len), s);
    /* ggml's GELU FFN exists in llama.cpp only for some architectures. */
    if (k == HR_ACT_GELU && !a->gelu) return hr_errf(e, "%s 'gelu' is not an FFN of %s", what, a->name);
    /* GEGLU is Gemma's own FFN in llama.cpp. */
    if (k == HR_ACT_GEGLU && a->act != HR_ACT_GEGLU) return hr_errf(e, "%s 'geglu' is not an FFN of %s", what, a->name);
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

/* Mixture of experts (moe.h): expert_count and expert_used_count as llama.cpp reads them
 * (used in [1, count], count at most 1024), the experts' FFN size and the router's gating.
 * An entry's one_expert count is its dense form (n_expert stays 0: a dense FFN). */
static int check_experts(hearth_model *m, const hr_arch *a, hr_err *e) {
    hr_hparams *hp = &m->hp;
    uint32_t n_expert = 0, n_used = 0, ff_exp = 0, gate = (uint32_t)a->moe_gate;
    if (arch_u32(m, "expert_count", false, &n_expert, e) || arch_u32(m, "expert_used_count", false, &n_used, e)) return -1;
    if (a->one_expert && n_expert == a->one_expert) return 0;
    if (!n_expert) {
        if (a->moe_required) return hr_errf(e, "%s needs %s.expert_count > 0 (a mixture of experts)", m->arch, m->arch);
        return 0;
    }
    if (!a->moe) return hr_errf(e, "%s with %u experts (mixture of experts) is not supported", m->arch, n_expert);
    if (n_expert > 1024) return hr_errf(e, "%s.expert_count = %u is out of range [1, 1024]", m->arch, n_expert);
    if (n_used == 0 || n_used > n_expert)
        return hr_errf(e, "%s.expert_used_count = %u is out of range [1, %u] (the expert count)", m->arch, n_used, n_expert);
    if (a->moe_gate_key && arch_u32(m, "expert_gating_func", false, &gate, e)) return -1;
    if (gate != HR_MOE_SOFTMAX && gate != HR_MOE_SIGMOID && gate != (uint32_t)a->moe_gate) /* a fixed gating: its own */
        return hr_errf(e, "%s.expert_gating_func = %u is not supported (1 softmax, 2 sigmoid)", m->arch, gate);
    if (a->moe_ff_key && arch_u32(m, a->moe_ff_key, false, &ff_exp, e)) return -1;
    if (!ff_exp) ff_exp = a->moe_ff_key ? (uint32_t)hp->n_ff / n_used : (uint32_t)hp->n_ff;
    if (positive(a->moe_ff_key ? a->moe_ff_key : a->ff_key, ff_exp, 1 << 20, e)) return -1;
    hp->n_expert = (int32_t)n_expert, hp->n_expert_used = (int32_t)n_used, hp->n_ff_exp = (int32_t)ff_exp;
    hp->moe_gate = (hr_moe_gate)gate;
    return 0;
}

/* Which layers slide (model.h hr_layer.swa), from the entry's pattern or the file's
 * attention.sliding_window_pattern: a count n (layer il slides iff n == 0 or
 * il % n < n - 1) or one bool per layer. Architectures without a window ignore the keys,
 * as llama.cpp does. */
static int load_swa(hearth_model *m, const hr_arch *a, hr_err *e) {
    uint32_t swa = 0;
    if (!a->swa_pattern) return 0;
    if (arch_u32(m, "attention.sliding_window", a->swa_required, &swa, e)) return -1;
    if (!swa) swa = a->swa_default;
    if (!swa) return 0;
    if (a->swa_fixed) swa = a->swa_fixed; /* llama.cpp sets smallthinker's window, not the file */
    if (swa > (1u << 24)) return hr_errf(e, "%s.attention.sliding_window = %u is out of range", m->arch, swa);
    m->hp.n_swa = (int32_t)swa;
    char key[128];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", m->arch);
    const gguf_kv *kv = gguf_find_kv(&m->file, key);
    uint32_t n = a->swa_pattern;
    const bool arr = kv && kv->val.type == GGUF_VT_ARRAY;
    if (arr && (kv->val.v.a.type != GGUF_VT_BOOL || kv->val.v.a.n != (uint64_t)m->hp.n_layer))
        return hr_errf(e, "%s must hold one bool per layer (%d)", key, m->hp.n_layer);
    if (kv && !arr && gguf_get_u32(&m->file, key, &n, e)) return -1;
    for (int il = 0; il < m->hp.n_layer; il++) {
        hr_layer *L = &m->layers[il];
        if (arr) L->swa = gguf_arr_num(&kv->val.v.a, (uint64_t)il) != 0;
        else L->swa = n == 0 || (a->swa_dense_first ? (uint32_t)il % n != 0 : (uint32_t)il % n < n - 1);
        L->nope = a->nope_step && (uint32_t)il % a->nope_step == 0;
    }
    return 0;
}

/* A soft-cap from "<arch>.<suffix>" (or def where absent); 0 is none unless required. */
static int load_softcap(const hearth_model *m, const char *suffix, float def, bool required, float *out, hr_err *e) {
    *out = def;
    if (arch_f32(m, suffix, out, e)) return -1;
    if (!isfinite(*out) || *out < 0 || (required && *out == 0))
        return hr_errf(e, "%s.%s %g must be %s", m->arch, suffix, *out, required ? "positive" : "positive or 0");
    return 0;
}

/* Gemma's scales (arch.h): the embedding's sqrt(n_embd), the query scale moved onto q (with
 * llama.cpp's 27B rule), the attention and final soft-caps. */
static int load_scales(hearth_model *m, const hr_arch *a, hr_err *e) {
    hr_hparams *hp = &m->hp;
    hp->embd_scale = a->embd_scale ? sqrtf((float)hp->n_embd) : 1.0f;
    if (a->q_scale_embd_layers && (uint32_t)hp->n_layer == a->q_scale_embd_layers)
        hp->attn_scale = 1.0f / sqrtf((float)(hp->n_embd / hp->n_head));
    hp->q_scale = 1.0f;
    if (a->scale_q) hp->q_scale = hp->attn_scale, hp->attn_scale = 1.0f;
    hp->attn_softcap = hp->final_softcap = 0;
    if (a->attn_softcap > 0 && load_softcap(m, "attn_logit_softcapping", a->attn_softcap, true, &hp->attn_softcap, e))
        return -1;
    return a->final_softcap ? load_softcap(m, "final_logit_softcapping", a->final_softcap_default, false, &hp->final_softcap, e)
                            : 0;
}

/* Each layer's RoPE base and scale: the model's, except the sliding layers of an
 * architecture that gives them their own (arch.h swa_rope_base; rope.freq_base_swa). */
static int load_layer_rope(hearth_model *m, const hr_arch *a, hr_err *e) {
    const hr_hparams *hp = &m->hp;
    float base = a->swa_rope_base > 0 ? a->swa_rope_base : hp->rope_base;
    const float scale = a->swa_rope_base > 0 ? 1.0f : hp->rope_freq_scale;
    if (hp->n_swa && arch_f32(m, "rope.freq_base_swa", &base, e)) return -1;
    if (!(base > 0) || !isfinite(base)) return hr_errf(e, "%s.rope.freq_base_swa %g must be positive", m->arch, base);
    for (int il = 0; il < hp->n_layer; il++) {
        hr_layer *L = &m->layers[il];
        L->rope_base = L->swa ? base : hp->rope_base;
        L->rope_freq_scale = L->swa ? scale : hp->rope_freq_scale;
        L->attn_scaled = hp->q_scale != 1.0f || hp->attn_softcap > 0;
    }
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
    return load_hparams(m, a, e) || load_activation(m, a, e) || check_experts(m, a, e) || load_scales(m, a, e) ? -1 : 0;
}

/* Per-layer attention kinds, once the layers exist. */
int hr_load_layer_kinds(hearth_model *m, hr_err *e) {
    return load_swa(m, m->hp.arch, e) || load_layer_rope(m, m->hp.arch, e) ? -1 : 0;
}
