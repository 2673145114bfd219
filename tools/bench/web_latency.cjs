// The web page's latency (docs/watch.md, "Figures"): from the agent's send of `echo mark-N`
// (written on the host's stdin) to the mark in the page's xterm.js buffer, in headless
// Chromium, over ROUNDS rounds. The page waits for the mark inside itself (a check on every
// animation frame), started before the send, so the figure is the host's path plus one
// frame of the page and the DevTools round trip back.
// Usage: node web_latency.cjs DSHPTY_REPL WEB_DEPS_DIR [ROUNDS]
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const readline = require('readline');

const [repl, depsDir, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg || 100);
const puppeteer = require(path.resolve(depsDir, 'node_modules', 'puppeteer-core'));
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'dshpty-web-bench-'));
const env = { ...process.env, HOME: work, DSHPTY_WEB_ASSETS: path.resolve(depsDir, 'node_modules', '@xterm', 'xterm') };

async function main() {
  const proc = spawn(repl, ['--json', '--state-dir', path.join(work, 'state'), '--web', '127.0.0.1:0'], { env });
  const waiting = new Map();
  let next = 1;
  readline.createInterface({ input: proc.stdout }).on('line', (l) => { const r = JSON.parse(l); waiting.get(r.id)(r); });
  const call = (obj) => new Promise((resolve) => { const id = next++; waiting.set(id, resolve); proc.stdin.write(JSON.stringify({ id, ...obj }) + '\n'); });
  let stderr = '';
  const url = await new Promise((resolve) => proc.stderr.on('data', (d) => {
    stderr += d; const m = stderr.match(/web page at (http:\/\/\S+)/); if (m) resolve(m[1]);
  }));
  const sid = (await call({ op: 'open', type: 'shell', name: 'bench' })).result.sessionId;
  const browser = await puppeteer.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-gpu'] });
  try {
    const page = await browser.newPage();
    await page.goto(url);
    await page.waitForFunction((id) => window.dshptyTerminals && window.dshptyTerminals[id] && window.dshptyTerminals[id].last, {}, sid);
    const times = [];
    for (let i = 0; i < rounds; i++) {
      const mark = `mark-${i}-${Date.now()}`;
      const seen = page.evaluate((id, m) => new Promise((resolve) => {
        const t = window.dshptyTerminals[id];
        const look = () => {
          const b = t.term.buffer.active;
          for (let r = 0; r < t.term.rows; r++) if (b.getLine(r).translateToString(true) === m) return resolve(true);
          requestAnimationFrame(look);
        };
        look();
      }), sid, mark);
      const t0 = performance.now();
      const sent = call({ op: 'send', sessionId: sid, text: `echo ${mark}` });
      await seen;
      times.push(performance.now() - t0);
      await sent;
    }
    times.sort((a, b) => a - b);
    const q = (p) => times[Math.min(times.length - 1, Math.floor(times.length * p))].toFixed(1);
    console.log(`web page latency over ${rounds} rounds (send written -> mark in xterm.js's buffer): p50 ${q(0.5)} ms, p90 ${q(0.9)} ms, max ${q(1)} ms`);
  } finally {
    await browser.close();
    await call({ op: 'shutdown' });
    fs.rmSync(work, { recursive: true, force: true });
  }
}
main().catch((e) => { console.error(e); process.exit(1); });
