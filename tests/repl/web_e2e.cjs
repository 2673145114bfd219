// The web page (docs/watch.md) in headless Chromium, driven by puppeteer-core: a real
// `dshpty-repl --json --web 127.0.0.1:0` host (the agent) with a private --state-dir and HOME.
// - a request without the token, or with a wrong one, is 403 (the page, the list, xterm.js);
//   every response carries the Content-Security-Policy;
// - the page lists the sessions, and each terminal's text, read from xterm.js's own buffer in
//   the page, equals the session's screen (the agent's `read screen`) after output and with
//   vim open;
// - a message sent over a page's socket closes it (1008) and reaches nothing;
// - a closed session's recording replays in the page (xterm.js's buffer holds its echo), in
//   two pages at once; a recording without the token is 403; a traversal, a file name and
//   another host's session id (its file in the same directory) are 404;
// - a non-loopback address is refused at start (positive control: --web-allow-remote);
// - a screenshot of the page is kept under the build tree.
// Skips (exit 77) with the reason when this build has no web page, or puppeteer-core,
// Chromium or xterm.js is missing. Every wait polls a condition with a deadline.
'use strict';

const { spawn, spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const readline = require('readline');

const [repl, depsDir, shotPath] = process.argv.slice(2);
const DEADLINE_MS = 60000;

function skip(why) {
  console.log(`SKIP: ${why}`);
  process.exit(77);
}
function fail(why) {
  console.error(`FAIL: ${why}`);
  process.exitCode = 1;
  throw new Error(why);
}
function check(cond, why) {
  if (!cond) fail(why);
}

let puppeteer;
try {
  puppeteer = require(path.join(depsDir, 'node_modules', 'puppeteer-core'));
} catch (e) {
  skip(`puppeteer-core is not in ${depsDir} (tools/dev installs it from the npm registry)`);
}
const chromium = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => fs.existsSync(p));
if (!chromium) skip('Chromium is not installed (Debian package chromium)');
if (!fs.existsSync(path.join(depsDir, 'node_modules', '@xterm', 'xterm', 'lib', 'xterm.js')))
  skip('xterm.js is not installed (npm package @xterm/xterm)');

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'dshpty-web-'));
const state = path.join(work, 'state');
const home = path.join(work, 'home');
const records = path.join(work, 'records');
fs.mkdirSync(home);
fs.mkdirSync(records);
const env = { ...process.env, HOME: home, DSHPTY_WEB_ASSETS: path.join(depsDir, 'node_modules', '@xterm', 'xterm') };

async function until(predicate, what) {
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    const value = await predicate();
    if (value) return value;
    if (Date.now() > deadline) fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50)); // polling a condition, with a deadline
  }
}

class Host {
  constructor(args) {
    this.proc = spawn(repl, ['--json', '--state-dir', state, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.responses = new Map();
    this.stderr = '';
    readline.createInterface({ input: this.proc.stdout }).on('line', (line) => {
      const r = JSON.parse(line);
      this.responses.set(r.id, r);
    });
    this.proc.stderr.on('data', (d) => { this.stderr += d.toString(); process.stderr.write(d); });
    this.exited = new Promise((resolve) => this.proc.on('exit', (code) => resolve(code)));
    this.nextId = 1;
  }
  async answer(obj) {
    const id = this.nextId++;
    this.proc.stdin.write(JSON.stringify({ id, ...obj }) + '\n');
    return until(() => this.responses.get(id), `the response to ${JSON.stringify(obj)}`);
  }
  async call(obj) {
    const r = await this.answer(obj);
    check(r.ok, `${JSON.stringify(obj)} failed: ${JSON.stringify(r)}`);
    return r.result;
  }
  async url() {
    const m = await until(() => this.stderr.match(/web page at (http:\/\/\S+)/), 'the web page address on stderr');
    return m[1];
  }
}

async function get(url) {
  const r = await fetch(url);
  return { status: r.status, csp: r.headers.get('content-security-policy') || '', body: await r.text() };
}

// A GET whose path goes out as written (fetch would resolve its "..").
function rawGet(base, rawPath) {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    require('http').get({ host: u.hostname, port: u.port, path: rawPath }, (r) => {
      let body = '';
      r.on('data', (d) => { body += d; });
      r.on('end', () => resolve({ status: r.statusCode, body }));
    }).on('error', reject);
  });
}

