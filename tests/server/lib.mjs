// Helpers shared by the hearth serve tests (robust.mjs, concurrency.mjs, and the client tests
// openai.mjs and web.mjs): the environment, `hearth serve` on a free port, plain HTTP
// requests, server-sent event streams, greedy references from `hearth run`, and named checks
// that report every failure. Node's built-in modules only.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';

export const SKIP = 77; // ctest SKIP_RETURN_CODE of the client tests

// --- environment ---------------------------------------------------------------------------

let envCache;
// HEARTH_BIN (the hearth binary) and HEARTH_SRC (the source tree), both set by ctest, and the
// model: HEARTH_TEST_MODEL, else the bundled models/bible-drelu.gguf. Exits 2 saying what is
// missing. Called by each test before it uses any of them (the client tests after deciding
// whether to skip).
export function env() {
  if (envCache) return envCache;
  const bin = process.env.HEARTH_BIN, src = process.env.HEARTH_SRC;
  if (!bin || !src) {
    console.error('HEARTH_BIN and HEARTH_SRC must be set (ctest sets them)');
    process.exit(2);
  }
  if (!existsSync(bin)) {
    console.error(`HEARTH_BIN: no hearth binary at ${bin}`);
    process.exit(2);
  }
  const model = process.env.HEARTH_TEST_MODEL || path.join(src, 'models', 'bible-drelu.gguf');
  if (!existsSync(model)) {
    console.error(`model not found: ${model}`);
    process.exit(2);
  }
  envCache = { bin, src, model };
  return envCache;
}

// --- time ----------------------------------------------------------------------------------

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

export function withTimeout(p, ms, what) {
  let t;
  const to = new Promise((_, rej) => { t = setTimeout(() => rej(new Error(`timed out after ${ms} ms: ${what}`)), ms); });
  return Promise.race([p, to]).finally(() => clearTimeout(t));
}

// --- checks --------------------------------------------------------------------------------
// Each check is named and printed as "ok" or "FAIL"; a failure does not stop the test, and
// run() exits 1 when any check failed.

const t0 = Date.now();
const failures = [];
let checks = 0;
const stamp = () => `[${((Date.now() - t0) / 1000).toFixed(1)}s]`;

function showDetail(detail) {
  if (detail === undefined) return '';
  const s = typeof detail === 'string' ? detail : JSON.stringify(detail);
  return s.includes('\n') ? `:\n    ${s.split('\n').join('\n    ')}` : `: ${s}`;
}

export function check(cond, what, detail) {
  checks++;
  if (cond) {
    console.log(`ok   ${stamp()} ${what}`);
  } else {
    failures.push(what);
    console.log(`FAIL ${stamp()} ${what}${showDetail(detail)}`);
  }
  return Boolean(cond);
}

// One check made of assertions (assert, eq, or anything that throws): it fails with the first
// error, whose stack is printed.
export async function step(what, fn) {
  try {
    await fn();
  } catch (e) {
    return check(false, what, String((e && e.stack) || e));
  }
  return check(true, what);
}

export function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

export function eq(actual, expected, what) {
  const a = JSON.stringify(actual), e = JSON.stringify(expected);
  if (a !== e) throw new Error(`${what}: expected ${e}, got ${a}`);
}

export function failed() { return failures.length; }

// Runs main(), then exits 0 when every check passed (and there was at least one), else 1;
// an error thrown by main() counts as a failed check.
export function run(main, name = path.basename(process.argv[1] || 'test', '.mjs')) {
  const finish = () => {
    const s = ((Date.now() - t0) / 1000).toFixed(1);
    if (failures.length) {
      console.log(`${name}: ${failures.length} of ${checks} check(s) failed (${s} s): ${failures.join('; ')}`);
      process.exit(1);
    }
    if (!checks) {
      console.log(`${name}: no checks ran (${s} s)`);
      process.exit(1);
    }
    console.log(`${name}: all ${checks} checks passed (${s} s)`);
    process.exit(0);
  };
  main().then(finish, (e) => {
    check(false, 'the test ran to its end', String((e && e.stack) || e));
    finish();
  });
}

