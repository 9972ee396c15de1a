/* Typed access to request fields: absent or null fields keep their default; a field of
 * the wrong type or out of range is a 400 naming the field. Unknown fields are ignored. */
#ifndef HR_SRV_JSON_UTIL_H
#define HR_SRV_JSON_UTIL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "apierr.h"

/* The field, or NULL when absent or JSON null. */
const cJSON *hr_json_field(const cJSON *obj, const char *key);
/* Each returns 0 (also when absent: *present false, *out untouched) or -1 with ae set. */
int hr_json_bool(const cJSON *obj, const char *key, bool *out, hr_apierr *ae);
int hr_json_int(const cJSON *obj, const char *key, int64_t lo, int64_t hi, int64_t *out, bool *present, hr_apierr *ae);
int hr_json_num(const cJSON *obj, const char *key, double lo, double hi, double *out, hr_apierr *ae);
int hr_json_string(const cJSON *obj, const char *key, const char **out, hr_apierr *ae);
/* hr_sampler_params_check with the request's field names: a 400 naming the field. */
struct hr_sampler_params;
int hr_json_sampling_check(const struct hr_sampler_params *p, hr_apierr *ae);
/* Parses a request body (NUL at body[len]; nothing may follow the value): the value, or NULL
 * with a 400 in ae: malformed JSON with the byte position, or valid JSON nested deeper than
 * the parser allows (CJSON_NESTING_LIMIT), said as such. */
cJSON *hr_json_parse_body(const char *body, size_t len, hr_apierr *ae);
/* A string holding len bytes of s (len (size_t)-1: up to the NUL), invalid UTF-8
 * replaced by U+FFFD so the output is always valid JSON text. */
cJSON *hr_json_str(const char *s, size_t len);
/* Bytes of s up to len as valid UTF-8 (malloc'ed, NUL-terminated). */
char *hr_utf8_clean(const char *s, size_t len);
#endif
