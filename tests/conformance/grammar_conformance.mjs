#!/usr/bin/env node
// Grammar conformance with llama.cpp: greedy generation under the same GBNF grammar must give
// the same tokens in Hearth (`hearth run --temp 0 --grammar-file F --dump D`) and in llama.cpp's
// grammar sampler (node-llama-cpp 3.22.1: LlamaContextSequence.evaluate with temperature 0 and a
// LlamaGrammarEvaluationState, which applies llama_sampler_init_grammar before greedy choice).
// Hearth's prompt tokens (from its dump) are fed to llama.cpp, so tokenizers play no part.
// Outputs that finished are checked complete under llama.cpp's own grammar (isTextCompatible).
//
// Grammars: the llama.cpp grammars shipped inside node-llama-cpp (llama/grammars/*.gbnf, the
// same files as the source bundle's grammars/ folder; read at test time, never copied here)
// and our own (JSON object, lists, numbers, a tool call).
// Models: models/bible-drelu.gguf (computed as llama.cpp does, with SwiGLU) and a small synthetic
// models (`hearth synth`: byte-level BPE, and SentencePiece with byte-fallback tokens).
//
//   grammar_conformance.mjs --hearth BIN --work DIR [--only NAME,...]
// Exit 0 all agree, 1 a mismatch, 77 node-llama-cpp absent.
import fs from "node:fs";
import path from "node:path";
import {spawnSync} from "node:child_process";
import {fileURLToPath} from "node:url";

const SKIP = 77;
const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const N_GEN = 20;
// The synthetic models run the grammars that stress what differs between vocabularies (UTF-8
// split across tokens, byte-fallback tokens, wide classes); bible-drelu runs every grammar.
const SYNTH_SET = ["japanese", "json", "list", "english", "own-json-object", "own-tool-call"];

const OWN = {
    "own-json-object": String.raw`root ::= "{" ws pair ("," ws pair)* "}"
pair ::= str ":" ws val ws
val ::= str | num | "true" | "false" | "null"
str ::= "\"" [a-z ]{1,12} "\""
num ::= "-"? [0-9]{1,6}
ws ::= " "?`,
    "own-list": String.raw`root ::= ("- " item "\n"){2,4}
item ::= [A-Za-z] [a-z ,]{0,20}`,
    "own-numbers": String.raw`root ::= num ("," " "? num)*
num ::= "-"? ([1-9] [0-9]* | "0") ("." [0-9]{1,3})?`,
    "own-tool-call": String.raw`root ::= "<tool_call>" ws "{" ws "\"name\":" ws name "," ws "\"arguments\":" ws args ws "}" ws "</tool_call>"
name ::= "\"get_weather\"" | "\"search\""
args ::= "{" ws "\"q\":" ws "\"" [^"\\\x00-\x1F]{0,16} "\"" ws "}"
ws ::= [ \n]?`,
};

function parseArgs(argv) {
    const o = {};
    for (let i = 0; i < argv.length; i++) if (argv[i].startsWith("--")) o[argv[i].slice(2)] = argv[++i];
    return o;
}

function run(cmd, args) {
    const r = spawnSync(cmd, args, {maxBuffer: 1 << 28, encoding: "utf8", timeout: 60000});
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")}: exit ${r.status}\n${(r.stderr || "").trim().split("\n").slice(-4).join("\n")}`);
    return r;
}

function grammars(only) {
    const dir = path.join(here, "node_modules/node-llama-cpp/llama/grammars");
    const out = [];
    for (const f of fs.readdirSync(dir).sort())
        if (f.endsWith(".gbnf")) out.push({name: f.replace(/\.gbnf$/, ""), text: fs.readFileSync(path.join(dir, f), "utf8")});
    for (const [name, text] of Object.entries(OWN)) out.push({name, text});
    return only ? out.filter((g) => only.includes(g.name)) : out;
}

function hearthGreedy(o, model, extra, prompt, gfile, dump) {
    run(o.hearth, ["run", "-m", model, ...extra, "-p", prompt, "-n", String(N_GEN), "--temp", "0", "-t", "1", "-c", "256",
        "-ctk", "f32", "-ctv", "f32", "--gpu", "off", "--grammar-file", gfile, "--dump", dump, "--no-display-prompt"]);
    const d = JSON.parse(fs.readFileSync(dump, "utf8"));
    const tokens = Array.isArray(d.steps) ? d.steps.map((s) => s.token) : d.tokens;
    return {prompt: d.prompt_tokens, tokens};
}

