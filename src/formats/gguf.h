/* GGUF v3 reader (mmap, every offset/size checked) and writer.
 * The reader accepts the GGUF magic and PowerInfer's PWRI magic (sparse file).
 * Strings in a parsed file point into the mapping and are NOT NUL-terminated. */
#ifndef HR_GGUF_H
#define HR_GGUF_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../util/err.h"

typedef enum gguf_vtype {
    GGUF_VT_UINT8 = 0, GGUF_VT_INT8 = 1, GGUF_VT_UINT16 = 2, GGUF_VT_INT16 = 3,
    GGUF_VT_UINT32 = 4, GGUF_VT_INT32 = 5, GGUF_VT_FLOAT32 = 6, GGUF_VT_BOOL = 7,
    GGUF_VT_STRING = 8, GGUF_VT_ARRAY = 9, GGUF_VT_UINT64 = 10, GGUF_VT_INT64 = 11,
    GGUF_VT_FLOAT64 = 12, GGUF_VT_COUNT
} gguf_vtype;

typedef struct gguf_str {
    const char *ptr; /* into the mapping; not NUL-terminated */
    uint64_t len;
} gguf_str;

typedef struct gguf_value gguf_value;

typedef struct gguf_array {
    gguf_vtype type;    /* element type */
    uint64_t n;         /* element count */
    const uint8_t *raw; /* numeric/bool elements: n * gguf_vtype_size(type) bytes, may be unaligned (use memcpy) */
    gguf_value *items;  /* string or nested-array elements, parsed (n entries); NULL for numeric arrays */
} gguf_array;

struct gguf_value {
    gguf_vtype type;
    union {
        uint64_t u;   /* UINT8..UINT64, BOOL */
        int64_t i;    /* INT8..INT64 */
        double f;     /* FLOAT32, FLOAT64 */
        gguf_str s;   /* STRING */
        gguf_array a; /* ARRAY */
    } v;
};

typedef struct gguf_kv {
    gguf_str key;
    gguf_value val;
} gguf_kv;

#define GGUF_MAX_DIMS 4

typedef struct gguf_tensor {
    gguf_str name;
    uint32_t n_dims;
    uint64_t ne[GGUF_MAX_DIMS]; /* unused dims are 1 */
    uint32_t type;              /* ggml type id */
    uint64_t offset;            /* relative to the data section */
    const void *data;           /* = base + data_offset + offset, validated to lie in the file */
    uint64_t nbytes;            /* bytes of the tensor data */
} gguf_tensor;

typedef struct gguf_file {
    const uint8_t *base; /* mapping (or caller buffer for gguf_parse) */
    size_t size;
    bool mapped;         /* true: base is an mmap this struct owns */
    bool sparse;         /* magic was PWRI */
    uint32_t version;
    uint64_t n_kv;
    gguf_kv *kv;
    uint64_t n_tensors;
    gguf_tensor *tensors;
    uint64_t alignment;   /* general.alignment or 32 */
    uint64_t data_offset; /* start of the tensor data section */
} gguf_file;

/* Open and map a file; validates header, all KVs, tensor infos (names unique, dims
 * sane, type known, sizes computed with overflow checks, data inside the file and aligned). */
int gguf_open(gguf_file *f, const char *path, hr_err *e);
/* Asks the kernel for 2 MiB pages over a model's bytes (a hint; see gguf_pages.c). */
void gguf_advise_huge(void *base, size_t size);
/* Bytes of [base, base + size) the process now has in 2 MiB pages (file or anonymous), from
 * /proc/self/smaps; -1 where the system does not say. */
int64_t gguf_huge_bytes(const void *base, size_t size);
/* Parse a caller-owned buffer (kept alive by the caller). Used by tests and the fuzzer. */
int gguf_parse(gguf_file *f, const void *buf, size_t size, hr_err *e);
void gguf_close(gguf_file *f);

size_t gguf_vtype_size(gguf_vtype t); /* bytes of a scalar type; 0 for STRING/ARRAY/unknown */
const char *gguf_vtype_name(gguf_vtype t);

const gguf_kv *gguf_find_kv(const gguf_file *f, const char *key);
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name);
bool gguf_str_eq(gguf_str s, const char *c);

/* Typed getters. Return 0 on success; 1 if the key is absent (out untouched);
 * -1 with a message if present but of an incompatible type/out of range.
 * Integer getters accept any integer type whose value fits. */
int gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out, hr_err *e);
int gguf_get_u64(const gguf_file *f, const char *key, uint64_t *out, hr_err *e);
int gguf_get_i32(const gguf_file *f, const char *key, int32_t *out, hr_err *e);
int gguf_get_f32(const gguf_file *f, const char *key, float *out, hr_err *e); /* FLOAT32 or FLOAT64 */
int gguf_get_bool(const gguf_file *f, const char *key, bool *out, hr_err *e);
int gguf_get_str(const gguf_file *f, const char *key, gguf_str *out, hr_err *e);
int gguf_get_arr(const gguf_file *f, const char *key, const gguf_array **out, hr_err *e);
/* Numeric array element i converted to double (any numeric/bool element type). */
double gguf_arr_num(const gguf_array *a, uint64_t i);

/* ---- writer ---- */
typedef struct gguf_writer gguf_writer;

gguf_writer *gguf_writer_new(bool sparse_magic /* write PWRI instead of GGUF */);
void gguf_writer_free(gguf_writer *w);
/* KV setters copy keys and values. A key set twice is an error reported at write time. */
void gguf_w_u32(gguf_writer *w, const char *key, uint32_t v);
void gguf_w_i32(gguf_writer *w, const char *key, int32_t v);
void gguf_w_u64(gguf_writer *w, const char *key, uint64_t v);
void gguf_w_f32(gguf_writer *w, const char *key, float v);
void gguf_w_bool(gguf_writer *w, const char *key, bool v);
void gguf_w_str(gguf_writer *w, const char *key, const char *v);
void gguf_w_str_n(gguf_writer *w, const char *key, const char *v, uint64_t len);
void gguf_w_arr_str(gguf_writer *w, const char *key, const char *const *v, const uint64_t *lens /* NULL: strlen */, uint64_t n);
void gguf_w_arr_f32(gguf_writer *w, const char *key, const float *v, uint64_t n);
void gguf_w_arr_i32(gguf_writer *w, const char *key, const int32_t *v, uint64_t n);
/* Raw array of any scalar type (for round-trip tests of every type). */
void gguf_w_arr_raw(gguf_writer *w, const char *key, gguf_vtype elem, const void *v, uint64_t n);
/* Copy a whole parsed KV (any type, nested arrays included), e.g. when rewriting a file. */
void gguf_w_kv_copy(gguf_writer *w, const gguf_kv *kv);
/* Adds a tensor; data is NOT copied and must stay valid until gguf_w_write returns.
 * nbytes must equal the size implied by type and ne (checked at write). */
void gguf_w_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                   const uint64_t *ne, const void *data, uint64_t nbytes);
/* Writes header, KVs, tensor infos and aligned data (alignment 32 or general.alignment). */
int gguf_w_write(gguf_writer *w, const char *path, hr_err *e);

#endif
