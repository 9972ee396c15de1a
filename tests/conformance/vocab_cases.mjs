#!/usr/bin/env node
// llama.cpp's own tokenizer test cases, and every pre-tokenizer against llama.cpp, run
// through `hearth tokenize`.
//
//   vocab_cases.mjs --hearth BIN --work DIR [--only NAME[,NAME]] [--bundle FILE]
//
// 1. The llama.cpp source that node-llama-cpp ships (a git bundle) holds real vocabularies,
//    models/ggml-vocab-<name>.gguf, with test texts beside them (.inp: texts separated by
//    "\n__ggml_vocab_test__\n" lines) and the ids Hugging Face's tokenizers give for them (.out:
//    one line per text, no BOS/EOS). llama.cpp's test-tokenizer-0 requires its tokenizer to
//    reproduce every line; this requires the same of Hearth (no special tokens added or parsed,
//    as that test calls it). The files are extracted from the bundle into DIR at test time;
//    nothing of them is kept in the repository. Vocabularies whose tokenizer model Hearth does
//    not implement (WordPiece, Unigram, RWKV) are reported as skipped with the reason; every
//    other one must match on all of its cases.
// 2. Only some pre-tokenizers have a vocabulary there, so for every tokenizer.ggml.pre name of
//    PRE_NAMES the qwen2 and llama-bpe vocabularies are rewritten to carry that name (two
//    vocabularies, as one's merges hide some word boundaries the other shows), and llama.cpp itself
//    (tests/conformance/llama_ref.mjs, node-llama-cpp's prebuilt library) tokenizes all the
//    texts of part 1 plus EXTRA with it; Hearth must give the same ids. (A name the prebuilt
//    llama.cpp refuses is reported as skipped.) llama.cpp's answers are kept in DIR/llama-cache
//    (see llamaBatchCached): a second run asks llama.cpp only about what changed.
// Each vocabulary's texts go to one `hearth tokenize --delimiter` run (one line of ids per text).
// Exit 0 all passed, 1 a failure, 77 the bundle or git is not available (one SKIP line).

import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import {spawnSync} from "node:child_process";
import {fileURLToPath} from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SKIP = 77;
const SEP = "\n__ggml_vocab_test__\n";
// tokenizer.ggml.model values of tokenizers Hearth does not have at all
const UNSUPPORTED = {bert: "WordPiece (bert)", t5: "Unigram (t5)", rwkv: "RWKV", plamo2: "PLaMo-2"};

function args() {
    const o = {bundle: path.join(HERE, "node_modules/node-llama-cpp/llama/gitRelease.bundle")};
    const a = process.argv.slice(2);
    for (let i = 0; i < a.length; i++) {
        if (a[i] === "--hearth") o.hearth = a[++i];
        else if (a[i] === "--work") o.work = a[++i];
        else if (a[i] === "--only") o.only = a[++i].split(",");
        else if (a[i] === "--bundle") o.bundle = a[++i];
        else throw new Error(`unknown argument ${a[i]}`);
    }
    if (!o.hearth || !o.work) throw new Error("usage: vocab_cases.mjs --hearth BIN --work DIR");
    return o;
}

function git(argv, opts = {}) {
    return spawnSync("git", argv, {maxBuffer: 1 << 30, ...opts});
}

// A bare clone of the bundle, made once per work directory.
function openBundle(o) {
    if (!fs.existsSync(o.bundle)) return {skip: `llama.cpp source bundle not installed (${o.bundle})`};
    if (git(["--version"]).status !== 0) return {skip: "git not found"};
    const repo = path.join(o.work, "llama.git");
    if (!fs.existsSync(path.join(repo, "HEAD"))) {
        fs.rmSync(repo, {recursive: true, force: true});
        const r = git(["clone", "--quiet", "--bare", o.bundle, repo]);
        if (r.status !== 0) throw new Error(`git clone --bare ${o.bundle}: ${r.stderr}`);
    }
    return {repo};
}

function show(repo, p) {
    const r = git(["--git-dir", repo, "show", `HEAD:${p}`]);
    if (r.status !== 0) return null;
    return r.stdout;
}

// Test texts as llama.cpp's test reads them: the last text runs to the end of the file.
function splitInputs(raw) {
    const out = [];
    let pos = 0;
    while (pos < raw.length) {
        const next = raw.indexOf(SEP, pos);
        if (next < 0) {
            out.push(raw.subarray(pos));
            break;
        }
        out.push(raw.subarray(pos, next));
        pos = next + SEP.length;
    }
    return out;
}

