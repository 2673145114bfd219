// Cancellation and overlapping requests: an AbortSignal (or cancel()) is a real SIGINT to the
// session's foreground group, and the send it cancels rejects only once the repl has
// answered it, so the next send on the session goes through.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { DshptyError } from 'dshpty';

import { outputUntil, startService, waitForeground } from './helpers.mjs';

// Puts the terminal in raw mode (no ISIG: a typed ^C would be a byte, not a signal), says
// so, then waits without reading the terminal; restores the mode on SIGINT and exits 130.
const RAW_PROGRAM = 'python3 -c "import sys,termios,time,tty\n' +
  'saved = termios.tcgetattr(0)\n' +
  'tty.setraw(0)\n' +
  'print(\'raw\' \'-ready\', end=\'\\r\\n\', flush=True)\n' +
  'try:\n    time.sleep(300)\n' +
  'except KeyboardInterrupt:\n    termios.tcsetattr(0, termios.TCSAFLUSH, saved); print(\'got-sigint\'); sys.exit(130)\n"';

// A send that stays live: the program neither prints nor reads the terminal, and the idle
// period is longer than any test.
const LIVE = { idleMs: 600000, timeoutMs: 600000 };

test('an AbortSignal stops a raw-mode program with a real SIGINT; the next send works', async (t) => {
  const service = await startService(t);
  const agent = service.mintOwner('agent');
  const { sessionId, pid } = await service.spawn(agent, { type: 'shell', name: 'main' });
  const controller = new AbortController();
  const reason = new Error('the test stops it');
  const op = service.startSend(agent, sessionId, { text: RAW_PROGRAM, ...LIVE, signal: controller.signal });
  await outputUntil(op, 'raw-ready');
  await waitForeground(pid, 'python3');

  controller.abort(reason);
  // ABORTED keeps what ran: the program's own exit status, its output; the reason is the cause.
  await assert.rejects(op.done, (error) => {
    assert.ok(error instanceof DshptyError, String(error));
    assert.equal(error.code, 'ABORTED');
    assert.equal(error.cause, reason);
    assert.equal(error.result?.exitCode, 130, JSON.stringify(error.result));
    assert.ok(error.result.viewport.includes('got-sigint'), error.result.viewport);
    return true;
  });
  const next = await service.startSend(agent, sessionId, { text: 'echo "after-$?"' }).done;
  assert.equal(next.waitReason, 'stdin_read');
  assert.ok(next.viewport.includes('after-130'), next.viewport);
  const page = await service.read(agent, sessionId, { offset: 0, count: 50 });
  assert.ok(page.text.includes('got-sigint'), page.text);
});

test('cancel() stops a send with a real SIGINT and done rejects ABORTED', async (t) => {
  const service = await startService(t);
  const agent = service.mintOwner('agent');
  const { sessionId, pid } = await service.spawn(agent, { type: 'shell' });
  const op = service.startSend(agent, sessionId, { text: 'echo "st""arted"; sleep 300', ...LIVE });
  await outputUntil(op, 'started');
  await waitForeground(pid, 'sleep');
  assert.equal(await op.cancel(), true);
  await assert.rejects(op.done, { name: 'DshptyError', code: 'ABORTED' });
  const next = await service.startSend(agent, sessionId, { text: 'echo "status-$?"' }).done;
  assert.ok(next.viewport.includes('status-130'), next.viewport);
  // Once settled there is nothing to cancel.
  assert.equal(await op.cancel(), false);
});

test('an already aborted signal sends nothing and rejects with its reason', async (t) => {
  const service = await startService(t);
  const agent = service.mintOwner('agent');
  const { sessionId } = await service.spawn(agent, { type: 'shell' });
  const reason = { why: 'never started' };
  const op = service.startSend(agent, sessionId, { text: 'echo nope', signal: AbortSignal.abort(reason) });
  await assert.rejects(op.done, (error) => error === reason);
  const next = await service.startSend(agent, sessionId, { text: 'echo yes' }).done;
  assert.ok(!next.viewport.includes('nope'), next.viewport);
});

test('while a send is live: list answers and a second send is refused SEND_ACTIVE', async (t) => {
  const service = await startService(t);
  const agent = service.mintOwner('agent');
  const { sessionId, pid } = await service.spawn(agent, { type: 'shell', name: 'busy' });
  const other = await service.spawn(agent, { type: 'shell', name: 'other' });
  const controller = new AbortController();
  const live = service.startSend(agent, sessionId, { text: 'echo "bu""sy-start"; sleep 300', ...LIVE, signal: controller.signal });
  await outputUntil(live, 'busy-start');

  const [sessions, refused, elsewhere, activity] = await Promise.allSettled([
    service.list(agent),
    service.startSend(agent, sessionId, { text: 'echo second' }).done,
    service.startSend(agent, other.sessionId, { text: 'echo elsewhere' }).done,
    service.hasOwnerActivity(agent),
  ]);
  assert.equal(sessions.status, 'fulfilled');
  assert.deepEqual(sessions.value.map((s) => s.name).sort(), ['busy', 'other']);
  assert.equal(refused.status, 'rejected');
  assert.ok(refused.reason instanceof DshptyError);
  assert.equal(refused.reason.code, 'SEND_ACTIVE');
  assert.equal(elsewhere.status, 'fulfilled');
  assert.ok(elsewhere.value.viewport.includes('elsewhere'));
  assert.deepEqual(activity, { status: 'fulfilled', value: true });

  await waitForeground(pid, 'sleep');
  controller.abort();
  await assert.rejects(live.done, (error) => error.code === 'ABORTED' && error.cause?.name === 'AbortError');
  const after = await service.startSend(agent, sessionId, { text: 'echo second' }).done;
  assert.ok(after.viewport.includes('second'), after.viewport);
});