async function main() {
  // A non-loopback address is refused at start; --web-allow-remote takes it (the control).
  const refused = spawnSync(repl, ['--json', '--state-dir', state, '--web', '0.0.0.0:0'], { env, input: '', timeout: DEADLINE_MS });
  const words = refused.stderr.toString();
  if (words.includes('this build has no web page')) skip('this build has no web page (libwebsockets missing)');
  check(refused.status !== 0 && words.includes('is not a loopback address'), `0.0.0.0 refused: ${words}`);
  const allowed = spawnSync(repl, ['--json', '--state-dir', state, '--web', '0.0.0.0:0', '--web-allow-remote'],
                            { env, input: '', timeout: DEADLINE_MS });
  check(allowed.status === 0 && allowed.stderr.toString().includes('web page at http://0.0.0.0:'),
        `--web-allow-remote: ${allowed.stderr}`);

  const host = new Host(['--web', '127.0.0.1:0', '--record-dir', records]);
  let browser, other;
  try {
    const url = await host.url();
    const base = url.replace(/\/\?token=.*/, '');
    const token = url.replace(/.*\?token=/, '');
    const opened = await host.call({ op: 'open', type: 'shell', name: 'main', terminal: 'xterm' });
    const sid = opened.sessionId;
    await host.call({ op: 'send', sessionId: sid, text: 'echo web-$((6*7))' });

    // ---- the token, on every request --------------------------------------------------
    for (const p of ['/', '/api/sessions', '/xterm.js', '/app.js']) {
      const none = await get(base + p);
      check(none.status === 403, `${p} without the token: ${none.status}`);
      const wrong = await get(`${base}${p}?token=${'0'.repeat(token.length)}`);
      check(wrong.status === 403, `${p} with a wrong token: ${wrong.status}`);
      const right = await get(`${base}${p}?token=${token}`);
      check(right.status === 200, `${p} with the token: ${right.status}`);
      check(right.csp.includes("default-src 'none'") && right.csp.includes("script-src 'self'"), `${p} CSP: ${right.csp}`);
    }

    // ---- the page in Chromium ---------------------------------------------------------
    browser = await puppeteer.launch({
      executablePath: chromium, headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-dev-shm-usage'],
    });
    const page = await browser.newPage();
    const problems = [];
    // A 403 is told by the response (the browser's own favicon request carries no token);
    // any other error the page reports is a problem.
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(m.text());
    });
    page.on('response', (r) => {
      if (r.status() >= 400 && !r.url().endsWith('/favicon.ico')) problems.push(`${r.status()} ${r.url()}`);
    });
    page.on('pageerror', (e) => problems.push(String(e)));
    await page.setViewport({ width: 1400, height: 900 });
    await page.goto(url);
    await page.waitForFunction((id) => document.querySelector('#sessions tbody') &&
      document.querySelector('#sessions tbody').textContent.includes(id), { timeout: DEADLINE_MS }, sid);
    const listed = await page.$eval('#sessions tbody', (el) => el.textContent);
    check(listed.includes('main') && listed.includes('default') && listed.includes('40x160'), `the list: ${listed}`);

    // The terminal's text in the page (xterm.js's buffer) against the session's own screen.
    const pageScreen = (id) => page.evaluate((sessionId) => {
      const t = window.dshptyTerminals[sessionId];
      if (!t || !t.last) return null;
      const b = t.term.buffer.active;
      const lines = [];
      for (let i = 0; i < t.term.rows; i++) lines.push(b.getLine(i).translateToString(true));
      return { rows: t.term.rows, cols: t.term.cols, lines };
    }, id);
    const matches = async () => {
      const shot = (await host.call({ op: 'read', sessionId: sid, screen: true })).screen;
      const shown = await pageScreen(sid);
      if (!shown || shown.rows !== shot.rows || shown.cols !== shot.cols) return false;
      const want = shot.lines.concat(Array(shot.rows - shot.lines.length).fill(''));
      return want.every((line, i) => shown.lines[i].replace(/\s+$/, '') === line.replace(/\s+$/, '')) && shot;
    };
    const first = await until(matches, "the page's terminal to equal the session's screen");
    check(first.lines.some((l) => l.includes('web-42')), `the output is on the screen: ${first.lines}`);

    const notes = path.join(work, 'notes.txt');
    fs.writeFileSync(notes, Array.from({ length: 60 }, (_, i) => `line ${i + 1} of the notes`).join('\n') + '\n');
    const vim = await host.call({ op: 'send', sessionId: sid, text: `vim -u NONE -N ${notes}`, idleMs: 500 });
    check(vim.screen && vim.screen.alternate, `vim on the alternate screen: ${JSON.stringify(vim).slice(0, 300)}`);
    const withVim = await until(async () => { const s = await matches(); return s && s.alternate && s; },
                                "the page's terminal to equal vim's screen");
    check(withVim.lines.some((l) => l.includes('line 39 of the notes')), 'vim shows the file');
    const shotDir = path.dirname(shotPath);
    fs.mkdirSync(shotDir, { recursive: true });
    await page.screenshot({ path: shotPath, fullPage: true });
    await host.call({ op: 'send', sessionId: sid, keys: [':', 'q', 'Enter'], submit: false });
    check(problems.length === 0, `the page reported errors: ${problems}`);

    // ---- a write attempt over the socket ----------------------------------------------
    const closed = await page.evaluate((sessionId, tok) => new Promise((resolve) => {
      const ws = new WebSocket(`ws://${location.host}/ws?token=${tok}&session=${sessionId}`, 'dshpty-watch');
      ws.onmessage = () => ws.send(JSON.stringify({ op: 'send', sessionId, text: 'echo written-by-page' }));
      ws.onclose = (e) => resolve({ code: e.code, reason: e.reason });
    }), sid, token);
    check(closed.code === 1008 && closed.reason === 'an observer only reads', `a write attempt: ${JSON.stringify(closed)}`);
    const unauthorized = await page.evaluate((sessionId) => new Promise((resolve) => {
      const ws = new WebSocket(`ws://${location.host}/ws?session=${sessionId}`, 'dshpty-watch');
      ws.onopen = () => resolve('open');
      ws.onclose = () => resolve('closed');
    }), sid);
    check(unauthorized === 'closed', `a socket without the token: ${unauthorized}`);
    const after = await host.call({ op: 'send', sessionId: sid, text: 'echo after-$((1+1))' });
    check(after.viewport.includes('after-2'), `the next send: ${after.viewport}`);
    const page2 = await host.call({ op: 'read', sessionId: sid, count: 500 });
    check(!page2.text.includes('written-by-page'), 'the page wrote nothing into the session');

    // ---- a closed session's recording, replayed -----------------------------------------
    const problemsBefore = problems.length;  // the refused socket above is one, on purpose
    // A name with a traversal and markup: shown as text, never part of a file's name (one
    // with a line break is refused at open).
    const newline = await host.answer({ op: 'open', type: 'shell', name: '../x\ny' });
    check(!newline.ok && newline.error.code === 'INVALID_ARGUMENT', `a name with a line break: ${JSON.stringify(newline)}`);
    const hostile = '../../etc/x<b>evil</b>';
    const rec = (await host.call({ op: 'open', type: 'shell', name: hostile, terminal: 'xterm' })).sessionId;
    await host.call({ op: 'send', sessionId: rec, text: 'echo replay-$((6*7))' });
    await host.call({ op: 'close', sessionId: rec });
    const files = fs.readdirSync(records);
    check(files.every((f) => /^[A-Za-z0-9._-]+\.cast$/.test(f)), `the recordings' names: ${files}`);
    // Another host on the same directory, with a session id this host never had: its file is
    // there, but it is not this host's session.
    other = new Host(['--record-dir', records, '--no-watch']);
    let foreign;
    for (let i = 0; i < 3; i++) foreign = (await other.call({ op: 'open', type: 'shell' })).sessionId;
    await other.call({ op: 'send', sessionId: foreign, text: 'echo foreign-secret' });
    check(fs.readdirSync(records).some((f) => f.includes(`-${foreign}-`)), `the other host's file for ${foreign}`);
    const recUrl = (q) => `${base}/api/recording?${q}`;
    const noToken = await get(recUrl(`session=${rec}`));
    check(noToken.status === 403, `a recording without the token: ${noToken.status}`);
    const wrongToken = await get(recUrl(`session=${rec}&token=${'0'.repeat(token.length)}`));
    check(wrongToken.status === 403, `a recording with a wrong token: ${wrongToken.status}`);
    const fileName = files.find((f) => f.includes(`-${rec}-`));
    for (const attempt of [`session=..%2F..%2F..%2Fetc%2Fpasswd`, `session=../../../etc/passwd`,
                           `session=${encodeURIComponent(fileName)}`, `session=${foreign}`,
                           `session=${rec}%2F..%2F${rec}`, 'session=', '']) {
      const r = await get(recUrl(`token=${token}&${attempt}`));
      check(r.status === 404, `${attempt}: ${r.status} ${r.body.slice(0, 80)}`);
      check(!r.body.includes('root:') && !r.body.includes('foreign-secret'), `${attempt} answered a file`);
    }
    for (const raw of [`/api/recording/../../../../etc/passwd?token=${token}&session=${rec}`,
                       `/api/recording/..%2F..%2Fetc%2Fpasswd?token=${token}`, `/../${fileName}?token=${token}`]) {
      const traversal = await rawGet(base, raw);
      check(traversal.status === 404 && !traversal.body.includes('root:') && !traversal.body.includes('replay-42'),
            `a path traversal ${raw}: ${traversal.status}`);
    }
    const served = await get(recUrl(`token=${token}&session=${rec}`));
    check(served.status === 200 && served.csp.includes("default-src 'none'"), `the recording: ${served.status}`);
    check(served.body === fs.readFileSync(path.join(records, fileName), 'utf8'), 'the file as it is');

    await page.waitForFunction((id) => {
      const b = document.querySelector(`#recordings button[data-session="${id}"]`);
      return b && b.closest('tr').textContent.includes('closed');
    }, { timeout: DEADLINE_MS }, rec);
    check(!(await page.$eval('#recordings tbody', (el) => el.innerHTML)).includes('<b>evil'), 'the name shown as text');
    await page.select('#speed', '8');
    await page.click(`#recordings button[data-session="${rec}"]`);
    // A second browser page replays the same recording at the same time.
    const page3 = await browser.newPage();
    await page3.goto(url);
    await page3.waitForFunction(() => typeof window.dshptyReplay === 'function', { timeout: DEADLINE_MS });
    await page3.select('#speed', '0');
    await page3.evaluate((id) => { window.dshptyReplay(id); }, rec);
    const replayText = (p) => p.evaluate((id) => {
      const r = window.dshptyReplays[id];
      if (!r || !r.done) return null;
      const b = r.term.buffer.active;
      const lines = [];
      for (let i = 0; i < b.length; i++) lines.push(b.getLine(i).translateToString(true));
      return { error: r.error, events: r.events, text: lines.join('\n') };
    }, rec);
    for (const p of [page, page3]) {
      const shown = await until(() => replayText(p), 'the replay to finish');
      check(shown.error === null && shown.events > 0, `the replay: ${JSON.stringify(shown).slice(0, 300)}`);
      check(shown.text.includes('replay-42'), `the replay's buffer holds the echo: ${shown.text}`);
    }
    await page3.close();
    check(problems.length === problemsBefore, `the page reported errors: ${problems.slice(problemsBefore)}`);
    await other.call({ op: 'shutdown' });
    check((await other.exited) === 0, 'the other host exits 0');

    await host.call({ op: 'shutdown' });
    check((await host.exited) === 0, 'the host exits 0');
    console.log(`web e2e: ok (screenshot: ${shotPath})`);
  } finally {
    if (browser) await browser.close();
    if (host.proc.exitCode === null) host.proc.kill('SIGKILL');
    if (other && other.proc.exitCode === null) other.proc.kill('SIGKILL');
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().catch((e) => {
  if (!process.exitCode) {
    console.error(e);
    process.exitCode = 1;
  }
});
