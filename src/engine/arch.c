/* The architecture table. Sources: llama.cpp's graph builders (llama, exaone, smallthinker,
 * falcon, qwen2, qwen3, gemma2, gemma3, phi3, gpt-oss) and PowerInfer's (bamboo: llama layout with dReLU;
 * falcon: ReLU FFN in its sparse files; opt). */
#include <stdio.h>
#include <string.h>
#include "arch.h"

#define RMS_EPS "attention.layer_norm_rms_epsilon"
#define LN_EPS "attention.layer_norm_epsilon"
#define FF "feed_forward_length"

static const hr_arch archs[] = {
    /* PowerInfer's sparse llama is ReGLU (ReluLLaMA, ProSparse). */
    {.name = "llama", .rope = HR_ROPE_NORM, .tensors = HR_AT_ROPE_FREQS, .act = HR_ACT_SWIGLU, .sparse_act = HR_ACT_REGLU, .powerinfer = true,
     .eps_key = RMS_EPS, .ff_key = FF, .ffn_suffix = "",
     /* Mixtral: softmax router, top-k weights renormalised, experts of feed_forward_length */
     .moe = true, .moe_gate = HR_MOE_SOFTMAX, .moe_norm = true},
    {.name = "exaone", .rope = HR_ROPE_NEOX, .tensors = HR_AT_ROPE_FREQS, .act = HR_ACT_SWIGLU, .act_fixed = true, .sparse_act = HR_ACT_COUNT, .eps_key = RMS_EPS,
     .ff_key = FF, .ffn_suffix = ""},
    /* A mixture of ReGLU experts whose router reads the layer input (before attention), with
     * the file's gating (softmax or sigmoid) and renormalised weights; with one expert the
     * router weight is exactly 1, so that form is read as a dense ReGLU model. */
    {.name = "smallthinker", .rope = HR_ROPE_NEOX, .act = HR_ACT_REGLU, .act_fixed = true, .sparse_act = HR_ACT_COUNT,
     .eps_key = RMS_EPS, .ff_key = "expert_feed_forward_length", .ffn_suffix = "_exps", .one_expert = 1,
     .moe = true, .moe_required = true, .moe_gate = HR_MOE_SOFTMAX, .moe_gate_key = true, .moe_norm = true,
     .moe_router_input = true, .swa_pattern = 4, .swa_dense_first = true, .swa_fixed = 4096, .nope_step = 4},
    /* Bamboo's dReLU: relu(gate) * relu(up), in PowerInfer's dense and sparse paths alike. */
    {.name = "bamboo", .rope = HR_ROPE_NORM, .act = HR_ACT_DRELU, .act_fixed = true, .sparse_act = HR_ACT_COUNT, .powerinfer = true,
     .eps_key = RMS_EPS, .ff_key = FF, .ffn_suffix = ""},
    /* GELU in llama.cpp's falcon, ReLU in PowerInfer's ReluFalcon files. */
    {.name = "falcon", .norm = HR_NORM_LAYER, .rope = HR_ROPE_NEOX, .tensors = HR_AT_FUSED_QKV | HR_AT_ATTN_NORM_2,
     .parallel = true, .act = HR_ACT_GELU, .gelu = true, .sparse_act = HR_ACT_RELU, .powerinfer = true,
     .eps_key = LN_EPS, .ff_key = FF, .ffn_suffix = ""},
    /* OPT (HF OPTForCausalLM, pre-LN variants): learned positions offset by 2, biases
     * everywhere, output tied to token_embd. PowerInfer never reads an eps (so uses 0);
     * HF's LayerNorm default 1e-5 applies unless the file says otherwise. */
    {.name = "opt", .norm = HR_NORM_LAYER, .rope = HR_ROPE_NONE,
     .tensors = HR_AT_QKV_BIAS | HR_AT_O_BIAS | HR_AT_UP_BIAS | HR_AT_DOWN_BIAS, .learned_pos = true, .pos_offset = 2,
     .tied_output = true, .act = HR_ACT_RELU, .sparse_act = HR_ACT_COUNT, .powerinfer = true,
     .eps_key = LN_EPS, .ff_key = FF, .ffn_suffix = ""},
    /* Qwen2 / Qwen2.5: llama with q/k/v biases and NEOX RoPE; output tied in the small sizes. */
    {.name = "qwen2", .rope = HR_ROPE_NEOX, .tensors = HR_AT_QKV_BIAS, .act = HR_ACT_SWIGLU, .act_fixed = true,
     .sparse_act = HR_ACT_COUNT, .eps_key = RMS_EPS, .ff_key = FF, .ffn_suffix = ""},
    /* Qwen3: no biases; each head of q and k RMS-normed before RoPE; the head size comes from
     * attention.key_length and may differ from n_embd / n_head. */
    {.name = "qwen3", .rope = HR_ROPE_NEOX, .tensors = HR_AT_QK_NORM, .act = HR_ACT_SWIGLU, .act_fixed = true,
     .sparse_act = HR_ACT_COUNT, .eps_key = RMS_EPS, .ff_key = FF, .ffn_suffix = ""},
    /* Qwen3-MoE: qwen3's attention, every FFN a mixture of SwiGLU experts of
     * expert_feed_forward_length (softmax router, top-k weights renormalised). */
    {.name = "qwen3moe", .rope = HR_ROPE_NEOX, .tensors = HR_AT_QK_NORM, .act = HR_ACT_SWIGLU, .act_fixed = true,
     .sparse_act = HR_ACT_COUNT, .eps_key = RMS_EPS, .ff_key = FF, .ffn_suffix = "", .moe = true, .moe_required = true,
     .moe_ff_key = "expert_feed_forward_length", .moe_gate = HR_MOE_SOFTMAX, .moe_norm = true},
    /* Gemma 2: embedding times sqrt(n_embd), post-attention and post-FFN RMSNorms, GEGLU, q
     * scaled after RoPE, attention and final soft-caps (llama.cpp's defaults 50 and 30 when
     * the keys are absent), every other layer sliding (window 4096 by default), output tied
     * (llama.cpp reads token_embd even where output.weight exists). The file's norm weights
     * already hold Gemma's 1 + w (llama.cpp's converter adds it). */
    {.name = "gemma2", .rope = HR_ROPE_NEOX, .tensors = HR_AT_POST_NORMS, .tied_output = true, .act = HR_ACT_GEGLU,
     .act_fixed = true, .sparse_act = HR_ACT_COUNT, .eps_key = RMS_EPS, .ff_key = FF, .ffn_suffix = "", .swa_pattern = 2,
     .swa_default = 4096, .embd_scale = true, .scale_q = true, .q_scale_embd_layers = 46, .attn_softcap = 50.0f,
     .final_softcap = true, .final_softcap_default = 30.0f},
    /* Gemma 3 (text): Gemma 2 with per-head q/k RMSNorms instead of the attention soft-cap,
     * 5 sliding layers to 1 global where the file sets a window, the sliding layers' own RoPE
     * base (rope.freq_base_swa, default 10000), the final cap only where the file has the key,
     * output.weight optional. */
    {.name = "gemma3", .rope = HR_ROPE_NEOX, .tensors = HR_AT_POST_NORMS | HR_AT_QK_NORM, .act = HR_ACT_GEGLU,
     .act_fixed = true, .sparse_act = HR_ACT_COUNT, .eps_key = RMS_EPS, .ff_key = FF, .ffn_suffix = "", .swa_pattern = 6,
     .swa_rope_base = 10000.0f, .embd_scale = true, .scale_q = true, .q_scale_embd_layers = 62, .final_softcap = true},
    /* Phi-3 / Phi-3.5 / Phi-4: fused QKV and gate|up, NEOX RoPE with LongRoPE's factors
     * (the 128k files), SwiGLU. No sliding window: llama.cpp disables phi3's, whatever the
     * file's sliding_window says, so swa_pattern stays 0. */
    {.name = "phi3", .rope = HR_ROPE_NEOX, .tensors = HR_AT_FUSED_QKV | HR_AT_FUSED_GATE_UP | HR_AT_ROPE_LONG_SHORT,
     .act = HR_ACT_SWIGLU, .act_fixed = true, .sparse_act = HR_ACT_COUNT, .eps_key = RMS_EPS, .ff_key = FF,
     .ffn_suffix = ""},
    /* gpt-oss (llama.cpp's openai-moe): q/k/v/output biases, a learned sink logit per head in
     * every attention softmax, every other layer sliding (il even, window from the file, which
     * must have the key), NEOX RoPE (YaRN from the file's keys, the same on sliding layers
     * unless rope.freq_base_swa), the FFN norm named post_attention_norm, every FFN a mixture
     * of experts with biased router and experts: top-k on the raw scores, softmax over the k,
     * no renormalisation, OpenAI's clamped SwiGLU (alpha 1.702, limit 7, as llama.cpp fixes). */
    {.name = "gpt-oss", .rope = HR_ROPE_NEOX, .tensors = HR_AT_QKV_BIAS | HR_AT_O_BIAS | HR_AT_SINKS, .act = HR_ACT_SWIGLU,
     .act_fixed = true, .sparse_act = HR_ACT_COUNT, .eps_key = RMS_EPS, .ff_key = "expert_feed_forward_length",
     .ffn_suffix = "", .moe = true, .moe_required = true, .moe_ff_key = "expert_feed_forward_length",
     .moe_gate = HR_MOE_SOFTMAX_WEIGHT, .moe_bias = true, .moe_act_alpha = 1.702f, .moe_act_limit = 7.0f,
     .ffn_norm_name = "post_attention_norm", .swa_pattern = 2, .swa_required = true},
};

#define N_ARCHS (sizeof archs / sizeof archs[0])

const hr_arch *hr_arch_find(const char *name, size_t len) {
    for (size_t i = 0; i < N_ARCHS; i++)
        if (strlen(archs[i].name) == len && !memcmp(archs[i].name, name, len)) return &archs[i];
    return NULL;
}

size_t hr_arch_count(void) { return N_ARCHS; }
const hr_arch *hr_arch_at(size_t i) { return i < N_ARCHS ? &archs[i] : NULL; }

char *hr_arch_list(char *buf, size_t cap) {
    size_t o = 0;
    if (cap) buf[0] = 0;
    for (size_t i = 0; i < N_ARCHS && o < cap; i++) {
        int n = snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", archs[i].name);
        if (n < 0) break;
        o += (size_t)n;
    }
    return buf;
}
