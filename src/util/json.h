/* A small JSON reader (RFC 8259) for the core library and the CLI, which must not depend on
 * cJSON (only the server has it):
 * a read-only tree with object keys in their source order, strings decoded (escapes,
 * \u surrogate pairs) and checked to be UTF-8, limits on depth and size, and errors that
 * name the line and column. */
#ifndef HR_UTIL_JSON_H
#define HR_UTIL_JSON_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "err.h"

typedef enum hr_json_type {
    HR_JSON_NULL,
    HR_JSON_BOOL,
    HR_JSON_NUMBER,
    HR_JSON_STRING,
    HR_JSON_ARRAY,
    HR_JSON_OBJECT
} hr_json_type;

typedef struct hr_json hr_json;
struct hr_json {
    hr_json_type type;
    bool boolean;       /* BOOL */
    bool is_int;        /* NUMBER without fraction or exponent that fits int64 */
    int64_t i;          /* NUMBER when is_int */
    double num;         /* NUMBER */
    const char *str;    /* STRING: decoded, NUL-terminated (may hold NULs: use len);
                           NUMBER: its source text (not terminated) */
    size_t len;         /* STRING / NUMBER bytes */
    size_t n;           /* ARRAY / OBJECT: element count */
    hr_json *items;     /* ARRAY / OBJECT: the n values */
    hr_json *keys;      /* OBJECT: the n keys (STRING nodes), keys[k] names items[k] */
    size_t offset;      /* byte offset of the value in the source text */
};

typedef struct hr_json_limits {
    int max_depth;      /* nesting of arrays and objects (0: 64) */
    size_t max_bytes;   /* text length (0: no limit) */
} hr_json_limits;

typedef struct hr_json_doc hr_json_doc;

/* Parses text[0..len). lim may be NULL (defaults). Errors read
 * "invalid JSON at line 3, column 14: expected ',' or '}'". */
hr_json_doc *hr_json_parse(const char *text, size_t len, const hr_json_limits *lim, hr_err *e);
const hr_json *hr_json_root(const hr_json_doc *d);
void hr_json_free(hr_json_doc *d);

/* The value of key in an object (the last one if the key repeats); NULL if absent or v is
 * not an object. */
const hr_json *hr_json_get(const hr_json *v, const char *key);
bool hr_json_is(const hr_json *v, const char *s); /* a STRING equal to s */

/* Compact JSON text of v (strings re-escaped, non-ASCII kept as UTF-8, numbers as written),
 * malloc'd and NUL-terminated; NULL when out of memory. */
char *hr_json_dump(const hr_json *v, size_t *len);

/* 1-based line and column (in characters) of a byte offset. */
void hr_json_line_col(const char *text, size_t len, size_t offset, int *line, int *col);

#endif
