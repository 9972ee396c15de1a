// Structured output and tool calls of hearth serve through the official `openai` npm client:
// response_format json_object / json_schema, llama-server's `grammar` and `json_schema`
// fields, forced tool calls (named and "required") in the ChatML, Llama 3 and Mistral
// formats, streamed and not, tool results sent back, and the 400s of bad input. The bundled
// model knows nothing of tools: what is checked is that the grammar makes every output valid
// and that the server parses, renders and streams it as OpenAI clients expect.
// Run by ctest (tests/scripts/server_clients.cmake) with HEARTH_BIN and HEARTH_SRC set.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SKIP, assert, countTokens, env, eq, run, step, withServer } from './lib.mjs';

let OpenAI;
try {
    OpenAI = (await import('openai')).default;
} catch (e) {
    console.log(`SKIP: the openai package is not installed (scripts/server-test-setup.sh): ${e.message}`);
    process.exit(SKIP);
}
const { bin } = env();

// Tool prompts are long (the templates' instructions): the tool checks run on a tiny synthetic
// model (random weights, 2048 trained positions) where they cost milliseconds; the grammar
// makes its output valid all the same. JSON mode and grammars also run on the bundled model.
const tmp = mkdtempSync(path.join(os.tmpdir(), 'hearth-tools-'));
const TINY = path.join(tmp, 'tiny.gguf');
execFileSync(bin, ['synth', '-o', TINY, '--n-embd', '64', '--n-layer', '1', '--n-ff', '128', '--n-head', '4', '--n-vocab', '1000'], { stdio: 'ignore' });
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));
const CTX = ['-c', '1024'];
const WEATHER = {
    type: 'function',
    function: {
        name: 'get_weather', description: 'Weather of a city',
        parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Rome', 'Oslo'] } }, required: ['city'], additionalProperties: false },
    },
};
const TIME = { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { utc: { type: 'boolean' } }, required: ['utc'], additionalProperties: false } } };
const TOOLS = [WEATHER, TIME];
const ASK = [{ role: 'user', content: 'What is the weather in Paris?' }];

// The JSON schema subset the tests use: object (properties, required, additionalProperties
// false), string, integer, boolean, enum. Returns an error text or null.
function violates(schema, v, at = '$') {
    if (schema.enum && !schema.enum.some((e) => e === v)) return `${at}: ${JSON.stringify(v)} not in enum`;
    switch (schema.type) {
    case 'object': {
        if (typeof v !== 'object' || v === null || Array.isArray(v)) return `${at}: not an object`;
        for (const k of schema.required || []) if (!(k in v)) return `${at}: '${k}' missing`;
        for (const [k, x] of Object.entries(v)) {
            const s = (schema.properties || {})[k];
            if (!s) { if (schema.additionalProperties === false) return `${at}: unexpected '${k}'`; continue; }
            const err = violates(s, x, `${at}.${k}`);
            if (err) return err;
        }
        return null;
    }
    case 'string': return typeof v === 'string' ? null : `${at}: not a string`;
    case 'integer': return Number.isInteger(v) ? null : `${at}: not an integer`;
    case 'boolean': return typeof v === 'boolean' ? null : `${at}: not a boolean`;
    default: return null;
    }
}

function checkCall(call, tools, what) {
    eq(call.type, 'function', `${what}: type`);
    assert(typeof call.id === 'string' && call.id.length > 0, `${what}: no id`);
    const tool = tools.find((t) => t.function.name === call.function.name);
    assert(tool, `${what}: unknown function ${call.function.name}`);
    assert(typeof call.function.arguments === 'string', `${what}: arguments is not a string`);
    const args = JSON.parse(call.function.arguments);
    const err = violates(tool.function.parameters, args);
    assert(!err, `${what}: arguments ${call.function.arguments} break the schema: ${err}`);
    return args;
}

// Collects a streamed reply: content, tool calls (joined by index), finish reason.
async function collect(s) {
    let content = '', finish = null;
    const calls = [];
    for await (const ch of s) {
        const c = ch.choices[0];
        if (!c) continue;
        if (c.delta.content) content += c.delta.content;
        for (const d of c.delta.tool_calls || []) {
            const t = calls[d.index] || (calls[d.index] = { id: '', type: '', function: { name: '', arguments: '' } });
            if (d.id) t.id += d.id;
            if (d.type) t.type = d.type;
            if (d.function?.name) t.function.name += d.function.name;
            if (d.function?.arguments) t.function.arguments += d.function.arguments;
        }
        if (c.finish_reason) finish = c.finish_reason;
    }
    return { content, calls, finish };
}

