// The chat page (server/web/index.html, served at /) in a headless Chromium driven by
// playwright-core, against a `hearth serve` started here: no request leaves the server's
// host, no console errors, a message streams into an assistant reply equal to the greedy
// reference (hearth run on the ChatML text), the reply's Markdown is rendered and nothing in a
// reply becomes markup, conversations survive a reload and can be switched, renamed and deleted,
// the last reply regenerated and the last question edited, settings persist and are sent (and
// left out, so the server's defaults apply, when empty), tokens/s and the context meter show the
// server's numbers, Stop aborts a generation, a wrong API key shows an error in the page, the
// layout holds at phone width.
// Run by ctest (tests/scripts/server_clients.cmake) with HEARTH_BIN and HEARTH_SRC set.
// Browser: HEARTH_CHROMIUM, else Debian's /usr/bin/chromium; without one the test skips.
import { existsSync } from 'node:fs';
import { SKIP, assert, chatml, countTokens, cutAtChatStops, env, eq, greedy, run, step, withServer } from './lib.mjs';

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

// The page's saved state: the conversations and the one shown.
function saved(page) {
    return page.evaluate(() => {
        const convs = JSON.parse(localStorage.getItem('hearth.conversations') || '[]');
        const id = localStorage.getItem('hearth.current');
        return { convs, id, cur: convs.find((c) => c.id === id) || null };
    });
}

// Waits until no reply is streaming and the page has n messages.
function idleWith(page, n) {
    return page.waitForFunction((k) => document.body.dataset.busy === 'false' &&
        document.querySelectorAll('#messages .msg').length === k &&
        !document.querySelector('#messages .msg[data-state="streaming"]'), n, { timeout: 60000 });
}

// Opens the settings unless they are open (a click on the summary would close them).
async function openSettings(page) {
    if (!(await page.locator('#settings').evaluate((e) => e.open))) await page.click('#settings summary');
}

const replyDone = '#messages .msg.assistant:not([data-state="streaming"])';
const listTitles = (page) => page.locator('#conversations li.conv .conv-open').allTextContents();

// A reply for the Markdown checks, sent by a stand-in for the server in pieces that cut through
// a code fence, a link and an HTML tag (each piece is re-rendered as it arrives).
const MD_REPLY = [
    '# Title\n\nSome **bold**, *italic* and `code <b>x</b>` text with [a link](https://example.org/a?b=1&c=2).\n\n',
    '1. first\n2. second\n   - nested\n\n- apple\n- pear\n\n``',
    '`js\nconst a = 1 < 2;\nif (a) console.log("<tag>");\n``',
    '`\n\nAfter the code.\n\n<script>window.__xss = 1</scr',
    'ipt>\n<img src=x onerror="window.__xss = 2">\n[bad](javascript:window.__xss=3)\n',
];
const MD_CODE = 'const a = 1 < 2;\nif (a) console.log("<tag>");';

