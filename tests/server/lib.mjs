// Helpers for the hearth serve tests: start a server on a free port, plain HTTP requests,
// server-sent event streams. Node's built-in modules only.
import { spawn } from 'node:child_process';
import http from 'node:http';

export const BIN = process.env.HEARTH_BIN;
export const SRC = process.env.HEARTH_SRC;
if (!BIN || !SRC) {
  console.error('HEARTH_BIN and HEARTH_SRC must be set');
  process.exit(2);
}
export const MODEL = `${SRC}/models/bible-drelu.gguf`;

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

export function withTimeout(p, ms, what) {
  let t;
  const to = new Promise((_, rej) => { t = setTimeout(() => rej(new Error(`timed out after ${ms} ms: ${what}`)), ms); });
  return Promise.race([p, to]).finally(() => clearTimeout(t));
}

// Starts `hearth serve --port 0 ...` and waits for its listening line.
export async function startServer(args, { model = MODEL } = {}) {
  const argv = ['serve', '-m', model, '--port', '0', ...args];
  const proc = spawn(BIN, argv, { stdio: ['ignore', 'inherit', 'pipe'] });
  let log = '';
  const exited = new Promise((res) => proc.on('exit', (code, signal) => res({ code, signal })));
  const info = await withTimeout(new Promise((resolve, reject) => {
    proc.stderr.on('data', (d) => {
      log += d;
      const m = /hearth serve: listening on http:\/\/(\S+):(\d+) \((\d+) slots, ctx (\d+) per slot\)/.exec(log);
      if (m) resolve({ port: +m[2], slots: +m[3], ctx: +m[4] });
    });
    exited.then((r) => reject(new Error(`server exited early (${r.code} ${r.signal}):\n${log}`)));
  }), 60000, 'listening line');
  return {
    ...info,
    log: () => log,
    // SIGTERM; the server must exit 0 (under ASan: also leak-free) within the limit.
    async stop() {
      proc.kill('SIGTERM');
      const r = await withTimeout(exited, 30000, 'server exit after SIGTERM');
      if (r.code !== 0) throw new Error(`server exit code ${r.code} signal ${r.signal}\n${log}`);
    },
    kill() { proc.kill('SIGKILL'); },
  };
}

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

// Minimal assertion helpers that name the check.
let failures = 0;
const t0 = Date.now();
const stamp = () => `[${((Date.now() - t0) / 1000).toFixed(1)}s]`;
export function check(cond, what, detail) {
  if (cond) {
    console.log(`ok   ${stamp()} ${what}`);
  } else {
    failures++;
    console.log(`FAIL ${stamp()} ${what}${detail !== undefined ? `: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}` : ''}`);
  }
}
export function failed() { return failures; }

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

// Runs main(), then exits 0 when every check passed.
export function run(main) {
  main().then(
    () => { if (failed()) { console.log(`${failed()} check(s) failed`); process.exit(1); } console.log('all checks passed'); process.exit(0); },
    (e) => { console.log(`FAIL ${e.stack || e}`); process.exit(1); },
  );
}
