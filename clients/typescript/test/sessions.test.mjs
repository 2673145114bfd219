// @deepseek-ai/dsh-pty's real-shell scenarios through the packed client and a real dshpty-repl.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { alive, commandOf, ignoresSignal, readPid, startService, tempDir, waitUntil } from './helpers.mjs';

test('state persists across sends and host secrets are scrubbed', async (t) => {
  const service = await startService(t);
  const cwd = tempDir(t);
  const agent = service.mintOwner('agent');
  const { sessionId, motd, pid, status, name } = await service.spawn(agent, { type: 'shell', name: 'main', cwd });
  assert.equal(name, 'main');
  assert.equal(typeof motd, 'string');
  assert.equal(status.kind, 'running');
  assert.ok(alive(pid), `shell ${pid} is not running`);

  const send = (text) => service.startSend(agent, sessionId, { text, submit: true }).done;
  let result = await send('cd sub 2>/dev/null || { mkdir sub && cd sub; }');
  assert.equal(result.waitReason, 'stdin_read');
  await send('export DSHPTY_PERSIST=kept-value');
  result = await send('pwd; echo "[$DSHPTY_PERSIST]"');
  assert.equal(result.waitReason, 'stdin_read');
  assert.equal(result.exitCode, 0);
  assert.equal(result.cwd, join(cwd, 'sub'));
  assert.ok(result.viewport.includes(`${join(cwd, 'sub')}\n`), result.viewport);
  assert.ok(result.viewport.includes('[kept-value]'), result.viewport);
  assert.equal(result.sessionStatus.kind, 'running');
  assert.equal(result.inputHidden, false);

  result = await send('echo "<${MY_API_KEY-unset}|${GITHUB_TOKEN-unset}>"');
  assert.ok(result.viewport.includes('<unset|unset>'), result.viewport);

  const page = await service.read(agent, sessionId, { offset: 0, count: 20 });
  assert.ok(page.text.includes('[kept-value]'), page.text);
  assert.ok(page.lineEnd >= page.lineBegin && page.totalLines >= page.lineEnd);

  const sessions = await service.list(agent);
  assert.deepEqual(sessions.map((s) => [s.sessionId, s.name, s.status.kind]), [[sessionId, 'main', 'running']]);
  const { delivered } = await service.signal(agent, sessionId, 'SIGINT');
  assert.equal(delivered, true);

  assert.equal(await service.kill(agent, sessionId), true);
  assert.ok(!alive(pid), `shell ${pid} outlived kill()`);
  await assert.rejects(service.read(agent, sessionId), { name: 'DshptyError', code: 'NO_SESSION' });
});

test('a TERM-ignoring background child dies at close', async (t) => {
  const service = await startService(t);
  const dir = tempDir(t);
  const agent = service.mintOwner('agent');
  const { sessionId, pid: shellPid } = await service.spawn(agent, { type: 'shell', name: 'main', cwd: dir });
  const pidFile = join(dir, 'stubborn.pid');
  await service.startSend(agent, sessionId, {
    text: `bash -c "trap '' TERM HUP; echo \\$\\$ > ${pidFile}.tmp; mv ${pidFile}.tmp ${pidFile}; exec sleep 300" &`,
  }).done;
  await waitUntil(() => existsSync(pidFile), 'the background child wrote its pid');
  const child = readPid(pidFile);
  // TERM is ignored across the exec: the close cannot rely on it.
  await waitUntil(() => commandOf(child) === 'sleep', 'the child runs sleep');
  assert.ok(ignoresSignal(child, 15));

  assert.equal(await service.kill(agent, sessionId), true);
  assert.ok(!alive(child), `the TERM-ignoring child ${child} outlived kill()`);
  assert.ok(!alive(shellPid));
});

test('a disowned child is gone after the shell exits and the session is closed', async (t) => {
  const service = await startService(t);
  const dir = tempDir(t);
  const agent = service.mintOwner('agent');
  const { sessionId, pid: shellPid } = await service.spawn(agent, { type: 'shell', name: 'main', cwd: dir });
  const pidFile = join(dir, 'disowned.pid');
  await service.startSend(agent, sessionId, { text: `sleep 300 & echo $! > ${pidFile}; disown` }).done;
  const child = readPid(pidFile);
  assert.ok(alive(child));

  const exited = await service.startSend(agent, sessionId, { text: 'exit 3' }).done;
  assert.equal(exited.waitReason, 'session_exit');
  assert.deepEqual(exited.sessionStatus, { kind: 'exited', exitCode: 3, signal: null });
  const [listed] = await service.list(agent);
  assert.equal(listed.status.kind, 'exited');

  assert.equal(await service.kill(agent, sessionId), true);
  assert.ok(!alive(child), `the disowned child ${child} outlived the closed session`);
  assert.ok(!alive(shellPid));
});

test('screen and resize on an xterm session', async (t) => {
  const service = await startService(t);
  const agent = service.mintOwner('agent');
  const { sessionId } = await service.spawn(agent, { type: 'shell', terminal: 'xterm' });
  await service.resize(agent, sessionId, { rows: 30, cols: 100 });
  const result = await service.startSend(agent, sessionId, { text: 'echo "$(tput lines)x$(tput cols)"' }).done;
  assert.ok(result.viewport.includes('30x100'), result.viewport);
  const screen = await service.screen(agent, sessionId);
  assert.equal(screen.rows, 30);
  assert.equal(screen.cols, 100);
  assert.equal(screen.alternate, false);
  assert.ok(screen.lines.some((line) => line.includes('30x100')), screen.lines.join('\n'));
  assert.equal(typeof screen.cursor.row, 'number');
});
