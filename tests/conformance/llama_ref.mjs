#!/usr/bin/env node
// llama.cpp reference for Hearth's conformance tests and benchmarks, driven through
// node-llama-cpp 3.22.1 (bundles llama.cpp tag v0.5.0 prebuilt; CPU only here).
//
// What node-llama-cpp 3.22.1's API gives, and how this script uses it (read from
// dist/**/*.d.ts and llama/addon/*.cpp in the package):
//
// * getLlama({gpu: false, build: "never", skipDownload: true, maxThreads: 0}): the prebuilt
//   CPU binary, never a local build (no toolchain download). maxThreads 0 makes a context's
//   `threads` the exact number used rather than a hint capped by the instance.
// * Tokenizing: LlamaModel.tokenize(text, specialTokens) calls
//   common_tokenize(vocab, text, add_special=false, parse_special=specialTokens). It never adds
//   BOS/EOS, and returns [] for "" before reaching llama.cpp. llama.cpp's add_special=true only
//   prepends BOS when llama_vocab_get_add_bos and appends EOS when llama_vocab_get_add_eos (the
//   SPM leading-space rule does not depend on it), so this script rebuilds add_special from
//   model.tokens.shouldPrependBosToken / shouldAppendEosToken. That equals
//   `llama-tokenize` and `hearth tokenize --ids` (special tokens parsed, BOS per vocabulary).
//   loadModel({vocabOnly: true}) loads only the vocabulary (no weights); tokenizing goes one
//   level below it, to the addon's model class (openVocab: the same load, without the JS-side
//   parse of the whole file).
//   Strings cross into C++ through Napi Utf8Value, so text must be valid UTF-8: invalid bytes
//   cannot be passed (they would arrive as U+FFFD); `tokenize` refuses such files with exit 3.
// * RAW logits: LlamaContextSequence.controlledEvaluate(items) where an item is
//   [token, {generateNext: {token: true, logits: true}}]. The addon copies
//   llama_get_logits_ith() into a llama_token_data_array, runs the sampler chain and returns the
//   (token, logit) pairs as a Map. With temperature 0 the chain is only llama_sampler_greedy,
//   which selects without touching the logits, and no repeat penalty / token bias / grammar is
//   applied unless passed, so the values are the raw logits for all n_vocab tokens, and the
//   token is llama.cpp's own greedy choice (first maximum in id order). controlledEvaluate never
//   stops at EOS (only evaluate() does, unless yieldEogToken), so EOS is ignored by design.
//   Also available: generateNext.totalLogitWeight = sum exp(logit - max) and
//   logits: {filter: {tokens, includeTop: 1}} (used by `perplexity` to avoid shipping n_vocab
//   floats). Beware: filter.includeMax is accepted but does NOT add the max logit in 3.22.1;
//   includeTop: 1 does.
// * Flash attention: createContext({flashAttention: false}) (and the model default
//   defaultContextFlashAttention: false). Default is "auto" (on for CPU).
// * KV cache type: createContext({experimentalKvCacheKeyType: "F32",
//   experimentalKvCacheValueType: "F32"}) (GgmlType names; default F16). Marked experimental
//   by node-llama-cpp but works on CPU with flash attention off.
// * Timing counters: createContext({performanceTracking: true}) then context.printTimings()
//   calls llama_perf_context_print + reset; the lines go through the getLlama `logger`
//   callback at info level, where `bench` parses "prompt eval time = X ms / N tokens" and
//   "eval time = X ms / N runs".
// * Startup: on Linux getLlama() always tests a prebuilt binary in a child process first; with
//   the module import that costs ~1 s on a quiet machine and up to ~6 s on a loaded one, hence
//   the `batch` subcommand (one process for many jobs).
//
// Measured with this script (random llama/exaone/smallthinker models, n_embd 64-128, against
// an independent float64 forward pass written for the check): F32 KV + flash attention off
// agree to 2e-6..1e-5 on logits of magnitude ~5-15 (so these options take effect and the
// logits are raw); F16 KV gives ~2.5e-3 and F16 KV + flash attention ~3.8e-3. Results with 1
// and 2 threads are bit-identical. llama.cpp's threads spin at barriers: on a loaded 2-core
// machine 2 threads can be 10-1000x slower than 1, so tests use 1 thread for the reference.
//
// Subcommands (all print to stdout; diagnostics on stderr):
//   tokenize  --model F --text-file T [--no-special] [--no-bos]     -> "id id id ..."
//   tokenize  --model F --cases C.json [...]  (JSON array of strings) -> JSON array of id arrays
//   generate  --model F --tokens "1 2 3" -n 32 [--threads N] [--ctx N] [--kv f32|f16|bf16|q8_0]
//             [--fa on|off|auto] -> {"n_vocab":V,"prompt_tokens":[...],"tokens":[...],
//             "logits":[[V floats]...]}; defaults: 2 threads, ctx 256, F32 KV, flash attn off.
//             logits[i] are the raw logits from which tokens[i] was chosen greedily.
//   bench     --model F --threads N --prompt-tokens 64 -n 64 --runs 3 [--kv f16|f32]
//             [--fa on|off|auto] -> JSON with median prompt and decode tokens/s from
//             llama.cpp's counters (wall clock as a fallback). Defaults are llama.cpp's own:
//             F16 KV, flash attention auto. The prompt is evaluated as one batch; decode is one
//             token per llama_decode, the first generated token counting as the prompt's.
//   batch     --jobs J.json  -> many tokenize/generate jobs in one process (see cmdBatch)
//   perplexity --model F --text-file T [--ctx N] [--threads N] [--chunks N]
//             [--kv f32] [--fa off] -> JSON {"ppl":..,"nll_mean":..,"n_tokens_scored":..},
//             llama.cpp's perplexity scheme (see perplexityOf).
// Exit 77 when node-llama-cpp is not installed (ctest's skip code).