// The string value of a top-level GGUF metadata key (enough of a reader for tokenizer.ggml.model).
function ggufString(buf, want) {
    let off = 8;
    const u64 = () => { const v = Number(buf.readBigUInt64LE(off)); off += 8; return v; };
    const str = () => { const n = u64(); const s = buf.toString("utf8", off, off + n); off += n; return s; };
    const size = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8};
    const skip = (t) => {
        if (t === 8) { const n = u64(); off += n; return; }
        if (t === 9) { const et = buf.readUInt32LE(off); off += 4; const n = u64(); for (let i = 0; i < n; i++) skip(et); return; }
        off += size[t];
    };
    u64(); // tensor count
    const nkv = u64();
    for (let i = 0; i < nkv; i++) {
        const k = str();
        const t = buf.readUInt32LE(off);
        off += 4;
        if (k === want && t === 8) return str();
        skip(t);
    }
    return null;
}

// One tokenizer.ggml.pre name per pattern list Hearth implements (and the names whose
// settings differ: chatglm-bpe drops BOS, gemma4/sarvam-moe are SentencePiece-style BPE).
const PRE_NAMES = [
    "default", "gpt-2", "llama3", "dbrx", "chatglm-bpe", "qwen2", "qwen35", "jais-2", "deepseek-llm",
    "deepseek-v3", "spark2_5", "youtu", "deepseek-coder", "falcon", "starcoder", "command-r", "poro-chat",
    "viking", "tekken", "chameleon", "gpt-4o", "granite-embed-multi-97m", "tiny_aya", "kimi-k2", "superbpe",
    "bailingmoe", "seed-coder", "ufakzeka", "afmoe", "laguna", "exaone-moe", "gemma4", "sarvam-moe", "minicpm5",
];

// Texts that reach what the bundle's cases do not: scripts with their own pattern ranges,
// case changes inside words, combining marks, digit groups, long whitespace, image/sentinel tags.
const EXTRA = [
    "HelloWORLDFoo barBAZ qUX", "I'M fine, YOU'RE not. we'll see'd", "<sentinel:123> IMGIMGABCZ IMGIMGAAAAAZ",
    "\t\n    two  spaces\n\n\n", "नमस्ते दुनिया", "ภาษาไทย ๑๒๓", "한국어 텍스트 ㄱㄴ ㄅㄆㄇ",
    "日本語のテキスト、カタカナ！ｶﾀｶﾅ", "中文，标点。“引号”…", "e\u0301\u0302x a\u0308 \u0301start",
    "1 12 123 1234 12345 123456 1234567 \u0661\u0662\u0663\u0664 ½²", "x=1;y=22\r\n\r\nz", "Ελληνικά Русский ǅungla",
    "émoji 😀🎉 👍🏽", "a.b.c!d?e…f。g，h、i", "   leading and trailing   ", "\u00a0\u2003nbsp\u3000ideographic \u0085x",
    "foo's bar'S 'll O'Neil", "...!!!???", "$+<=>^`|~ {[()]} \\ @#%&*", "can't won't SHOULDN'T",
    "a" + " ".repeat(600) + "b", "9".repeat(40), "x\u200by\u2028z", "mIxEd123CaSe_snake-kebab",
    "(α|β), [γ]; {δ}: «ε»", "TAB\tTAB\t\tEND", "\n", " ", "",
];

function hearthLines(o, vocab, texts, dir) {
    const f = path.join(dir, "cases.txt");
    fs.writeFileSync(f, Buffer.concat(texts.flatMap((t) => [Buffer.isBuffer(t) ? t : Buffer.from(t, "utf8"), Buffer.from(SEP)])));
    const r = spawnSync(o.hearth, ["tokenize", "-m", vocab, "-f", f, "--ids", "--no-bos", "--no-special",
        "--delimiter", SEP], {encoding: "utf8", maxBuffer: 1 << 28});
    if (r.status !== 0) return {error: `hearth failed (${r.status}): ${(r.stderr || "").trim()}`};
    const lines = r.stdout.split("\n");
    lines.pop(); // after the last newline
    if (lines.length !== texts.length) return {error: `hearth printed ${lines.length} lines for ${texts.length} texts`};
    return {lines: lines.map((l) => l.trim())};
}

