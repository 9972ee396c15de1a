// Shared by the client tests: starts `hearth serve` on a free loopback port, stops it with
// SIGTERM, and a tiny sequential test runner whose checks report every failure.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

export const SKIP = 77; // ctest SKIP_RETURN_CODE

export function env() {
    const bin = process.env.HEARTH_BIN, src = process.env.HEARTH_SRC;
    if (!bin || !src) {
        console.error('HEARTH_BIN and HEARTH_SRC must be set (ctest sets them)');
        process.exit(2);
    }
    const model = process.env.HEARTH_TEST_MODEL || path.join(src, 'models', 'bible-drelu.gguf');
    if (!existsSync(model)) {
        console.error(`model not found: ${model}`);
        process.exit(2);
    }
    return { bin, src, model };
}

// Starts the server; resolves once it prints "listening on http://HOST:PORT" on stderr.
export function startServer(bin, args, { timeoutMs = 60000 } = {}) {
    return new Promise((resolve, reject) => {
        const child = spawn(bin, ['serve', ...args, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
        let stderr = '', stdout = '', done = false;
        const exited = new Promise((res) => child.on('exit', (code, signal) => res({ code, signal })));
        const fail = (why) => {
            if (done) return;
            done = true;
            clearTimeout(timer);
            try { child.kill('SIGKILL'); } catch { /* gone already */ }
            reject(new Error(`${why}\n--- server stderr ---\n${stderr.slice(-4000)}`));
        };
        const timer = setTimeout(() => fail(`hearth serve did not report a port within ${timeoutMs / 1000} s`), timeoutMs);
        child.stdout.on('data', (d) => { stdout += d; });
        child.stderr.on('data', (d) => {
            stderr += d;
            const m = /listening on (http:\/\/[^\s:]+:(\d+))/.exec(stderr);
            if (m && !done) {
                done = true;
                clearTimeout(timer);
                const base = m[1].replace('://0.0.0.0:', '://127.0.0.1:');
                resolve({
                    child, base, port: Number(m[2]),
                    log: () => stderr, out: () => stdout,
                    // SIGTERM; resolves with the exit {code, signal} (SIGKILL after timeoutMs)
                    stop: async (ms = 20000) => {
                        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
                        const t = setTimeout(() => child.kill('SIGKILL'), ms);
                        const r = await exited;
                        clearTimeout(t);
                        return r;
                    },
                    exited,
                });
            }
        });
        child.on('error', (e) => fail(`cannot start ${bin}: ${e.message}`));
        child.on('exit', (code, signal) => fail(`hearth serve exited early (code ${code}, signal ${signal})`));
    });
}

export class Runner {
    constructor(name) { this.name = name; this.failures = []; this.n = 0; this.t0 = Date.now(); }
    async step(title, fn) {
        this.n++;
        const t = Date.now();
        try {
            await fn();
            console.log(`ok ${this.n} - ${title} (${Date.now() - t} ms)`);
        } catch (e) {
            this.failures.push(title);
            console.log(`not ok ${this.n} - ${title}\n  ${String(e && e.stack || e).split('\n').join('\n  ')}`);
        }
    }
    finish() {
        const s = ((Date.now() - this.t0) / 1000).toFixed(1);
        if (this.failures.length) {
            console.log(`${this.name}: ${this.failures.length} of ${this.n} checks failed (${s} s): ${this.failures.join('; ')}`);
            return 1;
        }
        console.log(`${this.name}: all ${this.n} checks passed (${s} s)`);
        return 0;
    }
}

export function assert(cond, msg) {
    if (!cond) throw new Error(msg);
}

export function eq(actual, expected, what) {
    const a = JSON.stringify(actual), e = JSON.stringify(expected);
    if (a !== e) throw new Error(`${what}: expected ${e}, got ${a}`);
}
