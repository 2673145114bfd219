// Background jobs through the client: a job answers at once (with `until`, once it holds),
// its output read by offset by any number of readers and followed by `for await`, a reader
// too slow for the window told what it lost, and `stop()` ending the job with proof.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';

import { alive, startService } from './helpers.mjs';

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function listens(port) {
  try {
    await fetch(`http://127.0.0.1:${port}/`);
    return true;
  } catch {
    return false;
  }
}

test('a job answers at once, ends with its status in done, and its output is read by offset', async (t) => {
  const service = await startService(t);
  const agent = service.mintOwner('agent');
  const { sessionId } = await service.spawn(agent, { type: 'shell' });
  const op = service.startSend(agent, sessionId, { text: 'for i in 1 2 3; do echo line-$i; sleep 0.3; done; (exit 4)', background: true });
  const started = await op.started;
  assert.equal(started.job, op.sendId);
  assert.equal(started.sessionId, sessionId);
  assert.equal(started.done, undefined);
  await assert.rejects(service.startSend(agent, sessionId, { text: 'true' }).done,
    (e) => e.code === 'SEND_ACTIVE' && e.message.includes(String(op.sendId)));
  // A wait answers with new output (or the end), never empty-handed before its time.
  const first = await op.output({ offset: 0, waitMs: 30000 });
  assert.ok(first.delta.length > 0 || first.done, JSON.stringify(first));
  assert.equal(first.nextOffset >= Buffer.byteLength(first.delta), true);
  const chunks = [];
  for await (const chunk of op) chunks.push(chunk);
  const result = await op.done;
  assert.equal(result.waitReason, 'stdin_read');
  assert.equal(result.exitCode, 4);
  // Two readers by offset get the same bytes as the loop.
  const whole = async () => {
    let text = '';
    let offset = 0;
    for (;;) {
      const out = await op.output({ offset, waitMs: 1000 });
      text += out.delta;
      if (out.done && out.nextOffset === offset) return { text, out };
      offset = out.nextOffset;
    }
  };
  const [a, b] = await Promise.all([whole(), whole()]);
  assert.equal(a.text, chunks.join(''));
  assert.equal(b.text, a.text);
  assert.ok(a.text.includes('line-3'), a.text);
  assert.equal(a.out.result.exitCode, 4);
  assert.equal(op.droppedBytes, 0);
});

test('until: the job answers once its line came, runs on, and an exit before it says how', async (t) => {
  const service = await startService(t);
  const agent = service.mintOwner('agent');
  const { sessionId } = await service.spawn(agent, { type: 'shell' });
  const op = service.startSend(agent, sessionId, {
    text: "sh -c 'echo starting; sleep 0.5; echo ready; sleep 0.5; echo after-ready; exit 5'",
    background: true, until: { output: '^ready$' },
  });
  const started = await op.started;
  assert.equal(started.waitReason, 'matched');
  assert.deepEqual(started.match, { output: 'ready' });
  assert.equal(started.done, false);
  const text = [];
  for await (const chunk of op) text.push(chunk);
  assert.ok(text.join('').includes('after-ready'));
  assert.equal((await op.done).exitCode, 5);

  const early = service.startSend(agent, sessionId, {
    text: "sh -c 'sleep 0.2; exit 3'", background: true, until: { output: '^never$' },
  });
  const said = await early.started;
  assert.equal(said.done, true);
  assert.equal(said.match, undefined);
  assert.equal(said.result?.exitCode, 3);
  assert.equal((await early.done).exitCode, 3);
});

test('a background http.server found by its port, followed by for await, stopped with proof', async (t) => {
  const service = await startService(t);
  const agent = service.mintOwner('agent');
  const { sessionId } = await service.spawn(agent, { type: 'shell' });
  await service.startSend(agent, sessionId, { text: 'export KEEP=kept' }).done;
  const port = await freePort();
  const op = service.startSend(agent, sessionId, {
    text: `python3 -u -m http.server ${port} --bind 127.0.0.1`, background: true,
    until: { port }, timeoutMs: 60000,
  });
  const started = await op.started;
  assert.equal(started.waitReason, 'matched');
  assert.ok(started.match && 'port' in started.match && started.match.port === port, JSON.stringify(started));
  const server = started.match.pid;
  assert.equal(await listens(port), true, `port ${port} listens at the match`);

  const chunks = [];
  let sawRequest = null;
  const follow = (async () => {
    for await (const chunk of op) {
      chunks.push(chunk);
      if (chunk.includes('GET /probe-path')) sawRequest?.();
    }
  })();
  const requested = new Promise((resolve) => { sawRequest = resolve; });
  await fetch(`http://127.0.0.1:${port}/probe-path`);
  await requested;  // the loop saw the server's log line while the job runs

  const stop = await op.stop();
  assert.equal(stop.stopped, true);
  assert.deepEqual(stop.remaining, []);
  assert.equal(stop.signals[0], 'SIGINT');
  await follow;  // the loop ends with the job
  const result = await op.done;
  assert.equal(result.waitReason, 'stdin_read');
  assert.equal(alive(server), false, `server ${server} survived the stop`);
  assert.equal(await listens(port), false, `port ${port} still listens`);
  assert.ok(chunks.join('').includes('Serving HTTP'), chunks.join(''));
  const after = await service.startSend(agent, sessionId, { text: 'echo have-$KEEP' }).done;
  assert.ok(after.viewport.includes('have-kept'), after.viewport);
});

test('a loop too slow for the window is told how many bytes it lost', async (t) => {
  const service = await startService(t);
  const agent = service.mintOwner('agent');
  const { sessionId } = await service.spawn(agent, { type: 'shell' });
  const op = service.startSend(agent, sessionId, { text: 'seq 1 400000; echo flood-end', background: true });
  await op.done;  // ended before anyone read it: more than the window (1 MiB) went by
  let end = 0;
  for (let out = await op.output({ offset: 0 }); ; out = await op.output({ offset: out.nextOffset })) {
    end = out.nextOffset;
    if (out.done && out.delta === '') break;
  }
  const chunks = [];
  for await (const chunk of op) chunks.push(chunk);
  const text = chunks.join('');
  assert.ok(op.droppedBytes > 0);
  assert.equal(op.droppedBytes + Buffer.byteLength(text), end);
  assert.ok(text.includes('flood-end'), text.slice(-100));
});