async function expect400(promise, needle, what) {
    let err = null;
    try { await promise; } catch (e) { err = e; }
    assert(err, `${what}: the request succeeded`);
    eq(err.status, 400, `${what}: HTTP status (${err.message})`);
    const msg = err.error?.message || '';
    assert(msg.includes(needle), `${what}: message ${JSON.stringify(msg)} lacks ${JSON.stringify(needle)}`);
}

// Python's json.dumps spacing, as the published templates print tools (a second, independent
// implementation of what the server does).
const py = (v) => Array.isArray(v) ? `[${v.map(py).join(', ')}]`
    : v && typeof v === 'object' ? `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${py(x)}`).join(', ')}}`
        : JSON.stringify(v);

const client = (server) => new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'none', maxRetries: 0, timeout: 60000 });

async function bibleChecks(server) {
    const c = client(server);
    const model = 'm';
    await step('response_format json_object: the reply parses as a JSON object', async () => {
        const r = await c.chat.completions.create({ model, messages: ASK, response_format: { type: 'json_object' }, max_tokens: 64, temperature: 0 });
        eq(r.choices[0].finish_reason, 'stop', 'finish_reason');
        const v = JSON.parse(r.choices[0].message.content);
        assert(v && typeof v === 'object' && !Array.isArray(v), `not an object: ${r.choices[0].message.content}`);
    });
    const BOOK = { type: 'object', properties: { book: { type: 'string', enum: ['Genesis', 'Exodus'] }, chapter: { type: 'integer' }, holy: { type: 'boolean' } }, required: ['book', 'chapter', 'holy'], additionalProperties: false };
    await step('response_format json_schema: the reply parses and satisfies the schema', async () => {
        const r = await c.chat.completions.create({
            model, messages: ASK, max_tokens: 200, temperature: 0.7, seed: 3,
            response_format: { type: 'json_schema', json_schema: { name: 'verse', schema: BOOK, strict: true } },
        });
        eq(r.choices[0].finish_reason, 'stop', 'finish_reason');
        const err = violates(BOOK, JSON.parse(r.choices[0].message.content));
        assert(!err, `${r.choices[0].message.content}: ${err}`);
    });
    await step('grammar (GBNF) on chat and completions, json_schema on completions', async () => {
        const grammar = 'root ::= ("yea" | "nay") ", " ("verily" | "amen")';
        const r = await c.chat.completions.create({ model, messages: ASK, grammar, max_tokens: 16, temperature: 0.9, seed: 1 });
        assert(/^(yea|nay), (verily|amen)$/.test(r.choices[0].message.content), `chat: ${JSON.stringify(r.choices[0].message.content)}`);
        const t = await c.completions.create({ model, prompt: 'And God said', grammar, max_tokens: 16, temperature: 0 });
        assert(/^(yea|nay), (verily|amen)$/.test(t.choices[0].text), `completion: ${JSON.stringify(t.choices[0].text)}`);
        const b = await c.completions.create({ model, prompt: 'Is it good?', json_schema: { type: 'boolean' }, max_tokens: 8, temperature: 0 });
        assert(['true', 'false'].includes(b.choices[0].text), `json_schema boolean: ${JSON.stringify(b.choices[0].text)}`);
    });
    await step('bad constraints: 400 with the parser\'s or converter\'s message', async () => {
        await expect400(c.chat.completions.create({ model, messages: ASK, grammar: 'root ::= "yea' }), 'grammar:', 'broken GBNF');
        await expect400(c.chat.completions.create({ model, messages: ASK, grammar: 'root ::= item' }), 'item', 'undefined rule');
        await expect400(c.completions.create({ model, prompt: 'x', json_schema: { type: 'object', patternProperties: { a: {} } } }), 'patternProperties', 'unsupported schema keyword');
        await expect400(c.chat.completions.create({ model, messages: ASK, response_format: { type: 'xml' } }), 'response_format.type', 'unknown response_format type');
        await expect400(c.chat.completions.create({ model, messages: ASK, response_format: { type: 'json_object' }, grammar: 'root ::= "a"' }), 'only one of', 'two constraints');
    });
}

async function chatmlChecks(server) {
    const c = client(server);
    const model = 'm';
    let call;
    await step('tools, tool_choice named: tool_calls with arguments that match the schema', async () => {
        const r = await c.chat.completions.create({ model, messages: ASK, tools: TOOLS, tool_choice: { type: 'function', function: { name: 'get_weather' } }, max_tokens: 150, temperature: 0 });
        const ch = r.choices[0];
        eq(ch.finish_reason, 'tool_calls', 'finish_reason');
        eq(ch.message.content, null, 'content');
        eq(ch.message.tool_calls.length, 1, 'calls');
        eq(ch.message.tool_calls[0].function.name, 'get_weather', 'name');
        checkCall(ch.message.tool_calls[0], TOOLS, 'call');
        call = ch.message.tool_calls[0];
    });
    await step('tools, streamed: tool_calls deltas give the same call', async () => {
        const s = await c.chat.completions.create({ model, messages: ASK, tools: TOOLS, tool_choice: { type: 'function', function: { name: 'get_weather' } }, max_tokens: 150, temperature: 0, stream: true });
        const got = await collect(s);
        eq(got.finish, 'tool_calls', 'finish_reason');
        eq(got.content, '', 'content deltas');
        eq(got.calls.length, 1, 'calls');
        checkCall(got.calls[0], TOOLS, 'streamed call');
        eq(got.calls[0].function, call.function, 'the streamed call equals the whole reply\'s');
    });
    await step('tool_choice "required": a call of one of the tools', async () => {
        const r = await c.chat.completions.create({ model, messages: ASK, tools: TOOLS, tool_choice: 'required', max_tokens: 150, temperature: 0.8, seed: 5 });
        eq(r.choices[0].finish_reason, 'tool_calls', 'finish_reason');
        checkCall(r.choices[0].message.tool_calls[0], TOOLS, 'call');
    });
    await step('tool results sent back: rendered as Qwen\'s template does (prompt tokens), the reply is text', async () => {
        const messages = [...ASK, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: call.id, content: '{"temp": 21}' }];
        const r = await c.chat.completions.create({ model, messages, tools: [WEATHER], max_tokens: 4, temperature: 0 });
        const args = py(JSON.parse(call.function.arguments));
        const prompt = '<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
            `You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n${py(WEATHER)}\n</tools>\n\n` +
            'For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n' +
            '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' +
            `<|im_start|>user\n${ASK[0].content}<|im_end|>\n` +
            `<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": ${args}}\n</tool_call><|im_end|>\n` +
            '<|im_start|>user\n<tool_response>\n{"temp": 21}\n</tool_response><|im_end|>\n<|im_start|>assistant\n';
        eq(r.usage.prompt_tokens, countTokens(prompt, { model: TINY }), 'prompt_tokens (reference: the template text tokenized by hearth tokenize)');
        assert(typeof r.choices[0].message.content === 'string', 'content');
    });
    await step('a tool conversation over the context loses its oldest turns, the forced call still comes', async () => {
        const verse = 'And God said, Let there be light: and there was light. '.repeat(8);
        const old = [1, 2, 3, 4].flatMap((i) => [{ role: 'user', content: `${i}. ${verse}` }, { role: 'assistant', content: 'Amen.' }]);
        /* max_tokens 500 asks for room: the prompt must shrink to 1024 - 500 tokens. */
        const r = await c.chat.completions.create({ model, messages: [...old, ...ASK], tools: [TIME], tool_choice: 'required', max_tokens: 500, temperature: 0 });
        eq(r.truncated, true, 'truncated');
        assert(r.usage.prompt_tokens <= 1024 - 500, `prompt_tokens ${r.usage.prompt_tokens}`);
        eq(r.choices[0].finish_reason, 'tool_calls', 'finish_reason');
        checkCall(r.choices[0].message.tool_calls[0], [TIME], 'call');
    });
    await step('tool_choice auto: a plain reply stays content, streamed the same as whole', async () => {
        const body = { model, messages: ASK, tools: [TIME], max_tokens: 12, temperature: 0 };
        const r = await c.chat.completions.create(body);
        const got = await collect(await c.chat.completions.create({ ...body, stream: true }));
        assert(!r.choices[0].message.tool_calls, 'a call in a plain reply');
        eq(got.content, r.choices[0].message.content ?? '', 'streamed content');
        eq(got.finish, r.choices[0].finish_reason, 'finish_reason');
    });
    await step('bad tool input: 400 naming what is wrong', async () => {
        await expect400(c.chat.completions.create({ model, messages: ASK, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', patternProperties: { a: {} } } } } }), 'patternProperties', 'unsupported schema keyword');
        await expect400(c.chat.completions.create({ model, messages: ASK, tools: TOOLS, tool_choice: 'required', response_format: { type: 'json_object' } }), 'only one of', 'a forced call and a response_format');
        await expect400(c.chat.completions.create({ model, messages: ASK, tools: [{ type: 'function', function: { name: 'no spaces' } }] }), 'tools[0].function.name', 'bad tool name');
        await expect400(c.chat.completions.create({ model, messages: ASK, tools: TOOLS, tool_choice: { type: 'function', function: { name: 'fly' } } }), "'fly'", 'unknown forced tool');
        await expect400(c.chat.completions.create({ model, messages: [...ASK, { role: 'tool', content: 'x' }] }), 'tool_call_id', 'tool message without its id');
        await expect400(c.chat.completions.create({ model, messages: ASK, tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'string', pattern: '^a' } } } } }], tool_choice: 'required' }), 'pattern', 'tool parameters the converter refuses');
    });
}

