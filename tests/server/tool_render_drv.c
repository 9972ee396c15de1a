/* hearth-tool-render FAMILY < REQUEST.json: prints the prompt the server renders for a chat
 * request's messages and tools (server/tool_render.c), for tests/server/tools_jinja.py, which
 * compares it with the published Jinja templates. Exit 1 with the error on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include "tools.h"

int main(int argc, char **argv) {
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, stdin);
    buf[n] = 0;
    int t = argc == 2 ? hr_chat_from_name(argv[1]) : -1;
    cJSON *root = cJSON_Parse(buf);
    if (t < 0 || !root) {
        fprintf(stderr, "usage: hearth-tool-render FAMILY < REQUEST.json\n");
        return 2;
    }
    hr_tools_req tr;
    hr_apierr ae = {0};
    char *out = NULL;
    hr_tool_spec *sp = NULL;
    int rc = hr_tools_parse(root, &tr, &ae) ||
             hr_tools_render((hr_chat_tmpl)t, &tr, cJSON_GetObjectItem(root, "messages"), "<s>", "</s>", &out, &sp, &ae);
    if (rc) fprintf(stderr, "%s\n", ae.msg);
    else fputs(out, stdout);
    free(out);
    hr_tool_spec_free(sp);
    cJSON_Delete(root);
    return rc ? 1 : 0;
}
