/* Test helper: copy a GGUF file while changing tensors' data through a callback. */
#ifndef HR_TEST_REWRITE_H
#define HR_TEST_REWRITE_H
#include <stdint.h>
#include "formats/gguf.h"

/* Called per tensor with a writable copy of its data; may modify it in place. */
typedef void (*rewrite_fn)(void *ud, const char *name, const gguf_tensor *t, void *data);
int rewrite_tensors(const char *src, const char *dst, rewrite_fn fn, void *ud);
#endif
