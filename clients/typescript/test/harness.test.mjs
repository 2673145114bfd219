// What a harness author leans on: a failed send nobody awaits does not end Node, a send's
// output streams as an async iterator, a cancel keeps what ran, and a stopped repl becomes
// an error within its deadline, never a hang.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { DshptyService } from 'dshpty';

import { alive, readPid, startService, tempDir, waitForeground, waitUntil } from './helpers.mjs';

const here = dirname(fileURLToPath(import.meta.url));

test('a refused send whose done nobody awaits leaves Node running (exit 0)', (t) => {
  const home = tempDir(t, 'dshpty-ts-home-');
  const run = spawnSync(process.execPath, ['--unhandled-rejections=strict', join(here, 'fixtures', 'fire_and_forget.mjs')],
    { env: { ...process.env, HOME: home }, encoding: 'utf8', timeout: 60000 });
  assert.equal(run.stderr, '');
  assert.equal(run.status, 0);
  assert.equal(run.stdout.trim(), 'survived');
});

test('for await over a send yields its output as it comes, then ends with the last bytes', async (t) => {
  const service = await startService(t);
  const agent = service.mintOwner('agent');
  const { sessionId } = await service.spawn(agent, { type: 'shell' });
  const op = service.startSend(agent, sessionId, { text: 'seq 1 2500; sleep 1; seq 2501 5000' });
  let settled = false;
  void op.done.then(() => { settled = true; });
  const chunks = [];
  let beforeEnd = 0;
  for await (const chunk of op) {
    assert.equal(typeof chunk, 'string');
    chunks.push(chunk);
    if (!settled) beforeEnd += 1;
  }
  const result = await op.done;
  assert.ok(beforeEnd > 0, 'no chunk came before the send ended');
  const text = chunks.join('');
  assert.ok(text.includes('\n2500\n') && text.includes('\n5000\n'), text.slice(-200));
  assert.equal(text, result.viewport);
});

test('a cancelled send rejects ABORTED carrying its result (exit 130)', async (t) => {
  const service = await startService(t);
  const agent = service.mintOwner('agent');
  const { sessionId, pid } = await service.spawn(agent, { type: 'shell' });
  const op = service.startSend(agent, sessionId, { text: 'sleep 5' });
  await waitForeground(pid, 'sleep');
  assert.equal(await op.cancel(), true);
  const error = await op.done.then(() => null, (e) => e);
  assert.equal(error?.code, 'ABORTED');
  assert.equal(error.result?.exitCode, 130);
  assert.match(String(error), /^DshptyError ABORTED: /);
});

test('start() fails when the repl refuses its arguments, or is not a repl at all', async () => {
  await assert.rejects(DshptyService.start({ args: ['--no-such-flag'] }), { code: 'REPL_EXITED', message: /no-such-flag/ });
  await assert.rejects(DshptyService.start({ repl: join(here, 'fixtures', 'echo_repl.sh') }), { code: 'REPL_NOT_FOUND' });
  await assert.rejects(DshptyService.start({ repl: join(here, 'fixtures', 'silent_repl.sh'), requestTimeoutMs: 200 }), { code: 'REPL_TIMEOUT' });
});

test('a stopped repl makes a call fail within its deadline, and dispose({force}) ends it', async (t) => {
  const dir = tempDir(t);
  const service = await startService(t, { requestTimeoutMs: 1000 });
  assert.equal(service.hello.name, 'dshpty-repl');
  const agent = service.mintOwner('agent');
  const { sessionId } = await service.spawn(agent, { type: 'shell' });
  await service.startSend(agent, sessionId, { text: `echo $$ > ${dir}/shell.pid` }).done;
  const shell = readPid(join(dir, 'shell.pid'));
  const repl = service.pid;
  process.kill(repl, 'SIGSTOP');
  const op = service.startSend(agent, sessionId, { text: 'true', timeoutMs: 500 });
  await assert.rejects(service.list(agent), { code: 'REPL_TIMEOUT' });
  await assert.rejects(op.cancel(), { code: 'REPL_TIMEOUT' });
  await assert.rejects(op.done, { code: 'REPL_TIMEOUT' });
  await service.dispose({ force: true });
  assert.equal(alive(repl), false);
  await waitUntil(() => !alive(shell), `the session's shell ${shell} is gone with its host`);
});

