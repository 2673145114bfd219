// DshptyService: @deepseek-ai/dsh-pty's PtyService API over one dshpty-repl --json child. Every method
// is one request (the repl enforces ownership, one live send per session and the rest of
// docs/contract.md); the client adds owners by name, AbortSignal cancellation, and the
// rule that the child's end rejects everything still waiting.
import { decodeSend, decodeSession, decodeSpawn } from './decode.js';
import { DshptyError } from './errors.js';
import { ReplConnection } from './connection.js';
import { locateRepl } from './locate.js';
import { DshptyOwner, OwnerRegistry } from './owners.js';
import type {
  AttachOptions,
  OutputDelta,
  ReadOptions,
  ReadPage,
  ReplExit,
  ReplHello,
  ResizeOptions,
  Screen,
  SendOperation,
  SendOptions,
  SendResult,
  SessionInfo,
  ShortSignalName,
  SignalName,
  SignalResult,
  SpawnOptions,
  SpawnResult,
} from './types.js';
import { streamOutput } from './stream.js';
import { openFields, replSendTimeoutMs, sendFields } from './wire.js';

export interface StartOptions {
  /** the dshpty-repl to run; default $DSHPTY_REPL, then `dshpty-repl` on the PATH */
  repl?: string;
  /** more arguments for it (`--cwd DIR`, `--remote NAME=COMMAND`, ...); `--json` is implied */
  args?: string[];
  /** its environment; default process.env */
  env?: NodeJS.ProcessEnv | undefined;
  /** how long any request may wait for the child's answer before it fails with REPL_TIMEOUT
   *  (a send: its own `timeoutMs` more); default 60000 */
  requestTimeoutMs?: number | undefined;
}

export interface DisposeOptions {
  /** SIGKILL the child when it has not ended within `requestTimeoutMs` (stopped, wedged) */
  force?: boolean | undefined;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;

export class DshptyService {
  private readonly owners = new OwnerRegistry();
  private disposal: Promise<void> | null = null;
  private forced: Promise<void> | null = null;

  private constructor(
    private readonly connection: ReplConnection,
    private readonly requestTimeoutMs: number,
    private readonly sendTimeoutMs: number,
    /** what the child said it is */
    readonly hello: ReplHello,
  ) {}

  /** Starts the repl child and resolves once it has answered `hello`. Rejects with
   *  REPL_NOT_FOUND when it cannot be run or is no dshpty-repl, REPL_EXITED when it ends
   *  at once (bad arguments: the message ends with what it said), REPL_TIMEOUT when it does
   *  not answer; the child is gone by then. */
  static async start(options: StartOptions = {}): Promise<DshptyService> {
    const env = options.env ?? process.env;
    const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    if (!(requestTimeoutMs > 0))
      throw new DshptyError('INVALID_ARGUMENT', `requestTimeoutMs must be a positive number of ms, not ${requestTimeoutMs}`);
    const path = locateRepl(options.repl, env);
    const args = options.args ?? [];
    const connection = await ReplConnection.start(path, args, env);
    try {
      const hello = await connection.request<ReplHello>('hello', {}, requestTimeoutMs).answer;
      if (typeof hello.protocol !== 'number' || typeof hello.version !== 'string')
        throw new DshptyError('REPL_NOT_FOUND', `${path} is not a dshpty-repl (its hello: ${JSON.stringify(hello)})`);
      return new DshptyService(connection, requestTimeoutMs, replSendTimeoutMs(args), hello);
    } catch (error) {
      connection.kill();
      await connection.exited;
      if (error instanceof DshptyError && !['REPL_EXITED', 'REPL_TIMEOUT', 'REPL_NOT_FOUND'].includes(error.code))
        throw new DshptyError('REPL_NOT_FOUND', `${path} does not answer "hello" (not a dshpty-repl, or an older one): ${error.message}`);
      throw error;
    }
  }

  /** The child's pid (to watch it, or for tests). */
  get pid(): number | undefined {
    return this.connection.pid;
  }

  /** Resolves once the child is gone, however it ended; every call still waiting has then
   *  rejected, and later calls reject, with `REPL_EXITED` (unless `dispose()` ended it). */
  get exited(): Promise<ReplExit> {
    return this.connection.exited;
  }

