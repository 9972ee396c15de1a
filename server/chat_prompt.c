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

/* Renders the system message (n_sys of them: 0 or 1) and msgs[from..n); *n_tok: its tokens. */
static int render_from(hr_server *s, const hr_chat_msg *msgs, int n, int n_sys, int from, hr_chat_msg *tmp, char **out,
                       int32_t *n_tok, hr_apierr *ae) {
    int k = 0;
    for (int i = 0; i < n_sys; i++) tmp[k++] = msgs[i];
    for (int i = from; i < n; i++) tmp[k++] = msgs[i];
    hr_err e = {{0}};
    *out = NULL;
    if (hr_chat_render(s->tmpl, tmp, (size_t)k, true, s->bos_text, s->eos_text, out, &e))
        return hr_apierr_set(ae, 400, "messages", "invalid_value", "%s", e.msg);
    if (!n_tok) return 0;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    if (hearth_tokenize(s->model, *out, strlen(*out), true, true, &ids, &n_ids, &e)) {
        free(*out), *out = NULL;
        return hr_apierr_set(ae, 400, "messages", "invalid_value", "%s", e.msg);
    }
    free(ids);
    *n_tok = (int32_t)n_ids;
    return 0;
}

/* The conversation may start at: the first message after the system one (nothing left
 * out), any later user turn (templates that need user/assistant alternation stay valid),
 * and the last message. Returns how many, in from[], ascending. */
static int cut_points(const hr_chat_msg *msgs, int n, int n_sys, int *from) {
    int k = 0;
    from[k++] = n_sys;
    for (int i = n_sys + 1; i < n; i++)
        if (!strcmp(msgs[i].role, "user") || i == n - 1) from[k++] = i;
    return k;
}

/* Leaves out the oldest turns (never the system message, never the last message) until the
 * prompt and `room` reply tokens fit the context: the fewest left out, found by bisection
 * (each try renders and tokenizes once). A prompt that does not fit even then is returned
 * as short as it gets; the caller reports its length. */
static int fit(hr_server *s, const hr_chat_msg *msgs, int n, int32_t room, char **out, int32_t *trimmed, hr_apierr *ae) {
    int n_sys = n > 1 && !strcmp(msgs[0].role, "system");
    int *from = malloc((size_t)n * sizeof *from);
    hr_chat_msg *tmp = malloc((size_t)n * sizeof *tmp);
    if (!from || !tmp) {
        free(from), free(tmp);
        return hr_apierr_set(ae, 500, NULL, NULL, "out of memory");
    }
    int n_cut = cut_points(msgs, n, n_sys, from), lo = 0, hi = n_cut - 1;
    int32_t budget = s->n_ctx - room, tok = 0;
    int rc = render_from(s, msgs, n, n_sys, from[0], tmp, out, n_cut > 1 ? &tok : NULL, ae);
    if (!rc && n_cut > 1 && tok > budget) {
        /* Invariant: from[lo] does not fit; from[hi] is the answer unless it does not fit either. */
        free(*out), *out = NULL;
        while (!rc && hi - lo > 1) {
            int mid = lo + (hi - lo) / 2;
            char *t = NULL;
            rc = render_from(s, msgs, n, n_sys, from[mid], tmp, &t, &tok, ae);
            free(t);
            if (tok > budget) lo = mid;
            else hi = mid;
        }
        if (!rc) rc = render_from(s, msgs, n, n_sys, from[hi], tmp, out, NULL, ae);
        *trimmed = from[hi] - n_sys;
    }
    free(from), free(tmp);
    return rc;
}

static int prompt(hr_server *s, const cJSON *messages, int32_t room, char **out, int32_t *trimmed, hr_apierr *ae) {
    if (trimmed) *trimmed = 0;
    if (!messages) return hr_apierr_set(ae, 400, "messages", "missing", "'messages' is required");
    int n = cJSON_IsArray(messages) ? cJSON_GetArraySize(messages) : -1;
    if (n < 0) return hr_apierr_set(ae, 400, "messages", "invalid_type", "'messages' must be an array");
    if (!n) return hr_apierr_set(ae, 400, "messages", "invalid_value", "'messages' must not be empty");
    hr_chat_msg *msgs = calloc((size_t)n, sizeof *msgs);
    char **texts = calloc((size_t)n, sizeof *texts);
    int rc = !msgs || !texts ? hr_apierr_set(ae, 500, NULL, NULL, "out of memory") : collect(messages, msgs, texts, ae);
    if (!rc) rc = trimmed ? fit(s, msgs, n, room, out, trimmed, ae) : render_from(s, msgs, n, 0, 0, msgs, out, NULL, ae);
    for (int i = 0; texts && i < n; i++) free(texts[i]);
    free(texts);
    free(msgs);
    return rc;
}

int hr_chat_prompt(hr_server *s, const cJSON *messages, char **out, hr_apierr *ae) {
    return prompt(s, messages, 0, out, NULL, ae);
}

int32_t hr_chat_reply_room(const hr_server *s, const cJSON *root, int32_t max_tokens) {
    bool given = hr_json_field(root, "max_tokens") || hr_json_field(root, "max_completion_tokens");
    int32_t room = given ? max_tokens : s->p.n_predict, half = s->n_ctx / 2;
    return room < half ? room : half;
}

int hr_chat_prompt_fit(hr_server *s, const cJSON *root, int32_t max_tokens, char **out, int32_t *trimmed, hr_apierr *ae) {
    return prompt(s, hr_json_field(root, "messages"), hr_chat_reply_room(s, root, max_tokens), out, trimmed, ae);
}
