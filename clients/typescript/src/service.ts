// DshptyService: @deepseek-ai/dsh-pty's PtyService API over one dshpty-repl --json child. Every method
// is one request (the repl enforces ownership, one live send per session and the rest of
// docs/contract.md); the client adds owners by name, AbortSignal cancellation, and the
// rule that the child's end rejects everything still waiting.
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
  ResizeOptions,
  Screen,
  SendOperation,
  SendOptions,
  SendResult,
  SessionInfo,
  SignalResult,
  SpawnOptions,
  SpawnResult,
} from './types.js';
import { openFields, sendFields } from './wire.js';

export interface StartOptions {
  /** the dshpty-repl to run; default $DSHPTY_REPL, then `dshpty-repl` on the PATH */
  repl?: string;
  /** more arguments for it (`--cwd DIR`, `--remote NAME=COMMAND`, ...); `--json` is implied */
  args?: string[];
  /** its environment; default process.env */
  env?: NodeJS.ProcessEnv;
}

export class DshptyService {
  private readonly owners = new OwnerRegistry();
  private disposal: Promise<void> | null = null;

  private constructor(private readonly connection: ReplConnection) {}

  /** Starts the repl child. Rejects with REPL_NOT_FOUND when it cannot be run. */
  static async start(options: StartOptions = {}): Promise<DshptyService> {
    const env = options.env ?? process.env;
    const path = locateRepl(options.repl, env);
    return new DshptyService(await ReplConnection.start(path, options.args ?? [], env));
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
    return this.call<SpawnResult>(owner, 'open', openFields(options));
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

    const { id, answer } = this.connection.request<SendResult>('send', { owner: label, ...sendFields(sessionId, options) });
    let answered = false;
    let cancelledBy: { reason: unknown } | null = null;
    const cancel = async (reason: unknown): Promise<boolean> => {
      if (answered) return false;
      cancelledBy ??= { reason };
      const { answer: reply } = this.connection.request<{ cancelled: boolean }>('cancel', { owner: label, sendId: id });
      return (await reply).cancelled;
    };
    const onAbort = () => void cancel(abortSignal!.reason).catch(() => {});
    abortSignal?.addEventListener('abort', onAbort, { once: true });

    // A cancelled send rejects only after its own answer came back: by then the repl has
    // settled it, so the caller's next send on this session is never SEND_ACTIVE. The
    // child's end is reported as such even after a cancel: the SIGINT may never have gone.
    const settle = () => {
      answered = true;
      abortSignal?.removeEventListener('abort', onAbort);
    };
    const done = answer.then(
      (result) => {
        settle();
        if (cancelledBy) throw cancelledBy.reason;
        return result;
      },
      (error: unknown) => {
        settle();
        if (cancelledBy && !this.connection.ended) throw cancelledBy.reason;
        throw error;
      },
    );
    return {
      sendId: id,
      done,
      readOutput: () => this.request<OutputDelta>('output', { owner: label, sendId: id }),
      cancel: () => cancel(new DshptyError('ABORTED', 'send cancelled')),
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

  /** `name`: SIGINT SIGTERM SIGKILL SIGTSTP SIGHUP (or without SIG, any case). */
  async signal(owner: DshptyOwner, sessionId: string, name: string): Promise<SignalResult> {
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
    return (await this.call<{ sessions: SessionInfo[] }>(owner, 'list', {})).sessions;
  }

  /** Reattach to this owner's sessions that outlived an earlier host (a repl with `attach`). */
  async attach(owner: DshptyOwner, options: AttachOptions = {}): Promise<SessionInfo[]> {
    const fields: Record<string, unknown> = {};
    if (options.name !== undefined) fields.name = options.name;
    return (await this.call<{ sessions: SessionInfo[] }>(owner, 'attach', fields)).sessions;
  }

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
   *  began fail with SERVICE_DISPOSING; calls already made are answered first. */
  dispose(): Promise<void> {
    this.disposal ??= this.shutdown();
    return this.disposal;
  }

  private async shutdown(): Promise<void> {
    let failure: unknown = null;
    if (!this.connection.ended) {
      try {
        await this.connection.request('shutdown', {}).answer;
      } catch (error) {
        // A child that died meanwhile took its sessions with it (their helpers end with it).
        if (!this.connection.ended) failure = error;
      }
    }
    this.connection.endInput();
    await this.connection.exited;
    if (failure) throw failure;
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
    return this.connection.request<T>(op, fields).answer;
  }
}

function refusedSend(error: unknown): SendOperation {
  const done = Promise.reject(error);
  return {
    sendId: -1,
    done,
    readOutput: () => Promise.reject(error),
    cancel: async () => false,
  };
}
