// What goes on the wire, seen through a stand-in repl that answers each request with the
// request itself and refuses unknown `open` fields as a strict repl does
// (tests/clients/fake_repl.py): only the fields a caller gave are sent, under the JSON face's
// names (docs/tool-protocol.md), and a repl's refusal of one reaches the caller as its DshptyError.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { startService } from './helpers.mjs';

const fake = process.env.DSHPTY_FAKE_REPL;
const skip = fake ? false : 'DSHPTY_FAKE_REPL (the stand-in repl) is not set';

// A result's fields the types do not name (the stand-in's `request`) are under `extra`; an
// output delta is passed through as it came.
function sent(result) {
  const { id, ...fields } = (result.extra ?? result).request;
  assert.equal(typeof id, 'number');
  return fields;
}

test('only the fields given are sent; a field the repl does not know is its INVALID_ARGUMENT', { skip }, async (t) => {
  const service = await startService(t, { repl: fake });
  const agent = service.mintOwner('agent');
  assert.deepEqual(sent(await service.spawn(agent, { type: 'shell' })), { op: 'open', owner: 'agent', type: 'shell' });
  assert.deepEqual(
    sent(await service.spawn(agent, { type: 'shell', name: 'n', cwd: '/', terminal: 'xterm', sandbox: 'read-only', network: false })),
    { op: 'open', owner: 'agent', type: 'shell', name: 'n', cwd: '/', terminal: 'xterm', sandbox: 'read-only', network: 'off' });
  await assert.rejects(service.spawn(agent, { type: 'shell', linger: 5 }),
    { name: 'DshptyError', code: 'INVALID_ARGUMENT', message: /"linger"/ });

  const op = service.startSend(agent, 'pty-1', { keys: ['Up'] });
  assert.deepEqual(sent(await op.readOutput()), { op: 'output', owner: 'agent', sendId: op.sendId });
  assert.deepEqual(sent(await op.done), { op: 'send', owner: 'agent', sessionId: 'pty-1', keys: ['Up'] });
  const full = await service.startSend(agent, 'pty-1', { text: 'x', submit: false, timeoutMs: 5, idleMs: 6 }).done;
  assert.deepEqual(sent(full), { op: 'send', owner: 'agent', sessionId: 'pty-1', text: 'x', submit: false, timeoutMs: 5, idleMs: 6 });
  assert.deepEqual(sent(await service.read(agent, 'pty-1')), { op: 'read', owner: 'agent', sessionId: 'pty-1' });
});

test('the newer open fields and attach pass through by their JSON names', { skip }, async (t) => {
  const service = await startService(t, { repl: fake, env: { FAKE_REPL_OPEN_FIELDS: 'type,shell,rc,history,linger' } });
  const agent = service.mintOwner('agent');
  assert.deepEqual(sent(await service.spawn(agent, { type: 'shell', shell: 'zsh', rc: 'user', history: 'off', linger: 60 })),
    { op: 'open', owner: 'agent', type: 'shell', shell: 'zsh', rc: 'user', history: 'off', linger: 60 });
  const [attached] = await service.attach(agent, { name: 'main' });
  assert.deepEqual(sent(attached), { op: 'attach', owner: 'agent', name: 'main' });
  const [listed] = await service.list(agent);
  assert.deepEqual(sent(listed), { op: 'list', owner: 'agent' });
});