// --- the server ----------------------------------------------------------------------------

const LISTENING = /hearth serve: listening on http:\/\/(\[[^\]\s]+\]|[^\s:/]+):(\d+) \((\d+) slots, ctx (\d+) per slot\)/;

// Starts `hearth serve -m MODEL --port 0 ARGS...` (MODEL: env().model unless given) and
// resolves once its listening line is on stderr, with
//   {port, base (http://HOST:PORT, a wildcard host replaced by loopback), slots, ctx, log() (its
//   stderr so far), stop()}.
// Rejects, with the end of the server's output, when it cannot be started, exits early, or
// prints no listening line within timeoutMs (it is then killed).
export function startServer(args = [], { model = env().model, timeoutMs = 60000 } = {}) {
  const { bin } = env();
  return new Promise((resolve, reject) => {
    // stdout is piped too, so that nothing the server leaves behind holds the test's output open
    const child = spawn(bin, ['serve', '-m', model, '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '', out = '', settled = false;
    const tail = () => `\n--- hearth serve stderr (end) ---\n${log.slice(-4000).trimEnd()}` +
      (out ? `\n--- hearth serve stdout (end) ---\n${out.slice(-2000).trimEnd()}` : '');
    const exited = new Promise((res) => child.on('exit', (code, signal) => res({ code, signal })));
    const fail = (why) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      try { child.kill('SIGKILL'); } catch { /* gone already */ }
      reject(new Error(`${why}${tail()}`));
    };
    const timer = setTimeout(() => fail(`hearth serve printed no listening line within ${timeoutMs / 1000} s`), timeoutMs);
    child.on('error', (e) => fail(`cannot start ${bin}: ${e.message}`));
    exited.then((r) => fail(`hearth serve exited early (code ${r.code}, signal ${r.signal})`));
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => {
      log += d;
      const m = settled ? null : LISTENING.exec(log);
      if (!m) return;
      settled = true;
      clearTimeout(timer);
      const host = m[1] === '0.0.0.0' ? '127.0.0.1' : m[1] === '[::]' ? '[::1]' : m[1];
      resolve({
        port: +m[2], slots: +m[3], ctx: +m[4], base: `http://${host}:${m[2]}`,
        log: () => log,
        // SIGTERM; the server must exit with status 0 (under ASan: also leak-free) within
        // timeoutMs, else it is killed. Throws naming the exit, with the end of the output.
        async stop({ timeoutMs: limit = 20000 } = {}) {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
          let t;
          const late = new Promise((res) => { t = setTimeout(() => res(null), limit); });
          const r = await Promise.race([exited, late]);
          clearTimeout(t);
          if (!r) {
            child.kill('SIGKILL');
            await exited;
            throw new Error(`hearth serve did not exit within ${limit / 1000} s of SIGTERM (killed)${tail()}`);
          }
          if (r.code !== 0) throw new Error(`hearth serve exit code ${r.code}, signal ${r.signal} after SIGTERM${tail()}`);
          return r;
        },
      });
    });
  });
}

// Starts a server (startServer(args, opts)), runs fn(server), and in any case stops it with
// the check "[label: ]SIGTERM: the server exits with status 0".
export async function withServer(args, fn, { label, ...opts } = {}) {
  const server = await startServer(args, opts);
  try {
    return await fn(server);
  } finally {
    await step(`${label ? `${label}: ` : ''}SIGTERM: the server exits with status 0`, () => server.stop());
  }
}

// --- HTTP ----------------------------------------------------------------------------------

