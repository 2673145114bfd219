// What the client's tests share: a service on a private HOME, temporary directories removed
// afterwards, and facts about processes read from /proc (no test trusts the client's word
// that a process tree is gone).
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { DshptyService } from 'dshpty';

export function tempDir(t, prefix = 'dshpty-ts-') {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// A service whose child has a private HOME and a host secret in its environment; disposed
// (and its child checked gone) when the test ends.
export async function startService(t, options = {}) {
  const home = tempDir(t, 'dshpty-ts-home-');
  const env = { ...process.env, HOME: home, MY_API_KEY: 'host-secret-1', GITHUB_TOKEN: 'host-secret-2', ...options.env };
  const service = await DshptyService.start({ ...options, env });
  t.after(async () => {
    await service.dispose();
    if (service.pid !== undefined && alive(service.pid)) throw new Error(`dshpty-repl ${service.pid} outlived dispose()`);
  });
  return service;
}

/** Alive and not a zombie. */
export function alive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] !== 'Z';
  } catch {
    return false;
  }
}

function procStat(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { state: fields[0], ppid: Number(fields[1]), pgrp: Number(fields[2]), tpgid: Number(fields[5]) };
}

/** The signals a process ignores, from /proc/PID/status. */
export function ignoresSignal(pid, number) {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('SigIgn:'));
  return (BigInt('0x' + line.split(/\s+/)[1]) & (1n << BigInt(number - 1))) !== 0n;
}

/** Bounded polling of a condition the test cannot be told about (a process's state). */
export async function waitUntil(condition, what, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`timed out waiting until ${what}`);
}

/** Until a child of the shell named `argv0` holds the terminal: a SIGINT sent while bash is
 *  still starting a job (before its exec) would be lost. */
export async function waitForeground(shellPid, argv0) {
  await waitUntil(() => {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = procStat(Number(entry));
        const name = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0')[0];
        if (name.endsWith(argv0) && stat.ppid === shellPid && stat.pgrp === stat.tpgid) return true;
      } catch {
        // gone meanwhile
      }
    }
    return false;
  }, `${argv0} holds the terminal of shell ${shellPid}`);
}

/** Reads a send's output until it holds `text` (the program announced itself). */
export async function outputUntil(op, text) {
  let seen = '';
  await waitUntil(async () => {
    seen += (await op.readOutput()).delta;
    return seen.includes(text);
  }, `the output holds ${JSON.stringify(text)} (so far ${JSON.stringify(seen)})`);
  return seen;
}

export function readPid(path) {
  return Number(readFileSync(path, 'utf8').trim());
}

/** argv[0] of a process, '' once it is gone. */
export function commandOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0];
  } catch {
    return '';
  }
}
