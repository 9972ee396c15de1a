// hearth serve under bad input and bad clients: malformed JSON, wrong types, unknown
// fields, oversized bodies (declared, lying, chunked), API keys, prompts longer than the
// context, unknown routes and methods, a client that leaves mid-stream, a slow reader,
// more requests than slots. The server must answer each precisely and keep serving,
// then exit 0 on SIGTERM.
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { check, env, health, metric, request, run, sleep, stream, waitIdle, withServer, withTimeout } from './lib.mjs';

const { bin: BIN, model: MODEL } = env();

const KEY = 'sesame';
const MAX_BODY = 65536;

// Raw HTTP over a socket: resolves with the status line and body once the server answers.
function rawExchange(port, head, bodyParts, { gapMs = 0 } = {}) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let got = '';
    s.on('data', (d) => { got += d; });
    s.on('error', () => {}); // the server may close while we still write
    s.on('close', () => {
      const m = /^HTTP\/1\.1 (\d+)/.exec(got);
      if (!m) return reject(new Error(`no HTTP answer: ${JSON.stringify(got.slice(0, 200))}`));
      resolve({ status: +m[1], text: got });
    });
    s.on('connect', async () => {
      s.write(head);
      for (const p of bodyParts) {
        if (s.destroyed) break;
        s.write(p);
        if (gapMs) await sleep(gapMs);
      }
    });
    setTimeout(() => s.end(), 8000); // let the server finish; then close our side
  });
}

function isOpenAIError(j) {
  return j && j.error && typeof j.error.message === 'string' && typeof j.error.type === 'string' &&
    'param' in j.error && 'code' in j.error;
}

async function badInput(port) {
  const post = (body, extra = {}) => request(port, 'POST', '/v1/completions', { body, key: KEY, ...extra });
  let r = await post('{"prompt": "In the beginning", ');
  check(r.status === 400 && isOpenAIError(r.json) && /malformed JSON/.test(r.json.error.message), 'malformed JSON: 400', r.text);
  r = await post('{"prompt": "x"} {"prompt": "y"}');
  check(r.status === 400 && /malformed JSON/.test(r.json?.error?.message), 'JSON followed by more text: 400', r.text);
  r = await post('');
  check(r.status === 400 && isOpenAIError(r.json), 'empty body: 400', r.text);
  r = await post('[1,2,3]');
  check(r.status === 400 && isOpenAIError(r.json), 'non-object body: 400', r.text);
  const wrong = [
    [{ prompt: 'x', temperature: 'hot' }, 'temperature'],
    [{ prompt: 'x', max_tokens: 1.5 }, 'max_tokens'],
    [{ prompt: 'x', max_tokens: '7' }, 'max_tokens'],
    [{ prompt: 'x', top_p: [] }, 'top_p'],
    [{ prompt: 'x', seed: 'abc' }, 'seed'],
    [{ prompt: 'x', stop: 5 }, 'stop'],
    [{ prompt: 'x', stop: ['a', 3] }, 'stop'],
    [{ prompt: 'x', stream: 'yes' }, 'stream'],
    [{ prompt: 'x', logprobs: 21 }, 'logprobs'],
    [{ prompt: 'x', n: 2 }, 'n'],
    [{ prompt: 'x', model: 7 }, 'model'],
    [{ prompt: { text: 'x' } }, 'prompt'],
    [{ max_tokens: 4 }, 'prompt'],
  ];
  for (const [body, field] of wrong) {
    r = await post(body);
    check(r.status === 400 && isOpenAIError(r.json) && r.json.error.param === field && r.json.error.message.includes(field),
      `wrong type/value for ${field}: 400 naming it`, r.text);
  }
  const chatWrong = [
    [{ messages: 'hello' }, 'messages'],
    [{ messages: [{ role: 'user', content: 5 }] }, 'messages'],
    [{ messages: [{ role: 'user', content: 'x' }], logprobs: 'yes' }, 'logprobs'],
    [{ messages: [{ role: 'user', content: 'x' }], top_logprobs: 3 }, 'top_logprobs'],
    [{ messages: [{ role: 'user', content: 'x' }], max_completion_tokens: -1 }, 'max_completion_tokens'],
  ];
  for (const [body, field] of chatWrong) {
    r = await request(port, 'POST', '/v1/chat/completions', { body, key: KEY });
    check(r.status === 400 && isOpenAIError(r.json) && r.json.error.param === field, `chat: bad ${field}: 400 naming it`, r.text);
  }
  r = await post({ prompt: 'And God said', max_tokens: 4, seed: 1, frobnicate: { a: [1, 2] }, user: 'u', presence_penalty: 0 });
  check(r.status === 200 && r.json.usage.completion_tokens <= 4 && r.json.usage.prompt_tokens > 0 &&
    r.json.usage.total_tokens === r.json.usage.prompt_tokens + r.json.usage.completion_tokens,
  'unknown fields are ignored', r.text);
}