function sseBody(pieces) {
    const ev = (o) => `data: ${JSON.stringify(o)}\n\n`;
    const base = { id: 'chatcmpl-md', object: 'chat.completion.chunk', created: 0, model: 'stand-in' };
    let s = ev({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
    for (const p of pieces) s += ev({ ...base, choices: [{ index: 0, delta: { content: p }, finish_reason: null }] });
    s += ev({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], truncated: true });
    s += ev({ ...base, choices: [], usage: { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 } });
    return s + 'data: [DONE]\n\n';
}

// Renderer cases: Markdown in, exact HTML out.
const MD_CASES = [
    ['a *b* c **d** ~~e~~', '<p>a <em>b</em> c <strong>d</strong> <del>e</del></p>'],
    ['2*3*4 and snake_case_name', '<p>2*3*4 and snake_case_name</p>'],
    ['<b>hi</b> & "q" \'s\'', '<p>&lt;b&gt;hi&lt;/b&gt; &amp; &quot;q&quot; &#39;s&#39;</p>'],
    ['line one\nline two', '<p>line one<br>line two</p>'],
    ['## Head *x*', '<h2>Head <em>x</em></h2>'],
    ['#hashtag', '<p>#hashtag</p>'],
    ['`a` and ``b`c``', '<p><code>a</code> and <code>b`c</code></p>'],
    ['\\*not em\\*', '<p>*not em*</p>'],
    ['3. three\n4. four', '<ol start="3"><li>three</li><li>four</li></ol>'],
    ['see\n1990. Then', '<p>see<br>1990. Then</p>'],
    ['Steps:\n- a\n- b', '<p>Steps:</p><ul><li>a</li><li>b</li></ul>'],
    ['- a\n\n- b', '<ul><li><p>a</p></li><li><p>b</p></li></ul>'],
    ['- a\n  - b\n- c', '<ul><li>a<ul><li>b</li></ul></li><li>c</li></ul>'],
    ['> quoted', '<blockquote><p>quoted</p></blockquote>'],
    ['---', '<hr>'],
    ['| a | b |\n|---|--:|\n| 1 | 2 |', '<table><thead><tr><th>a</th><th style="text-align:right">b</th></tr></thead><tbody><tr><td>1</td><td style="text-align:right">2</td></tr></tbody></table>'],
    ['```\n<x> & y\n```', '<div class="code"><div class="code-bar"><span class="lang">code</span><button type="button" class="copy small" aria-label="Copy code">Copy</button></div><pre><code>&lt;x&gt; &amp; y</code></pre></div>'],
    ['```py\nunfinished', '<div class="code"><div class="code-bar"><span class="lang">py</span><button type="button" class="copy small" aria-label="Copy code">Copy</button></div><pre><code class="language-py">unfinished</code></pre></div>'],
    ['[t](https://x.org/?a=1&b="2")', '<p><a href="https://x.org/?a=1&amp;b=&quot;2&quot;" target="_blank" rel="noopener noreferrer">t</a></p>'],
    ['see https://x.org/a.', '<p>see <a href="https://x.org/a" target="_blank" rel="noopener noreferrer">https://x.org/a</a>.</p>'],
    ['[x](javascript:alert)', '<p>[x](javascript:alert)</p>'],
    ['[x](JaVaScRiPt:alert)', '<p>[x](JaVaScRiPt:alert)</p>'],
    ['[x](\u0001javascript:alert)', '<p>[x](\u0001javascript:alert)</p>'],
    ['[x](data:text/html,hi)', '<p>[x](data:text/html,hi)</p>'],
    ['[t](https://x.org "a <b>")', '<p><a href="https://x.org" title="a &lt;b&gt;" target="_blank" rel="noopener noreferrer">t</a></p>'],
    ['```js title="<x>"\nx\n```', '<div class="code"><div class="code-bar"><span class="lang">js title=&quot;&lt;x&gt;&quot;</span><button type="button" class="copy small" aria-label="Copy code">Copy</button></div><pre><code class="language-js">x</code></pre></div>'],
    ['[`<i>`](https://x.org)', '<p><a href="https://x.org" target="_blank" rel="noopener noreferrer"><code>&lt;i&gt;</code></a></p>'],
];

// Checked in the page on random strings made of Markdown's and HTML's special characters: the
// rendered HTML holds only the renderer's own elements and attributes, links only safe addresses,
// and every '<' of the input shows as text.
function fuzzRenderer(n) {
    const md = window.hearth.markdown;
    const tags = new Set(['P', 'BR', 'STRONG', 'EM', 'DEL', 'CODE', 'PRE', 'A', 'UL', 'OL', 'LI', 'H1', 'H2', 'H3', 'H4', 'H5',
        'H6', 'HR', 'BLOCKQUOTE', 'TABLE', 'THEAD', 'TBODY', 'TR', 'TH', 'TD', 'DIV', 'SPAN', 'BUTTON']);
    const attrs = new Set(['href', 'title', 'target', 'rel', 'class', 'start', 'style', 'type', 'aria-label']);
    const alphabet = ['<', '>', '&', '"', "'", '`', '```', '*', '_', '~', '[', ']', '(', ')', '#', '!', '\\', '|', '-', '1.',
        '\n', '\n\n', ' ', 'a', 'script', 'img', ' onerror=', 'javascript:', 'https://x.org/', '\u0001', '\t', '> ', '=', '/'];
    let seed = 12345;
    const rnd = (k) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % k; };
    const problems = [];
    for (let t = 0; t < n && problems.length < 5; t++) {
        let s = '';
        for (let len = 1 + rnd(40); len > 0; len--) s += alphabet[rnd(alphabet.length)];
        const box = document.createElement('div');
        box.innerHTML = md(s);
        const lt = (s.match(/</g) || []).length;
        box.querySelectorAll('button.copy').forEach((e) => e.remove());
        for (const e of box.querySelectorAll('*')) {
            if (!tags.has(e.tagName)) problems.push(`element ${e.tagName} from ${JSON.stringify(s)}`);
            for (const a of e.attributes) if (!attrs.has(a.name)) problems.push(`attribute ${a.name} from ${JSON.stringify(s)}`);
            const href = e.getAttribute('href');
            if (href !== null && !/^https?:/i.test(new URL(href, location.href).protocol)) problems.push(`href ${href} from ${JSON.stringify(s)}`);
        }
        if ((box.textContent.match(/</g) || []).length !== lt) problems.push(`'<' lost or added in ${JSON.stringify(s)}`);
    }
    return problems;
}

