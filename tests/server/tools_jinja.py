#!/usr/bin/env python3
"""The server's tool rendering (server/tool_render.c, through hearth-tool-render) against the
published Jinja templates of llama.cpp's models/templates/ rendered by Python's jinja2 with
Hugging Face's tojson (json.dumps, non-ASCII kept): Qwen 3 and Qwen 2.5 (chatml), Llama 3.1 /
3.2 / 3.3 with tools_in_user_message false (llama3), Mistral Nemo (mistral-v3-tekken), on
conversations with several calls, tool results, replies after them, non-ASCII text, with and
without a system message. Byte for byte; the leading BOS the templates print is left out, as
Hearth's renderings leave it to the tokenizer.
usage: tools_jinja.py HEARTH_TOOL_RENDER TEMPLATES_DIR   (exit 77: no jinja2 or no templates)"""
import copy
import json
import os
import subprocess
import sys

try:
    import jinja2
except ImportError:
    print("tools_jinja: Python's jinja2 is not installed; skipping")
    sys.exit(77)

drv, tdir = sys.argv[1], sys.argv[2]

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city, in °C",
                                      "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                                                     "required": ["city"]}}},
    {"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}},
]
SYS = {"role": "system", "content": "Be brief."}
ASK = {"role": "user", "content": "Weather in Paris? Ça va?"}


def call(i, name, args):
    return {"id": f"call{i:05d}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


ONE = [ASK, {"role": "assistant", "content": "", "tool_calls": [call(1, "get_weather", {"city": "Paris", "days": 2})]},
       {"role": "tool", "tool_call_id": "call00001", "content": '{"temp": 21}'},
       {"role": "assistant", "content": "21 °C."}, {"role": "user", "content": "Thanks"}]
TWO = [ASK, {"role": "assistant", "content": "Looking.", "tool_calls": [call(1, "get_weather", {"city": "Paris"}), call(2, "now", {})]},
       {"role": "tool", "tool_call_id": "call00001", "content": '{"temp": 21}'},
       {"role": "tool", "tool_call_id": "call00002", "content": "12:00"}]
FIRST = [ASK]

CASES = [  # family, template, extra context, conversations, with system too?
    ("chatml", "Qwen-Qwen3-0.6B.jinja", {}, [FIRST, ONE, TWO], "both"),
    ("chatml", "Qwen-Qwen2.5-7B-Instruct.jinja", {}, [FIRST, ONE, TWO], "only"),  # it adds a default system text
    ("llama3", "meta-llama-Llama-3.1-8B-Instruct.jinja", {"tools_in_user_message": False}, [FIRST, ONE], "both"),
    ("llama3", "meta-llama-Llama-3.2-3B-Instruct.jinja", {"tools_in_user_message": False}, [FIRST, ONE], "both"),
    ("llama3", "meta-llama-Llama-3.3-70B-Instruct.jinja", {"tools_in_user_message": False}, [FIRST, ONE], "both"),
    ("mistral-v3-tekken", "mistralai-Mistral-Nemo-Instruct-2407.jinja", {}, [FIRST, ONE], "both"),
]


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(msg):
    raise jinja2.exceptions.TemplateError(msg)


env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception

# Nemo wants nine-character call ids.
for conv in (ONE, TWO):
    for m in conv:
        for c in m.get("tool_calls", []):
            c["id"] = c["id"][-9:].rjust(9, "x")
        if m["role"] == "tool":
            m["tool_call_id"] = m["tool_call_id"][-9:].rjust(9, "x")

failures = checks = 0
for fam, name, extra, convs, sys_mode in CASES:
    path = os.path.join(tdir, name)
    if not os.path.exists(path):
        print(f"tools_jinja: {name} is not among the templates in {tdir}; skipping")
        sys.exit(77)
    tmpl = env.from_string(open(path, encoding="utf-8").read())
    for conv in convs:
        for with_sys in ([True] if sys_mode == "only" else [False, True]):
            msgs = ([SYS] if with_sys else []) + conv
            # The templates take arguments as objects (llama.cpp parses OpenAI's text first).
            jmsgs = copy.deepcopy(msgs)
            for m in jmsgs:
                for c in m.get("tool_calls", []):
                    c["function"]["arguments"] = json.loads(c["function"]["arguments"])
            want = tmpl.render(messages=jmsgs, tools=TOOLS, add_generation_prompt=True, bos_token="<s>", eos_token="</s>", **extra)
            for bos in ("<|begin_of_text|>", "<s>"):
                if want.startswith(bos):
                    want = want[len(bos):]
            r = subprocess.run([drv, fam], input=json.dumps({"messages": msgs, "tools": TOOLS}).encode(), capture_output=True)
            got = r.stdout.decode()
            checks += 1
            what = f"{name}, {len(msgs)} messages{' with system' if with_sys else ''}"
            if r.returncode or got != want:
                failures += 1
                i = next((k for k in range(min(len(got), len(want))) if got[k] != want[k]), min(len(got), len(want)))
                print(f"FAIL {what}: {r.stderr.decode().strip()}\n  at byte {i}\n  want {want[max(0, i - 60):i + 100]!r}\n  got  {got[max(0, i - 60):i + 100]!r}")
            else:
                print(f"ok   {what}")
print(f"tools_jinja: {checks - failures} of {checks} renderings equal the templates'")
sys.exit(1 if failures else 0)