async function routesAndAuth(port) {
  let r = await request(port, 'GET', '/health');
  check(r.status === 200 && r.json.status === 'ok' && r.json.slots_total === 2, '/health open without a key', r.text);
  r = await request(port, 'GET', '/v1/models');
  check(r.status === 401 && isOpenAIError(r.json), 'missing API key: 401', r.text);
  r = await request(port, 'GET', '/v1/models', { key: 'wrong' });
  check(r.status === 401, 'wrong API key: 401', r.text);
  r = await request(port, 'POST', '/v1/completions', { body: { prompt: 'x' }, key: 'sesame2' });
  check(r.status === 401, 'longer wrong API key: 401', r.text);
  r = await request(port, 'GET', '/v1/models', { key: KEY });
  check(r.status === 200 && r.json.data[0].id === path.basename(MODEL), 'right API key: 200 (the model named by its file)', r.text);
  r = await request(port, 'GET', '/metrics');
  check(r.status === 401, '/metrics needs the key', r.status);
  r = await request(port, 'HEAD', '/health');
  check(r.status === 200 && r.text === '', 'HEAD /health: 200 without a body', r.status);
  r = await request(port, 'GET', '/v1/nothing', { key: KEY });
  check(r.status === 404 && isOpenAIError(r.json), 'unknown route: 404', r.text);
  r = await request(port, 'GET', '/v1/completions', { key: KEY });
  check(r.status === 405 && r.headers.allow === 'POST' && isOpenAIError(r.json), 'wrong method: 405 with Allow', r.text);
  r = await request(port, 'DELETE', '/health');
  check(r.status === 405 && r.headers.allow === 'GET', 'DELETE /health: 405', r.text);
  r = await request(port, 'GET', '/');
  check(r.status === 200 && /^text\/html/.test(r.headers['content-type']) && /<html/i.test(r.text), 'chat page at /', r.status);
}

async function bodyLimits(port) {
  const big = JSON.stringify({ prompt: 'x'.repeat(MAX_BODY + 10) });
  let r = await request(port, 'POST', '/v1/completions', { body: big, key: KEY });
  check(r.status === 413 && isOpenAIError(r.json), 'body over --max-body: 413', r.text.slice(0, 200));
  // Content-Length claims more than the limit; the client sends little and waits.
  const head = (cl) => `POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\n${cl}\r\n`;
  r = await withTimeout(rawExchange(port, head(`Content-Length: ${10 * MAX_BODY}\r\n`), ['{"prompt":"x"}']), 20000, 'declared 413');
  check(r.status === 413, 'declared Content-Length over the limit: 413 before the body', r.text.slice(0, 120));
  // No Content-Length: a chunked upload that grows past the limit.
  const chunk = 'y'.repeat(16384);
  const parts = ['{"prompt":"'];
  for (let i = 0; i < 6; i++) parts.push(chunk);
  parts.push('"}');
  const enc = parts.map((p) => `${Buffer.byteLength(p).toString(16)}\r\n${p}\r\n`);
  enc.push('0\r\n\r\n');
  r = await withTimeout(rawExchange(port, head('Transfer-Encoding: chunked\r\n'), enc, { gapMs: 5 }), 20000, 'chunked 413');
  check(r.status === 413, 'chunked upload over the limit: 413', r.text.slice(0, 120));
  // Content-Length smaller than what follows: only the declared bytes are the body.
  const body = '{"prompt":"x","max_tokens":2}';
  r = await withTimeout(rawExchange(port, head(`Content-Length: 5\r\n`), [body + 'x'.repeat(2 * MAX_BODY)]), 20000, 'short CL');
  check(r.status === 400, 'Content-Length shorter than the data: 400 (truncated JSON)', r.text.slice(0, 120));
  // Just under the limit is fine.
  const ok = JSON.stringify({ prompt: 'And', max_tokens: 1, pad: 'z'.repeat(MAX_BODY - 100) });
  r = await request(port, 'POST', '/v1/completions', { body: ok, key: KEY });
  check(r.status === 200, 'body just under the limit: 200', r.text.slice(0, 200));
}