// A promise's outcome, or a failure of the test once `ms` passed without one (the bug this
// guards against is a wait that never ends).
function settledWithin(promise, ms, what) {
  let timer;
  const hang = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} still pending after ${ms} ms`)), ms);
  });
  return Promise.race([promise.then((value) => ({ value }), (error) => ({ error })), hang]).finally(() => clearTimeout(timer));
}

test('a job waiting for its condition (no timeoutMs) on a stopped repl fails REPL_TIMEOUT, not forever', async (t) => {
  const service = await startService(t, { requestTimeoutMs: 1000 });
  const agent = service.mintOwner('agent');
  const { sessionId } = await service.spawn(agent, { type: 'shell' });
  const repl = service.pid;
  process.kill(repl, 'SIGSTOP');
  try {
    const job = service.startSend(agent, sessionId, { text: 'sleep 300', background: true, until: { output: 'never-printed' } });
    const started = await settledWithin(job.started, 30000, 'started');
    assert.equal(started.error?.code, 'REPL_TIMEOUT', String(started.error));
    assert.match(started.error.message, /while job \d+ waited for its condition/);
    const done = await settledWithin(job.done, 30000, 'done');
    assert.equal(done.error?.code, 'REPL_TIMEOUT');
    assert.equal(service.pendingCount, 0);
  } finally {
    await service.dispose({ force: true });  // a stopped child never exits on its own
  }
  assert.equal(alive(repl), false);
});

test('dispose({force}) settles a job\'s pending started on a stopped repl', async (t) => {
  const service = await startService(t, { requestTimeoutMs: 1000 });
  const agent = service.mintOwner('agent');
  const { sessionId } = await service.spawn(agent, { type: 'shell' });
  const job = service.startSend(agent, sessionId, { text: 'sleep 300', background: true, until: { output: 'never-printed' } });
  // The liveness check's first hello answered (the send alone waits): the next comes only
  // after requestTimeoutMs, so what settles `started` below is the forced disposal.
  await waitUntil(() => service.pendingCount === 1, 'the first hello answered');
  const repl = service.pid;
  process.kill(repl, 'SIGSTOP');
  const disposed = service.dispose({ force: true });
  try {
    const started = await settledWithin(job.started, 30000, 'started');
    assert.equal(started.error?.code, 'REPL_EXITED', String(started.error));
  } finally {
    await disposed;
  }
  assert.equal(alive(repl), false);
});

test('a live repl keeps a job\'s wait for its condition open past requestTimeoutMs', async (t) => {
  const service = await startService(t, { requestTimeoutMs: 1500 });
  const agent = service.mintOwner('agent');
  const { sessionId } = await service.spawn(agent, { type: 'shell' });
  const job = service.startSend(agent, sessionId, { text: 'sleep 4; echo ready-$((6*7)); sleep 300', background: true,
                                                   until: { output: 'ready-42' } });
  const started = await job.started;
  assert.equal(started.waitReason, 'matched');
  assert.equal(started.match?.output, 'ready-42');
  assert.equal((await job.stop()).stopped, true);
});

test('a cancel that crossed the send\'s answer did nothing: cancel() false and done resolves', async (t) => {
  const service = await startService(t);
  const agent = service.mintOwner('agent');
  const { sessionId } = await service.spawn(agent, { type: 'shell' });
  for (let i = 0; i < 10; i++) {
    const op = service.startSend(agent, sessionId, { text: 'true' });
    const [done, took] = await Promise.allSettled([op.done, op.cancel()]);
    assert.equal(took.status, 'fulfilled');
    assert.equal(done.status === 'rejected' && done.reason.code === 'ABORTED', took.value, `round ${i}`);
  }
});
