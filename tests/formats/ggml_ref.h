/* ggml's own reference (de)quantizers, loaded at run time from llama.cpp's prebuilt
 * libggml-base.so, so tests can compare Hearth's bytes and values with the real thing.
 * Library path: $HEARTH_GGML_LIB, else $HEARTH_SRC/tests/conformance/node_modules/
 * @node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so (installed by the llama_ref
 * fixture). Types are Hearth ids (= ggml ids). */
#ifndef HR_TEST_GGML_REF_H
#define HR_TEST_GGML_REF_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef void (*hr_ggml_quant_fn)(const float *x, void *y, int64_t n);   /* quantize_row_<t>_ref */
typedef void (*hr_ggml_dequant_fn)(const void *x, float *y, int64_t n); /* dequantize_row_<t> */

typedef struct {
    void *handle;
    char path[1024];
} hr_ggml;

/* Opens the library. false (with a one-line reason in why) when it is not there. */
bool hr_ggml_open(hr_ggml *g, char *why, size_t why_cap);
void hr_ggml_close(hr_ggml *g);
/* ggml's functions for type t; NULL when the library has none (e.g. no dequantize_row_q8_1)
 * or t is not a block type. */
hr_ggml_quant_fn hr_ggml_quant(const hr_ggml *g, uint32_t t);
hr_ggml_dequant_fn hr_ggml_dequant(const hr_ggml *g, uint32_t t);
/* Convenience wrappers: false when the function is not available. n a multiple of the block. */
bool hr_ggml_quant_row(const hr_ggml *g, uint32_t t, const float *x, void *y, int64_t n);
bool hr_ggml_dequant_row(const hr_ggml *g, uint32_t t, const void *x, float *y, int64_t n);
#endif
