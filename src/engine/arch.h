/* Architectures as data: one table entry per GGUF general.architecture holds everything
 * that distinguishes it (tensors and their biases and norms, norm kind, RoPE layout, block
 * structure, activation, key names). The loader, the forward pass, the GPU plan and
 * `hearth synth` all read the same entry; adding an architecture is one entry (plus a file
 * only when it brings a new operation). docs/architectures.md shows how. */
#ifndef HR_ARCH_H
#define HR_ARCH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "backends/cpu/ops.h"

typedef enum hr_norm_kind { HR_NORM_RMS = 0, HR_NORM_LAYER } hr_norm_kind; /* LayerNorm: with bias */
/* RoPE pair layout, which llama.cpp fixes per architecture: NORM rotates (2i, 2i+1), NEOX
 * (i, i + n_rot/2); NONE has no rotary embedding (learned positions or none). */
typedef enum hr_rope_kind { HR_ROPE_NONE = 0, HR_ROPE_NORM, HR_ROPE_NEOX } hr_rope_kind;

/* Per-layer tensors beyond the common ones (attn_norm, attn_q/k/v, attn_output, ffn_norm,
 * ffn_gate/up/down), as bits of hr_arch.tensors. */
enum {
    HR_AT_FUSED_QKV = 1u << 0,   /* attn_qkv {n_embd, n_q + 2 n_kv}: rows q, then k, then v */
    HR_AT_Q_BIAS = 1u << 1,      /* attn_q.bias {n_q} */
    HR_AT_K_BIAS = 1u << 2,      /* attn_k.bias {n_kv} */
    HR_AT_V_BIAS = 1u << 3,      /* attn_v.bias {n_kv} */
    HR_AT_O_BIAS = 1u << 4,      /* attn_output.bias {n_embd} */
    HR_AT_UP_BIAS = 1u << 5,     /* ffn_up.bias {n_ff} */
    HR_AT_DOWN_BIAS = 1u << 6,   /* ffn_down.bias {n_embd} (PowerInfer: ffn_down_t.bias) */
    HR_AT_QK_NORM = 1u << 7,     /* attn_q_norm, attn_k_norm {head_dim}: RMSNorm of each head
                                    of q and k before RoPE */
    HR_AT_ATTN_NORM_2 = 1u << 8, /* attn_norm_2 where the file has it (Falcon-40B): the norm of
                                    the attention input, attn_norm then feeds the FFN */
    HR_AT_POST_NORMS = 1u << 9,  /* post_attention_norm, post_ffw_norm {n_embd} (Gemma 2/3): RMSNorm
                                    of the attention and FFN outputs before each residual add */
    /* Bits 12 and up: the RoPE and FFN layouts of llama (Llama-3.1+) and phi3. */
    HR_AT_FUSED_GATE_UP = 1u << 12, /* ffn_up {n_embd, 2 n_ff}: the gate's rows, then the up rows
                                       (no ffn_gate tensor) */
    HR_AT_ROPE_FREQS = 1u << 13,    /* optional rope_freqs {n_rot/2}: per-pair frequency divisors
                                       (or, with rope.scaling.type longrope, the pair below) */
    HR_AT_ROPE_LONG_SHORT = 1u << 14, /* optional rope_factors_long/short {n_rot/2}: LongRoPE's
                                         divisors for contexts beyond / within the original */
    HR_AT_SINKS = 1u << 15,         /* attn_sinks {n_head} (gpt-oss): a learned logit per head that
                                       joins every softmax denominator (attention.c) */
};
#define HR_AT_QKV_BIAS (HR_AT_Q_BIAS | HR_AT_K_BIAS | HR_AT_V_BIAS)

/* Router gating of mixture-of-experts layers, as llama.cpp's expert_gating_func numbers it. */
/* SOFTMAX_WEIGHT (gpt-oss): top-k on the raw scores, then a softmax over the k chosen. */
typedef enum hr_moe_gate { HR_MOE_SOFTMAX = 1, HR_MOE_SIGMOID = 2, HR_MOE_SOFTMAX_WEIGHT = 3 } hr_moe_gate;

