// The chat page (server/web/index.html, served at /) in a headless Chromium driven by
// playwright-core, against a `hearth serve` started here: no request leaves the server's
// host, no console errors, a message streams into an assistant reply equal to the greedy
// reference (hearth run on the ChatML text), Stop aborts a generation, a wrong API key shows
// an error in the page, the layout holds at phone width.
// Run by ctest (tests/scripts/server_clients.cmake) with HEARTH_BIN and HEARTH_SRC set.
// Browser: HEARTH_CHROMIUM, else Debian's /usr/bin/chromium; without one the test skips.
import { existsSync } from 'node:fs';
import { SKIP, assert, chatml, cutAtChatStops, env, eq, greedy, run, step, withServer } from './lib.mjs';

const chromiumPath = process.env.HEARTH_CHROMIUM || '/usr/bin/chromium';
if (!existsSync(chromiumPath)) {
    console.log(`SKIP: no Chromium at ${chromiumPath} (Debian: apt-get install chromium; or set HEARTH_CHROMIUM)`);
    process.exit(SKIP);
}
let chromium;
try {
    ({ chromium } = await import('playwright-core'));
} catch (e) {
    console.log(`SKIP: playwright-core is not installed (scripts/server-test-setup.sh): ${e.message}`);
    process.exit(SKIP);
}

env(); // HEARTH_BIN, HEARTH_SRC and the model, else exit 2
const KEY = 'hearth-web-key';

// Every request of a context is recorded; any to another origin is refused and reported.
async function newContext(browser, origin, opts = {}) {
    const ctx = await browser.newContext(opts);
    const rec = { requests: [], foreign: [], console: [], pageErrors: [] };
    await ctx.route('**/*', (route) => {
        const url = route.request().url();
        rec.requests.push(url);
        if (url.startsWith('data:') || new URL(url).origin === origin) return route.continue();
        rec.foreign.push(url);
        return route.abort('blockedbyclient');
    });
    ctx.on('page', (page) => {
        page.on('console', (m) => { if (m.type() === 'error') rec.console.push(m.text()); });
        page.on('pageerror', (e) => rec.pageErrors.push(String(e)));
    });
    return { ctx, rec };
}

// Runs in the browser before the page's own script (also on about:blank, where storage is denied).
function setKey(k) {
    try {
        if (location.protocol === 'http:' && !localStorage.getItem('hearth.apiKey')) localStorage.setItem('hearth.apiKey', k);
    } catch { /* no storage for this document */ }
}

const replyDone = '#messages .msg.assistant:not([data-state="streaming"])';

