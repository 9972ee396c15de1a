/* Chat messages (OpenAI's shape) to prompt text with the server's template. */
#include <stdlib.h>
#include <string.h>
#include "api_parse.h"
#include "json_util.h"

/* Content: a string, null, or an array of {"type":"text","text":...} parts (joined). */
static int content_text(const cJSON *c, char **out, hr_apierr *ae) {
    if (!c || cJSON_IsNull(c)) return (*out = strdup("")) ? 0 : hr_apierr_set(ae, 500, NULL, NULL, "out of memory");
    if (cJSON_IsString(c)) return (*out = strdup(c->valuestring)) ? 0 : hr_apierr_set(ae, 500, NULL, NULL, "out of memory");
    if (!cJSON_IsArray(c))
        return hr_apierr_set(ae, 400, "messages", "invalid_type", "a message's 'content' must be a string or an array of text parts");
    size_t len = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, c) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "text"), *ty = cJSON_GetObjectItemCaseSensitive(p, "type");
        if (!cJSON_IsObject(p) || !cJSON_IsString(t) || (ty && !(cJSON_IsString(ty) && !strcmp(ty->valuestring, "text"))))
            return hr_apierr_set(ae, 400, "messages", "invalid_value", "only text content parts are supported");
        len += strlen(t->valuestring);
    }
    if (!(*out = malloc(len + 1))) return hr_apierr_set(ae, 500, NULL, NULL, "out of memory");
    len = 0;
    cJSON_ArrayForEach(p, c) {
        const char *t = cJSON_GetObjectItemCaseSensitive(p, "text")->valuestring;
        memcpy(*out + len, t, strlen(t));
        len += strlen(t);
    }
    (*out)[len] = 0;
    return 0;
}

static int collect(const cJSON *messages, hr_chat_msg *msgs, char **texts, hr_apierr *ae) {
    int i = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, messages) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (!cJSON_IsObject(m) || !cJSON_IsString(role))
            return hr_apierr_set(ae, 400, "messages", "invalid_type", "each message must be an object with a string 'role'");
        if (content_text(cJSON_GetObjectItemCaseSensitive(m, "content"), &texts[i], ae)) return -1;
        /* "developer" is OpenAI's newer name for the system role. */
        msgs[i].role = !strcmp(role->valuestring, "developer") ? "system" : role->valuestring;
        msgs[i].content = texts[i];
        i++;
    }
    return 0;
}

int hr_chat_prompt(hr_server *s, const cJSON *messages, char **out, hr_apierr *ae) {
    if (!messages) return hr_apierr_set(ae, 400, "messages", "missing", "'messages' is required");
    int n = cJSON_IsArray(messages) ? cJSON_GetArraySize(messages) : -1;
    if (n < 0) return hr_apierr_set(ae, 400, "messages", "invalid_type", "'messages' must be an array");
    if (!n) return hr_apierr_set(ae, 400, "messages", "invalid_value", "'messages' must not be empty");
    hr_chat_msg *msgs = calloc((size_t)n, sizeof *msgs);
    char **texts = calloc((size_t)n, sizeof *texts);
    int rc = !msgs || !texts ? hr_apierr_set(ae, 500, NULL, NULL, "out of memory") : collect(messages, msgs, texts, ae);
    hr_err e = {{0}};
    if (!rc && hr_chat_render(s->tmpl, msgs, (size_t)n, true, s->bos_text, s->eos_text, out, &e))
        rc = hr_apierr_set(ae, 400, "messages", "invalid_value", "%s", e.msg);
    for (int i = 0; texts && i < n; i++) free(texts[i]);
    free(texts);
    free(msgs);
    return rc;
}
