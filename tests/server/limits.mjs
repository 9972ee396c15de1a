// hearth serve under connection abuse, and the parts of the API browsers and long chats need:
// 2,000 idle sockets (spread over loopback addresses) while /health, a completion and a stream
// still succeed; the per-address connection limit; the short timeout of connections that send no
// request; CORS (preflight, --cors lists, none); a case-insensitive "Bearer"; JSON nested past
// the parser's limit; repeat_penalty's range; /v1/embeddings and /embedding; chat histories
// trimmed to the context (oldest turns first, the system message kept) with the default reply
// length bounded by what the context leaves; one log line per request (and --log-disable).
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import { chatml, check, countTokens, request, run, sleep, stream, withServer } from './lib.mjs';

const KEY = 'sesame';
// Sockets held open without a request: 2,000, unless the open-file limit (which node and the
// server both raise to the hard limit) leaves too little room.
const HARD = Number(spawnSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).stdout) || 1e6;
const IDLE = Math.min(2000, HARD - 400);
if (IDLE < 2000) console.log(`     (open-file hard limit ${HARD}: holding ${IDLE} idle sockets, not 2000)`);
const PER_IP = 100; // --conn-per-ip of the test server
const TIMEOUT = 2; // --timeout: idle sockets without a request are closed after min(this, 10) s

// A socket from localAddress that sends nothing; .closedAt is set when the server closes it.
function idleSocket(port, localAddress) {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1', localAddress });
    s.closedAt = 0;
    s.on('error', () => {});
    s.on('close', () => { s.closedAt = Date.now(); });
    s.on('connect', () => resolve(s));
    s.on('close', () => resolve(s)); // refused before connecting: resolves closed
  });
}

async function openMany(port, n, addrOf) {
  const out = [];
  for (let i = 0; i < n; i += 200) {
    const batch = [];
    for (let k = i; k < Math.min(n, i + 200); k++) batch.push(idleSocket(port, addrOf(k)));
    out.push(...await Promise.all(batch));
  }
  return out;
}

const open = (socks) => socks.filter((s) => !s.closedAt).length;

async function flood(port) {
  const t0 = Date.now();
  // 127.0.1.1 .. 127.0.1.25, 80 sockets each: under the per-address limit.
  const idle = await openMany(port, IDLE, (i) => `127.0.1.${1 + (i % 25)}`);
  const opened = Date.now();
  await sleep(200);
  check(open(idle) === IDLE, `${IDLE} idle sockets are accepted and held`, { open: open(idle), ms: opened - t0 });
  let r = await request(port, 'GET', '/health');
  check(r.status === 200 && r.json.status === 'ok', `/health answers while ${IDLE} idle sockets are held`, r.text);
  r = await request(port, 'POST', '/v1/completions', { body: { prompt: 'And God said', max_tokens: 6, seed: 1 }, key: KEY });
  check(r.status === 200 && r.json.usage.completion_tokens >= 1, `a completion succeeds while ${IDLE} idle sockets are held`, r.text);
  const s = await stream(port, '/v1/chat/completions', { messages: [{ role: 'user', content: 'Who?' }], max_tokens: 6 }, { key: KEY });
  check(s.status === 200 && s.done, `a stream succeeds while ${IDLE} idle sockets are held`, s.status);
  // One address over its limit: the sockets past it are closed at once, other addresses are served.
  const greedy = await openMany(port, PER_IP + 20, () => '127.0.2.1');
  await sleep(300);
  const kept = open(greedy);
  check(kept <= PER_IP && kept >= PER_IP - 5, `one address gets at most --conn-per-ip ${PER_IP} connections`, { kept });
  r = await request(port, 'GET', '/health');
  check(r.status === 200, '/health from another address still answers', r.status);
  // Connections that never send a request are closed after the short timeout, not kept for 600 s.
  const deadline = Date.now() + (TIMEOUT + 4) * 1000;
  while (open(idle) + open(greedy) > 0 && Date.now() < deadline) await sleep(100);
  const last = Math.max(...idle.map((x) => x.closedAt));
  check(open(idle) + open(greedy) === 0 && last - opened >= (TIMEOUT - 0.5) * 1000,
    `idle sockets are closed by the server after about --timeout ${TIMEOUT} s`, { open: open(idle) + open(greedy), after_ms: last - opened });
  for (const x of [...idle, ...greedy]) x.destroy();
}

