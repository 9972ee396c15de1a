// Bounded load generator for an OpenAI-compatible server (node built-ins only).
// N concurrent streams; each issues --requests streamed /v1/completions back to back, cycling
// through a fixed prompt set (stream i starts at prompt i), and records per request the time
// to the first generated text and the time to `data: [DONE]`. Prints one line of flat JSON:
// generated tokens/s over the whole run, TTFT and latency percentiles (ms), counts.
// Generated tokens: the usage the server reports at the end of the stream
// (stream_options.include_usage), else the streamed chunks with text (one per token when no
// stop strings hold text back).
//
// usage: node bench/loadgen.mjs --url http://127.0.0.1:PORT [--streams 4] [--requests 4]
//            [--max-tokens 32] [--temperature 0] [--api-key KEY] [--timeout 120]
// Exit status: 0 all requests succeeded, 1 some failed (the JSON still comes out), 2 bad flags.
import http from 'node:http';

const PROMPTS = [
    'In the beginning God',
    'And the LORD said unto Moses,',
    'Blessed are the',
    'And it came to pass, when',
    'The LORD is my shepherd;',
    'And Jesus answered and said unto them,',
    'Now the serpent was more subtil than',
    'For God so loved the world,',
];

function parse(argv) {
    const o = { url: '', streams: 4, requests: 4, maxTokens: 32, temperature: 0, apiKey: '', timeout: 120 };
    const num = (flag, v, min) => {
        const x = Number(v);
        if (v === undefined || !Number.isFinite(x) || x < min) die(`${flag}: '${v}' is not a number >= ${min}`);
        return x;
    };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i], v = argv[i + 1];
        switch (a) {
        case '--url': if (!v) die('--url needs a value'); o.url = v.replace(/\/+$/, ''); i++; break;
        case '--streams': o.streams = num(a, v, 1); i++; break;
        case '--requests': o.requests = num(a, v, 1); i++; break;
        case '--max-tokens': o.maxTokens = num(a, v, 1); i++; break;
        case '--temperature': o.temperature = num(a, v, 0); i++; break;
        case '--api-key': if (v === undefined) die('--api-key needs a value'); o.apiKey = v; i++; break;
        case '--timeout': o.timeout = num(a, v, 1); i++; break;
        case '-h': case '--help':
            console.log('usage: node bench/loadgen.mjs --url URL [--streams N] [--requests R] [--max-tokens N] ' +
                        '[--temperature T] [--api-key KEY] [--timeout S]');
            process.exit(0);
        default: die(`unknown flag '${a}'`);
        }
    }
    if (!o.url) die('--url is required');
    return o;
}
function die(msg) {
    console.error(`loadgen: ${msg}`);
    process.exit(2);
}

// One streamed completion; resolves with {ttft, latency, tokens} in ms, or rejects.
function request(o, agent, prompt) {
    return new Promise((resolve, reject) => {
        const body = JSON.stringify({
            prompt, max_tokens: o.maxTokens, temperature: o.temperature, seed: 1, stream: true,
            stream_options: { include_usage: true },
        });
        const url = new URL(`${o.url}/v1/completions`);
        const headers = { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) };
        if (o.apiKey) headers.Authorization = `Bearer ${o.apiKey}`;
        const t0 = performance.now();
        let ttft = -1, tokens = 0, usage = -1, buf = '', done = false, finished = false;
        const req = http.request(url, { method: 'POST', headers, agent }, (res) => {
            if (res.statusCode !== 200) {
                let txt = '';
                res.on('data', (d) => { txt += d; });
                res.on('end', () => reject(new Error(`HTTP ${res.statusCode}: ${txt.slice(0, 200)}`)));
                return;
            }
            res.setEncoding('utf8');
            res.on('data', (d) => {
                buf += d;
                let i;
                while ((i = buf.indexOf('\n\n')) >= 0) {
                    const ev = buf.slice(0, i).replace(/\r/g, '');
                    buf = buf.slice(i + 2);
                    for (const line of ev.split('\n')) {
                        if (!line.startsWith('data:')) continue;
                        const data = line.slice(5).trim();
                        if (data === '[DONE]') { done = true; continue; }
                        let j;
                        try { j = JSON.parse(data); } catch { continue; }
                        if (j.error) { reject(new Error(`stream error: ${j.error.message || JSON.stringify(j.error)}`)); return; }
                        if (j.usage && Number.isFinite(j.usage.completion_tokens)) usage = j.usage.completion_tokens;
                        const c = j.choices && j.choices[0];
                        if (c && c.text) {
                            if (ttft < 0) ttft = performance.now() - t0;
                            tokens++;
                        }
                    }
                }
            });
            res.on('end', () => {
                finished = true;
                if (!done) reject(new Error('the stream ended without data: [DONE]'));
                else resolve({ ttft: ttft < 0 ? performance.now() - t0 : ttft, latency: performance.now() - t0,
                               tokens: usage >= 0 ? usage : tokens });
            });
            res.on('error', reject);
        });
        req.setTimeout(o.timeout * 1000, () => { if (!finished) req.destroy(new Error(`no answer within ${o.timeout} s`)); });
        req.on('error', reject);
        req.end(body);
    });
}

// Nearest-rank percentile of a sorted array.
function pct(sorted, p) {
    if (!sorted.length) return null;
    return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

async function main() {
    const o = parse(process.argv.slice(2));
    const agent = new http.Agent({ keepAlive: true, maxSockets: o.streams });
    const results = [], errors = [];
    const t0 = performance.now();
    await Promise.all(Array.from({ length: o.streams }, async (_, s) => {
        for (let r = 0; r < o.requests; r++) {
            try {
                results.push(await request(o, agent, PROMPTS[(s + r) % PROMPTS.length]));
            } catch (e) {
                errors.push(e.message);
            }
        }
    }));
    const wall = (performance.now() - t0) / 1000;
    agent.destroy();
    const tokens = results.reduce((n, r) => n + r.tokens, 0);
    const ttft = results.map((r) => r.ttft).sort((a, b) => a - b);
    const lat = results.map((r) => r.latency).sort((a, b) => a - b);
    const r1 = (x) => (x === null ? null : Math.round(x * 10) / 10);
    const out = {
        streams: o.streams, requests: results.length, errors: errors.length, tokens,
        wall_s: Math.round(wall * 1000) / 1000, tok_s: r1(tokens / wall),
        ttft_p50: r1(pct(ttft, 50)), ttft_p90: r1(pct(ttft, 90)), ttft_p99: r1(pct(ttft, 99)),
        lat_p50: r1(pct(lat, 50)), lat_p90: r1(pct(lat, 90)), lat_p99: r1(pct(lat, 99)),
    };
    console.log(JSON.stringify(out));
    if (errors.length) {
        console.error(`loadgen: ${errors.length} request(s) failed; first: ${errors[0]}`);
        process.exit(1);
    }
}
main();
