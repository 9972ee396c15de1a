// hearth serve against the official `openai` npm client: completions, chat completions,
// streaming, stop sequences, seeds, logprobs, models, typed errors, clean SIGTERM exit.
// Greedy results are checked against `hearth run --temp 0` on the same prompt (for chat:
// the ChatML text the server falls back to for a model without a chat template).
// Run by ctest (tests/scripts/server_clients.cmake) with HEARTH_BIN and HEARTH_SRC set;
// the openai package comes from scripts/server-test-setup.sh.
import { SKIP, assert, chatml, countTokens, cutAtChatStops, env, eq, greedy, run, step, withServer } from './lib.mjs';

let OpenAI;
try {
    OpenAI = (await import('openai')).default;
} catch (e) {
    console.log(`SKIP: the openai package is not installed (scripts/server-test-setup.sh): ${e.message}`);
    process.exit(SKIP);
}

env(); // HEARTH_BIN, HEARTH_SRC and the model, else exit 2
const KEY = 'hearth-test-key';
const PROMPTS = ['In the beginning God', 'And the LORD said unto Moses,', 'Blessed are the'];

async function expectError(promise, Type, status, what) {
    let err = null;
    try {
        await promise;
    } catch (e) {
        err = e;
    }
    assert(err, `${what}: the request succeeded`);
    assert(err instanceof Type, `${what}: expected ${Type.name}, got ${err.constructor.name} (status ${err.status}): ${err.message}`);
    eq(err.status, status, `${what}: HTTP status`);
    const msg = err.error && (err.error.message || (typeof err.error === 'string' ? err.error : ''));
    assert(typeof msg === 'string' && msg.length > 0, `${what}: the error body has no message: ${JSON.stringify(err.error)}`);
    return err;
}

