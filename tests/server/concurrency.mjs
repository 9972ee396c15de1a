// Slots share one context; each request's reply must not depend on what else runs.
// The same seeded request (temperature 0.8) served alone and while three different
// requests run beside it returns identical text: with --parallel 4 (batched together),
// with --parallel 1 (queued), and with the sparse PowerInfer model (predicted FFN).
import os from 'node:os';
import path from 'node:path';
import { check, env, health, metric, request, run, sleep, stream, waitIdle, withServer } from './lib.mjs';

const { src: SRC } = env();

const R = { prompt: 'And God said unto', max_tokens: 24, temperature: 0.8, seed: 4242 };
const OTHERS = [
  { path: '/v1/completions', body: { prompt: 'In the beginning God created', max_tokens: 40, temperature: 1.0, seed: 11 } },
  { path: '/v1/completions', body: { prompt: 'Blessed are the', max_tokens: 30, temperature: 0.7, seed: 12, top_p: 0.9 }, stream: true },
  { path: '/v1/chat/completions', body: { messages: [{ role: 'user', content: 'Who begat Enos?' }], max_tokens: 20, temperature: 0.9, seed: 13 } },
];
// Keeps a slot decoding while the others arrive, so they really share batches (or queue).
const LONG = { prompt: 'Thus saith the LORD', max_tokens: 400, ignore_eos: true, seed: 5 };

async function textOf(port, { path, body, stream: s }) {
  if (s) {
    const r = await stream(port, path, body);
    if (r.status !== 200 || !r.done) throw new Error(`stream failed: ${JSON.stringify(r).slice(0, 300)}`);
    return r.text;
  }
  const r = await request(port, 'POST', path, { body });
  if (r.status !== 200) throw new Error(`${path} failed: ${r.status} ${r.text}`);
  const c = r.json.choices[0];
  return path.includes('chat') ? c.message.content : c.text;
}

// Starts LONG as a stream and resolves once its first tokens arrived (it is decoding).
function startLong(port) {
  let release;
  const started = new Promise((r) => { release = r; });
  const done = request(port, 'POST', '/v1/completions', { body: { ...LONG, stream: true } });
  // Poll until a slot is busy: the long request has been admitted.
  (async () => {
    for (let i = 0; i < 400; i++) {
      const h = await health(port);
      if (h.slots_processing > 0) break;
      await sleep(5);
    }
    release();
  })();
  return { started, done };
}

async function scenario(port, label, slots) {
  const jobs = [{ path: '/v1/completions', body: R }, ...OTHERS];
  const solo = [];
  for (const j of jobs) solo.push(await textOf(port, j));
  check(solo[0].length > 0, `${label}: request served alone`, solo[0]);
  // All four at once, R first.
  let together = await Promise.all(jobs.map((j) => textOf(port, j)));
  check(together[0] === solo[0], `${label}: same text with 3 other requests at once`, { solo: solo[0], together: together[0] });
  check(together.every((t, i) => t === solo[i]), `${label}: the other requests too`, { solo, together });
  // Again while a long request occupies a slot; R goes last.
  const long = startLong(port);
  await long.started;
  const pending = jobs.slice(1).map((j) => textOf(port, j));
  await sleep(2);
  const rp = textOf(port, jobs[0]);
  if (slots === 1) {
    let h;
    for (let i = 0; i < 100 && !((h = await health(port)).queued >= 1); i++) await sleep(10);
    check(h.queued >= 1, `${label}: requests beyond the slots wait in the queue`, h);
  }
  together = [await rp, ...(await Promise.all(pending))];
  const lr = await long.done;
  check(lr.status === 200 && /data: \[DONE\]/.test(lr.text), `${label}: the long request completes`, lr.status);
  check(together[0] === solo[0], `${label}: same text beside a long request`, { solo: solo[0], together: together[0] });
  check(together.every((t, i) => t === solo[i]), `${label}: the others too, beside a long request`, { solo, together });
  await waitIdle(port);
  const peak = metric((await request(port, 'GET', '/metrics')).text, 'hearth_slots_busy_peak');
  check(slots === 1 ? peak === 1 : peak >= 2, `${label}: slots busy at once at the peak (${peak})`, peak);
  return solo[0];
}

run(async () => {
  const texts = [];
  for (const [args, label, model] of [
    [['--parallel', '4', '--gpu', 'off'], 'parallel 4'],
    [['--parallel', '1', '--gpu', 'off'], 'parallel 1'],
    [['--parallel', '4', '--ffn', 'predicted', '--gpu', 'off'], 'PowerInfer, predicted FFN', `${SRC}/models/bible-drelu.powerinfer.gguf`],
    /* hybrid: the CPU standing in for a GPU holds attention and about a quarter of the
       FFN neurons (hearth place -c 512 -np 4 --vram-budget 0.0196 --gpu standin); the index
       goes to a temporary file (an even spread: no statistics beside it) */
    [['--parallel', '4', '--ffn', 'predicted', '--gpu', 'standin', '--vram-budget', '0.0196',
      '--gpu-index', path.join(os.tmpdir(), `hearth-serve-${process.pid}.gpuidx`)],
     'PowerInfer, hybrid (stand-in device)', `${SRC}/models/bible-drelu.powerinfer.gguf`],
  ]) {
    // -c is the total context, split over the slots (llama-server's meaning): 512 per slot
    await withServer([...args, '-c', String(512 * +args[1]), '-t', '2'], async (srv) => {
      check(srv.slots === +args[1] && srv.ctx === 512, `${label}: listening line shows slots and context`, srv);
      texts.push(await scenario(srv.port, label, srv.slots));
      if (model) {
        const m = await request(srv.port, 'GET', '/metrics');
        const sp = metric(m.text, 'hearth_ffn_sparsity');
        check(sp > 0 && sp < 1, `${label}: /metrics reports the FFN sparsity`, sp);
      }
    }, model ? { model, label } : { label });
  }
  check(texts[0] === texts[1], 'the same text from a 4-slot and a 1-slot server', texts);
});
