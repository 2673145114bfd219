#!/usr/bin/env node
// The node-pty peer of dshpty-bench: the same bash under node-pty, the way a user drives it.
//
// usage: node node_pty_peer.js MODE COUNT FLOOD_COMMAND NAME=VALUE...
//   spawn  COUNT times: pty.spawn bash until the first prompt      -> "ms ..."
//   send   COUNT round trips: write('true\r') until the prompt     -> "us ..."
//   flood  COUNT runs of FLOOD_COMMAND, counting bytes until exit  -> "mbps ..."
//   scale  COUNT bashes open at once: RSS growth per session      -> "kib_per_session N",
//          "threads N", "open_ms N"
// Prints "skip REASON" when node-pty cannot be loaded (NODE_PATH names its directory).
'use strict';

let pty;
try {
  pty = require('node-pty');
} catch (e) {
  console.log('skip node-pty not loadable: ' + String(e.message).split('\n')[0]);
  process.exit(0);
}
const fs = require('fs');

const [mode, countArg, floodCmd, ...envArgs] = process.argv.slice(2);
const count = Number(countArg);
const env = {};
for (const kv of envArgs) {
  const i = kv.indexOf('=');
  env[kv.slice(0, i)] = kv.slice(i + 1);
}
const BASH = ['--noprofile', '--norc', '-i'];
const OPTS = { name: 'dumb', cols: 80, rows: 24, env };
const PROMPT = /\x1b\]133;D;\d+\x07dsh> $/;
const now = () => process.hrtime.bigint();
const micros = (t0) => Number(now() - t0) / 1e3;

// Resolves when the terminal's newest output ends at a prompt.
function untilPrompt(term) {
  return new Promise((resolve) => {
    let tail = '';
    const sub = term.onData((d) => {
      tail = (tail + d).slice(-256);
      if (PROMPT.test(tail)) {
        sub.dispose();
        resolve();
      }
    });
  });
}

function killed(term) {
  return new Promise((resolve) => {
    term.onExit(() => resolve());
    term.kill('SIGKILL');
  });
}

function threads() {
  const m = /Threads:\s+(\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) : 0;
}

async function main() {
  if (mode === 'spawn') {
    const out = [];
    for (let i = 0; i < count; i++) {
      const t0 = now();
      const term = pty.spawn('/bin/bash', BASH, OPTS);
      await untilPrompt(term);
      out.push(micros(t0) / 1e3);
      await killed(term);
    }
    console.log('ms ' + out.map((v) => v.toFixed(4)).join(' '));
  } else if (mode === 'send') {
    const term = pty.spawn('/bin/bash', BASH, OPTS);
    await untilPrompt(term);
    const out = [];
    for (let i = 0; i < count; i++) {
      const t0 = now();
      const p = untilPrompt(term);
      term.write('true\r');
      await p;
      out.push(micros(t0));
    }
    console.log('us ' + out.map((v) => v.toFixed(2)).join(' '));
    await killed(term);
  } else if (mode === 'flood') {
    const out = [];
    for (let i = 0; i < count; i++) {
      const t0 = now();
      const term = pty.spawn('/bin/sh', ['-c', floodCmd], OPTS);
      let bytes = 0;
      let last = t0;
      term.onData((d) => {
        bytes += d.length;  // ASCII: one char is one byte
        last = now();
      });
      await new Promise((resolve) => term.onExit(() => resolve()));
      // onExit can fire before the last data event: let pending reads land, then time the
      // stream to its last byte.
      await new Promise((resolve) => setTimeout(resolve, 200));
      out.push(bytes / (Number(last - t0) / 1e9) / 1e6);
    }
    console.log('mbps ' + out.map((v) => v.toFixed(3)).join(' '));
  } else if (mode === 'scale') {
    global.gc && global.gc();
    const rss0 = process.memoryUsage().rss;
    const t0 = now();
    const terms = [];
    const ready = [];
    for (let i = 0; i < count; i++) {
      const term = pty.spawn('/bin/bash', BASH, OPTS);
      terms.push(term);
      ready.push(untilPrompt(term));
    }
    await Promise.all(ready);
    const openMs = micros(t0) / 1e3;
    global.gc && global.gc();
    const rss1 = process.memoryUsage().rss;
    console.log('kib_per_session ' + ((rss1 - rss0) / 1024 / count).toFixed(2));
    console.log('threads ' + threads());
    console.log('open_ms ' + openMs.toFixed(2));
    await Promise.all(terms.map(killed));
  } else {
    throw new Error('unknown mode ' + mode);
  }
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
