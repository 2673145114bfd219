// One send as the caller holds it: its answer (a foreground send's result; a background
// job's start), cancellation, reads of its output by offset with a wait, stop, and the
// iterator over it. A job's `done` is its end: the `output` reply that says `done` carries
// its result, whichever reader got it; reading `done` starts a reader of its own (long
// waits from the newest offset any reader saw), so a job nobody asks about costs nothing.
import { decodeOutput, decodeSend, decodeStarted, decodeStop } from './decode.js';
import { DshptyError, type WireError } from './errors.js';
import type { ReplConnection } from './connection.js';
import type {
  JobOperation,
  JobOutput,
  JobStarted,
  OutputDelta,
  OutputOptions,
  SendOperation,
  SendOptions,
  SendResult,
  StopResult,
} from './types.js';
import { FOLLOW_WAIT_MS, followOutput } from './stream.js';
import { sendFields } from './wire.js';

export interface SendContext {
  connection: ReplConnection;
  label: string;
  requestTimeoutMs: number;
  /** the repl's own send deadline (its --timeout-ms) */
  sendTimeoutMs: number;
  /** throws SERVICE_DISPOSING once the service is being disposed */
  checkServing(): void;
}

type CancelledBy = { reason: unknown } | 'cancel' | null;

export function startSendOperation(ctx: SendContext, sessionId: string, options: SendOptions): SendOperation | JobOperation {
  const { connection, label, requestTimeoutMs } = ctx;
  const abortSignal = options.signal;
  const background = options.background === true;
  // A foreground send answers by its own timeoutMs; a job at once, or with `until` by its
  // timeoutMs (none: whenever the condition holds, so no deadline). The request deadline
  // starts after that.
  const answerBy = background
    ? (options.until === undefined ? 0 : options.timeoutMs ?? Number.POSITIVE_INFINITY)
    : options.timeoutMs ?? ctx.sendTimeoutMs;
  const { id, answer } = connection.request<unknown>('send', { owner: label, ...sendFields(sessionId, options) },
    answerBy + requestTimeoutMs);
  if (!Number.isFinite(answerBy)) watchLiveness(ctx, id, answer);

  let ended = false;  // the send (a job: the job) has its result or its error
  let cancelledBy: CancelledBy = null;
  // The repl's word on the first cancel: false when the send had settled before it came.
  let cancelTook: Promise<boolean> | null = null;
  let droppedBytes = 0;
  let knownEnd = 0;  // the newest offset any reader of this op saw

  const cancel = async (by: { reason: unknown } | 'cancel'): Promise<boolean> => {
    if (ended) return false;
    cancelledBy ??= by;
    const { answer: reply } = connection.request<{ cancelled: boolean }>(
      'cancel', { owner: label, sendId: id }, requestTimeoutMs);
    const took = reply.then((r) => r.cancelled);
    cancelTook ??= took.catch(() => true);
    return took;
  };
  const onAbort = () => void cancel({ reason: abortSignal!.reason }).catch(() => {});
  abortSignal?.addEventListener('abort', onAbort, { once: true });

  // A cancelled send rejects only after its own answer came back: by then the repl has
  // settled it, so the caller's next send on this session is never SEND_ACTIVE. The
  // child's end (or silence) is reported as such even after a cancel: the SIGINT may
  // never have gone.
  const settle = () => {
    ended = true;
    abortSignal?.removeEventListener('abort', onAbort);
  };
  // Either way the rejection is ABORTED with what ran (its exit code, output); an
  // AbortSignal's reason rides along as the error's `cause`.
  const aborted = (result?: SendResult): unknown =>
    cancelledBy === 'cancel'
      ? new DshptyError('ABORTED', 'send cancelled', [], result)
      : new DshptyError('ABORTED', 'send aborted by its AbortSignal', [], result, cancelledBy!.reason);
  const finish = async (result: SendResult): Promise<SendResult> => {
    settle();
    // A cancel that crossed the send's answer did nothing: the result stands.
    if (cancelledBy && (await cancelTook)) throw aborted(result);
    return result;
  };
  const fail = (error: unknown): never => {
    settle();
    const childGone = connection.ended || (error instanceof DshptyError && error.code === 'REPL_TIMEOUT');
    if (cancelledBy && !childGone) throw aborted();
    throw error;
  };

  const request = <T>(op: string, fields: Record<string, unknown>, extraMs = 0): Promise<T> => {
    ctx.checkServing();
    return connection.request<T>(op, fields, requestTimeoutMs + extraMs).answer;
  };

  // A job's end: resolved by the first reply that carries it (its start, when it ended
  // first; any `output` that says done). A foreground send's end is its answer.
  let resolveJob: (wire: unknown) => void = () => {};
  let rejectJob: (error: unknown) => void = () => {};
  const jobWire = background ? new Promise<unknown>((resolve, reject) => {
    resolveJob = resolve;
    rejectJob = reject;
  }) : answer;
  let jobKnown = false;  // a reply carried the job's end
  const jobEnded = (wire: unknown) => {
    jobKnown = true;
    const error = (wire as { error?: WireError }).error;
    if (error) rejectJob(DshptyError.fromWire(error));
    else resolveJob(wire);
  };

  // The job's start; it says how the job ended when it ended before `until` held.
  const started: Promise<JobStarted> | null = !background ? null : answer.then((wire) => {
    const raw = wire as { done?: boolean; result?: unknown };
    if (raw.done && raw.result !== undefined) jobEnded(raw.result);
    return decodeStarted(wire);
  }, (error: unknown) => {
    rejectJob(error);
    throw error;
  });
  started?.catch(() => {});

  const output = async (read: OutputOptions = {}): Promise<JobOutput> => {
    const fields: Record<string, unknown> = { owner: label, sendId: id };
    if (read.offset !== undefined) fields.offset = read.offset;
    if (read.waitMs !== undefined) fields.waitMs = read.waitMs;
    const wire = await request<Record<string, unknown>>('output', fields, read.waitMs ?? 0);
    const out = decodeOutput(wire);
    knownEnd = Math.max(knownEnd, out.nextOffset);
    if (out.done && wire.result !== undefined) jobEnded(wire.result);
    return out;
  };

  let watching = false;
  // Waits for the job's end from the newest offset seen: each wait answers with new bytes
  // (dropped here), the end, or its time running out.
  const watchJob = async () => {
    await started;
    for (;;) {
      const out = await output({ offset: knownEnd, waitMs: FOLLOW_WAIT_MS });
      if (out.done && out.result === undefined && out.extra.result === undefined)
        throw new DshptyError('BACKEND_FAILED', `job ${id} ended but the repl no longer keeps its result`);
      if (out.done) return;
    }
  };

  const done: Promise<SendResult> = jobWire.then(
    (wire) => finish(decodeSend(wire)),
    (error: unknown) => fail(error),
  );
  // Handled here, so a failed send nobody awaits is no unhandled rejection (which ends a
  // Node process); a caller who awaits `done` still gets the rejection.
  done.catch(() => {});

  const readOutput = () => request<OutputDelta>('output', { owner: label, sendId: id });
  const stop = async (): Promise<StopResult> =>
    decodeStop(await request<unknown>('stop', { owner: label, sendId: id }));

  const op: SendOperation = {
    sendId: id,
    get done(): Promise<SendResult> {
      if (background && !watching && !jobKnown && !ended) {
        watching = true;
        watchJob().catch((error: unknown) => rejectJob(error));
      }
      return done;
    },
    get droppedBytes(): number {
      return droppedBytes;
    },
    readOutput,
    output,
    stop,
    cancel: () => cancel('cancel'),
    [Symbol.asyncIterator]: () => followOutput(
      (offset) => output({ offset, waitMs: FOLLOW_WAIT_MS }),
      () => op.done,
      (bytes) => { droppedBytes += bytes; },
    ),
  };
  return started ? Object.assign(op, { started }) : op;
}

