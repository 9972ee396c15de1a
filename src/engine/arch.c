/* The architecture table. Sources: llama.cpp's graph builders (llama, exaone, smallthinker,
 * falcon, qwen2, qwen3) and PowerInfer's (bamboo: llama layout with dReLU; falcon: ReLU FFN
 * in its sparse files; opt). */
#include <stdio.h>
#include <string.h>
#include "arch.h"

#define RMS_EPS "attention.layer_norm_rms_epsilon"
#define LN_EPS "attention.layer_norm_epsilon"
#define FF "feed_forward_length"

static const hr_arch archs[] = {
    /* PowerInfer's sparse llama is ReGLU (ReluLLaMA, ProSparse). */
    {.name = "llama", .rope = HR_ROPE_NORM, .act = HR_ACT_SWIGLU, .sparse_act = HR_ACT_REGLU, .powerinfer = true,
     .eps_key = RMS_EPS, .ff_key = FF, .ffn_suffix = ""},
    {.name = "exaone", .rope = HR_ROPE_NEOX, .act = HR_ACT_SWIGLU, .act_fixed = true, .sparse_act = HR_ACT_COUNT, .eps_key = RMS_EPS,
     .ff_key = FF, .ffn_suffix = ""},
    /* A mixture of experts; with one expert its softmax router weight is exactly 1, so it
     * is a dense ReGLU model. */
    {.name = "smallthinker", .rope = HR_ROPE_NEOX, .act = HR_ACT_REGLU, .act_fixed = true, .sparse_act = HR_ACT_COUNT,
     .eps_key = RMS_EPS, .ff_key = "expert_feed_forward_length", .ffn_suffix = "_exps", .one_expert = 1},
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
