#!/usr/bin/env node
// llama.cpp's prompt and decode speed for the benchmark scripts: a thin front for
// `tests/conformance/llama_ref.mjs bench`, where node-llama-cpp is installed
// (scripts/llama-ref-setup.sh).
//
//   node bench/llama_ref_bench.mjs --model F [--threads 2] [--prompt-tokens 64] [-n 64]
//        [--runs 3] [--kv f16|f32] [--fa on|off|auto]
//
// Prints one JSON line: prompt_tps and decode_tps are medians over the runs of llama.cpp's
// own counters (llama_perf_context: prompt eval time / eval time), timing_source says
// "llama_perf" or "wall" if those lines could not be read; wall_* are wall-clock figures
// around the evaluate calls (they include node-llama-cpp's per-call overhead, ~0.5 ms).
// Defaults are llama.cpp's: F16 KV cache, flash attention auto. Exit 77 when the reference
// is not installed. Note: with 2 threads on a busy machine llama.cpp's spinning barriers can
// slow it by 10x or more; run on a quiet machine.
import {spawnSync} from "node:child_process";
import path from "node:path";
import {fileURLToPath} from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const ref = path.join(here, "..", "tests", "conformance", "llama_ref.mjs");
const r = spawnSync(process.execPath, [ref, "bench", ...process.argv.slice(2)], {stdio: "inherit"});
process.exit(r.status ?? 1);
