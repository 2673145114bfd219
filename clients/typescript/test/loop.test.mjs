// Five thousand sends through one service: nothing accumulates per send (listeners on the
// caller's AbortSignal, requests awaiting answers, heap). Run with --expose-gc.
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { test } from 'node:test';
import { getHeapSpaceStatistics } from 'node:v8';

import { startService } from './helpers.mjs';

// V8 keeps warming up for the first thousand sends or so (feedback and inline caches grow the
// data heap by 67, 25, 17, then 1 byte a send over windows of 1,000, measured), and the heap
// after a full collection still swings by up to 300 KB between two readings (buffers of the
// child's pipe in flight): the window starts after the warm-up, each end is the least of a
// few readings, and the window is long enough that a leak of 150 bytes a send stands out.
const WARM_UP = 1000;
const ROUNDS = 5000;
const READINGS = 5;  // at each end, one every READING_GAP sends; the least counts
const READING_GAP = 20;
const HEAP_SLACK = 600 * 1024;

function heapAfterGc() {
  for (let i = 0; i < 3; i++) global.gc();
  return getHeapSpaceStatistics()
    .filter((space) => !space.space_name.startsWith('code'))
    .reduce((sum, space) => sum + space.space_used_size, 0);
}
function codeBytes() {
  return getHeapSpaceStatistics()
    .filter((space) => space.space_name.startsWith('code'))
    .reduce((sum, space) => sum + space.space_used_size, 0);
}

test('5,000 sends leak neither memory nor listeners', async (t) => {
  assert.equal(typeof global.gc, 'function', 'run with node --expose-gc');
  const service = await startService(t);
  const agent = service.mintOwner('agent');
  const { sessionId } = await service.spawn(agent, { type: 'shell' });
  const controller = new AbortController();
  let baseline = 0;
  let baselineCode = 0;
  let end = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const sinceWarm = round - WARM_UP;
    if (sinceWarm >= 0 && sinceWarm < READINGS * READING_GAP && sinceWarm % READING_GAP === 0) {
      const heap = heapAfterGc();
      baseline = sinceWarm === 0 ? heap : Math.min(baseline, heap);
      baselineCode = codeBytes();
    }
    const beforeEnd = ROUNDS - round;
    if (beforeEnd <= READINGS * READING_GAP && beforeEnd % READING_GAP === 0) {
      const heap = heapAfterGc();
      end = beforeEnd === READINGS * READING_GAP ? heap : Math.min(end, heap);
    }
    const op = service.startSend(agent, sessionId, { text: 'true', signal: controller.signal });
    if (round % 10 === 0) await op.readOutput();
    const result = await op.done;
    assert.equal(result.waitReason, 'stdin_read');
    assert.equal(result.exitCode, 0);
  }
  assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
  assert.equal(service.pendingCount, 0);
  const growth = Math.min(end, heapAfterGc()) - baseline;
  t.diagnostic(`heap growth over ${ROUNDS - WARM_UP} sends: ${growth} bytes (code: ${codeBytes() - baselineCode})`);
  assert.ok(growth < HEAP_SLACK, `heap grew ${growth} bytes over ${ROUNDS - WARM_UP} sends`);
});
