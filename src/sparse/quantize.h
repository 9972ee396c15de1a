/* Weight-type conversion of a whole GGUF file (dense or PowerInfer), as llama.cpp's
 * llama-quantize does: each tensor gets the type the chosen mix gives it (quant_mix.h: the
 * same per-tensor rules and block-size fallbacks as llama.cpp), matrices are dequantized and
 * re-quantized with the reference quantizers (bit-exact with ggml's), everything else is
 * copied. The PWRI magic, predictors and ffn_down_t are kept (ffn_down_t takes ffn_down's
 * rules, fc1/fc2 the base type); general.file_type is set to the mix's llama_ftype as
 * llama.cpp sets it; every other KV is copied. */
#ifndef HR_QUANTIZE_H
#define HR_QUANTIZE_H
#include <stdbool.h>
#include <stdint.h>
#include "formats/types.h"
#include "sparse/quant_mix.h"
#include "util/err.h"

typedef void (*hr_quantize_progress_fn)(void *ud, uint64_t done_bytes, uint64_t total_bytes);

typedef struct hr_quantize_result {
    uint64_t n_converted;  /* matrices converted to another type */
    uint64_t n_requant;    /* of which were already quantized: accuracy is lost twice */
    uint64_t n_copied;     /* tensors kept as they were (1-D, router, positions, already the target) */
    uint32_t n_fallback;   /* matrices whose rows are not whole blocks of the mix's type: given
                              llama.cpp's fallback type instead (q4_k -> q5_0, ..., then f16) */
    uint64_t n_of_type[HR_TYPE_MAX]; /* tensors of each type in the output */
    uint64_t in_bytes, out_bytes; /* tensor data */
    bool sparse;           /* the file has the PWRI magic */
} hr_quantize_result;

/* llama.cpp's general.file_type of a file of one weight type throughout (F32 0, F16 1, Q4_0 2,
 * Q8_0 7, Q4_K 14 (Q4_K_S), MXFP4 38, ...); UINT32_MAX for types no mix has. */
uint32_t hr_quantize_ftype(uint32_t type);

/* Converts in_path to out_path (must differ) to the mix (hr_qmix_find). pure: every matrix the
 * mix's base type (llama-quantize --pure; the block-size fallback still applies).
 * progress (may be NULL) is called after each tensor with input bytes done. */
int hr_quantize_file(const char *in_path, const char *out_path, const hr_qmix *mix, bool pure,
                     hr_quantize_progress_fn progress, void *ud, hr_quantize_result *res, hr_err *e);

#endif
