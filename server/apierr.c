/* OpenAI-shaped error bodies. */
#include "apierr.h"
#include <stdarg.h>
#include <stdio.h>
#include "json_util.h"

static const char *type_of(int status) {
    switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 500: return "server_error";
    case 503: return "server_error";
    default: return "invalid_request_error";
    }
}

int hr_apierr_set(hr_apierr *ae, int status, const char *param, const char *code, const char *fmt, ...) {
    ae->status = status;
    ae->type = type_of(status);
    ae->param = param;
    ae->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ae->msg, sizeof ae->msg, fmt, ap);
    va_end(ap);
    return -1;
}

cJSON *hr_apierr_json(const hr_apierr *ae) {
    cJSON *root = cJSON_CreateObject(), *err = cJSON_CreateObject();
    if (!root || !err) { cJSON_Delete(root), cJSON_Delete(err); return NULL; }
    cJSON_AddItemToObject(root, "error", err);
    cJSON_AddItemToObject(err, "message", hr_json_str(ae->msg, (size_t)-1));
    cJSON_AddStringToObject(err, "type", ae->type ? ae->type : "invalid_request_error");
    if (ae->param) cJSON_AddStringToObject(err, "param", ae->param);
    else cJSON_AddNullToObject(err, "param");
    if (ae->code) cJSON_AddStringToObject(err, "code", ae->code);
    else cJSON_AddNullToObject(err, "code");
    return root;
}
