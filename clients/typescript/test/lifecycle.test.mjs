// The client's own rules: owners by name, errors as DshptyError codes, the repl child's end.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { DshptyError, DshptyService } from 'dshpty';

import { readFileSync } from 'node:fs';

import { alive, outputUntil, startService, waitUntil } from './helpers.mjs';

function processGroup(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

test('the repl leads a process group of its own: a Ctrl-C meant for the host does not reach it', async (t) => {
  const service = await startService(t);
  assert.equal(processGroup(service.pid), service.pid);
  assert.notEqual(processGroup(service.pid), processGroup(process.pid));
});

test('owners: one live owner per name, disposed owners fail locally, names come back', async (t) => {
  const service = await startService(t);
  const agent = service.mintOwner('agent');
  assert.equal(agent.name, 'agent');
  assert.throws(() => service.mintOwner('agent'), { name: 'DshptyError', code: 'INVALID_ARGUMENT' });
  const { sessionId, pid } = await service.spawn(agent, { type: 'shell' });

  const intruder = service.mintOwner('intruder');
  await assert.rejects(service.read(intruder, sessionId), (error) =>
    error instanceof DshptyError && ['FOREIGN_SESSION', 'NO_SESSION'].includes(error.code));
  assert.equal(await service.hasOwnerActivity(agent), true);

  await service.disposeOwner(agent);
  assert.ok(!alive(pid), `shell ${pid} outlived disposeOwner()`);
  await assert.rejects(service.list(agent), { code: 'OWNER_NOT_LIVE' });
  await assert.rejects(service.startSend(agent, sessionId, { text: 'true' }).done, { code: 'OWNER_NOT_LIVE' });
  await assert.rejects(service.disposeOwner(agent), { code: 'OWNER_NOT_LIVE' });

  // The label names a fresh owner now: nothing of the old one's is visible.
  const again = service.mintOwner('agent');
  assert.deepEqual(await service.list(again), []);
  assert.equal(await service.hasOwnerActivity(again), false);

  const elsewhere = await startService(t);
  await assert.rejects(elsewhere.list(again), { code: 'OWNER_NOT_LIVE' });
});

test('the repl\'s errors arrive as DshptyError with their codes', async (t) => {
  const service = await startService(t);
  const agent = service.mintOwner('agent');
  await assert.rejects(service.spawn(agent, { type: 'no-such-backend' }), { name: 'DshptyError', code: 'NO_BACKEND' });
  await assert.rejects(service.read(agent, 'pty-404'), { code: 'NO_SESSION' });
  const { sessionId } = await service.spawn(agent, { type: 'shell', name: 'main' });
  await assert.rejects(service.spawn(agent, { type: 'shell', name: 'main' }), { code: 'DUPLICATE_NAME' });
  await assert.rejects(service.signal(agent, sessionId, 'SIGFOO'), { code: 'INVALID_ARGUMENT' });
  await assert.rejects(service.startSend(agent, sessionId, { keys: ['NoSuchKey'] }).done, { code: 'INVALID_ARGUMENT' });
  // The repl keeps serving after a refusal.
  const result = await service.startSend(agent, sessionId, { text: 'echo fine' }).done;
  assert.ok(result.viewport.includes('fine'));
});

test('the repl killed under the client: every pending call rejects REPL_EXITED', async (t) => {
  const service = await startService(t);
  const agent = service.mintOwner('agent');
  const first = await service.spawn(agent, { type: 'shell' });
  const second = await service.spawn(agent, { type: 'shell' });
  const live = { idleMs: 600000, timeoutMs: 600000 };
  const sends = [first, second].map((s) => service.startSend(agent, s.sessionId, { text: 'echo "li""ve"; sleep 300', ...live }));
  await outputUntil(sends[0], 'live');
  await outputUntil(sends[1], 'live');
  assert.equal(service.pendingCount, 2);

  process.kill(service.pid, 'SIGKILL');
  for (const send of sends) await assert.rejects(send.done, { name: 'DshptyError', code: 'REPL_EXITED', message: /SIGKILL/ });
  assert.deepEqual(await service.exited, { code: null, signal: 'SIGKILL' });
  assert.equal(service.pendingCount, 0);
  await assert.rejects(service.list(agent), { code: 'REPL_EXITED' });
  await assert.rejects(sends[0].readOutput(), { code: 'REPL_EXITED' });
  // The sessions' helpers end their trees when the repl is gone.
  for (const { pid } of [first, second]) await waitUntil(() => !alive(pid), `shell ${pid} is gone after the repl died`);
  await service.dispose();
});

test('dispose() answers what was asked, refuses what comes after, and ends every tree', async (t) => {
  const service = await startService(t);
  const agent = service.mintOwner('agent');
  const { sessionId, pid } = await service.spawn(agent, { type: 'shell' });
  const listing = service.list(agent);
  const disposed = service.dispose();
  await assert.rejects(service.list(agent), { code: 'SERVICE_DISPOSING' });
  assert.equal((await listing).length, 1);
  await disposed;
  assert.ok(!alive(pid), `shell ${pid} outlived dispose()`);
  assert.deepEqual(await service.exited, { code: 0, signal: null });
  await assert.rejects(service.read(agent, sessionId), { code: 'SERVICE_DISPOSING' });
  await service.dispose();  // twice is fine
});

test('start() finds the repl from its option, DSHPTY_REPL, then PATH; a missing one is REPL_NOT_FOUND', async (t) => {
  const repl = process.env.DSHPTY_REPL;
  await assert.rejects(DshptyService.start({ repl: '/nonexistent/dshpty-repl' }), { code: 'REPL_NOT_FOUND' });
  await assert.rejects(DshptyService.start({ env: { PATH: '/nonexistent' } }), { code: 'REPL_NOT_FOUND' });
  const byPath = await startService(t, { env: { DSHPTY_REPL: '', PATH: `${repl.slice(0, repl.lastIndexOf('/'))}:${process.env.PATH}` } });
  const byOption = await startService(t, { repl, env: { DSHPTY_REPL: '/nonexistent' } });
  for (const service of [byPath, byOption]) assert.deepEqual(await service.list(service.mintOwner('x')), []);
});
