/* Constrained output: response_format (text, json_object, json_schema), llama-server's
 * `grammar` (GBNF text) and `json_schema` fields, and the grammar of a forced tool call,
 * parsed into the job's grammar (each slot samples through its own matcher, slot.c). */
#include <stdlib.h>
#include <string.h>
#include "api_parse.h"
#include "grammar/grammar.h"
#include "json_util.h"

#define OOM(ae) hr_apierr_set(ae, 500, NULL, NULL, "out of memory")

static int from_gbnf(const char *text, const char *root, const char *param, hr_job *j, hr_apierr *ae) {
    hr_err e = {{0}};
    if (!(j->grammar = hr_grammar_parse(text, strlen(text), root, &e)))
        return hr_apierr_set(ae, 400, param, "invalid_value", "'%s': %s", param, e.msg);
    return 0;
}

static int from_schema(const cJSON *schema, const char *param, hr_job *j, hr_apierr *ae) {
    if (!cJSON_IsObject(schema) && !cJSON_IsBool(schema))
        return hr_apierr_set(ae, 400, param, "invalid_type", "'%s' must be a JSON schema object", param);
    char *text = cJSON_PrintUnformatted(schema);
    if (!text) return OOM(ae);
    hr_err e = {{0}};
    char *g = hr_json_schema_to_gbnf(text, strlen(text), &e);
    free(text);
    if (!g) return hr_apierr_set(ae, 400, param, "invalid_value", "'%s': %s", param, e.msg);
    int rc = from_gbnf(g, NULL, param, j, ae);
    free(g);
    return rc;
}

/* {"type":"text"} | {"type":"json_object"[, "schema":{...}]} |
 * {"type":"json_schema","json_schema":{"name":...,"schema":{...},"strict":...}} */
static int response_format(const cJSON *rf, hr_job *j, hr_apierr *ae) {
    const char *P = "response_format";
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(rf, "type");
    if (!cJSON_IsObject(rf) || !cJSON_IsString(ty))
        return hr_apierr_set(ae, 400, P, "invalid_type", "'response_format' must be an object with a string 'type'");
    const char *t = ty->valuestring;
    if (!strcmp(t, "text")) return 0;
    if (!strcmp(t, "json_object")) {
        /* llama-server's extension: a schema inside json_object. */
        const cJSON *schema = hr_json_field(rf, "schema");
        return schema ? from_schema(schema, P, j, ae) : from_gbnf(hr_gbnf_json_object(), NULL, P, j, ae);
    }
    if (strcmp(t, "json_schema"))
        return hr_apierr_set(ae, 400, P, "invalid_value", "'response_format.type' must be \"text\", \"json_object\" or \"json_schema\", not \"%s\"", t);
    const cJSON *js = hr_json_field(rf, "json_schema");
    if (!cJSON_IsObject(js))
        return hr_apierr_set(ae, 400, P, "invalid_value", "'response_format' of type json_schema needs a 'json_schema' object");
    const cJSON *name = hr_json_field(js, "name"), *strict = hr_json_field(js, "strict"), *schema = hr_json_field(js, "schema");
    if (name && !cJSON_IsString(name)) return hr_apierr_set(ae, 400, P, "invalid_type", "'response_format.json_schema.name' must be a string");
    if (strict && !cJSON_IsBool(strict)) return hr_apierr_set(ae, 400, P, "invalid_type", "'response_format.json_schema.strict' must be a boolean");
    /* OpenAI allows a schema-less json_schema: any JSON object then. */
    return schema ? from_schema(schema, P, j, ae) : from_gbnf(hr_gbnf_json_object(), NULL, P, j, ae);
}

int hr_constrain_parse(const cJSON *root, const hr_tools_req *tr, hr_job *j, hr_apierr *ae) {
    const cJSON *g = hr_json_field(root, "grammar"), *js = hr_json_field(root, "json_schema");
    const cJSON *rf = hr_json_field(root, "response_format");
    bool forced = j->tools && (tr->choice == HR_TOOL_REQUIRED || tr->choice == HR_TOOL_NAMED);
    int n = (g != NULL) + (js != NULL) + (rf != NULL) + forced;
    if (n > 1)
        return hr_apierr_set(ae, 400, rf ? "response_format" : g ? "grammar" : "json_schema", "invalid_value",
                             "only one of 'grammar', 'json_schema', 'response_format' and a forced 'tool_choice' may constrain a request");
    if (g && !cJSON_IsString(g)) return hr_apierr_set(ae, 400, "grammar", "invalid_type", "'grammar' must be a string (GBNF)");
    if (g) return g->valuestring[0] ? from_gbnf(g->valuestring, NULL, "grammar", j, ae) : 0;
    if (js) return from_schema(js, "json_schema", j, ae);
    if (rf) return response_format(rf, j, ae);
    if (!forced) return 0;
    const char *start = NULL;
    char *text = hr_tools_grammar(tr, j->tools, &start, ae);
    if (!text) return -1;
    int rc = from_gbnf(text, start, "tools", j, ae);
    free(text);
    return rc;
}