import fs from "node:fs";
import path from "node:path";

const SKIP = 77;

function parseArgs(argv) {
    const opts = {_: []};
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        if (!a.startsWith("-")) { opts._.push(a); continue; }
        const key = a.replace(/^-+/, "");
        const flags = new Set(["no-special", "no-bos"]);
        if (flags.has(key)) { opts[key] = true; continue; }
        if (i + 1 >= argv.length) throw new Error(`missing value for ${a}`);
        opts[key] = argv[++i];
    }
    return opts;
}

function needInt(opts, key, dflt) {
    const v = opts[key];
    if (v === undefined) {
        if (dflt === undefined) throw new Error(`--${key} is required`);
        return dflt;
    }
    if (!/^\d+$/.test(v)) throw new Error(`--${key}: not a non-negative integer: ${v}`);
    return Number(v);
}

function needStr(opts, key) {
    if (opts[key] === undefined) throw new Error(`--${key} is required`);
    return opts[key];
}

async function loadLib() {
    try {
        return await import("node-llama-cpp");
    } catch (e) {
        console.log("SKIP: node-llama-cpp is not installed (run scripts/llama-ref-setup.sh)");
        process.exit(SKIP);
    }
}

// Info-level lines are kept only when a caller wants them (timings); the rest is noise.
async function openLlama(lib, onInfo) {
    return lib.getLlama({
        gpu: false,
        build: "never",
        skipDownload: true,
        progressLogs: false,
        maxThreads: 0,
        logLevel: onInfo ? lib.LlamaLogLevel.info : lib.LlamaLogLevel.error,
        logger: (level, message) => {
            if (onInfo && level === lib.LlamaLogLevel.info) onInfo(message);
            else if (level === lib.LlamaLogLevel.error || level === lib.LlamaLogLevel.fatal)
                process.stderr.write(`llama.cpp: ${message}\n`);
        },
    });
}

// --fa on|off|auto; "auto" is llama.cpp's own default (on for CPU when the model allows it).
function faMode(v) {
    if (v === "on") return true;
    if (v === "off") return false;
    if (v === "auto") return "auto";
    throw new Error(`--fa: expected on, off or auto, got ${v}`);
}

function kvType(name) {
    const t = (name ?? "f32").toLowerCase();
    if (t === "f32") return "F32";
    if (t === "f16") return "F16";
    if (t === "bf16") return "BF16";
    if (t === "q8_0") return "Q8_0";
    throw new Error(`unsupported --kv ${name}`);
}

