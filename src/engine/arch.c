/* The architecture table. Sources: llama.cpp's graph builders for llama, exaone,
 * smallthinker and falcon; PowerInfer's for bamboo (llama layout, RoPE mode 0, dReLU),
 * falcon (ReLU FFN in its sparse files) and opt. */
#include <string.h>
#include "arch.h"

static const hr_arch archs[] = {
    {.name = "llama", .use_rope = true, .act = HR_ACT_SWIGLU, .eps_key = "attention.layer_norm_rms_epsilon"},
    {.name = "exaone", .rope_neox = true, .use_rope = true, .act = HR_ACT_SWIGLU, .eps_key = "attention.layer_norm_rms_epsilon"},
    {.name = "smallthinker", .rope_neox = true, .use_rope = true, .act = HR_ACT_REGLU, .act_fixed = true,
     .eps_key = "attention.layer_norm_rms_epsilon"},
    /* Bamboo's dReLU: relu(gate) * relu(up), in PowerInfer's dense and sparse paths alike. */
    {.name = "bamboo", .use_rope = true, .act = HR_ACT_DRELU, .eps_key = "attention.layer_norm_rms_epsilon"},
    /* Falcon's activation depends on the file (GELU in llama.cpp, ReLU in ReluFalcon): see
     * load_activation. */
    {.name = "falcon", .rope_neox = true, .layer_norm = true, .parallel = true, .fused_qkv = true, .use_rope = true,
     .act = HR_ACT_GELU, .eps_key = "attention.layer_norm_epsilon"},
    /* OPT (HF OPTForCausalLM, pre-LN variants): learned positions offset by 2, biases
     * everywhere, output tied to token_embd. PowerInfer never reads an eps (so uses 0);
     * HF's LayerNorm default 1e-5 applies unless the file says otherwise. */
    {.name = "opt", .layer_norm = true, .attn_bias = true, .ffn_bias = true, .learned_pos = true, .tied_output = true,
     .pos_offset = 2, .act = HR_ACT_RELU, .eps_key = "attention.layer_norm_epsilon"},
};

const hr_arch *hr_arch_find(const char *name, size_t len) {
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (strlen(archs[i].name) == len && !memcmp(archs[i].name, name, len)) return &archs[i];
    return NULL;
}

const char *hr_arch_list(void) { return "llama, exaone, smallthinker, bamboo, falcon, opt"; }

void hr_arch_apply(const hr_arch *a, hr_hparams *hp) {
    hp->rope_neox = a->rope_neox;
    hp->layer_norm = a->layer_norm, hp->parallel = a->parallel, hp->fused_qkv = a->fused_qkv;
    hp->attn_bias = a->attn_bias, hp->ffn_bias = a->ffn_bias, hp->use_rope = a->use_rope;
    hp->learned_pos = a->learned_pos, hp->tied_output = a->tied_output, hp->pos_offset = a->pos_offset;
}