async function contextLimit(port, ctx) {
  const prompt = 'In the beginning God created the heaven and the earth. '.repeat(400);
  let r = await request(port, 'POST', '/v1/completions', { body: { prompt, max_tokens: 4 }, key: KEY });
  const m = r.json && /prompt has (\d+) tokens, the context holds (\d+)/.exec(r.json.error?.message || '');
  check(r.status === 400 && m && +m[1] > ctx && +m[2] === ctx && r.json.error.code === 'context_length_exceeded',
    'prompt longer than the context: 400 with the numbers', r.text);
  r = await request(port, 'POST', '/v1/chat/completions', { body: { messages: [{ role: 'user', content: prompt }] }, key: KEY });
  check(r.status === 400 && /prompt has \d+ tokens, the context holds/.test(r.json?.error?.message), 'chat prompt longer than the context: 400', r.text);
}

// Streams, stops and the non-streamed reply agree.
async function streaming(port) {
  const req = { prompt: 'And God said', max_tokens: 40, seed: 7, temperature: 0.9 };
  const full = await request(port, 'POST', '/v1/completions', { body: req, key: KEY });
  const s = await stream(port, '/v1/completions', { ...req, stream_options: { include_usage: true } }, { key: KEY });
  check(full.status === 200 && s.status === 200 && s.done && s.text === full.json.choices[0].text,
    'streamed completion equals the non-streamed one and ends with [DONE]', { full: full.json?.choices?.[0]?.text, s: s.text });
  check(/^text\/event-stream/.test(s.contentType || ''), 'stream content type', s.contentType);
  check(s.usage && s.usage.completion_tokens === full.json.usage.completion_tokens && s.finish === full.json.choices[0].finish_reason,
    'stream usage and finish_reason', s.usage);
  // A stop text from the middle of that reply: the reply ends right before it.
  const text = full.json.choices[0].text;
  const at = Math.max(8, text.indexOf(' ', 10));
  const stopText = text.slice(at, at + 4);
  const cut = text.slice(0, text.indexOf(stopText));
  const st = await request(port, 'POST', '/v1/completions', { body: { ...req, stop: ['zzzz', stopText] }, key: KEY });
  check(st.status === 200 && st.json.choices[0].text === cut && st.json.choices[0].finish_reason === 'stop',
    'stop text: reply ends before it, finish_reason stop', { want: cut, got: st.json?.choices?.[0]?.text, stopText });
  const ss = await stream(port, '/v1/completions', { ...req, stop: stopText }, { key: KEY });
  check(ss.text === cut && ss.finish === 'stop', 'streamed stop text: no part of it is ever sent', { want: cut, got: ss.text });
  // Chat: role first, content deltas, logprobs shape.
  const c = await stream(port, '/v1/chat/completions', { messages: [{ role: 'user', content: 'Who made the heaven?' }], max_tokens: 6, seed: 3, logprobs: true, top_logprobs: 2 }, { key: KEY });
  const first = c.events?.[0]?.choices?.[0]?.delta;
  const lp = c.events?.find((e) => e.choices?.[0]?.logprobs)?.choices[0].logprobs.content[0];
  check(c.status === 200 && c.done && first?.role === 'assistant' && c.finish, 'chat stream: role first, finish, [DONE]', c.events?.slice(0, 2));
  check(lp && typeof lp.token === 'string' && lp.logprob <= 0 && Array.isArray(lp.bytes) && lp.top_logprobs.length === 2 &&
    lp.top_logprobs[0].logprob >= lp.top_logprobs[1].logprob && lp.logprob <= lp.top_logprobs[0].logprob + 1e-6,
  'chat logprobs: token, logprob, bytes, sorted top_logprobs', lp);
  const cl = await request(port, 'POST', '/v1/completions', { body: { prompt: 'And', max_tokens: 3, seed: 1, logprobs: 3 }, key: KEY });
  const L = cl.json?.choices?.[0]?.logprobs;
  check(L && L.tokens.length === 3 && L.token_logprobs.length === 3 && L.top_logprobs.length === 3 && L.text_offset[0] === 0 &&
    Object.keys(L.top_logprobs[0]).length <= 3 && L.tokens.join('') === cl.json.choices[0].text,
  'completion logprobs: tokens, token_logprobs, top_logprobs, text_offset', L);
}