/** A job waiting for its condition with no `timeoutMs` has no deadline of its own: only the
 *  repl knows when the condition holds, which may take long. So that a stopped or wedged
 *  repl still fails it like any request (REPL_TIMEOUT, never a hang), the repl is asked
 *  `hello` at once and then every `requestTimeoutMs` while the answer is due; a hello not
 *  answered within `requestTimeoutMs` fails the send's answer (`started`, and `done`). A
 *  repl that answers keeps the wait open however long the condition takes. */
function watchLiveness(ctx: SendContext, id: number, answer: Promise<unknown>): void {
  const { connection, requestTimeoutMs } = ctx;
  let answered = false;
  let timer: NodeJS.Timeout | undefined;
  const settle = () => {
    answered = true;
    clearTimeout(timer);
  };
  answer.then(settle, settle);
  const probe = () => {
    if (answered || connection.ended) return;
    try {
      ctx.checkServing();
    } catch {
      return;  // disposal under way: the child's shutdown or end settles the send
    }
    connection.request('hello', {}, requestTimeoutMs).answer.then(() => {
      if (answered) return;
      timer = setTimeout(probe, requestTimeoutMs);
      timer.unref();
    }, (error: unknown) => {
      if (answered || !(error instanceof DshptyError) || error.code !== 'REPL_TIMEOUT') return;
      connection.expire(id, new DshptyError('REPL_TIMEOUT', `dshpty-repl ${connection.pid} did not answer within ` +
        `${requestTimeoutMs} ms while job ${id} waited for its condition (stopped or wedged?); ` +
        'dispose({force: true}) ends it'));
    });
  };
  probe();
}

/** A send refused before it reached the repl (an aborted signal, a disposed owner). */
export function refusedSend(error: unknown): JobOperation {
  const done = Promise.reject(error);
  done.catch(() => {});  // rejects for the caller who awaits it, never process-wide
  const started = Promise.reject(error);
  started.catch(() => {});
  const refused = () => Promise.reject(error);
  return {
    sendId: -1,
    started,
    done,
    droppedBytes: 0,
    readOutput: refused,
    output: refused,
    stop: refused,
    cancel: async () => false,
    [Symbol.asyncIterator]: () => followOutput(refused, () => done, () => {}),
  };
}