// Compares and prints one result line (and the first failures). Returns whether all matched.
function report(label, texts, got, want) {
    if (got.error) {
        console.log(`FAIL ${label}: ${got.error}`);
        return false;
    }
    const fails = [];
    texts.forEach((t, i) => {
        const w = want[i].trim().split(/\s+/).filter(Boolean).join(" ");
        if (got.lines[i] !== w)
            fails.push(`  case ${i} ${JSON.stringify(t.toString("utf8")).slice(0, 80)}\n` +
                `    hearth: ${got.lines[i]}\n    want:   ${w}`);
    });
    console.log(`${fails.length ? "FAIL" : "ok  "} ${label}: ${texts.length - fails.length}/${texts.length} cases`);
    for (const f of fails.slice(0, 6)) console.log(f);
    if (fails.length > 6) console.log(`  ... ${fails.length - 6} more`);
    return fails.length === 0;
}

// The GGUF with a string metadata value replaced (a vocabulary file: no tensors follow).
function withString(buf, key, value) {
    let off = 8;
    const u64 = () => { const v = Number(buf.readBigUInt64LE(off)); off += 8; return v; };
    const size = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8};
    const skip = (t) => {
        if (t === 8) { const n = u64(); off += n; return; }
        if (t === 9) { const et = buf.readUInt32LE(off); off += 4; const n = u64(); for (let i = 0; i < n; i++) skip(et); return; }
        off += size[t];
    };
    if (u64() !== 0) throw new Error("expected a vocabulary-only GGUF (no tensors)");
    const nkv = u64();
    for (let i = 0; i < nkv; i++) {
        const kn = u64();
        const k = buf.toString("utf8", off, off + kn);
        off += kn;
        const t = buf.readUInt32LE(off);
        off += 4;
        if (k === key && t === 8) {
            const at = off, n = Number(buf.readBigUInt64LE(off)), v = Buffer.from(value, "utf8");
            const len = Buffer.alloc(8);
            len.writeBigUInt64LE(BigInt(v.length));
            const out = Buffer.concat([buf.subarray(0, at), len, v, buf.subarray(at + 8 + n)]);
            return Buffer.concat([out, Buffer.alloc((32 - out.length % 32) % 32)]);
        }
        skip(t);
    }
    throw new Error(`no string ${key} in the GGUF`);
}

function llamaBatch(o, jobs) {
    const f = path.join(o.work, "llama-jobs.json");
    fs.writeFileSync(f, JSON.stringify(jobs));
    const r = spawnSync(process.execPath, [path.join(HERE, "llama_ref.mjs"), "batch", "--jobs", f],
        {encoding: "utf8", maxBuffer: 1 << 28, timeout: 600000});
    if (r.status !== 0) throw new Error(`llama_ref batch: ${r.status} ${(r.stderr || "").slice(-2000)}`);
    return JSON.parse(r.stdout);
}

const sha256 = (...parts) => {
    const h = crypto.createHash("sha256");
    for (const p of parts) h.update(p).update("\0");
    return h.digest("hex");
};

// What llama.cpp's answers depend on besides the job: this reference script and the installed
// prebuilt build (each file's name, size and time: a reinstall counts as a new build).
function refIdentity() {
    const parts = [fs.readFileSync(path.join(HERE, "llama_ref.mjs"))];
    for (const d of ["node_modules/node-llama-cpp", "node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"]) {
        const dir = path.join(HERE, d);
        if (!fs.existsSync(dir)) continue;
        for (const n of fs.readdirSync(dir).sort()) {
            const st = fs.statSync(path.join(dir, n));
            if (st.isFile()) parts.push(`${d}/${n} ${st.size} ${st.mtimeMs}`);
        }
    }
    return sha256(...parts);
}

// llamaBatch, with each answer kept in DIR/llama-cache under a hash of the job, the
// vocabulary's bytes (runs[i].vocabHash) and refIdentity(): loading a 150k-token vocabulary
// into llama.cpp costs ~0.4 s of CPU and there are 68 of them, so a second run in the same
// build directory asks llama.cpp only what changed. Hearth's side is run and compared on every
// run. Refusals are not kept (one could be a passing failure: out of memory, a timeout).
function llamaBatchCached(o, runs) {
    const dir = path.join(o.work, "llama-cache");
    fs.mkdirSync(dir, {recursive: true});
    const id = refIdentity();
    const keys = runs.map((r) => sha256(id, r.vocabHash, JSON.stringify({...r.job, model: null})));
    const file = (k) => path.join(dir, `${k}.json`);
    const read = (k) => {
        try {
            return JSON.parse(fs.readFileSync(file(k), "utf8"));
        } catch {
            return null; // absent, or cut short: asked again
        }
    };
    const out = keys.map(read);
    const miss = out.flatMap((v, i) => (v === null ? [i] : []));
    const got = miss.length ? llamaBatch(o, miss.map((i) => runs[i].job)) : [];
    miss.forEach((i, j) => {
        out[i] = got[j];
        if (got[j].error) return;
        fs.writeFileSync(`${file(keys[i])}.tmp`, JSON.stringify(got[j]));
        fs.renameSync(`${file(keys[i])}.tmp`, file(keys[i])); // whole or not at all
    });
    console.log(`(llama.cpp asked for ${miss.length} of ${runs.length}; the others from ${dir})`);
    return out;
}

