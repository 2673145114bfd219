// A send's output as an async iterator of text chunks, over the JSON face's `output` op
// (consuming): a poll while output flows, backing off while it is quiet, woken at once when
// the send settles; one last read after that takes the bytes that came with the end, so the
// chunks add up to everything the send printed. Then the loop ends, or throws the send's
// error (ABORTED, REPL_EXITED, ...).
import type { OutputDelta, SendResult } from './types.js';

/** Between reads while output flows, and the longest wait while it is quiet. */
const FLOWING_MS = 10;
const QUIET_MAX_MS = 100;

export async function* streamOutput(
  readOutput: () => Promise<OutputDelta>,
  done: Promise<SendResult>,
): AsyncGenerator<string, void, undefined> {
  let settled = false;
  let wake: (() => void) | null = null;
  const onSettled = () => {
    settled = true;
    wake?.();
  };
  done.then(onSettled, onSettled);
  let quietMs = FLOWING_MS;
  for (;;) {
    const last = settled;
    let delta: string;
    try {
      ({ delta } = await readOutput());
    } catch (error) {
      // A send the repl refused has no output to read: its own error says why.
      await done;
      throw error;
    }
    if (delta) yield delta;
    if (last) break;
    quietMs = delta ? FLOWING_MS : Math.min(quietMs * 2, QUIET_MAX_MS);
    if (!settled) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          wake = null;
          resolve();
        }, quietMs);
        wake = () => {
          clearTimeout(timer);
          wake = null;
          resolve();
        };
      });
    }
  }
  await done;
}