  /** Requests awaiting their answer. */
  get pendingCount(): number {
    return this.connection.pendingCount;
  }

  /** Throws INVALID_ARGUMENT while another owner of this name is live (or being disposed). */
  mintOwner(name: string): DshptyOwner {
    return this.owners.mint(name);
  }

  async spawn(owner: DshptyOwner, options: SpawnOptions): Promise<SpawnResult> {
    return decodeSpawn(await this.call<unknown>(owner, 'open', openFields(options)));
  }

  /** Starts a send and returns at once; see SendOperation. */
  startSend(owner: DshptyOwner, sessionId: string, options: SendOptions = {}): SendOperation {
    let label: string;
    try {
      label = this.actingLabel(owner);
    } catch (error) {
      return refusedSend(error);
    }
    const abortSignal = options.signal;
    if (abortSignal?.aborted) return refusedSend(abortSignal.reason);

    // The send answers by its own timeoutMs; the request deadline starts after that.
    const deadline = (options.timeoutMs ?? this.sendTimeoutMs) + this.requestTimeoutMs;
    const { id, answer } = this.connection.request<unknown>('send', { owner: label, ...sendFields(sessionId, options) }, deadline);
    let answered = false;
    // The caller's cancel() or an AbortSignal: ABORTED with the send's result either way.
    let cancelledBy: { reason: unknown } | 'cancel' | null = null;
    // The repl's word on the first cancel: false when the send had settled before it came.
    let cancelTook: Promise<boolean> | null = null;
    const cancel = async (by: { reason: unknown } | 'cancel'): Promise<boolean> => {
      if (answered) return false;
      cancelledBy ??= by;
      const { answer: reply } = this.connection.request<{ cancelled: boolean }>(
        'cancel', { owner: label, sendId: id }, this.requestTimeoutMs);
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
      answered = true;
      abortSignal?.removeEventListener('abort', onAbort);
    };
    // Either way the rejection is ABORTED with what ran (its exit code, output); an
    // AbortSignal's reason rides along as the error's `cause`.
    const aborted = (result?: SendResult): unknown =>
      cancelledBy === 'cancel'
        ? new DshptyError('ABORTED', 'send cancelled', [], result)
        : new DshptyError('ABORTED', 'send aborted by its AbortSignal', [], result, cancelledBy!.reason);
    const done = answer.then(
      async (wire) => {
        settle();
        const result = decodeSend(wire);
        // A cancel that crossed the send's answer did nothing: the result stands.
        if (cancelledBy && (await cancelTook)) throw aborted(result);
        return result;
      },
      (error: unknown) => {
        settle();
        const childGone = this.connection.ended || (error instanceof DshptyError && error.code === 'REPL_TIMEOUT');
        if (cancelledBy && !childGone) throw aborted();
        throw error;
      },
    );
    // Handled here, so a failed send nobody awaits is no unhandled rejection (which ends a
    // Node process); a caller who awaits `done` still gets the rejection.
    done.catch(() => {});
    const readOutput = () => this.request<OutputDelta>('output', { owner: label, sendId: id });
    return {
      sendId: id,
      done,
      readOutput,
      cancel: () => cancel('cancel'),
      [Symbol.asyncIterator]: () => streamOutput(readOutput, done),
    };
  }

  async read(owner: DshptyOwner, sessionId: string, options: ReadOptions = {}): Promise<ReadPage> {
    const fields: Record<string, unknown> = { sessionId };
    if (options.offset !== undefined) fields.offset = options.offset;
    if (options.count !== undefined) fields.count = options.count;
    return this.call<ReadPage>(owner, 'read', fields);
  }

  async screen(owner: DshptyOwner, sessionId: string): Promise<Screen> {
    return (await this.call<{ screen: Screen }>(owner, 'read', { sessionId, screen: true })).screen;
  }

  /** `name`: SIGINT SIGTERM SIGKILL SIGTSTP SIGHUP (or without SIG). */
  async signal(owner: DshptyOwner, sessionId: string, name: SignalName | ShortSignalName): Promise<SignalResult> {
    return this.call<SignalResult>(owner, 'signal', { sessionId, signal: name });
  }

  async resize(owner: DshptyOwner, sessionId: string, size: ResizeOptions): Promise<void> {
    await this.call(owner, 'resize', { sessionId, rows: size.rows, cols: size.cols });
  }