async function openContext(llama, opts, extra = {}) {
    const model = await llama.loadModel({
        modelPath: needStr(opts, "model"),
        gpuLayers: 0,
        defaultContextFlashAttention: faMode(opts.fa ?? "off"),
    });
    const threads = needInt(opts, "threads", 2);
    const kv = kvType(opts.kv);
    const context = await model.createContext({
        contextSize: needInt(opts, "ctx", 256),
        batchSize: extra.batchSize,
        sequences: 1,
        threads: {ideal: threads, min: threads},
        flashAttention: faMode(opts.fa ?? "off"),
        experimentalKvCacheKeyType: kv,
        experimentalKvCacheValueType: kv,
        performanceTracking: !!extra.performanceTracking,
        failedCreationRemedy: false,
    });
    return {model, context};
}

function isValidUtf8(buf) {
    return Buffer.from(buf.toString("utf8"), "utf8").equals(buf);
}

function tokenizeOne(vocab, text, opts) {
    const ids = vocab.tokenize(text, !opts["no-special"]);
    if (!opts["no-bos"]) {
        if (vocab.prependBos && vocab.bos != null) ids.unshift(vocab.bos);
        if (vocab.appendEos && vocab.eos != null) ids.push(vocab.eos);
    }
    return ids;
}

// A vocabulary-only model: {tokenize(text, special), bos, eos, prependBos, appendEos, dispose()}.
// loadModel first parses the whole GGUF in JavaScript (file insights, GPU-layer resolution),
// even with vocabOnly; on a 150k-token BPE vocabulary that makes a load cost ~1.1 s of CPU
// where llama.cpp's own vocabulary load takes ~0.4 s (measured; conformance.vocab loads 68).
// So the addon's model class that LlamaModel wraps is used directly, with the options and the
// token rules LlamaModel applies (3.22.1: LlamaModel.tokenize returns []
// for "" and Array.from(addon.tokenize(text, special)) otherwise; shouldPrependBosToken and
// shouldAppendEosToken are false without a BOS token). A binding without that class takes the
// public API.
async function openVocab(llama, modelPath) {
    const Addon = llama._bindings?.AddonModel;
    if (typeof Addon !== "function") {
        const model = await llama.loadModel({modelPath, vocabOnly: true, gpuLayers: 0});
        return {tokenize: (t, special) => model.tokenize(t, special), bos: model.tokens.bos, eos: model.tokens.eos,
            prependBos: model.tokens.shouldPrependBosToken, appendEos: model.tokens.shouldAppendEosToken,
            dispose: () => model.dispose()};
    }
    const m = new Addon(path.resolve(process.cwd(), modelPath),
        {addonExports: llama._bindings, gpuLayers: 0, vocabOnly: true, useMmap: true, checkTensors: false});
    if (!(await m.init())) throw new Error("Failed to load model");
    const bos = m.tokenBos(), eos = m.tokenEos();
    return {tokenize: (t, special) => (t === "" ? [] : Array.from(m.tokenize(t, special))),
        bos: bos === -1 ? null : bos, eos: eos === -1 ? null : eos,
        prependBos: bos !== -1 && m.shouldPrependBosToken(), appendEos: bos !== -1 && m.shouldAppendEosToken(),
        dispose: () => m.dispose()};
}

// --text-file T: one text, ids printed space-separated.
// --cases C.json: a JSON array of strings, a JSON array of id arrays printed (one model load
// for many strings: the conformance test's batch mode).
async function tokenizeTexts(llama, opts, texts) {
    const vocab = await openVocab(llama, needStr(opts, "model"));
    try {
        return texts.map((t) => tokenizeOne(vocab, t, opts));
    } finally {
        await vocab.dispose();
    }
}

async function cmdTokenize(lib, opts) {
    let texts;
    if (opts.cases !== undefined) {
        texts = JSON.parse(fs.readFileSync(opts.cases, "utf8"));
        if (!Array.isArray(texts) || texts.some((t) => typeof t !== "string"))
            throw new Error("--cases: expected a JSON array of strings");
    } else {
        const buf = fs.readFileSync(needStr(opts, "text-file"));
        if (!isValidUtf8(buf)) {
            console.error("llama_ref: text is not valid UTF-8; node-llama-cpp cannot pass it to llama.cpp");
            process.exit(3);
        }
        texts = [buf.toString("utf8")];
    }
    const llama = await openLlama(lib);
    const out = await tokenizeTexts(llama, opts, texts);
    if (opts.cases !== undefined) process.stdout.write(JSON.stringify(out) + "\n");
    else process.stdout.write(out[0].join(" ") + "\n");
    await llama.dispose();
}