run(async () => {
    await withServer([], bibleChecks, { label: 'bible-drelu' });
    await withServer(CTX, chatmlChecks, { label: 'chatml', model: TINY });
    await withServer([...CTX, '--chat-template', 'llama3'], async (server) => {
        const c = client(server);
        await step('llama3: a forced call in Llama 3.1\'s JSON, its result sent back', async () => {
            /* One small tool: Llama 3.1 prints tools indented, and a long prompt is slow here. */
            const r = await c.chat.completions.create({ model: 'm', messages: ASK, tools: [TIME], tool_choice: 'required', max_tokens: 150, temperature: 0 });
            eq(r.choices[0].finish_reason, 'tool_calls', 'finish_reason');
            const call = r.choices[0].message.tool_calls[0];
            checkCall(call, TOOLS, 'call');
            const back = await c.chat.completions.create({ model: 'm', messages: [...ASK, r.choices[0].message, { role: 'tool', tool_call_id: call.id, content: '12:00' }], tools: [TIME], max_tokens: 2, temperature: 0 });
            assert(back.choices[0].message.role === 'assistant', 'reply to the tool result');
        });
    }, { label: 'llama3', model: TINY });
    await withServer([...CTX, '--chat-template', 'mistral-v3-tekken'], async (server) => {
        const c = client(server);
        await step('mistral: a forced call streamed after [TOOL_CALLS], a nine-character id', async () => {
            const s = await c.chat.completions.create({ model: 'm', messages: ASK, tools: TOOLS, tool_choice: { type: 'function', function: { name: 'get_time' } }, max_tokens: 150, temperature: 0, stream: true });
            const got = await collect(s);
            eq(got.finish, 'tool_calls', 'finish_reason');
            eq(got.calls.length, 1, 'calls');
            eq(got.calls[0].function.name, 'get_time', 'name');
            checkCall(got.calls[0], TOOLS, 'call');
            assert(/^[A-Za-z0-9]{9}$/.test(got.calls[0].id), `id ${got.calls[0].id}`);
        });
    }, { label: 'mistral', model: TINY });
    await withServer(['--chat-template', 'gemma'], async (server) => {
        const c = client(server);
        await step('gemma: tools and tool turns are a 400 that names the template', async () => {
            await expect400(c.chat.completions.create({ model: 'm', messages: ASK, tools: TOOLS }), "'gemma'", 'tools');
            await expect400(c.chat.completions.create({ model: 'm', messages: [...ASK, { role: 'tool', tool_call_id: 'x', content: 'y' }] }), "'gemma'", 'tool turn');
        });
    }, { label: 'gemma', model: TINY });
});
