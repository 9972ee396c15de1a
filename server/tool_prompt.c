/* A conversation with tools that outgrows the context loses its oldest turns as a plain chat
 * does (chat_prompt.c): the system message (which holds the tools in two of the formats) and
 * the last message stay, the cut falls before a user turn, and the fewest turns go that leave
 * hr_chat_reply_room tokens for the reply. */
#include <stdlib.h>
#include <string.h>
#include "api_parse.h"
#include "json_util.h"

static bool role_is(const cJSON *m, const char *role) {
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(m, "role");
    return cJSON_IsString(r) && !strcmp(r->valuestring, role);
}

static int32_t count_tokens(hr_server *s, const char *text) {
    int32_t *ids = NULL;
    size_t n = 0;
    hr_err e = {{0}};
    if (hearth_tokenize(s->model, text, strlen(text), true, true, &ids, &n, &e)) return -1;
    free(ids);
    return (int32_t)n;
}

/* messages[0] when it is the system message, then messages[from..]: references, not copies. */
static cJSON *tail(const cJSON *msgs, bool sys, int from) {
    cJSON *a = cJSON_CreateArray();
    int i = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        if (a && ((sys && !i) || i >= from) && !cJSON_AddItemReferenceToArray(a, (cJSON *)m)) cJSON_Delete(a), a = NULL;
        i++;
    }
    return a;
}

int hr_tools_prompt_fit(hr_server *s, const cJSON *root, const hr_tools_req *tr, int32_t max_tokens, char **out,
                        hr_tool_spec **spec, int32_t *trimmed, hr_apierr *ae) {
    const cJSON *msgs = hr_json_field(root, "messages");
    *trimmed = 0;
    /* The whole conversation first: its errors are the request's. */
    if (hr_tools_render(s->tmpl, tr, msgs, s->bos_text, s->eos_text, out, spec, ae)) return -1;
    int n = cJSON_GetArraySize(msgs);
    bool sys = role_is(cJSON_GetArrayItem(msgs, 0), "system") || role_is(cJSON_GetArrayItem(msgs, 0), "developer");
    int32_t room = hr_chat_reply_room(s, root, max_tokens), n_tok = count_tokens(s, *out);
    for (int from = sys + 1; n_tok >= 0 && n_tok + room > s->n_ctx && from < n; from++) {
        if (from != n - 1 && !role_is(cJSON_GetArrayItem(msgs, from), "user")) continue;
        cJSON *sub = tail(msgs, sys, from);
        char *text = NULL;
        hr_tool_spec *sp = NULL;
        int rc = sub ? hr_tools_render(s->tmpl, tr, sub, s->bos_text, s->eos_text, &text, &sp, ae) : -1;
        cJSON_Delete(sub);
        if (rc) {
            if (!sub) hr_apierr_set(ae, 500, NULL, NULL, "out of memory");
            free(*out), hr_tool_spec_free(*spec);
            *out = NULL, *spec = NULL;
            return -1;
        }
        free(*out), hr_tool_spec_free(*spec);
        *out = text, *spec = sp, *trimmed = from - sys, n_tok = count_tokens(s, text);
    }
    return 0;
}
