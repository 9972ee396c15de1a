/* Request field access with precise errors, and UTF-8-safe JSON strings. */
#include "json_util.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "sampler/sampler.h"

const cJSON *hr_json_field(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

int hr_json_bool(const cJSON *obj, const char *key, bool *out, hr_apierr *ae) {
    const cJSON *v = hr_json_field(obj, key);
    if (!v) return 0;
    if (!cJSON_IsBool(v)) return hr_apierr_set(ae, 400, key, "invalid_type", "'%s' must be a boolean", key);
    *out = cJSON_IsTrue(v);
    return 0;
}

int hr_json_int(const cJSON *obj, const char *key, int64_t lo, int64_t hi, int64_t *out, bool *present, hr_apierr *ae) {
    const cJSON *v = hr_json_field(obj, key);
    if (present) *present = v != NULL;
    if (!v) return 0;
    double d = v->valuedouble;
    if (!cJSON_IsNumber(v) || d != floor(d) || !isfinite(d))
        return hr_apierr_set(ae, 400, key, "invalid_type", "'%s' must be an integer", key);
    if (d < (double)lo || d > (double)hi)
        return hr_apierr_set(ae, 400, key, "invalid_value", "'%s' must be between %lld and %lld", key, (long long)lo,
                             (long long)hi);
    *out = (int64_t)d;
    return 0;
}

int hr_json_num(const cJSON *obj, const char *key, double lo, double hi, double *out, hr_apierr *ae) {
    const cJSON *v = hr_json_field(obj, key);
    if (!v) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return hr_apierr_set(ae, 400, key, "invalid_type", "'%s' must be a number", key);
    if (v->valuedouble < lo || v->valuedouble > hi)
        return hr_apierr_set(ae, 400, key, "invalid_value", "'%s' must be between %g and %g", key, lo, hi);
    *out = v->valuedouble;
    return 0;
}

int hr_json_string(const cJSON *obj, const char *key, const char **out, hr_apierr *ae) {
    const cJSON *v = hr_json_field(obj, key);
    if (!v) return 0;
    if (!cJSON_IsString(v)) return hr_apierr_set(ae, 400, key, "invalid_type", "'%s' must be a string", key);
    *out = v->valuestring;
    return 0;
}

int hr_json_sampling_check(const hr_sampler_params *p, hr_apierr *ae) {
    hr_err e = {{0}};
    if (!hr_sampler_params_check(p, &e)) return 0;
    /* The sampler's message starts with its name of the field. */
    static const char *const names[][2] = {{"temp", "temperature"}, {"top_k", "top_k"}, {"top_p", "top_p"},
                                           {"min_p", "min_p"}, {"repeat_penalty", "repeat_penalty"},
                                           {"repeat_last_n", "repeat_last_n"}};
    const char *colon = strchr(e.msg, ':');
    size_t n = colon ? (size_t)(colon - e.msg) : 0;
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (n == strlen(names[k][0]) && !strncmp(e.msg, names[k][0], n))
            return hr_apierr_set(ae, 400, names[k][1], "invalid_value", "'%s'%s", names[k][1], colon);
    return hr_apierr_set(ae, 400, NULL, "invalid_value", "%s", e.msg);
}

/* Deepest nesting of arrays and objects in text[0..n), strings skipped. */
static int nesting(const char *text, size_t n) {
    int depth = 0, most = 0;
    bool in_str = false;
    for (size_t i = 0; i < n; i++) {
        char ch = text[i];
        if (in_str) {
            if (ch == '\\') i++;
            else if (ch == '"') in_str = false;
        } else if (ch == '"') {
            in_str = true;
        } else if (ch == '[' || ch == '{') {
            if (++depth > most) most = depth;
        } else if (ch == ']' || ch == '}') {
            depth--;
        }
    }
    return most;
}

cJSON *hr_json_parse_body(const char *body, size_t len, hr_apierr *ae) {
    const char *end = NULL;
    /* body[len] is NUL: including it lets cJSON reject anything after the value. */
    cJSON *root = cJSON_ParseWithLengthOpts(body, len + 1, &end, true);
    if (root) return root;
    size_t at = end && end >= body ? (size_t)(end - body) : 0;
    /* cJSON stops at its depth limit as if the text were broken there. */
    if (nesting(body, at + 1 < len ? at + 1 : len) > CJSON_NESTING_LIMIT)
        hr_apierr_set(ae, 400, NULL, "invalid_json", "JSON nested deeper than %d levels (at byte %zu) is not accepted",
                      CJSON_NESTING_LIMIT, at);
    else
        hr_apierr_set(ae, 400, NULL, "invalid_json", "malformed JSON near byte %zu", at);
    return NULL;
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    if (s[0] < 0x80) return 1;
    size_t k = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 && s[0] < 0xE0 ? 2 : 0;
    if (!k || k > n) return 0;
    for (size_t i = 1; i < k; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if (k == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0))) return 0;
    if (k == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))) return 0;
    return k;
}

char *hr_utf8_clean(const char *s, size_t len) {
    if (len == (size_t)-1) len = strlen(s);
    char *out = malloc(3 * len + 1), *o = out;
    if (!out) return NULL;
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        size_t k = utf8_seq(u + i, len - i);
        if (k && !(k == 1 && u[i] == 0)) {
            memcpy(o, u + i, k), o += k, i += k;
        } else {
            memcpy(o, "\xEF\xBF\xBD", 3), o += 3, i++; /* U+FFFD; also stands in for NUL */
        }
    }
    *o = 0;
    return out;
}

cJSON *hr_json_str(const char *s, size_t len) {
    char *c = hr_utf8_clean(s, len);
    cJSON *v = cJSON_CreateString(c ? c : "");
    free(c);
    return v;
}
