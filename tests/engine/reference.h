/* An independent double-precision forward pass for LLaMA-family GGUF models, written
 * from the math (not from the engine's code), used to check the engine's logits. */
#ifndef HR_TEST_REFERENCE_H
#define HR_TEST_REFERENCE_H
#include <stdbool.h>
#include <stdint.h>

typedef struct ref_model ref_model;

/* Loads weights (dequantized to double) from a GGUF file; NULL on failure (message to stderr). */
ref_model *ref_load(const char *path);
void ref_free(ref_model *r);
int32_t ref_n_vocab(const ref_model *r);
/* Runs tokens[0..n) from an empty cache; writes logits of every position (n * n_vocab). */
void ref_forward(ref_model *r, const int32_t *tokens, int32_t n, double *logits);
#endif