async function cors(port) {
  let r = await request(port, 'OPTIONS', '/v1/chat/completions', {
    headers: { origin: 'http://page.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
  });
  check(r.status === 204 && r.headers['access-control-allow-origin'] === '*' && /POST/.test(r.headers['access-control-allow-methods'] || '') &&
    /authorization/i.test(r.headers['access-control-allow-headers'] || ''),
  'CORS preflight: 204 with allowed origin, methods and headers, no key needed', { status: r.status, h: r.headers });
  r = await request(port, 'GET', '/health', { headers: { origin: 'http://page.example' } });
  check(r.headers['access-control-allow-origin'] === '*', 'responses carry Access-Control-Allow-Origin', r.headers);
  r = await request(port, 'POST', '/v1/completions', { body: { prompt: 'x', max_tokens: 1 }, headers: { origin: 'http://p' } });
  check(r.status === 401 && r.headers['access-control-allow-origin'] === '*', 'errors carry it too (a page can read them)', r.headers);
}

async function auth(port) {
  const models = (h) => request(port, 'GET', '/v1/models', { headers: { authorization: h } });
  const ok = [`bearer ${KEY}`, `BEARER ${KEY}`, `Bearer  ${KEY}`];
  const rs = await Promise.all(ok.map(models));
  check(rs.every((r) => r.status === 200), '"Authorization: bearer KEY" in any case: 200', rs.map((r) => r.status));
  const bad = await Promise.all([`Basic ${KEY}`, `Bearer${KEY}`, 'bearer wrong'].map(models));
  check(bad.every((r) => r.status === 401), 'another scheme, no space, a wrong key: 401', bad.map((r) => r.status));
}

async function badInput(port) {
  const post = (body) => request(port, 'POST', '/v1/completions', { body, key: KEY });
  let r = await post('{"prompt":' + '['.repeat(1001) + ']'.repeat(1001) + '}');
  check(r.status === 400 && /nested deeper than 1000/.test(r.json?.error?.message) && !/malformed/.test(r.json.error.message),
    'valid JSON nested past the parser limit: 400 that says so', r.text);
  r = await post('{"prompt":' + '['.repeat(900) + ']'.repeat(900) + '}');
  check(r.status === 400 && r.json?.error?.param === 'prompt', 'nesting under the limit parses (then the prompt is refused)', r.text);
  r = await post('{"prompt": [1,2');
  check(r.status === 400 && /malformed JSON/.test(r.json?.error?.message), 'malformed JSON is still called that', r.text);
  for (const v of [0, -1, 101]) {
    r = await post({ prompt: 'And', max_tokens: 2, repeat_penalty: v });
    check(r.status === 400 && r.json.error.param === 'repeat_penalty' && /repeat_penalty.*out of range \(0, 100\]/.test(r.json.error.message),
      `repeat_penalty ${v}: 400 naming the field and its range`, r.text);
  }
  r = await post({ prompt: 'And', max_tokens: 2, repeat_penalty: 1.3 });
  check(r.status === 200, 'repeat_penalty 1.3: 200', r.text);
}

const norm = (v) => Math.sqrt(v.reduce((a, x) => a + x * x, 0));

async function embeddings(port, ctx) {
  const text = 'In the beginning God created the heaven and the earth.';
  let r = await request(port, 'POST', '/v1/embeddings', { body: { input: [text, 'And God said', text], model: 'm' }, key: KEY });
  const d = r.json?.data;
  check(r.status === 200 && r.json.object === 'list' && d?.length === 3 && d.every((e, i) => e.object === 'embedding' && e.index === i) &&
    r.json.usage.prompt_tokens === 2 * countTokens(text) + countTokens('And God said') && r.json.usage.total_tokens === r.json.usage.prompt_tokens,
  '/v1/embeddings: OpenAI list shape, usage counts the inputs\' tokens', r.text.slice(0, 300));
  if (r.status !== 200) return;
  const [a, b, c] = d.map((e) => e.embedding);
  check(a.length > 8 && Math.abs(norm(a) - 1) < 1e-4 && a.every(Number.isFinite), 'embeddings have unit length', { n: a.length, norm: norm(a) });
  check(JSON.stringify(a) === JSON.stringify(c) && JSON.stringify(a) !== JSON.stringify(b), 'same input, same vector; other input, other vector');
  const ids = (await request(port, 'POST', '/v1/embeddings', { body: { input: text, encoding_format: 'base64' }, key: KEY })).json;
  const buf = Buffer.from(ids?.data?.[0]?.embedding || '', 'base64');
  const f = Array.from(new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4));
  check(f.length === a.length && f.every((x, i) => Math.abs(x - a[i]) < 1e-6), 'encoding_format base64: the same floats, little-endian', f.length);
  r = await request(port, 'POST', '/embedding', { body: { content: text }, key: KEY });
  check(r.status === 200 && Array.isArray(r.json) && r.json[0].index === 0 && r.json[0].embedding.length === 1 &&
    r.json[0].embedding[0].every((x, i) => Math.abs(x - a[i]) < 1e-6), '/embedding: llama-server\'s shape, same vector', r.text.slice(0, 200));
  r = await request(port, 'POST', '/v1/embeddings', { body: { input: 'And '.repeat(ctx + 50) }, key: KEY });
  check(r.status === 400 && r.json.error.code === 'context_length_exceeded' && new RegExp(`the context holds ${ctx}`).test(r.json.error.message),
    'an input longer than the context: 400 with the numbers', r.text);
  for (const input of [5, [], [[1, 2], 'x'], [1e9]]) {
    r = await request(port, 'POST', '/v1/embeddings', { body: { input }, key: KEY });
    check(r.status === 400 && r.json.error.param === 'input', `bad input ${JSON.stringify(input)}: 400 naming 'input'`, r.text);
  }
}