  /** Resolves once the session's process tree is gone: true, or false when another close
   *  of it was already under way. */
  async kill(owner: DshptyOwner, sessionId: string): Promise<boolean> {
    return (await this.call<{ outcome: string }>(owner, 'close', { sessionId })).outcome === 'closed';
  }

  async list(owner: DshptyOwner): Promise<SessionInfo[]> {
    return (await this.call<{ sessions: unknown[] }>(owner, 'list', {})).sessions.map(decodeSession);
  }

  /** Reattach to this owner's sessions that outlived an earlier host (a repl with `attach`). */
  async attach(owner: DshptyOwner, options: AttachOptions = {}): Promise<SessionInfo[]> {
    const fields: Record<string, unknown> = {};
    if (options.name !== undefined) fields.name = options.name;
    return (await this.call<{ sessions: unknown[] }>(owner, 'attach', fields)).sessions.map(decodeSession);
  }

  /** True while the owner has any session at all, idle ones included (a session is a
   *  resource held), or a send running; false once it has none. */
  async hasOwnerActivity(owner: DshptyOwner): Promise<boolean> {
    return (await this.call<{ active: boolean }>(owner, 'activity', {})).active;
  }

  /** Closes the owner's sessions (their trees gone when this resolves). The owner's calls
   *  fail with OWNER_NOT_LIVE from now on; its name can be minted again once this settles. */
  async disposeOwner(owner: DshptyOwner): Promise<void> {
    this.checkServing();
    const label = this.owners.beginDispose(owner);
    try {
      await this.request('disposeOwner', { owner: label });
    } finally {
      this.owners.release(owner);
    }
  }

  /** Ends the child: every session's tree is gone when this resolves. Calls made after it
   *  began fail with SERVICE_DISPOSING; calls already made are answered first. A child that
   *  does not end within `requestTimeoutMs` makes this reject with REPL_TIMEOUT; with
   *  `{force: true}` it is then killed (SIGKILL) and this resolves once it is gone. */
  dispose(options: DisposeOptions = {}): Promise<void> {
    this.disposal ??= this.shutdown();
    if (!options.force) return this.forced ?? this.disposal;
    this.forced ??= this.disposal.catch(() => {}).finally(() => {
      this.connection.kill();
      return this.connection.exited;
    }).then(() => {});
    return this.forced;
  }

  private async shutdown(): Promise<void> {
    let failure: unknown = null;
    if (!this.connection.ended) {
      try {
        await this.connection.request('shutdown', {}, this.requestTimeoutMs).answer;
      } catch (error) {
        // A child that died meanwhile took its sessions with it (their helpers end with it).
        if (!this.connection.ended) failure = error;
      }
    }
    this.connection.endInput();
    if (failure) throw failure;
    await withDeadline(this.connection.exited, this.requestTimeoutMs,
      () => new DshptyError('REPL_TIMEOUT', `dshpty-repl ${this.pid} did not exit within ${this.requestTimeoutMs} ms of its shutdown`));
  }

  private checkServing(): void {
    if (this.disposal) throw new DshptyError('SERVICE_DISPOSING', 'the dshpty service is disposed');
  }

  private actingLabel(owner: DshptyOwner): string {
    this.checkServing();
    return this.owners.label(owner);
  }

  private async call<T>(owner: DshptyOwner, op: string, fields: Record<string, unknown>): Promise<T> {
    return this.request<T>(op, { owner: this.actingLabel(owner), ...fields });
  }

  private async request<T>(op: string, fields: Record<string, unknown>): Promise<T> {
    this.checkServing();
    return this.connection.request<T>(op, fields, this.requestTimeoutMs).answer;
  }
}

function withDeadline<T>(promise: Promise<T>, ms: number, error: () => DshptyError): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expiry = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(error()), ms);
  });
  return Promise.race([promise, expiry]).finally(() => clearTimeout(timer));
}

function refusedSend(error: unknown): SendOperation {
  const done = Promise.reject(error);
  done.catch(() => {});  // rejects for the caller who awaits it, never process-wide
  return {
    sendId: -1,
    done,
    readOutput: () => Promise.reject(error),
    cancel: async () => false,
    [Symbol.asyncIterator]: () => streamOutput(() => Promise.reject(error), done),
  };
}