function isValidUtf8(buf) {
    return Buffer.from(buf.toString("utf8"), "utf8").equals(buf);
}

async function main() {
    const o = args();
    fs.mkdirSync(o.work, {recursive: true});
    const b = openBundle(o);
    if (b.skip) {
        console.log(`SKIP ${b.skip}`);
        process.exit(SKIP);
    }
    const ls = git(["--git-dir", b.repo, "ls-tree", "--name-only", "HEAD", "models/"], {encoding: "utf8"});
    const names = ls.stdout.split("\n").map((l) => l.match(/^models\/ggml-vocab-(.+)\.gguf\.inp$/))
        .filter(Boolean).map((m) => m[1]).sort();
    if (names.length === 0) throw new Error("no models/ggml-vocab-*.gguf.inp in the bundle");
    let failed = 0;
    const allTexts = new Map(); // text -> Buffer, for part 2
    const bases = {qwen2: null, "llama-bpe": null};
    console.log("llama.cpp's vocabulary test cases:");
    for (const name of names) {
        const stem = `models/ggml-vocab-${name}.gguf`;
        const gguf = show(b.repo, stem), inp = show(b.repo, `${stem}.inp`), outb = show(b.repo, `${stem}.out`);
        if (!gguf || !inp || !outb) throw new Error(`${stem}: missing in the bundle`);
        const texts = splitInputs(inp);
        for (const t of texts) if (isValidUtf8(t)) allTexts.set(t.toString("utf8"), t);
        if (name in bases) bases[name] = gguf;
        if (o.only && !o.only.includes(name)) continue;
        const model = ggufString(gguf, "tokenizer.ggml.model");
        if (UNSUPPORTED[model]) {
            console.log(`skip ${name}: tokenizer model ${UNSUPPORTED[model]} is not implemented by Hearth`);
            continue;
        }
        const dir = path.join(o.work, name);
        fs.mkdirSync(dir, {recursive: true});
        const vocab = path.join(dir, "vocab.gguf");
        fs.writeFileSync(vocab, gguf);
        const want = outb.toString("utf8").split("\n");
        if (want.length && want[want.length - 1] === "") want.pop();
        if (texts.length !== want.length)
            throw new Error(`${stem}: ${texts.length} texts but ${want.length} expected lines`);
        if (!report(name, texts, hearthLines(o, vocab, texts, dir), want)) failed++;
    }

    for (const [n, g] of Object.entries(bases)) if (!g) throw new Error(`the bundle has no ${n} vocabulary`);
    for (const t of EXTRA) allTexts.set(t, Buffer.from(t, "utf8"));
    const texts = [...allTexts.values()];
    const pres = PRE_NAMES.filter((n) => !o.only || o.only.includes(n));
    const runs = Object.entries(bases).flatMap(([bn, g]) => pres.map((pre) => {
        const dir = path.join(o.work, `pre-${bn}-${pre}`);
        fs.mkdirSync(dir, {recursive: true});
        const vocab = path.join(dir, "vocab.gguf"), bytes = withString(g, "tokenizer.ggml.pre", pre);
        fs.writeFileSync(vocab, bytes);
        return {label: `pre ${pre} (${bn})`, pre, vocab, vocabHash: sha256(bytes), job: {cmd: "tokenize", model: vocab,
            texts: texts.map((t) => t.toString("utf8")), "no-special": true, "no-bos": true}};
    }));
    console.log(`every pre-tokenizer against llama.cpp (${texts.length} texts):`);
    const want = runs.length ? llamaBatchCached(o, runs) : [];
    runs.forEach((r, i) => {
        if (want[i].error) {
            console.log(`skip ${r.label}: llama.cpp refuses it: ${want[i].error.slice(0, 200)}`);
            return;
        }
        const got = hearthLines(o, r.vocab, texts, path.dirname(r.vocab));
        if (!report(r.label, texts, got, want[i].map((ids) => ids.join(" ")))) failed++;
    });
    process.exit(failed ? 1 : 0);
}

main().catch((e) => {
    console.error(e.stack ?? String(e));
    process.exit(1);
});