const VERSE = 'And the earth was without form, and void; and darkness was upon the face of the deep.';

async function trimming(port, ctx, log) {
  const system = { role: 'system', content: 'Be brief.' };
  const turns = [];
  const question = { role: 'user', content: 'Who?' };
  // Turn pairs until the whole is well over the context (one turn's tokens counted once).
  const turn = (i) => ({ role: i % 2 ? 'assistant' : 'user', content: `${i % 10}: ${VERSE.slice(0, 60)}` });
  const per = countTokens(chatml([turn(0)]));
  const pairs = Math.ceil((ctx + 60) / (2 * per));
  for (let i = 0; i < 2 * pairs; i++) turns.push(turn(i));
  const messages = [system, ...turns, question];
  const full = countTokens(chatml(messages));
  check(full > ctx, 'the conversation is longer than the context', { full, ctx });
  const room = Math.min(256, Math.floor(ctx / 2)); // the default reply room: --n-predict 256, at most half the context
  const r = await request(port, 'POST', '/v1/chat/completions', { body: { messages, seed: 1 }, key: KEY });
  const u = r.json?.usage;
  check(r.status === 200 && r.json.truncated === true, 'a conversation over the context: 200, "truncated": true', r.text.slice(0, 300));
  if (r.status !== 200) return;
  // The expected cut, found independently: the first user turn from which system + the rest
  // fits (searched from the end: few turns fit).
  let from = -1;
  for (let k = turns.length; k >= 0; k -= 2) {
    if (countTokens(chatml([system, ...messages.slice(1 + k)])) + room > ctx) break;
    from = k;
  }
  check(from > 0 && u.prompt_tokens === countTokens(chatml([system, ...messages.slice(1 + from)])),
    'the oldest turns are left out, the fewest that make room; the system message stays', { from, prompt_tokens: u.prompt_tokens });
  check(u.prompt_tokens + u.completion_tokens <= ctx, 'the default reply length stays within what the context leaves', u);
  const s = await stream(port, '/v1/chat/completions', { messages, max_tokens: 8 }, { key: KEY });
  check(s.status === 200 && s.done && s.events.some((e) => e.truncated === true), 'streamed: the last chunk says "truncated": true', s.status);
  // The web page's case: the second message after a long first reply.
  const long = [{ role: 'user', content: 'Tell me of the beginning.' }, { role: 'assistant', content: VERSE.repeat(6) },
    { role: 'user', content: 'And then?' }];
  const w = await request(port, 'POST', '/v1/chat/completions', { body: { messages: long, max_tokens: 8 }, key: KEY });
  check(w.status === 200, 'a second message after a reply that filled the context: 200, not a 400', w.text.slice(0, 300));
  // A completion prompt 5 tokens short of the context, no max_tokens: at most 5 tokens come back.
  const ids = Array.from({ length: ctx - 5 }, (_, i) => 100 + (i % 50));
  const c = await request(port, 'POST', '/v1/completions', { body: { prompt: ids, ignore_eos: true }, key: KEY });
  check(c.status === 200 && c.json.usage.completion_tokens <= 5 && c.json.choices[0].finish_reason === 'length',
    'default max_tokens never exceeds what the context leaves', c.json?.usage);
  await sleep(100);
  const line = log().split('\n').find((l) => /POST \/v1\/chat\/completions 200 .*left out to fit the context/.test(l));
  check(line && new RegExp(`prompt ${u.prompt_tokens} tok`).test(line) && new RegExp(`${from} oldest messages left out`).test(line),
    'the log line says how many messages were left out', line);
}

