/* Tool calls (OpenAI's `tools` / `tool_choice`): the request fields, the tools and the tool
 * turns rendered in the chat template families that define a format for them (ChatML in the
 * Hermes / Qwen style, Llama 3.1, Mistral), the grammar that forces a call, and the model's
 * reply split back into content and tool_calls. docs/server.md describes the formats. */
#ifndef HR_SRV_TOOLS_H
#define HR_SRV_TOOLS_H
#include <stdbool.h>
#include <stddef.h>
#include <cjson/cJSON.h>
#include "apierr.h"
#include "chat/chat.h"

/* How a family writes a call. */
typedef enum hr_tool_fmt {
    HR_TOOLFMT_NONE = 0,
    HR_TOOLFMT_HERMES,  /* <tool_call>\n{"name": N, "arguments": {...}}\n</tool_call> (ChatML, Qwen) */
    HR_TOOLFMT_LLAMA3,  /* {"name": N, "parameters": {...}} as the whole reply (Llama 3.1+) */
    HR_TOOLFMT_MISTRAL, /* [TOOL_CALLS][{"name": N, "arguments": {...}}] (also [TOOL_CALLS]N[ARGS]{...}) */
} hr_tool_fmt;

typedef enum hr_tool_choice { HR_TOOL_AUTO = 0, HR_TOOL_NONE, HR_TOOL_REQUIRED, HR_TOOL_NAMED } hr_tool_choice;

/* The request's tools: pointers into the request's JSON (valid while it lives). */
typedef struct hr_tools_req {
    const cJSON *tools; /* the validated array, NULL when absent or empty */
    int n_tools;
    hr_tool_choice choice;
    const char *forced; /* HR_TOOL_NAMED: the function's name */
} hr_tools_req;

/* What the reply parser needs; owned by the job (hr_tool_spec_free). */
typedef struct hr_tool_spec {
    hr_tool_fmt fmt;
    char **names; /* the declared functions: a call to another name is content */
    int n_names;
    char *prefix; /* text the prompt already opened the reply with ("" or a call marker) */
} hr_tool_spec;

/* The family's call format, HR_TOOLFMT_NONE when it has none. */
hr_tool_fmt hr_tool_fmt_of(hr_chat_tmpl t);

/* Validates `tools` and `tool_choice` (400 naming the field). */
int hr_tools_parse(const cJSON *root, hr_tools_req *out, hr_apierr *ae);
/* Whether the tool renderer must be used: tools offered, or tool turns in the messages. */
bool hr_tools_needed(const hr_tools_req *tr, const cJSON *messages);

/* Renders messages (tool calls and tool results included) and the tools with template t;
 * *out malloc'ed. With a forced call the reply's opening marker is part of the prompt where
 * the family writes one as a special token (spec->prefix says which). *spec (malloc'ed, NULL
 * when no tools are offered) is what the reply parser needs. A family without a tool format
 * is a 400 that names it. */
int hr_tools_render(hr_chat_tmpl t, const hr_tools_req *tr, const cJSON *messages, const char *bos, const char *eos,
                    char **out, hr_tool_spec **spec, hr_apierr *ae);

/* GBNF (malloc'ed) forcing one call of the tool named (NULL: any declared tool), in the
 * family's format after spec->prefix; *root is the start rule's name. The arguments follow
 * each tool's parameters schema (hr_json_schema_to_gbnf). NULL with ae set on error. */
char *hr_tools_grammar(const hr_tools_req *tr, const hr_tool_spec *spec, const char **root, hr_apierr *ae);

/* The spec of offered tools in format fmt (the renderer makes it). -1 when out of memory. */
int hr_tool_spec_new(const hr_tools_req *tr, hr_tool_fmt fmt, const char *prefix, hr_tool_spec **out);
void hr_tool_spec_free(hr_tool_spec *spec);

/* One parsed call. */
typedef struct hr_tool_call {
    char *id;        /* the model's id when it wrote one, else NULL */
    char *name;
    char *arguments; /* JSON text */
} hr_tool_call;

/* Splits a whole reply into content (malloc'ed; NULL when calls leave nothing but blanks)
 * and calls (malloc'ed array, *n_calls of them). Text that does not parse as calls of declared
 * tools stays content. -1 when out of memory. */
int hr_tool_reply_parse(const hr_tool_spec *spec, const char *text, size_t len, char **content, hr_tool_call **calls,
                        int *n_calls);
void hr_tool_calls_free(hr_tool_call *calls, int n);

/* Streaming: which bytes of the reply so far can go out as content now. Text from a call
 * marker on (or, for Llama 3, a reply that opens with JSON) is held until the end, where
 * hr_tool_reply_parse decides. Returns how many of the first len bytes are safe content;
 * *held: the rest is (or may become) a tool call. from: what an earlier call returned (no
 * marker starts before it), so that a long reply is not searched again from its start. */
size_t hr_tool_stream_safe(const hr_tool_spec *spec, const char *text, size_t len, size_t from, bool *held);

/* Python's json.dumps (separators ", " and ": ", non-ASCII kept; indent > 0: pretty, as
 * Jinja's tojson(indent=N)), which the published templates print tools with. */
char *hr_json_py(const cJSON *v, int indent);
#endif