function parseTokens(s) {
    const toks = s.trim().split(/[\s,]+/).filter((x) => x.length > 0).map((x) => {
        if (!/^\d+$/.test(x)) throw new Error(`--tokens: not a token id: ${x}`);
        return Number(x);
    });
    if (toks.length === 0) throw new Error("--tokens: empty prompt");
    return toks;
}

const GREEDY_WITH_LOGITS = {generateNext: {token: true, logits: true}};

function logitsArray(map, nVocab) {
    if (map.size !== nVocab) throw new Error(`got ${map.size} logits, expected n_vocab ${nVocab}`);
    const out = new Array(nVocab);
    for (const [tok, v] of map) out[tok] = v;
    return out;
}

async function generateRun(llama, opts, prompt, n) {
    const {model, context} = await openContext(llama, opts, {batchSize: Math.max(prompt.length, 32)});
    try {
        return await greedyWithLogits(context, prompt, n);
    } finally {
        await context.dispose();
        await model.dispose();
    }
}

async function greedyWithLogits(context, prompt, n) {
    const seq = context.getSequence();
    const tokens = [];
    const logits = [];
    let input = prompt.map((t, i) => (i === prompt.length - 1 ? [t, GREEDY_WITH_LOGITS] : t));
    let vocab = null;
    for (let step = 0; step < n; step++) {
        const res = await seq.controlledEvaluate(input);
        const next = res[input.length - 1]?.next;
        if (next == null || next.token == null || next.logits == null)
            throw new Error(`no token/logits at step ${step}`);
        if (vocab == null) vocab = next.logits.size;
        tokens.push(next.token);
        logits.push(logitsArray(next.logits, vocab));
        input = [[next.token, GREEDY_WITH_LOGITS]];
    }
    return {n_vocab: vocab, prompt_tokens: prompt, tokens, logits};
}

async function cmdGenerate(lib, opts) {
    const prompt = parseTokens(needStr(opts, "tokens"));
    const n = needInt(opts, "n", 32);
    const llama = await openLlama(lib);
    const out = await generateRun(llama, opts, prompt, n);
    process.stdout.write(JSON.stringify(out) + "\n");
    await llama.dispose();
}

// One process for many jobs: node-llama-cpp tests its prebuilt binary in a child process on
// every getLlama() on Linux, which with module loading costs 1-6 s per process.
// --jobs J.json: [{"cmd": "tokenize", "model", "texts": [...], "no-special"?, "no-bos"?} |
//                 {"cmd": "generate", "model", "tokens": [...], "n", "threads"?, "ctx"?, "kv"?, "fa"?} |
//                 {"cmd": "perplexity", "model", "text-file", "ctx"?, "chunks"?, "threads"?, "kv"?, "fa"?}]
// prints a JSON array with one result per job ({"error": message} for a failed one).
async function cmdBatch(lib, opts) {
    const jobs = JSON.parse(fs.readFileSync(needStr(opts, "jobs"), "utf8"));
    if (!Array.isArray(jobs)) throw new Error("--jobs: expected a JSON array");
    const llama = await openLlama(lib);
    const results = [];
    for (const job of jobs) {
        const o = {};
        for (const [k, v] of Object.entries(job)) o[k] = typeof v === "number" ? String(v) : v;
        try {
            if (job.cmd === "tokenize") results.push(await tokenizeTexts(llama, o, job.texts));
            else if (job.cmd === "generate")
                results.push(await generateRun(llama, o, job.tokens, needInt(o, "n", 32)));
            else if (job.cmd === "perplexity") results.push(await perplexityRun(llama, o));
            else throw new Error(`unknown cmd ${job.cmd}`);
        } catch (e) {
            results.push({error: String(e.message ?? e)});
        }
    }
    process.stdout.write(JSON.stringify(results) + "\n");
    await llama.dispose();
}