run(() => withServer(['--api-key', KEY, '--parallel', '2'], async (server) => {
    console.log(`# hearth serve at ${server.base}`);
    const baseURL = `${server.base}/v1`;
    const client = new OpenAI({ baseURL, apiKey: KEY, maxRetries: 0, timeout: 60000 });
    let modelId = 'bible-drelu';

    await step('models.list: one model, OpenAI shape', async () => {
        const page = await client.models.list();
        const data = page.data;
        assert(Array.isArray(data) && data.length >= 1, `no models: ${JSON.stringify(data)}`);
        for (const m of data) {
            assert(typeof m.id === 'string' && m.id.length > 0, `model without id: ${JSON.stringify(m)}`);
            eq(m.object, 'model', 'model object');
        }
        modelId = data[0].id;
    });

    await step('completions: greedy text equals hearth run, usage counts consistent', async () => {
        for (const prompt of PROMPTS.slice(0, 2)) {
            const n = 24;
            const r = await client.completions.create({ model: modelId, prompt, max_tokens: n, temperature: 0 });
            eq(r.object, 'text_completion', 'object');
            eq(r.choices.length, 1, 'choices');
            const c = r.choices[0];
            eq(c.index, 0, 'choice index');
            eq(c.text, greedy(prompt, n), `text for "${prompt}" (reference: hearth run --temp 0)`);
            const u = r.usage;
            eq(u.prompt_tokens, countTokens(prompt), 'usage.prompt_tokens (reference: hearth tokenize)');
            eq(u.total_tokens, u.prompt_tokens + u.completion_tokens, 'usage.total_tokens');
            assert(u.completion_tokens >= 1 && u.completion_tokens <= n, `completion_tokens ${u.completion_tokens} not in 1..${n}`);
            assert(['length', 'stop'].includes(c.finish_reason), `finish_reason ${c.finish_reason}`);
            if (c.finish_reason === 'length') eq(u.completion_tokens, n, 'completion_tokens when the length ran out');
            else assert(u.completion_tokens < n, 'finish_reason stop with all max_tokens used');
        }
    });

    await step('completions: max_tokens respected, finish_reason "length"', async () => {
        for (const n of [1, 5]) {
            const r = await client.completions.create({ model: modelId, prompt: PROMPTS[0], max_tokens: n, temperature: 0 });
            eq(r.choices[0].finish_reason, 'length', `finish_reason for max_tokens ${n}`);
            eq(r.usage.completion_tokens, n, `completion_tokens for max_tokens ${n}`);
            eq(r.choices[0].text, greedy(PROMPTS[0], n), `text for max_tokens ${n}`);
        }
    });

    const chatMsgs = [
        { role: 'system', content: 'Thou art a scribe.' },
        { role: 'user', content: 'Who made the heaven and the earth?' },
    ];
    let chatText = '';
    await step('chat completions: greedy reply equals hearth run on the ChatML prompt', async () => {
        const n = 24;
        const r = await client.chat.completions.create({ model: modelId, messages: chatMsgs, max_tokens: n, temperature: 0 });
        eq(r.object, 'chat.completion', 'object');
        eq(r.choices.length, 1, 'choices');
        const c = r.choices[0];
        eq(c.message.role, 'assistant', 'message.role');
        assert(typeof c.message.content === 'string', 'message.content is not a string');
        const ref = cutAtChatStops(greedy(chatml(chatMsgs), n));
        eq(c.message.content, ref.text, 'reply (reference: hearth run --temp 0 on the ChatML text)');
        chatText = c.message.content;
        const u = r.usage;
        eq(u.prompt_tokens, countTokens(chatml(chatMsgs)), 'usage.prompt_tokens (reference: hearth tokenize of the ChatML text)');
        eq(u.total_tokens, u.prompt_tokens + u.completion_tokens, 'usage.total_tokens');
        assert(u.completion_tokens >= 1 && u.completion_tokens <= n, `completion_tokens ${u.completion_tokens}`);
        if (ref.cut) eq(c.finish_reason, 'stop', 'finish_reason at the ChatML end marker');
        else if (c.finish_reason === 'length') eq(u.completion_tokens, n, 'completion_tokens with finish_reason length');
    });

    await step('streaming: completion chunks assemble to the non-streamed text', async () => {
        const req = { model: modelId, prompt: PROMPTS[2], max_tokens: 20, temperature: 0, seed: 7 };
        const whole = await client.completions.create(req);
        const stream = await client.completions.create({ ...req, stream: true, stream_options: { include_usage: true } });
        let text = '', chunks = 0, finish = null, usage = null;
        for await (const ch of stream) {
            eq(ch.object, 'text_completion', 'chunk object');
            if (ch.usage) usage = ch.usage;
            const c = ch.choices[0];
            if (!c) continue;
            chunks++;
            text += c.text || '';
            if (c.finish_reason) finish = c.finish_reason;
        }
        eq(text, whole.choices[0].text, 'streamed text');
        eq(finish, whole.choices[0].finish_reason, 'streamed finish_reason');
        assert(chunks >= 2, `only ${chunks} chunk(s): not streamed token by token`);
        eq(usage, whole.usage, 'usage chunk (stream_options.include_usage)');
    });

    await step('streaming: chat deltas assemble to the non-streamed reply', async () => {
        const req = { model: modelId, messages: chatMsgs, max_tokens: 24, temperature: 0, seed: 7 };
        const stream = await client.chat.completions.create({ ...req, stream: true });
        let text = '', chunks = 0, finish = null, role = null, id = null;
        for await (const ch of stream) {
            eq(ch.object, 'chat.completion.chunk', 'chunk object');
            if (id === null) id = ch.id;
            eq(ch.id, id, 'chunk id stays the same');
            const c = ch.choices[0];
            if (!c) continue;
            chunks++;
            if (c.delta.role) role = c.delta.role;
            text += c.delta.content || '';
            if (c.finish_reason) finish = c.finish_reason;
        }
        eq(role, 'assistant', 'delta.role');
        eq(text, chatText, 'streamed reply');
        assert(finish === 'length' || finish === 'stop', `finish_reason ${finish}`);
        assert(chunks >= 2, `only ${chunks} chunk(s)`);
    });

    await step('streaming: raw SSE is text/event-stream and ends with data: [DONE]', async () => {
        const res = await fetch(`${baseURL}/chat/completions`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${KEY}` },
            body: JSON.stringify({ model: modelId, messages: chatMsgs, max_tokens: 8, temperature: 0, stream: true }),
        });
        eq(res.status, 200, 'status');
        assert(/^text\/event-stream/.test(res.headers.get('content-type') || ''), `content-type ${res.headers.get('content-type')}`);
        const body = await res.text();
        const events = body.split(/\r?\n\r?\n/).filter((b) => b.trim());
        assert(events.length >= 2, `only ${events.length} event(s)`);
        for (const ev of events) assert(/^data: /.test(ev), `event without "data: ": ${JSON.stringify(ev.slice(0, 80))}`);
        eq(events[events.length - 1].trim(), 'data: [DONE]', 'last event');
        for (const ev of events.slice(0, -1)) JSON.parse(ev.slice(6));
    });

    await step('stop sequences: text ends before the stop string, finish_reason "stop"', async () => {
        const prompt = PROMPTS[1], n = 32;
        const full = (await client.completions.create({ model: modelId, prompt, max_tokens: n, temperature: 0 })).choices[0].text;
        assert(full.length >= 24, `reference text too short to pick a stop string: ${JSON.stringify(full)}`);
        // stop strings taken from the middle of the greedy text, so they straddle token boundaries
        for (const [k, len] of [[12, 4], [full.length - 9, 3]]) {
            const stop = full.slice(k, k + len);
            const expected = full.slice(0, full.indexOf(stop));
            for (const stream of [false, true]) {
                const req = { model: modelId, prompt, max_tokens: n, temperature: 0, stop: [stop, 'zzzqqq'] };
                let text = '', finish = null;
                if (stream) {
                    for await (const ch of await client.completions.create({ ...req, stream: true })) {
                        const c = ch.choices[0];
                        if (!c) continue;
                        text += c.text || '';
                        if (c.finish_reason) finish = c.finish_reason;
                    }
                } else {
                    const r = await client.completions.create(req);
                    text = r.choices[0].text;
                    finish = r.choices[0].finish_reason;
                }
                const what = `stop ${JSON.stringify(stop)}${stream ? ' (stream)' : ''}`;
                assert(!text.includes(stop), `${what}: the text contains the stop string: ${JSON.stringify(text)}`);
                eq(text, expected, `${what}: text`);
                eq(finish, 'stop', `${what}: finish_reason`);
            }
        }
        // a single string is accepted too, and in chat
        const stop = chatText.slice(5, 8);
        if (stop.length === 3) {
            const r = await client.chat.completions.create({ model: modelId, messages: chatMsgs, max_tokens: 24, temperature: 0, stop });
            eq(r.choices[0].message.content, chatText.slice(0, chatText.indexOf(stop)), `chat stop ${JSON.stringify(stop)}`);
            eq(r.choices[0].finish_reason, 'stop', 'chat finish_reason at a stop string');
        }
    });

    await step('seed: same seed gives the same text at temperature 0.9; other seeds differ', async () => {
        const req = { model: modelId, prompt: PROMPTS[0], max_tokens: 24, temperature: 0.9, top_p: 0.95 };
        const a = (await client.completions.create({ ...req, seed: 1234 })).choices[0].text;
        const b = (await client.completions.create({ ...req, seed: 1234 })).choices[0].text;
        eq(b, a, 'second run with seed 1234');
        const others = [];
        for (const seed of [1, 2, 3]) others.push((await client.completions.create({ ...req, seed })).choices[0].text);
        assert(others.some((o) => o !== a), `seeds 1, 2, 3 all gave the text of seed 1234: ${JSON.stringify(a)}`);
        const ref = greedy(PROMPTS[0], 24);
        assert([a, ...others].some((o) => o !== ref), 'temperature 0.9 always gave the greedy text');
    });

    await step('parallel slots: concurrent requests give their sequential results', async () => {
        const reqs = PROMPTS.map((prompt, i) => ({ model: modelId, prompt, max_tokens: 16, temperature: i === 2 ? 0.8 : 0, seed: 99 }));
        const seq = [];
        for (const r of reqs) seq.push((await client.completions.create(r)).choices[0].text);
        const par = await Promise.all(reqs.map((r) => client.completions.create(r)));
        par.forEach((r, i) => eq(r.choices[0].text, seq[i], `concurrent request ${i}`));
    });

    await step('logprobs (completions): tokens, token_logprobs, top_logprobs', async () => {
        const top = 3;
        const r = await client.completions.create({ model: modelId, prompt: PROMPTS[0], max_tokens: 8, temperature: 0, logprobs: top });
        const c = r.choices[0], lp = c.logprobs;
        assert(lp && Array.isArray(lp.tokens), `no logprobs.tokens: ${JSON.stringify(lp)}`);
        const n = r.usage.completion_tokens;
        eq(lp.tokens.length, n, 'logprobs.tokens length');
        eq(lp.token_logprobs.length, n, 'token_logprobs length');
        eq(lp.top_logprobs.length, n, 'top_logprobs length');
        eq(lp.tokens.join(''), c.text, 'tokens joined');
        for (let i = 0; i < n; i++) {
            const v = lp.token_logprobs[i], alts = Object.entries(lp.top_logprobs[i]);
            assert(Number.isFinite(v) && v <= 1e-6, `token_logprobs[${i}] = ${v}`);
            eq(alts.length, top, `top_logprobs[${i}] entries`);
            const best = Math.max(...alts.map(([, x]) => x));
            assert(Math.abs(best - v) < 1e-4, `greedy token ${i} logprob ${v} is not the best alternative ${best}`);
            const mass = alts.reduce((s, [, x]) => s + Math.exp(x), 0);
            assert(mass <= 1 + 1e-4, `top_logprobs[${i}] probabilities sum to ${mass}`);
        }
    });

    await step('logprobs (chat): content entries with top_logprobs', async () => {
        const top = 2;
        const r = await client.chat.completions.create({
            model: modelId, messages: chatMsgs, max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: top,
        });
        const c = r.choices[0], content = c.logprobs && c.logprobs.content;
        assert(Array.isArray(content), `no logprobs.content: ${JSON.stringify(c.logprobs)}`);
        eq(content.length, r.usage.completion_tokens, 'logprobs.content length');
        eq(content.map((x) => x.token).join(''), c.message.content, 'tokens joined');
        for (const [i, x] of content.entries()) {
            assert(Number.isFinite(x.logprob) && x.logprob <= 1e-6, `logprob[${i}] = ${x.logprob}`);
            eq(x.top_logprobs.length, top, `top_logprobs[${i}] length`);
            const vals = x.top_logprobs.map((y) => y.logprob);
            assert(vals.every((v, j) => j === 0 || v <= vals[j - 1]), `top_logprobs[${i}] not sorted: ${vals}`);
            assert(Math.abs(vals[0] - x.logprob) < 1e-4, `greedy token ${i}: ${x.logprob} vs best ${vals[0]}`);
            eq(x.top_logprobs[0].token, x.token, `top_logprobs[${i}][0].token`);
            if (x.bytes) eq(Buffer.from(x.bytes).toString('utf8'), x.token, `bytes[${i}]`);
        }
    });

    await step('errors: wrong or missing API key -> AuthenticationError 401', async () => {
        const bad = new OpenAI({ baseURL, apiKey: 'wrong-key', maxRetries: 0, timeout: 30000 });
        await expectError(bad.completions.create({ model: modelId, prompt: 'x', max_tokens: 2 }), OpenAI.AuthenticationError, 401, 'completions, wrong key');
        await expectError(bad.chat.completions.create({ model: modelId, messages: chatMsgs, max_tokens: 2 }), OpenAI.AuthenticationError, 401, 'chat, wrong key');
        await expectError(bad.models.list(), OpenAI.AuthenticationError, 401, 'models, wrong key');
        const res = await fetch(`${baseURL}/completions`, {
            method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ prompt: 'x', max_tokens: 2 }),
        });
        eq(res.status, 401, 'no Authorization header: status');
        await res.text();
    });

    await step('errors: bad parameters -> BadRequestError 400', async () => {
        const cases = [
            ['chat without messages', () => client.chat.completions.create({ model: modelId, max_tokens: 2 })],
            ['chat messages not an array', () => client.chat.completions.create({ model: modelId, messages: 'hello', max_tokens: 2 })],
            ['chat with an unknown role', () => client.chat.completions.create({ model: modelId, messages: [{ role: 'wizard', content: 'hi' }], max_tokens: 2 })],
            ['completion with negative max_tokens', () => client.completions.create({ model: modelId, prompt: 'x', max_tokens: -5 })],
            ['completion with a string temperature', () => client.completions.create({ model: modelId, prompt: 'x', max_tokens: 2, temperature: 'hot' })],
            ['completion with top_p 7', () => client.completions.create({ model: modelId, prompt: 'x', max_tokens: 2, top_p: 7 })],
        ];
        for (const [what, f] of cases) await expectError(f(), OpenAI.BadRequestError, 400, what);
        const res = await fetch(`${baseURL}/chat/completions`, {
            method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${KEY}` }, body: '{"messages": [',
        });
        eq(res.status, 400, 'malformed JSON body: status');
        const j = await res.json();
        assert(j.error && typeof j.error.message === 'string', `malformed JSON: no error.message in ${JSON.stringify(j)}`);
    });

    await step('errors: prompt longer than the context -> BadRequestError 400', async () => {
        const long = 'And God said, Let there be light: and there was light. '.repeat(60);
        assert(countTokens(long) > 512, 'the long prompt is not long enough');
        await expectError(client.completions.create({ model: modelId, prompt: long, max_tokens: 4 }), OpenAI.BadRequestError, 400, 'long completion prompt');
        await expectError(client.chat.completions.create({ model: modelId, messages: [{ role: 'user', content: long }], max_tokens: 4 }),
            OpenAI.BadRequestError, 400, 'long chat message');
        await expectError(client.chat.completions.create({ model: modelId, messages: [{ role: 'user', content: long }], max_tokens: 4, stream: true }),
            OpenAI.BadRequestError, 400, 'long chat message, streamed');
    });

    await step('after the errors the server still answers, /health and /metrics respond', async () => {
        const r = await client.completions.create({ model: modelId, prompt: PROMPTS[0], max_tokens: 6, temperature: 0 });
        eq(r.choices[0].text, greedy(PROMPTS[0], 6), 'text');
        const h = await fetch(`${server.base}/health`);
        eq(h.status, 200, '/health status');
        await h.text();
        const m = await fetch(`${server.base}/metrics`, { headers: { Authorization: `Bearer ${KEY}` } });
        eq(m.status, 200, '/metrics status');
        const text = await m.text();
        // Prometheus text format: every line a comment or "name[{labels}] value"
        for (const line of text.split('\n').filter((l) => l && !l.startsWith('#'))) {
            assert(/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? (-?[0-9.eE+-]+|NaN|[+-]Inf)$/.test(line), `/metrics line ${JSON.stringify(line)}`);
        }
        const slots = /^hearth_slots_total (\d+)$/m.exec(text);
        assert(slots, '/metrics has no hearth_slots_total');
        eq(Number(slots[1]), 2, 'hearth_slots_total (--parallel 2)');
        const gen = /^hearth_generated_tokens_total (\d+)$/m.exec(text);
        assert(gen && Number(gen[1]) > 0, `hearth_generated_tokens_total: ${gen && gen[1]}`);
    });
}), 'openai client');