run(() => withServer(['--api-key', KEY, '--parallel', '2'], async (server) => {
    console.log(`# hearth serve at ${server.base}`);
    const origin = new URL(server.base).origin;
    let browser;
    try {
        browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox'], timeout: 60000 });
    } catch (e) {
        console.log(`SKIP: Chromium at ${chromiumPath} does not start: ${e.message.split('\n')[0]}`);
        await server.stop();
        process.exit(SKIP);
    }
    try {
        const main = await newContext(browser, origin);
        // the key is in local storage before the page's script runs, as if typed earlier
        await main.ctx.addInitScript(setKey, KEY);
        const page = await main.ctx.newPage();
        page.setDefaultTimeout(30000);
        const chatBodies = [];
        page.on('request', (r) => {
            if (r.url().endsWith('/v1/chat/completions')) chatBodies.push({ body: r.postDataJSON(), auth: r.headers()['authorization'] });
        });

        await step('GET / serves the page: one HTML file, no other host named, labelled controls', async () => {
            const res = await page.goto(`${server.base}/`);
            eq(res.status(), 200, 'status');
            assert(/^text\/html/.test(res.headers()['content-type'] || ''), `content-type ${res.headers()['content-type']}`);
            const html = await res.text();
            const ext = html.match(/(?:src|href|action)\s*=\s*["']?(?:https?:)?\/\/[^"'\s>]*/gi);
            assert(!ext, `the page references other hosts: ${ext}`);
            assert(!/@import|url\(\s*["']?(?:https?:)?\/\//i.test(html), 'the page imports remote CSS');
            for (const id of ['#prompt', '#send', '#stop', '#messages', '#system', '#temperature', '#max-tokens', '#api-key']) {
                eq(await page.locator(id).count(), 1, `${id} count`);
            }
            for (const label of ['Message', 'System prompt', 'Temperature', 'Max tokens', 'API key']) {
                eq(await page.getByLabel(label, { exact: true }).count(), 1, `control labelled "${label}"`);
            }
            assert(await page.locator('#stop').isDisabled(), 'Stop is enabled while idle');
            assert(await page.locator('#send').isEnabled(), 'Send is disabled while idle');
            eq(await page.inputValue('#api-key'), KEY, 'API key field filled from local storage');
            const models = await (await fetch(`${server.base}/v1/models`, { headers: { Authorization: `Bearer ${KEY}` } })).json();
            await page.waitForFunction(() => document.getElementById('model').textContent.length > 0, null, { timeout: 10000 });
            eq(await page.textContent('#model'), models.data[0].id, 'model name shown (the first of /v1/models)');
        });

        const system = 'Thou art a scribe.';
        const question = 'Who made the heaven\nand the earth?';
        await step('Shift+Enter adds a line, Enter sends; the reply streams in and equals the greedy reference', async () => {
            await page.locator('#settings summary').click();
            await page.fill('#system', system);
            await page.fill('#temperature', '0');
            await page.fill('#max-tokens', '24');
            await page.locator('#prompt').click();
            await page.keyboard.type('Who made the heaven');
            await page.keyboard.press('Shift+Enter');
            await page.keyboard.type('and the earth?');
            eq(await page.inputValue('#prompt'), question, 'prompt after Shift+Enter');
            eq(await page.locator('#messages .msg').count(), 0, 'messages before Enter');
            await page.keyboard.press('Enter');
            await page.locator('#messages .msg.user').first().waitFor();
            eq(await page.locator('#messages .msg.user .content').first().textContent(), question, 'user message');
            eq(await page.inputValue('#prompt'), '', 'prompt cleared after sending');
            await page.locator(replyDone).first().waitFor({ timeout: 60000 });
            const msg = page.locator('#messages .msg.assistant').first();
            eq(await msg.getAttribute('data-state'), 'done', 'assistant message state');
            const text = await msg.locator('.content').textContent();
            assert(text.length > 0, 'empty assistant reply');
            const expected = cutAtChatStops(greedy(chatml([{ role: 'system', content: system }, { role: 'user', content: question }]), 24)).text;
            eq(text, expected, 'reply (reference: hearth run --temp 0 on the ChatML text)');
            eq(chatBodies.length, 1, 'chat requests');
            const { body, auth } = chatBodies[0];
            eq(auth, `Bearer ${KEY}`, 'Authorization header');
            eq(body.stream, true, 'stream');
            eq(body.temperature, 0, 'temperature');
            eq(body.max_tokens, 24, 'max_tokens');
            eq(body.messages, [{ role: 'system', content: system }, { role: 'user', content: question }], 'messages');
            assert(await page.locator('#error').isHidden(), `error shown: ${await page.locator('#error').textContent()}`);
            assert(await page.locator('#send').isEnabled(), 'Send disabled after the reply');
        });

        await step('a second turn sends the whole conversation', async () => {
            await page.fill('#prompt', 'And then?');
            await page.click('#send');
            await page.waitForFunction(() => document.body.dataset.busy === 'false' && document.querySelectorAll('#messages .msg').length !== 3,
                null, { timeout: 60000 });
            const first = await page.locator('#messages .msg.assistant .content').first().textContent();
            eq(chatBodies.length, 2, 'chat requests');
            eq(chatBodies[1].body.messages, [
                { role: 'system', content: system }, { role: 'user', content: question },
                { role: 'assistant', content: first }, { role: 'user', content: 'And then?' },
            ], 'messages of the second turn');
            // the bundled model's context is small: a second turn may be refused, and then the page says so
            const n = await page.locator('#messages .msg.assistant').count();
            if (n === 2) eq(await page.locator('#messages .msg.assistant').nth(1).getAttribute('data-state'), 'done', 'second reply state');
            else assert(await page.locator('#error').isVisible(), 'the second turn failed without an error shown');
            await page.click('#clear');
            eq(await page.locator('#messages .msg').count(), 0, 'messages after New chat');
            assert(await page.locator('#error').isHidden(), 'New chat left the error shown');
        });

        await step('Stop aborts a long generation; the page and the server carry on', async () => {
            // the reply is throttled on the wire so that it is still streaming when Stop is pressed
            const cdp = await main.ctx.newCDPSession(page);
            await cdp.send('Network.enable');
            await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: 1500, uploadThroughput: -1 });
            await page.fill('#system', '');
            // greedy: the reference reply runs the full 200 tokens (no end-of-text early on)
            await page.fill('#temperature', '0');
            await page.fill('#max-tokens', '200');
            await page.fill('#prompt', 'And it came to pass');
            await page.click('#send');
            const msg = page.locator('#messages .msg.assistant').first();
            await page.waitForFunction(() => {
                const m = document.querySelector('#messages .msg.assistant');
                return m && m.dataset.state === 'streaming' && m.querySelector('.content').textContent.length > 0;
            }, null, { timeout: 30000 });
            assert(await page.locator('#stop').isEnabled(), 'Stop is disabled while streaming');
            assert(await page.locator('#send').isDisabled(), 'Send is enabled while streaming');
            await page.click('#stop');
            await page.locator(replyDone).first().waitFor({ timeout: 10000 });
            eq(await msg.getAttribute('data-state'), 'stopped', 'state after Stop');
            const partial = await msg.locator('.content').textContent();
            assert(partial.length > 0, 'the partial reply was dropped');
            const full = cutAtChatStops(greedy(chatml([{ role: 'user', content: 'And it came to pass' }]), 200)).text;
            assert(partial.length < full.length, `Stop came too late: ${partial.length} of ${full.length} characters shown`);
            eq(partial, full.slice(0, partial.length), 'partial reply (a prefix of the greedy reference)');
            await page.waitForTimeout(500);
            eq(await msg.locator('.content').textContent(), partial, 'text after Stop (it kept growing)');
            assert(await page.locator('#error').isHidden(), `error shown after Stop: ${await page.locator('#error').textContent()}`);
            assert(await page.locator('#stop').isDisabled(), 'Stop still enabled');
            await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
            await cdp.detach();
            await page.click('#clear');
            await page.fill('#temperature', '0');
            await page.fill('#max-tokens', '8');
            await page.fill('#prompt', 'In the beginning');
            await page.click('#send');
            await page.locator(replyDone).first().waitFor({ timeout: 60000 });
            eq(await page.locator('#messages .msg.assistant').first().getAttribute('data-state'), 'done', 'next reply state');
            const res = await fetch(`${server.base}/health`);
            eq(res.status, 200, '/health after Stop');
        });

        await step('no request went to another host, no console errors', async () => {
            eq(main.rec.foreign, [], 'requests to other hosts');
            eq(main.rec.pageErrors, [], 'page errors');
            eq(main.rec.console, [], 'console errors');
            assert(main.rec.requests.some((u) => u.endsWith('/v1/chat/completions')), 'no chat request was seen');
        });

        await step('a wrong API key shows an error in the page, and the text comes back for a retry', async () => {
            const other = await newContext(browser, origin);
            const p = await other.ctx.newPage();
            p.setDefaultTimeout(30000);
            await p.goto(`${server.base}/`);
            await p.locator('#settings summary').click();
            await p.fill('#api-key', 'wrong-key');
            await p.press('#api-key', 'Tab');
            await p.fill('#prompt', 'Hello');
            await p.press('#prompt', 'Enter');
            await p.locator('#error').waitFor({ state: 'visible' });
            const err = await p.locator('#error').textContent();
            assert(/401/.test(err), `the error does not give the status: ${JSON.stringify(err)}`);
            eq(await p.locator('#messages .msg').count(), 0, 'messages left after the failed request');
            eq(await p.inputValue('#prompt'), 'Hello', 'prompt after the error');
            assert(await p.locator('#send').isEnabled(), 'Send disabled after the error');
            await p.reload();
            eq(await p.inputValue('#api-key'), 'wrong-key', 'API key kept in local storage');
            eq(other.rec.foreign, [], 'requests to other hosts');
            eq(other.rec.pageErrors, [], 'page errors');
            await other.ctx.close();
        });

        await step('phone width (360 px): no sideways scrolling, controls on screen', async () => {
            const small = await newContext(browser, origin, { viewport: { width: 360, height: 640 } });
            await small.ctx.addInitScript(setKey, KEY);
            await small.ctx.addInitScript(() => { try { localStorage.setItem('hearth.maxTokens', '16'); } catch { /* about:blank */ } });
            const p = await small.ctx.newPage();
            await p.goto(`${server.base}/`);
            await p.fill('#prompt', 'Blessed are the');
            await p.click('#send');
            await p.locator(replyDone).first().waitFor({ timeout: 60000 });
            const over = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
            assert(over <= 0, `the page is ${over} px wider than the screen`);
            for (const id of ['#prompt', '#send', '#stop']) {
                const b = await p.locator(id).boundingBox();
                assert(b && b.x >= 0 && b.x + b.width <= 360 && b.y + b.height <= 640, `${id} is off screen: ${JSON.stringify(b)}`);
            }
            eq(small.rec.console, [], 'console errors');
            await small.ctx.close();
        });
    } finally {
        await browser.close().catch(() => {});
    }
}), 'web page');