function logLines(log, u) {
  const lines = log().split('\n');
  const gen = lines.find((l) => new RegExp(`POST /v1/completions 200 \\| total [\\d.]+ ms \\| prompt ${u.prompt_tokens} tok [\\d.]+ ms, gen ${u.completion_tokens} tok`).test(l));
  check(gen, 'one log line per request: method, path, status, prompt and generated tokens, timings', lines.slice(-8));
  check(lines.some((l) => /POST \/v1\/completions 400/.test(l)) && lines.some((l) => /GET \/v1\/models 401/.test(l)),
    'errors are logged too', lines.slice(-8));
}

run(async () => {
  // -c 256 over 2 slots: a small context keeps the long prompts cheap (also under the sanitizers)
  await withServer(['-np', '2', '-c', '256', '--api-key', KEY, '--conn-per-ip', String(PER_IP), '--timeout', String(TIMEOUT), '-t', '2'], async (srv) => {
    await flood(srv.port);
    await cors(srv.port);
    await auth(srv.port);
    await badInput(srv.port);
    await embeddings(srv.port, srv.ctx);
    await trimming(srv.port, srv.ctx, srv.log);
    const r = await request(srv.port, 'POST', '/v1/completions', { body: { prompt: 'And', max_tokens: 3 }, key: KEY });
    await sleep(100);
    if (r.status === 200) logLines(srv.log, r.json.usage);
  });
  await withServer(['--cors', 'http://a.example, http://b.example', '--log-disable', '-t', '2'], async (srv) => {
    let r = await request(srv.port, 'GET', '/health', { headers: { origin: 'http://b.example' } });
    check(r.headers['access-control-allow-origin'] === 'http://b.example' && /Origin/.test(r.headers.vary || ''),
      '--cors LIST: a listed origin is echoed (Vary: Origin)', r.headers);
    r = await request(srv.port, 'OPTIONS', '/v1/completions', { headers: { origin: 'http://evil.example' } });
    check(r.status === 204 && !('access-control-allow-origin' in r.headers), '--cors LIST: another origin gets no Allow-Origin', r.headers);
    await request(srv.port, 'POST', '/v1/completions', { body: { prompt: 'And', max_tokens: 2 } });
    await sleep(100);
    check(!/POST \/v1\/completions/.test(srv.log()), '--log-disable: no request lines', srv.log().slice(-300));
  }, { label: '--cors list' });
});
