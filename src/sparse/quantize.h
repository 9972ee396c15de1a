/* Weight-type conversion of a whole GGUF file (dense or PowerInfer), as llama.cpp's
 * quantize does for the types Hearth has: every weight matrix is dequantized and
 * re-quantized with the reference quantizers (bit-exact with ggml's), everything else
 * is copied. The PWRI magic, predictors and ffn_down_t are kept; general.file_type is
 * updated; every other KV is copied. */
#ifndef HR_QUANTIZE_H
#define HR_QUANTIZE_H
#include <stdbool.h>
#include <stdint.h>
#include "util/err.h"

typedef void (*hr_quantize_progress_fn)(void *ud, uint64_t done_bytes, uint64_t total_bytes);

typedef struct hr_quantize_result {
    uint64_t n_converted;  /* matrices converted to the target type */
    uint64_t n_requant;    /* of which were already quantized (Q8_0, Q4_0): accuracy is lost twice */
    uint64_t n_copied;     /* tensors kept as they were (1-D, router, positions, already the target) */
    uint64_t n_unfit;      /* matrices kept because ne0 is not a multiple of the target block */
    uint64_t in_bytes, out_bytes; /* tensor data */
    bool sparse;           /* the file has the PWRI magic */
} hr_quantize_result;

/* llama.cpp's general.file_type (LLAMA_FTYPE_ALL_*) of a whole-file weight type:
 * F32 0, F16 1, Q4_0 2, Q8_0 7, BF16 32; UINT32_MAX for other types. */
uint32_t hr_quantize_ftype(uint32_t type);

/* Converts in_path to out_path (must differ). type: HR_F32, HR_F16, HR_BF16, HR_Q8_0 or HR_Q4_0.
 * progress (may be NULL) is called after each tensor with input bytes done. */
int hr_quantize_file(const char *in_path, const char *out_path, uint32_t type, hr_quantize_progress_fn progress,
                     void *ud, hr_quantize_result *res, hr_err *e);

#endif
