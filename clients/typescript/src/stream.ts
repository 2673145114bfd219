// A send's output as an async iterator of text chunks, read by offset through the JSON
// face's `output` op with `waitMs`: each read answers once bytes past the offset came, the
// send ended, or the wait ran out (then it asks again), so a quiet send costs one request
// per wait and no timer of ours. The loop ends after the read that found the send ended
// and nothing more past its offset (the last bytes came before it); then it throws the
// send's error or returns. Bytes the retained window lost before the loop read them are
// counted through `onDropped` (the next chunk starts after the gap).
import type { JobOutput, SendResult } from './types.js';

/** How long one read waits for more output (the repl answers sooner when some comes). */
export const FOLLOW_WAIT_MS = 30_000;

export async function* followOutput(
  read: (offset: number) => Promise<JobOutput>,
  done: () => Promise<SendResult>,
  onDropped: (bytes: number) => void,
): AsyncGenerator<string, void, undefined> {
  let offset = 0;
  for (;;) {
    let out: JobOutput;
    try {
      out = await read(offset);
    } catch (error) {
      // A send the repl refused has no output to read: its own error says why.
      await done();
      throw error;
    }
    if (out.droppedBytes > 0) onDropped(out.droppedBytes);
    const moved = out.nextOffset !== offset;
    offset = out.nextOffset;
    if (out.delta) yield out.delta;
    if (out.done && !moved) break;
  }
  await done();
}
