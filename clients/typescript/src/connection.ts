// One dshpty-repl --json child and the JSON Lines between us: request ids, the table of
// requests awaiting their answer, and what happens to them when the child ends. Answers
// may come out of order (a send stays open while other requests are answered), so each
// is matched to its request by id.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';

import { DshptyError, type WireError } from './errors.js';
import type { ReplExit } from './types.js';

interface Pending {
  resolve(result: unknown): void;
  reject(error: DshptyError): void;
  /** the request's deadline, cleared when it is answered */
  timer: NodeJS.Timeout | undefined;
}

interface Answer {
  id: unknown;
  ok: boolean;
  result?: unknown;
  error?: WireError;
}

export interface Request<T> {
  id: number;
  answer: Promise<T>;
}

/** How much of the child's stderr is kept to explain its end. */
const STDERR_TAIL_BYTES = 4096;

export class ReplConnection {
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private partial = '';
  private stderrTail = '';
  private endError: DshptyError | null = null;
  private exitInfo: ReplExit | null = null;
  /** resolves once the child is gone and every request it left is rejected */
  readonly exited: Promise<ReplExit>;

  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => this.onData(chunk));
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_TAIL_BYTES);
    });
    // A write to a child that has just died fails with EPIPE; the child's end, reported
    // below, is what the caller hears about.
    child.stdin.on('error', () => {});
    this.exited = new Promise((resolve) => {
      // 'close' comes after the child exited and its stdout was read to the end, so every
      // answer it wrote has been delivered before the rest are rejected.
      child.once('close', (code: number | null, signal: NodeJS.Signals | null) => {
        this.exitInfo = { code, signal };
        this.fail(this.describeEnd(code, signal));
        resolve(this.exitInfo);
      });
    });
  }

  /** Starts the child; rejects with REPL_NOT_FOUND when it cannot be run. */
  static start(path: string, args: string[], env: NodeJS.ProcessEnv): Promise<ReplConnection> {
    return new Promise((resolve, reject) => {
      // A session of its own: a Ctrl-C at the host's terminal signals the host's process
      // group, and the repl takes SIGINT as a shutdown of every session. The host's end still
      // ends it (EOF on its stdin is a shutdown).
      const child = spawn(path, ['--json', ...args], { env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
      const onError = (error: Error) => reject(new DshptyError('REPL_NOT_FOUND', `cannot run ${path}: ${error.message}`));
      child.once('error', onError);
      child.once('spawn', () => {
        child.off('error', onError);
        // Later errors (a failed kill) surface as the child's end.
        child.on('error', () => {});
        resolve(new ReplConnection(child));
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Requests awaiting an answer (for callers checking that nothing is left behind). */
  get pendingCount(): number {
    return this.pending.size;
  }

  /** The error every request gets once the child has ended, else null. */
  get ended(): DshptyError | null {
    return this.endError;
  }

  get exit(): ReplExit | null {
    return this.exitInfo;
  }

  /** Writes one request; its answer settles exactly once: the child's answer, its end
   *  (REPL_EXITED) or, after `deadlineMs`, REPL_TIMEOUT (a stopped or wedged child). */
  request<T>(op: string, fields: Record<string, unknown>, deadlineMs: number): Request<T> {
    const id = this.nextId++;
    if (this.endError) return { id, answer: Promise.reject(this.endError) };
    const answer = new Promise<T>((resolve, reject) => {
      const pending: Pending = { resolve: resolve as (result: unknown) => void, reject, timer: undefined };
      if (Number.isFinite(deadlineMs)) {
        pending.timer = setTimeout(() => {
          if (this.pending.get(id) !== pending) return;
          this.pending.delete(id);
          reject(new DshptyError('REPL_TIMEOUT', `dshpty-repl ${this.child.pid} did not answer "${op}" within ` +
            `${deadlineMs} ms (stopped or wedged?); dispose({force: true}) ends it`));
        }, deadlineMs);
        // The child's pipes keep the host alive while it runs; a deadline alone need not.
        pending.timer.unref();
      }
      this.pending.set(id, pending);
    });
    this.child.stdin.write(JSON.stringify({ id, op, ...fields }) + '\n');
    return { id, answer };
  }

  /** Fails request `id` now with `error`, as its deadline would (an answer that comes later
   *  is dropped). False when it is answered already. */
  expire(id: number, error: DshptyError): boolean {
    const pending = this.pending.get(id);
    if (!pending) return false;
    this.pending.delete(id);
    clearTimeout(pending.timer);
    pending.reject(error);
    return true;
  }

  /** SIGKILL to the child alone: its sessions' helpers end their trees once their host is
   *  gone (a stopped child cannot be asked). Its end then rejects what still waits. */
  kill(): void {
    if (this.exitInfo === null) this.child.kill('SIGKILL');
  }

  /** No more requests: the child disposes its service and exits (EOF is a shutdown). */
  endInput(): void {
    if (!this.child.stdin.writableEnded) this.child.stdin.end();
  }

  private onData(chunk: string): void {
    this.partial += chunk;
    let newline: number;
    while ((newline = this.partial.indexOf('\n')) >= 0) {
      const line = this.partial.slice(0, newline);
      this.partial = this.partial.slice(newline + 1);
      if (line.trim()) this.onLine(line);
    }
  }

  private onLine(line: string): void {
    let answer: Answer;
    try {
      answer = JSON.parse(line) as Answer;
    } catch {
      return;  // not ours to answer: the repl writes only JSON lines on stdout
    }
    if (typeof answer.id !== 'number') return;  // an answer to no request of ours
    const pending = this.pending.get(answer.id);
    if (!pending) return;
    this.pending.delete(answer.id);
    clearTimeout(pending.timer);
    if (answer.ok) pending.resolve(answer.result ?? {});
    else pending.reject(DshptyError.fromWire(answer.error ?? { code: 'BACKEND_FAILED', message: 'malformed answer' }));
  }

  private describeEnd(code: number | null, signal: NodeJS.Signals | null): DshptyError {
    const how = signal ? `was killed by ${signal}` : `exited with status ${code}`;
    const stderr = this.stderrTail.trim();
    return new DshptyError('REPL_EXITED', `dshpty-repl ${how}` + (stderr ? `: ${stderr}` : ''));
  }

  private fail(error: DshptyError): void {
    this.endError = error;
    const left = [...this.pending.values()];
    this.pending.clear();
    for (const pending of left) {
      clearTimeout(pending.timer);
      pending.reject(error);
    }
  }
}