function median(xs) {
    const s = [...xs].sort((a, b) => a - b);
    const m = s.length >> 1;
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// llama_perf_context_print lines, e.g.
// "llama_perf_context_print: prompt eval time =      12.34 ms /    64 tokens (...)"
// "llama_perf_context_print:        eval time =      56.78 ms /    63 runs   (...)"
function parseTimings(lines) {
    const t = {};
    for (const line of lines) {
        let m = line.match(/prompt eval time\s*=\s*([\d.]+)\s*ms\s*\/\s*(\d+)\s*tokens/);
        if (m) { t.promptMs = Number(m[1]); t.promptTokens = Number(m[2]); continue; }
        m = line.match(/\beval time\s*=\s*([\d.]+)\s*ms\s*\/\s*(\d+)\s*runs/);
        if (m) { t.evalMs = Number(m[1]); t.evalRuns = Number(m[2]); }
    }
    return t;
}

async function cmdBench(lib, opts) {
    const threads = needInt(opts, "threads", 2);
    const nPrompt = needInt(opts, "prompt-tokens", 64);
    const nGen = needInt(opts, "n", 64);
    const runs = needInt(opts, "runs", 3);
    if (nPrompt < 1 || nGen < 1 || runs < 1) throw new Error("prompt-tokens, n and runs must be >= 1");
    let infoLines = [];
    const llama = await openLlama(lib, (m) => infoLines.push(m));
    const {model, context} = await openContext(llama, {kv: "f16", fa: "auto", ...opts, threads: String(threads),
        ctx: opts.ctx ?? String(nPrompt + nGen + 8)},
        {batchSize: nPrompt, performanceTracking: true});
    const seq = context.getSequence();
    // n_vocab is not exposed directly; one probe evaluation returns every logit.
    const probe = await seq.controlledEvaluate([[model.tokens.bos ?? 0, {generateNext: {logits: true}}]]);
    const nVocab = probe[0].next.logits.size;
    // Fixed pseudo-random prompt ids, away from the special tokens at the start of most vocabs.
    const prompt = [];
    let s = 12345;
    for (let i = 0; i < nPrompt; i++) {
        s = (s * 1103515245 + 12345) % 2147483648;
        prompt.push(i === 0 && model.tokens.bos != null ? model.tokens.bos : 3 + (s % Math.max(1, nVocab - 3)));
    }
    const greedy = {generateNext: {token: true}};
    const per = [];
    for (let r = 0; r < runs; r++) {
        await seq.clearHistory();
        await context.printTimings(); // resets the counters
        infoLines = [];
        const t0 = performance.now();
        let res = await seq.controlledEvaluate(prompt.map((t, i) => (i === nPrompt - 1 ? [t, greedy] : t)));
        const t1 = performance.now();
        let tok = res[nPrompt - 1].next.token;
        for (let i = 1; i < nGen; i++) {
            res = await seq.controlledEvaluate([[tok, greedy]]);
            tok = res[0].next.token;
        }
        const t2 = performance.now();
        infoLines = [];
        await context.printTimings();
        const tm = parseTimings(infoLines);
        const run = {
            wall_prompt_tps: nPrompt / ((t1 - t0) / 1000),
            wall_decode_tps: (nGen - 1) / ((t2 - t1) / 1000),
        };
        if (tm.promptMs > 0 && tm.evalMs > 0) {
            run.prompt_tps = tm.promptTokens / (tm.promptMs / 1000);
            run.decode_tps = tm.evalRuns / (tm.evalMs / 1000);
            run.source = "llama_perf";
        } else {
            run.prompt_tps = run.wall_prompt_tps;
            run.decode_tps = run.wall_decode_tps;
            run.source = "wall";
        }
        per.push(run);
    }
    const out = {
        engine: "llama.cpp",
        via: "node-llama-cpp@3.22.1",
        model: opts.model,
        threads,
        prompt_tokens: nPrompt,
        gen_tokens: nGen,
        runs,
        kv: kvType(opts.kv ?? "f16"),
        flash_attn: context.flashAttention,
        context_threads: context.idealThreads,
        timing_source: per.every((r) => r.source === "llama_perf") ? "llama_perf" : "wall",
        prompt_tps: median(per.map((r) => r.prompt_tps)),
        decode_tps: median(per.map((r) => r.decode_tps)),
        wall_prompt_tps: median(per.map((r) => r.wall_prompt_tps)),
        wall_decode_tps: median(per.map((r) => r.wall_decode_tps)),
        per_run: per,
    };
    process.stdout.write(JSON.stringify(out) + "\n");
    await context.dispose();
    await model.dispose();
    await llama.dispose();
}

// llama.cpp's perplexity scheme: the text is tokenized with BOS, cut into chunks of n_ctx tokens,
// each chunk's first token is replaced by BOS (when the vocabulary adds one), and only the second
// half of every chunk is scored (positions n_ctx/2 .. n_ctx-2 predicting the next token).
async function perplexityRun(llama, opts) {
    const text = fs.readFileSync(needStr(opts, "text-file"), "utf8");
    const nCtx = needInt(opts, "ctx", 128);
    const {model, context} = await openContext(llama, opts, {batchSize: nCtx});
    try {
        return await perplexityOf(model, context, text, nCtx, opts);
    } finally {
        await context.dispose();
        await model.dispose();
    }
}

async function perplexityOf(model, context, text, nCtx, opts) {
    const addBos = model.tokens.shouldPrependBosToken && model.tokens.bos != null;
    // As llama.cpp's tool: tokenize with add_special (BOS/EOS per vocabulary), no special parsing.
    const all = model.tokenize(text, false);
    if (addBos) all.unshift(model.tokens.bos);
    if (model.tokens.shouldAppendEosToken && model.tokens.eos != null) all.push(model.tokens.eos);
    if (all.length < 2 * nCtx) throw new Error(`need at least ${2 * nCtx} tokens for a context of ${nCtx}, got ${all.length}`);
    let nChunks = Math.floor(all.length / nCtx);
    if (opts.chunks !== undefined) nChunks = Math.min(nChunks, needInt(opts, "chunks"));
    const first = nCtx >> 1;
    const seq = context.getSequence();
    let nll = 0;
    let count = 0;
    for (let c = 0; c < nChunks; c++) {
        const chunk = all.slice(c * nCtx, (c + 1) * nCtx);
        if (addBos) chunk[0] = model.tokens.bos;
        await seq.clearHistory();
        const items = chunk.map((t, i) => (i >= first && i < nCtx - 1
            ? [t, {generateNext: {totalLogitWeight: true,
                logits: {filter: {tokens: [chunk[i + 1]], includeTop: 1}}}}]
            : t));
        const res = await seq.controlledEvaluate(items);
        for (let i = first; i < nCtx - 1; i++) {
            const nx = res[i].next;
            let max = -Infinity;
            for (const v of nx.logits.values()) max = Math.max(max, v);
            const lp = nx.logits.get(chunk[i + 1]) - max - Math.log(nx.totalLogitWeight);
            nll -= lp;
            count++;
        }
    }
    return {ppl: Math.exp(nll / count), nll_mean: nll / count, n_tokens_scored: count,
        n_chunks: nChunks, n_ctx: nCtx, n_tokens: all.length};
}

async function cmdPerplexity(lib, opts) {
    const llama = await openLlama(lib);
    const out = await perplexityRun(llama, opts);
    process.stdout.write(JSON.stringify(out) + "\n");
    await llama.dispose();
}

async function main() {
    const [cmd, ...rest] = process.argv.slice(2);
    const cmds = {tokenize: cmdTokenize, generate: cmdGenerate, batch: cmdBatch, bench: cmdBench,
        perplexity: cmdPerplexity};
    if (!cmds[cmd]) {
        console.error("usage: llama_ref.mjs tokenize|generate|batch|bench|perplexity --model F ...");
        process.exit(2);
    }
    let opts;
    try {
        opts = parseArgs(rest);
    } catch (e) {
        console.error(`llama_ref: ${e.message}`);
        process.exit(2);
    }
    const lib = await loadLib();
    try {
        await cmds[cmd](lib, opts);
    } catch (e) {
        console.error(`llama_ref ${cmd}: ${e.message ?? e}`);
        process.exit(1);
    }
}

main();
