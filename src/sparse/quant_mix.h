/* llama.cpp's quantization mixes (llama-quantize's TYPE: Q4_K_M, Q6_K, IQ4_XS, ...) and the
 * per-tensor type rules each applies, as src/llama-quant.cpp of the llama.cpp version the
 * conformance tests pin (node-llama-cpp 3.22.1, libllama v0.5.0) applies them to the
 * architectures Hearth reads. Given a file's tensor table, hr_qmix_plan gives every tensor the
 * type llama.cpp's quantizer would give it (imatrix-free, no overrides), so files quantized by
 * Hearth and by llama.cpp carry the same types tensor for tensor. */
#ifndef HR_QUANT_MIX_H
#define HR_QUANT_MIX_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util/err.h"

typedef struct hr_qmix {
    const char *name;  /* llama-quantize's name, e.g. "Q4_K_M" */
    uint32_t ftype;    /* llama_ftype: written as general.file_type */
    uint32_t base;     /* hr_type of every matrix no rule changes */
    const char *rules; /* one line: what the mix changes besides the base type */
} hr_qmix;

size_t hr_qmix_count(void);
const hr_qmix *hr_qmix_at(size_t i); /* in llama-quantize's listing order; NULL past the end */
/* A llama-quantize name, any case (Q3_K, Q4_K, Q5_K are its aliases of the _M mixes), or a
 * llama_ftype number; NULL if none. */
const hr_qmix *hr_qmix_find(const char *name);
const hr_qmix *hr_qmix_by_ftype(uint32_t ftype);
/* The mix a single type stands for in files of one type throughout (the _S mix of a K type;
 * MXFP4_MOE for mxfp4): its ftype is what such files carry. NULL for non-weight types. */
const hr_qmix *hr_qmix_for_type(uint32_t type);
/* Bits per weight of a type's blocks (4.5 for q4_0), 0 for unknown types. */
double hr_type_bpw(uint32_t type);

/* What the rules need to know of the model (from its GGUF keys). */
typedef struct hr_qmix_model {
    bool falcon;       /* general.architecture "falcon": its own rules */
    bool is_70b;       /* llama.cpp's LLM_TYPE_70B (attn_v gets more bits) */
    uint32_t n_layer;  /* A.block_count */
    uint32_t n_head, n_head_kv; /* of layer 0; n_gqa = n_head / n_head_kv */
    uint32_t n_expert; /* A.expert_count, 0 when absent */
} hr_qmix_model;

typedef struct hr_qmix_tensor {
    const char *name; /* NUL-terminated */
    uint32_t n_dims;
    uint64_t ne[4];
    uint32_t type;    /* the tensor's type in the input file */
} hr_qmix_tensor;

/* Sets model fields from the architecture name and hyper-parameters (is_70b, falcon). */
void hr_qmix_model_init(hr_qmix_model *m, const char *arch, uint32_t n_layer, uint32_t n_head, uint32_t n_head_kv,
                        uint32_t n_expert);

/* True when llama.cpp quantizes this tensor at all (2-D or 3-D weights other than norms,
 * routers, learned positions and a few small special tensors). */
bool hr_qmix_quantizable(const hr_qmix_tensor *t);

/* types[i]: the type tensor i gets (ts[i].type where it is kept). pure: every quantizable
 * tensor gets the mix's base type (llama-quantize --pure); the fallback for rows that are not
 * whole blocks applies either way, as in llama.cpp (K types to 32-blocks, then F16).
 * *n_fallback (may be NULL) counts the tensors that needed one. Errors name the tensor. */
int hr_qmix_plan(const hr_qmix *mix, bool pure, const hr_qmix_model *m, const hr_qmix_tensor *ts, size_t n,
                 uint32_t *types, uint32_t *n_fallback, hr_err *e);

#endif