async function llamaGreedy(lib, llama, ctx, model, prompt, gtext) {
    const grammar = await llama.createGrammar({grammar: gtext});
    const state = new lib.LlamaGrammarEvaluationState({model, grammar});
    const seq = ctx.getSequence();
    const out = [];
    try {
        for await (const t of seq.evaluate(prompt, {temperature: 0, grammarEvaluationState: state, yieldEogToken: true})) {
            out.push(t);
            if (model.isEogToken(t) || out.length >= N_GEN) break;
        }
    } finally {
        seq.dispose();
    }
    return {tokens: out, grammar};
}

async function main() {
    const o = parseArgs(process.argv.slice(2));
    let lib;
    try {
        lib = await import("node-llama-cpp");
    } catch {
        console.log("SKIP: node-llama-cpp is not installed (run scripts/llama-ref-setup.sh)");
        process.exit(SKIP);
    }
    fs.mkdirSync(o.work, {recursive: true});
    const synth = (tok, seed) => {
        const f = path.join(o.work, `grammar-synth-${tok}.gguf`);
        run(o.hearth, ["synth", "-o", f, "--arch", "llama", "--type", "f32", "--tokenizer", tok, "--n-embd", "64",
            "--n-layer", "2", "--n-head", "4", "--n-head-kv", "4", "--n-ff", "128", "--n-vocab", "2000", "--seed", String(seed)]);
        return f;
    };
    const models = [
        // llama.cpp runs this file's llama architecture with SwiGLU (it ignores the
        // hearth.ffn_activation key), so Hearth is told to compute the same FFN
        {name: "bible-drelu", file: path.join(root, "models/bible-drelu.gguf"), extra: ["--ffn-act", "swiglu"], prompt: "And God said"},
        {name: "synth-bpe", file: synth("bpe", 7), extra: [], prompt: "The answer is", set: SYNTH_SET},
        {name: "synth-spm", file: synth("spm", 11), extra: [], prompt: "Once upon a time", set: SYNTH_SET},
    ];
    const only = o.only ? o.only.split(",") : null;
    const gs = grammars(only);
    const llama = await lib.getLlama({gpu: false, build: "never", skipDownload: true, progressLogs: false, maxThreads: 0,
        logLevel: lib.LlamaLogLevel.error, logger: () => {}});
    let fails = 0, n = 0;
    for (const m of models) {
        const model = await llama.loadModel({modelPath: m.file, gpuLayers: 0, defaultContextFlashAttention: false});
        const ctx = await model.createContext({contextSize: 256, sequences: 1, threads: {ideal: 1, min: 1},
            flashAttention: false, experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32"});
        for (const g of gs) {
            if (m.set && !only && !m.set.includes(g.name)) continue;
            const gfile = path.join(o.work, `${g.name}.gbnf`);
            fs.writeFileSync(gfile, g.text);
            const label = `${m.name} / ${g.name}`;
            try {
                const h = hearthGreedy(o, m.file, m.extra, m.prompt, gfile, path.join(o.work, `${m.name}-${g.name}.json`));
                const l = await llamaGreedy(lib, llama, ctx, model, h.prompt, g.text);
                const strip = (ts) => ts.filter((t) => !model.isEogToken(t)).slice(0, N_GEN);
                const hs = strip(h.tokens), ls = strip(l.tokens);
                n++;
                if (JSON.stringify(hs) !== JSON.stringify(ls)) {
                    fails++;
                    const k = hs.findIndex((t, i) => t !== ls[i]);
                    console.log(`FAIL ${label}: first difference at token ${k < 0 ? hs.length : k}\n  hearth ${hs.join(" ")}\n  llama  ${ls.join(" ")}`);
                    continue;
                }
                const text = model.detokenize(hs, true);
                const ended = l.tokens.length && model.isEogToken(l.tokens[l.tokens.length - 1]);
                if (ended && !l.grammar._testText(text)) {
                    fails++;
                    console.log(`FAIL ${label}: finished output is not complete under the grammar: ${JSON.stringify(text)}`);
                    continue;
                }
                console.log(`ok   ${label}: ${hs.length} tokens${ended ? ", complete" : ""}: ${JSON.stringify(text).slice(0, 80)}`);
            } catch (e) {
                fails++;
                console.log(`FAIL ${label}: ${e.message}`);
            }
        }
        await ctx.dispose();
        await model.dispose();
    }
    await llama.dispose();
    console.log(fails ? `${fails} of ${n} grammar runs differ from llama.cpp` : `all ${n} grammar runs agree with llama.cpp`);
    process.exit(fails ? 1 : 0);
}

main().catch((e) => {
    console.error(`grammar_conformance: ${e.stack || e}`);
    process.exit(1);
});
