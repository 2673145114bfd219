// A thousand sends through one service: nothing accumulates per send (listeners on the
// caller's AbortSignal, requests awaiting answers, heap). Run with --expose-gc.
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { test } from 'node:test';

import { startService } from './helpers.mjs';

const WARM_UP = 100;
const ROUNDS = 1000;
// Far below what a per-send leak of even a small closure (a few hundred bytes) leaves
// after 900 sends, far above what a garbage collection leaves unevenly.
const HEAP_SLACK = 256 * 1024;

function heapAfterGc() {
  for (let i = 0; i < 3; i++) global.gc();
  return process.memoryUsage().heapUsed;
}

test('1,000 sends leak neither memory nor listeners', async (t) => {
  assert.equal(typeof global.gc, 'function', 'run with node --expose-gc');
  const service = await startService(t);
  const agent = service.mintOwner('agent');
  const { sessionId } = await service.spawn(agent, { type: 'shell' });
  const controller = new AbortController();
  let baseline = 0;
  for (let round = 0; round < ROUNDS; round++) {
    if (round === WARM_UP) baseline = heapAfterGc();
    const op = service.startSend(agent, sessionId, { text: 'true', signal: controller.signal });
    if (round % 10 === 0) await op.readOutput();
    const result = await op.done;
    assert.equal(result.waitReason, 'stdin_read');
    assert.equal(result.exitCode, 0);
  }
  assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
  assert.equal(service.pendingCount, 0);
  const growth = heapAfterGc() - baseline;
  t.diagnostic(`heap growth over ${ROUNDS - WARM_UP} sends: ${growth} bytes`);
  assert.ok(growth < HEAP_SLACK, `heap grew ${growth} bytes over ${ROUNDS - WARM_UP} sends`);
});
