/* Helpers shared by the GGUF reader, writer and accessors; not part of the API. */
#ifndef HR_GGUF_INTERNAL_H
#define HR_GGUF_INTERNAL_H
#include <stddef.h>
#include <stdint.h>
#include "gguf.h"

#define GGUF_MAX_DEPTH 8          /* array nesting levels accepted */
#define GGUF_MAX_NAME 64          /* ggml's GGML_MAX_NAME: tensor names are shorter than this */
#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_ESC_MAX 96           /* buffer for a name escaped into an error message */

/* Printable, truncated copy of s for messages (non-printable bytes as \xNN). Returns buf. */
const char *gguf_escape(gguf_str s, char buf[GGUF_ESC_MAX]);
/* Looks for two equal names among n records of the given stride whose gguf_str sits at
 * offset off. Returns 1 and sets *dup if found, 0 if all differ, -1 if out of memory. */
int gguf_find_dup(const void *recs, uint64_t n, size_t stride, size_t off, gguf_str *dup);
void gguf_value_free(gguf_value *v);
#endif