run(() => withServer(['--api-key', KEY, '--parallel', '2'], async (server) => {
    console.log(`# hearth serve at ${server.base}`);
    const origin = new URL(server.base).origin;
    const auth = { headers: { Authorization: `Bearer ${KEY}` } };
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
        await main.ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
        const page = await main.ctx.newPage();
        page.setDefaultTimeout(30000);
        const chatBodies = [];
        page.on('request', (r) => {
            if (r.url().endsWith('/v1/chat/completions')) chatBodies.push({ body: r.postDataJSON(), auth: r.headers()['authorization'] });
        });
        const props = await (await fetch(`${server.base}/props`, auth)).json();
        const nCtx = server.ctx;

        await step('GET / serves the page: one HTML file, no other host named, labelled controls, the server\'s defaults', async () => {
            const res = await page.goto(`${server.base}/`);
            eq(res.status(), 200, 'status');
            assert(/^text\/html/.test(res.headers()['content-type'] || ''), `content-type ${res.headers()['content-type']}`);
            const html = await res.text();
            const ext = html.match(/(?:src|href|action)\s*=\s*["']?(?:https?:)?\/\/[^"'\s>]*/gi);
            assert(!ext, `the page references other hosts: ${ext}`);
            assert(!/@import|url\(\s*["']?(?:https?:)?\/\//i.test(html), 'the page imports remote CSS');
            for (const id of ['#prompt', '#send', '#stop', '#messages', '#system', '#temperature', '#top-p', '#max-tokens', '#api-key',
                '#conversations', '#context-text', '#context-meter', '#reset-settings', '#clear']) {
                eq(await page.locator(id).count(), 1, `${id} count`);
            }
            for (const label of ['Message', 'System prompt', 'Temperature', 'Top P', 'Max tokens', 'API key']) {
                eq(await page.getByLabel(label, { exact: true }).count(), 1, `control labelled "${label}"`);
            }
            assert(await page.locator('#stop').isDisabled(), 'Stop is enabled while idle');
            assert(await page.locator('#send').isEnabled(), 'Send is disabled while idle');
            eq(await page.inputValue('#api-key'), KEY, 'API key field filled from local storage');
            const models = await (await fetch(`${server.base}/v1/models`, auth)).json();
            await page.waitForFunction(() => document.getElementById('model').textContent.length > 0, null, { timeout: 10000 });
            eq(await page.textContent('#model'), models.data[0].id, 'model name shown (the first of /v1/models)');
            // /props against the server's own listening line and /v1/models
            eq(props.default_generation_settings.n_ctx, nCtx, '/props n_ctx (the listening line\'s ctx per slot)');
            eq(models.data[0].meta.n_ctx, nCtx, '/v1/models meta.n_ctx');
            const p = props.default_generation_settings.params;
            await page.waitForFunction((n) => document.getElementById('context-text').textContent === `0 / ${n}`, nCtx, { timeout: 10000 });
            for (const [id, v] of [['#temperature', p.temperature], ['#top-p', p.top_p], ['#max-tokens', p.n_predict]]) {
                const ph = await page.getAttribute(id, 'placeholder');
                assert(Math.abs(Number(ph) - v) < 1e-6, `${id} placeholder ${JSON.stringify(ph)}, the server's default is ${v}`);
                eq(await page.inputValue(id), '', `${id} empty (the server's default applies)`);
            }
            eq(await page.locator('#conversations li').count(), 0, 'saved conversations at first');
        });

        await step('Markdown renderer: exact HTML for each construct, no markup or unsafe link from any input', async () => {
            const got = await page.evaluate((cases) => cases.map(([src]) => window.hearth.markdown(src)), MD_CASES);
            const bad = MD_CASES.map(([src, want], i) => ({ src, want, got: got[i] })).filter((c) => c.got !== c.want);
            eq(bad, [], 'cases that render wrongly');
            eq(await page.evaluate(fuzzRenderer, 3000), [], 'random inputs: problems');
        });

        await step('a reply in Markdown renders (headings, emphasis, lists, links, code with a copy button); HTML in it is text', async () => {
            await page.route('**/v1/chat/completions', (route) => route.fulfill({
                status: 200, headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }, body: sseBody(MD_REPLY),
            }));
            try {
                await page.fill('#prompt', 'Show me Markdown');
                await page.click('#send');
                await idleWith(page, 2);
                const c = page.locator('#messages .msg.assistant .content');
                eq(await c.locator('h1').textContent(), 'Title', 'heading');
                eq(await c.locator('p strong').textContent(), 'bold', 'bold');
                eq(await c.locator('p em').textContent(), 'italic', 'italic');
                eq(await c.locator('p > code').textContent(), 'code <b>x</b>', 'inline code');
                const a = c.locator('p a');
                eq(await a.getAttribute('href'), 'https://example.org/a?b=1&c=2', 'link address');
                eq(await a.getAttribute('rel'), 'noopener noreferrer', 'link rel');
                eq(await c.locator('ol > li').count(), 2, 'ordered items');
                eq(await c.locator('ol > li ul > li').textContent(), 'nested', 'nested item');
                eq(await c.locator(':scope > ul > li').allTextContents(), ['apple', 'pear'], 'unordered items');
                eq(await c.locator('.code pre code').textContent(), MD_CODE, 'code block');
                eq(await c.locator('.code pre code').getAttribute('class'), 'language-js', 'code block language');
                eq(await c.locator('.code button.copy').count(), 1, 'copy buttons');
                // HTML in the reply: text, never elements, and nothing ran
                eq(await c.locator('script, img, b, tag').count(), 0, 'elements made from the reply\'s HTML');
                await page.waitForTimeout(100);
                eq(await page.evaluate(() => window.__xss), undefined, 'window.__xss (set by a script in the reply)');
                const text = await c.textContent();
                for (const s of ['<script>window.__xss = 1</script>', '<img src=x onerror="window.__xss = 2">', '[bad](javascript:window.__xss=3)'])
                    assert(text.includes(s), `the reply's ${JSON.stringify(s)} is not shown as text`);
                eq(await c.locator('a[href^="javascript"]').count(), 0, 'javascript: links');
                await c.locator('.code button.copy').click();
                await page.waitForFunction(() => document.querySelector('.code button.copy').textContent === 'Copied', null, { timeout: 5000 });
                eq(await page.evaluate(() => navigator.clipboard.readText()), MD_CODE, 'clipboard after Copy');
                eq((await saved(page)).cur.messages.map((m) => m.content), ['Show me Markdown', MD_REPLY.join('')], 'saved conversation (raw text)');
                eq(await page.textContent('#context-text'), `16 / ${nCtx}`, 'context meter (the stand-in\'s usage.total_tokens)');
                assert((await page.locator('#messages .msg.assistant .meta').textContent()).includes('older messages left out to fit the context'),
                       'no notice of the server\'s "truncated": true');
            } finally {
                // a clean state for the next steps, whatever failed here
                await page.unroute('**/v1/chat/completions');
                await idleWith(page, 2).catch(() => {});
                await page.click('#clear');
            }
            eq(await page.locator('#messages .msg').count(), 0, 'messages after New chat');
            eq(await listTitles(page), ['Show me Markdown'], 'conversation list');
        });

        const system = 'Thou art a scribe.';
        const question = 'Who made the heaven\nand the earth?';
        let firstReply = '';
        await step('Shift+Enter adds a line, Enter sends; the reply streams in, equals the greedy reference, shows tokens/s and the context', async () => {
            chatBodies.length = 0;
            await openSettings(page);
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
            const turn = [{ role: 'system', content: system }, { role: 'user', content: question }];
            const ref = cutAtChatStops(greedy(chatml(turn), 24));
            const st = await saved(page);
            firstReply = st.cur.messages[1].content;
            assert(firstReply.length > 0, 'empty assistant reply');
            eq(firstReply, ref.text, 'reply (reference: hearth run --temp 0 on the ChatML text)');
            eq(chatBodies.length, 1, 'chat requests');
            const { body, auth: sentAuth } = chatBodies[0];
            eq(sentAuth, `Bearer ${KEY}`, 'Authorization header');
            eq(body.stream, true, 'stream');
            eq(body.stream_options, { include_usage: true }, 'stream_options');
            eq(body.temperature, 0, 'temperature');
            eq(body.max_tokens, 24, 'max_tokens');
            assert(!('top_p' in body), `top_p sent although its field is empty: ${body.top_p}`);
            eq(body.messages, turn, 'messages');
            // tokens and the context from the server's usage; the prompt counted by hearth tokenize
            const meta = await msg.locator('.meta').textContent();
            const m = /(\d+) tokens? · ([\d.]+) tokens\/s/.exec(meta);
            assert(m, `no token count and tokens/s in ${JSON.stringify(meta)}`);
            if (!ref.cut) eq(Number(m[1]), 24, 'tokens (max_tokens reached)');
            assert(Number(m[1]) >= 1 && Number(m[1]) <= 24, `tokens ${m[1]}`);
            assert(Number(m[2]) > 0 && Number.isFinite(Number(m[2])), `tokens/s ${m[2]}`);
            const used = countTokens(chatml(turn)) + Number(m[1]);
            eq(await page.textContent('#context-text'), `${used} / ${nCtx}`, 'context meter text');
            const v = await page.evaluate(() => document.getElementById('context-meter').value);
            assert(Math.abs(v - used / nCtx) < 1e-9, `context meter value ${v}, expected ${used / nCtx}`);
            assert(await page.locator('#error').isHidden(), `error shown: ${await page.locator('#error').textContent()}`);
            assert(await page.locator('#send').isEnabled(), 'Send disabled after the reply');
            eq(await listTitles(page), ['Who made the heaven', 'Show me Markdown'], 'conversation list, newest first');
        });

        await step('a reload brings back the conversation, the list, the context meter and the settings', async () => {
            const meterBefore = await page.textContent('#context-text');
            await page.reload();
            await page.waitForFunction(() => document.getElementById('model').textContent.length > 0);
            // the meter's "/ n_ctx" comes from /props, fetched after the model's name: let it land
            // (the check below still requires the same text)
            await page.waitForFunction((t) => document.getElementById('context-text').textContent === t, meterBefore,
                { timeout: 10000 }).catch(() => {});
            eq(await page.locator('#messages .msg').count(), 2, 'messages after reload');
            eq(await page.locator('#messages .msg.user .content').textContent(), question, 'user message after reload');
            eq((await saved(page)).cur.messages[1].content, firstReply, 'reply after reload');
            assert(/\d+ tokens? · [\d.]+ tokens\/s/.test(await page.locator('#messages .msg.assistant .meta').textContent()), 'reply\'s figures after reload');
            eq(await page.textContent('#context-text'), meterBefore, 'context meter after reload');
            eq(await listTitles(page), ['Who made the heaven', 'Show me Markdown'], 'conversation list after reload');
            eq(await page.locator('#conversations li[aria-current="true"] .conv-open').textContent(), 'Who made the heaven', 'current conversation marked');
            eq(await page.inputValue('#system'), system, 'system prompt after reload');
            eq(await page.inputValue('#temperature'), '0', 'temperature after reload');
            eq(await page.inputValue('#max-tokens'), '24', 'max tokens after reload');
            eq(await page.inputValue('#top-p'), '', 'top p after reload');
        });

        await step('Regenerate replaces the last reply (sent without it, with the settings as they are now)', async () => {
            chatBodies.length = 0;
            await openSettings(page);
            await page.fill('#max-tokens', '8');
            await page.fill('#top-p', '0.5');
            eq(await page.locator('#messages .msg.assistant button.regenerate').count(), 1, 'Regenerate buttons');
            await page.click('#messages .msg.assistant button.regenerate');
            await idleWith(page, 2);
            eq(chatBodies.length, 1, 'chat requests');
            const turn = [{ role: 'system', content: system }, { role: 'user', content: question }];
            eq(chatBodies[0].body.messages, turn, 'messages sent');
            eq(chatBodies[0].body.max_tokens, 8, 'max_tokens');
            eq(chatBodies[0].body.top_p, 0.5, 'top_p');
            const st = await saved(page);
            eq(st.cur.messages.length, 2, 'saved messages');
            eq(st.cur.messages[1].content, cutAtChatStops(greedy(chatml(turn), 8)).text, 'new reply (reference: 8 greedy tokens)');
            assert(st.cur.messages[1].content !== firstReply || firstReply.length <= 8, 'the reply was not replaced');
            eq(await page.locator('#messages .msg.assistant').getAttribute('data-state'), 'done', 'state');
        });

        await step('Edit changes the last question and asks again; the old turn goes', async () => {
            chatBodies.length = 0;
            await page.click('#messages .msg.user button.edit');
            const box = page.locator('#messages .msg.user textarea.edit-box');
            eq(await box.inputValue(), question, 'edit box holds the question');
            await page.click('#messages .msg.user button.edit-cancel');
            eq(await page.locator('#messages .msg.user .content').textContent(), question, 'after Cancel');
            eq(chatBodies.length, 0, 'requests after Cancel');
            await page.click('#messages .msg.user button.edit');
            await box.fill('In the beginning');
            await page.click('#messages .msg.user button.edit-save');
            await idleWith(page, 2);
            const turn = [{ role: 'system', content: system }, { role: 'user', content: 'In the beginning' }];
            eq(chatBodies.length, 1, 'chat requests');
            eq(chatBodies[0].body.messages, turn, 'messages sent');
            eq(await page.locator('#messages .msg.user .content').textContent(), 'In the beginning', 'user message shown');
            const st = await saved(page);
            eq(st.cur.messages.map((m) => m.role), ['user', 'assistant'], 'saved roles');
            eq(st.cur.messages[0].content, 'In the beginning', 'saved question');
            eq(st.cur.messages[1].content, cutAtChatStops(greedy(chatml(turn), 8)).text, 'reply (reference)');
        });

        await step('a second turn sends the whole conversation', async () => {
            chatBodies.length = 0;
            const first = (await saved(page)).cur.messages[1].content;
            await page.fill('#prompt', 'And then?');
            await page.click('#send');
            await page.waitForFunction(() => document.body.dataset.busy === 'false' && document.querySelectorAll('#messages .msg').length !== 3,
                null, { timeout: 60000 });
            eq(chatBodies.length, 1, 'chat requests');
            eq(chatBodies[0].body.messages, [
                { role: 'system', content: system }, { role: 'user', content: 'In the beginning' },
                { role: 'assistant', content: first }, { role: 'user', content: 'And then?' },
            ], 'messages of the second turn');
            // the bundled model's context is small: a second turn may be refused, and then the page says so
            const n = await page.locator('#messages .msg.assistant').count();
            if (n === 2) eq(await page.locator('#messages .msg.assistant').nth(1).getAttribute('data-state'), 'done', 'second reply state');
            else assert(await page.locator('#error').isVisible(), 'the second turn failed without an error shown');
            await page.click('#clear');
            eq(await page.locator('#messages .msg').count(), 0, 'messages after New chat');
            assert(await page.locator('#error').isHidden(), 'New chat left the error shown');
            eq(await page.textContent('#context-text'), `0 / ${nCtx}`, 'context meter of a new chat');
        });

        await step('the list switches, renames and deletes conversations; all of it survives a reload', async () => {
            const before = (await saved(page)).convs;
            eq(before.length, 2, 'saved conversations');
            const scribe = before.find((c) => c.title === 'Who made the heaven');
            assert(scribe, 'the scribe conversation is saved under its first line');
            // switch
            await page.click('#conversations li.conv:has-text("Who made the heaven") .conv-open');
            eq(await page.locator('#messages .msg.user .content').first().textContent(), 'In the beginning', 'switched conversation shown');
            eq(await page.textContent('#context-text'), `${scribe.used} / ${nCtx}`, 'context meter of the switched conversation');
            await page.click('#conversations li.conv:has-text("Show me Markdown") .conv-open');
            eq(await page.locator('#messages .msg.assistant .content h1').textContent(), 'Title', 'the other conversation shown');
            eq(await page.textContent('#context-text'), `16 / ${nCtx}`, 'its context meter');
            // rename (Escape keeps the name, Enter sets it)
            await page.click('#conversations li.conv:has-text("Who made the heaven") .conv-rename');
            await page.fill('#conversations .conv-title-input', 'Nope');
            await page.press('#conversations .conv-title-input', 'Escape');
            eq(await listTitles(page), ['Who made the heaven', 'Show me Markdown'], 'titles after Escape');
            await page.click('#conversations li.conv:has-text("Who made the heaven") .conv-rename');
            await page.fill('#conversations .conv-title-input', 'Genesis');
            await page.press('#conversations .conv-title-input', 'Enter');
            eq(await listTitles(page), ['Genesis', 'Show me Markdown'], 'titles after rename');
            eq((await saved(page)).convs.find((c) => c.id === scribe.id).title, 'Genesis', 'saved title after rename');
            // delete: a dismissed confirmation keeps it; deleting the shown one shows the other
            page.once('dialog', (d) => d.dismiss());
            await page.click('#conversations li.conv:has-text("Show me Markdown") .conv-delete');
            eq(await page.locator('#conversations li.conv').count(), 2, 'conversations after a dismissed delete');
            page.once('dialog', (d) => d.accept());
            await page.click('#conversations li.conv:has-text("Show me Markdown") .conv-delete');
            eq(await listTitles(page), ['Genesis'], 'titles after delete');
            eq(await page.locator('#messages .msg.user .content').first().textContent(), 'In the beginning', 'shown after deleting the shown one');
            await page.reload();
            eq(await listTitles(page), ['Genesis'], 'titles after reload');
            const after = await saved(page);
            eq(after.convs.map((c) => c.title), ['Genesis'], 'saved titles');
            eq(after.cur && after.cur.id, scribe.id, 'the shown conversation after reload');
            // a new chat, then a reload: the new (still empty) chat stays shown
            await page.click('#clear');
            await page.reload();
            eq(await page.locator('#messages .msg').count(), 0, 'messages of a new chat after reload');
        });

        await step('Stop aborts a long generation; the page and the server carry on', async () => {
            // the reply is throttled on the wire so that it is still streaming when Stop is pressed
            const cdp = await main.ctx.newCDPSession(page);
            await cdp.send('Network.enable');
            await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: 1500, uploadThroughput: -1 });
            await openSettings(page);
            await page.click('#reset-settings');
            eq(await page.inputValue('#system'), '', 'system prompt after reset');
            eq(await page.inputValue('#top-p'), '', 'top p after reset');
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
            assert(await page.locator('#conversations li.conv button').first().isDisabled(), 'the list is usable while streaming');
            eq(await page.locator('#messages button.regenerate, #messages button.edit').count(), 0, 'Edit/Regenerate while streaming');
            await page.click('#stop');
            await page.locator(replyDone).first().waitFor({ timeout: 10000 });
            eq(await msg.getAttribute('data-state'), 'stopped', 'state after Stop');
            const partial = (await saved(page)).cur.messages[1].content;
            assert(partial.length > 0, 'the partial reply was dropped');
            const full = cutAtChatStops(greedy(chatml([{ role: 'user', content: 'And it came to pass' }]), 200)).text;
            assert(partial.length < full.length, `Stop came too late: ${partial.length} of ${full.length} characters shown`);
            eq(partial, full.slice(0, partial.length), 'partial reply (a prefix of the greedy reference)');
            const shown = await msg.locator('.content').textContent();
            await page.waitForTimeout(500);
            eq(await msg.locator('.content').textContent(), shown, 'text after Stop (it kept growing)');
            assert(/^stopped/.test(await msg.locator('.meta').textContent()), 'the reply is not marked stopped');
            assert(await page.locator('#error').isHidden(), `error shown after Stop: ${await page.locator('#error').textContent()}`);
            assert(await page.locator('#stop').isDisabled(), 'Stop still enabled');
            await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
            await cdp.detach();
            await page.click('#clear');
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
            eq(await p.locator('#conversations li').count(), 0, 'a conversation was kept for the failed request');
            await p.reload();
            eq(await p.inputValue('#api-key'), 'wrong-key', 'API key kept in local storage');
            eq(other.rec.foreign, [], 'requests to other hosts');
            eq(other.rec.pageErrors, [], 'page errors');
            await other.ctx.close();
        });

        await step('phone width (360 px): no sideways scrolling, controls on screen, the list opens; empty settings are left out', async () => {
            const small = await newContext(browser, origin, { viewport: { width: 360, height: 640 } });
            await small.ctx.addInitScript(setKey, KEY);
            await small.ctx.addInitScript(() => { try { localStorage.setItem('hearth.maxTokens', '16'); } catch { /* about:blank */ } });
            const p = await small.ctx.newPage();
            const bodies = [];
            p.on('request', (r) => { if (r.url().endsWith('/v1/chat/completions')) bodies.push(r.postDataJSON()); });
            await p.goto(`${server.base}/`);
            assert(await p.locator('#sidebar').isHidden(), 'the list covers the chat at phone width');
            await p.fill('#prompt', 'Blessed are the');
            await p.click('#send');
            await p.locator(replyDone).first().waitFor({ timeout: 60000 });
            eq(bodies.length, 1, 'chat requests');
            eq(bodies[0].max_tokens, 16, 'max_tokens (kept in local storage)');
            for (const k of ['temperature', 'top_p']) assert(!(k in bodies[0]), `${k} sent although not set: ${bodies[0][k]}`);
            const over = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
            assert(over <= 0, `the page is ${over} px wider than the screen`);
            for (const id of ['#prompt', '#send', '#stop', '#toggle-list']) {
                const b = await p.locator(id).boundingBox();
                assert(b && b.x >= 0 && b.x + b.width <= 360 && b.y + b.height <= 640, `${id} is off screen: ${JSON.stringify(b)}`);
            }
            await p.click('#toggle-list');
            const sb = await p.locator('#sidebar').boundingBox();
            assert(sb && sb.x >= 0 && sb.x + sb.width <= 360, `the list is off screen: ${JSON.stringify(sb)}`);
            eq(await p.locator('#conversations li.conv .conv-open').allTextContents(), ['Blessed are the'], 'list at phone width');
            await p.click('#conversations li.conv .conv-open');
            assert(await p.locator('#sidebar').isHidden(), 'the list stays open after choosing a conversation');
            eq(small.rec.console, [], 'console errors');
            await small.ctx.close();
        });
    } finally {
        await browser.close().catch(() => {});
    }
}), 'web page');
