/* Errors in OpenAI's shape: {"error":{"message","type","param","code"}} with an HTTP status. */
#ifndef HR_SRV_APIERR_H
#define HR_SRV_APIERR_H
#include <cjson/cJSON.h>

typedef struct hr_apierr {
    int status;
    const char *type;  /* "invalid_request_error", "server_error", ... */
    const char *param; /* the offending field, or NULL */
    const char *code;  /* e.g. "context_length_exceeded", or NULL */
    char msg[512];
} hr_apierr;

/* Fills ae and returns -1. */
int hr_apierr_set(hr_apierr *ae, int status, const char *param, const char *code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
cJSON *hr_apierr_json(const hr_apierr *ae);
#endif