// One request on its own connection. Resolves {status, headers, text, json}.
export function request(port, method, path, { body, headers = {}, key } = {}) {
  return new Promise((resolve, reject) => {
    const h = { ...headers };
    if (key) h.authorization = `Bearer ${key}`;
    let data = body;
    if (body !== undefined && typeof body !== 'string' && !Buffer.isBuffer(body)) data = JSON.stringify(body);
    if (data !== undefined && !('content-length' in h) && !('transfer-encoding' in h)) h['content-length'] = Buffer.byteLength(data);
    if (data !== undefined && !('content-type' in h)) h['content-type'] = 'application/json';
    const req = http.request({ host: '127.0.0.1', port, method, path, headers: h, agent: false }, (res) => {
      const parts = [];
      res.on('data', (c) => parts.push(c));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let json;
        try { json = JSON.parse(text); } catch { json = undefined; }
        resolve({ status: res.statusCode, headers: res.headers, text, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (data !== undefined) req.write(data);
    req.end();
  });
}

// Parses "data: ..." events of a complete SSE body. Returns the payloads (strings).
export function sseEvents(text) {
  const out = [];
  for (const block of text.split('\n\n')) {
    const lines = block.split('\n').filter((l) => l.startsWith('data: '));
    if (lines.length) out.push(lines.map((l) => l.slice(6)).join('\n'));
  }
  return out;
}

// A streamed completion or chat completion: {status, events (parsed JSON), done, text, finish, usage}.
export async function stream(port, path, body, opts = {}) {
  const r = await request(port, 'POST', path, { ...opts, body: { ...body, stream: true } });
  if (r.status !== 200) return { status: r.status, json: r.json, text: r.text };
  const raw = sseEvents(r.text);
  const done = raw.length > 0 && raw[raw.length - 1] === '[DONE]';
  const events = raw.filter((e) => e !== '[DONE]').map((e) => JSON.parse(e));
  let text = '', finish = null, usage = null;
  for (const e of events) {
    if (e.usage) usage = e.usage;
    for (const c of e.choices || []) {
      text += path.includes('chat') ? (c.delta?.content ?? '') : (c.text ?? '');
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { status: 200, events, done, text, finish, usage, contentType: r.headers['content-type'] };
}

export async function health(port) {
  return (await request(port, 'GET', '/health')).json;
}

// Waits until no slot is busy and nothing is queued.
export async function waitIdle(port, ms = 15000) {
  const t0 = Date.now();
  for (;;) {
    const h = await health(port);
    if (h && h.slots_processing === 0 && h.queued === 0) return h;
    if (Date.now() - t0 > ms) return h;
    await sleep(50);
  }
}

export function metric(text, name) {
  const m = new RegExp(`^${name.replace(/[{}"\\/]/g, (c) => '\\' + c)} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

// --- references: hearth run and hearth tokenize on the same model --------------------------

// The greedy continuation of prompt, n tokens: `hearth run --temp 0`.
export function greedy(prompt, n, { model = env().model } = {}) {
  const out = execFileSync(env().bin, ['run', '-m', model, '-p', prompt, '-n', String(n), '--temp', '0', '--no-display-prompt'],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60000 });
  assert(out.endsWith('\n'), 'hearth run output does not end with a newline');
  return out.slice(0, -1);
}

// The number of tokens of text: `hearth tokenize --ids`.
export function countTokens(text, { model = env().model } = {}) {
  const out = execFileSync(env().bin, ['tokenize', '-m', model, '-p', text, '--ids'],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60000 });
  return out.trim().split(/\s+/).filter(Boolean).length;
}

// The ChatML prompt the server falls back to for a model without a chat template.
export function chatml(messages) {
  return messages.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join('') + '<|im_start|>assistant\n';
}

// Text before the first ChatML end marker (the server stops generation there), and whether
// one was found.
export function cutAtChatStops(text) {
  let end = text.length;
  for (const s of ['<|im_end|>', '<|im_start|>']) {
    const i = text.indexOf(s);
    if (i >= 0 && i < end) end = i;
  }
  return { text: text.slice(0, end), cut: end < text.length };
}