// A client that leaves mid-stream frees its slot (and the server counts a cancel).
async function disconnect(port) {
  await waitIdle(port);
  const before = metric((await request(port, 'GET', '/metrics', { key: KEY })).text, 'hearth_requests_cancelled_total');
  await new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    const body = JSON.stringify({ prompt: 'And', max_tokens: 2000, ignore_eos: true, stream: true });
    s.on('connect', () => s.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`));
    let got = '';
    s.on('data', (d) => {
      got += d;
      if ((got.match(/data: /g) || []).length >= 3) { s.destroy(); resolve(); }
    });
    s.on('error', reject);
  });
  const h = await waitIdle(port, 20000);
  check(h.slots_processing === 0 && h.slots_idle === 2, 'client gone mid-stream: slot freed', h);
  const after = metric((await request(port, 'GET', '/metrics', { key: KEY })).text, 'hearth_requests_cancelled_total');
  check(after === before + 1, 'client gone mid-stream: request cancelled', { before, after });
}

// A reader that stops reading does not hold up the engine or other requests.
async function slowReader(port) {
  await waitIdle(port);
  const body = JSON.stringify({ prompt: 'And', max_tokens: 400, ignore_eos: true, stream: true, logprobs: 20 });
  const s = net.connect(port, '127.0.0.1');
  let got = '';
  s.on('data', (d) => { got += d; });
  s.on('error', () => {});
  await new Promise((r) => s.on('connect', r));
  s.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
  await sleep(100);
  s.pause(); // stop reading: the server's writes fill the socket buffers and block
  const t0 = Date.now();
  const other = await request(port, 'POST', '/v1/completions', { body: { prompt: 'And God', max_tokens: 8, seed: 2 }, key: KEY });
  check(other.status === 200 && Date.now() - t0 < 15000, 'another request completes while a reader stalls', other.status);
  const h = await waitIdle(port, 30000);
  check(h.slots_processing === 0, 'the stalled stream still finished generating (buffered)', h);
  const buffered = got.length;
  s.resume();
  await withTimeout(new Promise((r) => s.on('close', r)), 30000, 'slow reader end');
  const events = got.split('\n\n').filter((b) => b.includes('data: {')).length;
  check(/data: \[DONE\]/.test(got) && events >= 400, 'the slow reader gets the whole stream', { events, len: got.length });
  console.log(`     (slow reader: ${buffered} of ${got.length} bytes had arrived before it resumed)`);
}

// More concurrent requests than slots: all complete.
async function overload(port) {
  const reqs = [];
  for (let i = 0; i < 7; i++) {
    const body = { prompt: ['And', 'In the', 'Thus saith', 'Blessed'][i % 4], max_tokens: 12 + i, seed: i };
    reqs.push(i % 2 ? stream(port, '/v1/completions', body, { key: KEY }) : request(port, 'POST', '/v1/completions', { body, key: KEY }));
  }
  const rs = await Promise.all(reqs);
  check(rs.every((r) => r.status === 200 && (r.json ? r.json.choices[0].finish_reason : r.done && r.finish)), '7 concurrent requests on 2 slots all complete',
    rs.map((r) => r.status));
  const h = await waitIdle(port);
  check(h.slots_processing === 0 && h.queued === 0, 'queue drained afterwards', h);
}

async function metricsText(port) {
  const r = await request(port, 'GET', '/metrics', { key: KEY });
  const t = r.text;
  check(r.status === 200 && /^text\/plain/.test(r.headers['content-type']), '/metrics is text', r.status);
  check(metric(t, 'hearth_requests_total{endpoint="/v1/completions",status="400"}') >= 10 &&
    metric(t, 'hearth_requests_total{endpoint="/v1/completions",status="200"}') >= 5 &&
    metric(t, 'hearth_requests_total{endpoint="/v1/models",status="401"}') >= 2 &&
    metric(t, 'hearth_prompt_tokens_total') > 0 && metric(t, 'hearth_generated_tokens_total') > 400 &&
    metric(t, 'hearth_tokens_per_second') > 0 && metric(t, 'hearth_queue_depth') === 0 && metric(t, 'hearth_slots_busy') === 0,
  'metrics: requests by endpoint and status, tokens, rate, queue, slots', t);
}

// Bad flags: exit 2 with a message; a model or address that does not work: exit 1.
function flags(busyPort) {
  const cases = [
    [['--port', '70000', '-m', MODEL], 2, /--port: 70000 is out of range/],
    [[], 2, /a model is required/],
    [['-m', MODEL, '--chat-template', 'bogus'], 2, /--chat-template: 'bogus' is not one of chatml/],
    [['-m', MODEL, '--bogus'], 2, /unknown flag '--bogus'/],
    [['-m', MODEL, '--parallel', '0'], 2, /--parallel: 0 is out of range/],
    [['-m', MODEL, '--max-body'], 2, /--max-body needs a value/],
    [['-m', `${MODEL}.missing`], 1, /cannot open/],
    [['-m', MODEL, '--port', String(busyPort)], 1, /cannot listen on 127\.0\.0\.1 port/],
  ];
  for (const [args, rc, msg] of cases) {
    const r = spawnSync(BIN, ['serve', ...args], { encoding: 'utf8', timeout: 30000 });
    check(r.status === rc && msg.test(r.stderr), `hearth serve ${args.join(' ')}: exit ${rc} with a message`, { status: r.status, stderr: r.stderr });
  }
  const h = spawnSync(BIN, ['serve', '--help'], { encoding: 'utf8' });
  check(h.status === 0 && ['--host', '--port', '--parallel', '--api-key', '--chat-template', '--max-body', '--ctx-size', '--ffn', '--seed']
    .every((f) => h.stdout.includes(f)), '--help lists the flags', h.stdout);
}

run(async () => {
  const ctx = 1024;
  // -c is the total over the 2 slots (llama-server's meaning): ctx per slot
  await withServer(['--parallel', '2', '-c', String(2 * ctx), '--api-key', KEY, '--max-body', String(MAX_BODY), '-t', '2'], async (srv) => {
    flags(srv.port);
    await routesAndAuth(srv.port);
    await badInput(srv.port);
    await bodyLimits(srv.port);
    await contextLimit(srv.port, ctx);
    await streaming(srv.port);
    await disconnect(srv.port);
    await slowReader(srv.port);
    await overload(srv.port);
    await metricsText(srv.port);
    const r = await request(srv.port, 'POST', '/v1/completions', { body: { prompt: 'And', max_tokens: 3 }, key: KEY });
    check(r.status === 200 && (await health(srv.port)).status === 'ok', 'still serving after all of it', r.status);
  });
});