typedef struct hr_arch {
    const char *name;
    hr_norm_kind norm;
    hr_rope_kind rope;
    uint32_t tensors;      /* HR_AT_* */
    bool parallel;         /* attention and FFN both read the layer's normed input; no ffn_norm */
    bool learned_pos;      /* position_embd row (pos + pos_offset) added to the embedding */
    int32_t pos_offset;
    bool tied_output;      /* token_embd is the output matrix even where output.weight exists */
    hr_act act;            /* default FFN activation */
    bool act_fixed;        /* the activation belongs to the architecture: no override */
    bool gelu;             /* a GELU FFN exists for it (llama.cpp computes GELU only there) */
    /* The activation of PowerInfer (PWRI) files without hearth.ffn_activation: PowerInfer
     * marks nothing but the magic. HR_ACT_COUNT: the same as dense files. */
    hr_act sparse_act;
    bool powerinfer;       /* PowerInfer reads this architecture's sparse files */
    const char *eps_key;   /* "<arch>.<eps_key>" holds the norm epsilon */
    const char *ff_key;    /* "<arch>.<ff_key>" holds n_ff */
    const char *ffn_suffix; /* "" or "_exps": FFN tensors of a one-expert layout */
    uint32_t one_expert;   /* > 0: a mixture-of-experts layout of which only this expert count
                              (the dense form) is supported */
    /* Sliding-window attention where the file sets <arch>.attention.sliding_window: 0 the
     * architecture has none (llama.cpp ignores the key: llama, phi3); n > 0 layer il slides
     * iff il % n < n - 1 (gemma2: 2, gemma3: 6), unless the file's
     * attention.sliding_window_pattern (a count, where 0 means every layer as in llama.cpp,
     * or one bool per layer) says otherwise. */
    uint32_t swa_pattern;
    /* Mixture of experts (engine/moe.h), where the file's expert_count > 0 (and is not
     * one_expert's dense form): moe false refuses them; moe_required refuses files without.
     * moe_ff_key: "<arch>.<key>" holds the experts' FFN length (NULL: ff_key's n_ff; absent
     * key: n_ff / expert_used_count, llama.cpp's fallback). moe_gate: the router's gating,
     * unless moe_gate_key lets the file's expert_gating_func choose. moe_norm: the chosen
     * experts' weights renormalised to sum 1. moe_router_input: the router reads the layer
     * input (before attention) rather than ffn_norm's output (smallthinker). */
    bool moe, moe_required, moe_gate_key, moe_norm, moe_router_input;
    const char *moe_ff_key;
    hr_moe_gate moe_gate;
    /* gpt-oss: moe_bias, the router and each expert's gate/up/down have biases
     * (ffn_gate_inp.bias {n_expert}, ffn_{gate,up}_exps.bias {n_ff_exp, n_expert},
     * ffn_down_exps.bias {n_embd, n_expert}); moe_act_limit > 0, the experts compute OpenAI's
     * clamped SwiGLU min(g, L) * sigmoid(alpha min(g, L)) * (clamp(u, -L, L) + 1) with
     * alpha moe_act_alpha and L moe_act_limit instead of the entry's act. */
    bool moe_bias;
    float moe_act_alpha, moe_act_limit;
    /* The norm before the FFN: "blk.N.<ffn_norm_name>.weight" (NULL: ffn_norm; gpt-oss names
     * it post_attention_norm). */
    const char *ffn_norm_name;
    uint32_t swa_default;  /* window when the file has no sliding_window key (gemma2: 4096); 0 none */
    bool swa_required;     /* the file must have the sliding_window key (gpt-oss, as llama.cpp) */
    /* SmallThinker's form of the pattern (llama.cpp's dense_first): layer il slides iff
     * il % n != 0; with a window the size is swa_fixed whatever the key's value, and layers
     * il % nope_step == 0 (the global ones) have no RoPE. */
    bool swa_dense_first;
    uint32_t swa_fixed, nope_step;
    /* The sliding layers' RoPE: 0 the global base and scale, unless the file has
     * rope.freq_base_swa (gemma2); > 0 this base (or the key's) and no scaling (gemma3). */
    float swa_rope_base;
    /* Gemma: the token embedding times sqrt(n_embd); q times the attention scale after RoPE
     * (not the scores); the scale 1/sqrt(n_embd / n_head) instead of 1/sqrt(head_dim) at
     * q_scale_embd_layers layers (llama.cpp's rule for the 27B sizes, by layer count). */
    bool embd_scale, scale_q;
    uint32_t q_scale_embd_layers;
    /* Soft-caps cap * tanh(x / cap). attn_softcap > 0: the attention scores (after the
     * scale, before the mask and softmax) are capped by the file's attn_logit_softcapping or
     * this default; 0: the architecture has none and ignores the key. final_softcap: the
     * logits are capped by final_logit_softcapping (default final_softcap_default; 0 none). */
    float attn_softcap;
    bool final_softcap;
    float final_softcap_default;
} hr_arch;

/* NULL if the name is not supported. */
const hr_arch *hr_arch_find(const char *name, size_t len);
/* Entry i (0..hr_arch_count()-1), for listings and tests. */
size_t hr_arch_count(void);
const hr_arch *hr_arch_at(size_t i);
/* "llama, exaone, ..." (every entry's name) into buf, for error messages; returns buf. */
char *hr_arch_list(char *buf, size_t cap);
/* Whether the architecture has every tensor bit of `bits`. */
static inline bool hr_arch_has(const hr_arch *a, uint32_t bits) { return (a->tensors & bits) == bits; }
static inline bool hr_arch_gated(hr_act act) { return act != HR_ACT_RELU && act != HR_ACT_GELU; }
#endif
