/* What each supported architecture looks like: norm kind, attention layout, positions,
 * default FFN activation. One row per GGUF general.architecture name. */
#ifndef HR_ARCH_H
#define HR_ARCH_H
#include <stdbool.h>
#include "model.h"

typedef struct hr_arch {
    const char *name;
    bool rope_neox;   /* llama.cpp fixes the RoPE pair layout by architecture */
    bool layer_norm, parallel, fused_qkv, attn_bias, ffn_bias, use_rope, learned_pos, tied_output;
    int32_t pos_offset;
    hr_act act;       /* default FFN activation (hearth.ffn_activation may override) */
    bool act_fixed;   /* the activation is part of the architecture: no override */
    const char *eps_key; /* "<arch>.<eps_key>" holds the norm epsilon */
} hr_arch;

/* NULL if the name is not supported. */
const hr_arch *hr_arch_find(const char *name, size_t len);
/* "llama, exaone, ..." for error messages. */
const char *hr_arch_list(void);
/* Copies the architecture's shape flags into hp. */
void hr_arch_apply(const hr_arch *a, hr_hparams *hp);
#endif
