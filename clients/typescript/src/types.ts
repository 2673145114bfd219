// The shapes the service returns and takes. Field names are the JSON face's own
// (docs/tool-protocol.md). Closed sets are literal unions, so a typo is a type error; a
// result's known fields are typed, and any field a newer repl adds lands in `extra` (never
// on the result itself, so `r.viewprot` does not compile).

/** Fields a newer repl sent that this version does not name, by their wire names. */
export type Extra = Record<string, unknown>;

/** How a session stands. `exitCode`/`signal` are null when unknown. */
export type SessionStatus =
  | { kind: 'running' }
  | { kind: 'exited'; exitCode: number | null; signal: SignalName | null; reason?: string | undefined }
  | { kind: 'lost'; reason: string }
  | { kind: 'reconnecting'; reason: string };

export type SessionStatusKind = SessionStatus['kind'];

/** The signals `signal()` sends (the repl also takes them without `SIG`, in any case). */
export type SignalName = 'SIGINT' | 'SIGTERM' | 'SIGKILL' | 'SIGTSTP' | 'SIGHUP';
export type ShortSignalName = 'INT' | 'TERM' | 'KILL' | 'TSTP' | 'HUP';

export type ShellName = 'bash' | 'zsh' | 'fish';
export type RcMode = 'none' | 'user';
export type TerminalKind = 'dumb' | 'xterm';
export type SandboxMode = 'none' | 'read-only' | 'workspace-write';
export type NetworkMode = 'on' | 'off';
export type AbsolutePath = `/${string}`;

/** Options of `spawn`; only the fields given are sent to the repl. */
export interface SpawnOptions {
  /** the backend type: `shell`, or a `--remote NAME` given at start-up */
  type: string;
  /** owner-local display name, unique among the owner's sessions */
  name?: string | undefined;
  cwd?: string | undefined;
  /** `bash`, `zsh`, `fish`, or an absolute path whose basename is one of them */
  shell?: ShellName | AbsolutePath | undefined;
  /** startup files: `none` (default) or `user` */
  rc?: RcMode | undefined;
  /** `private` (default), `off`, or an absolute file path */
  history?: 'private' | 'off' | AbsolutePath | undefined;
  /** `dumb` (default) or `xterm` */
  terminal?: TerminalKind | undefined;
  /** a sandbox mode (docs/shell-backend.md) */
  sandbox?: SandboxMode | undefined;
  /** `on` or `off` (booleans are sent as `on`/`off`) */
  network?: NetworkMode | boolean | undefined;
  /** seconds the session outlives its host (0..604800; 0 = dies with the host) */
  linger?: number | undefined;
  /** per-session limits (docs/security.md "Resource limits"): at most the operator's */
  limits?: Limits | undefined;
  /** false: not recorded where the operator records every session (docs/watch.md) */
  record?: boolean | undefined;
}

/** Per-session limits: processes and threads, bytes of memory, CPUs' worth of time. */
export interface Limits {
  pids?: number | undefined;
  memory?: number | undefined;
  cpu?: number | undefined;
}

/** A limit the session reached: a fork refused (`pids`) or an OOM kill (`memory`). */
export interface LimitHit {
  kind: 'pids' | 'memory';
  pid?: number | undefined;
  command?: string | undefined;
}

/** A confined session's confinement (docs/security.md). */
export interface Confinement {
  mode: SandboxMode;
  network: NetworkMode;
  writableRoots: string[];
  protected: string[];
}

export interface SessionInfo {
  /** null only for an `attach` tombstone or refusal */
  sessionId: string;
  name?: string | undefined;
  type: string;
  pid?: number | null | undefined;
  status: SessionStatus;
  confinement?: Confinement | undefined;
  /** a limit the session reached (it stays for the session's life) */
  limitHit?: LimitHit | undefined;
  /** attach: bytes of output replayed from the lingering session's ring */
  replayedBytes?: number | undefined;
  /** attach: bytes lost between the last host and this one */
  gapBytes?: number | undefined;
  /** attach: a send was live as the last host went away */
  sendEnded?: boolean | undefined;
  extra: Extra;
}

export interface SpawnResult extends SessionInfo {
  /** what the session printed while starting */
  motd: string;
  truncated: boolean;
  omittedLines?: number | undefined;
  omittedBytes?: number | undefined;
}

export interface SendOptions {
  text?: string | undefined;
  /** tmux key names (`Enter`, `C-c`, `Up`, ...) typed after the text */
  keys?: string[] | undefined;
  /** press Enter after the text (default: true with text, false with keys only) */
  submit?: boolean | undefined;
  /** the send's own deadline: it answers `timeout` then, and the command runs on */
  timeoutMs?: number | undefined;
  idleMs?: number | undefined;
  /** also answer `matched` once a new output line matches `output` (an ECMAScript regex) or a
   *  process of the session listens on TCP `port`; a command that ends first answers as usual */
  until?: Until | undefined;
  /** a job: `started` resolves at once with `{job, sessionId}` (with `until`: once it holds, the
   *  job running on); the job never settles `inferred_idle`, has no deadline unless `timeoutMs`
   *  (which then bounds only the wait for `until`), and `done` resolves once it ended; with
   *  `until` and no `timeoutMs`, the repl is asked `hello` every `requestTimeoutMs` while
   *  `started` waits, and one that does not answer fails it (and `done`) with REPL_TIMEOUT */
  background?: boolean | undefined;
  /** aborting sends a real SIGINT to the session's foreground group; `done` then rejects,
   *  once the send has answered, with a DshptyError `ABORTED` whose `result` is the send's
   *  answer and whose `cause` is `signal.reason` (a signal aborted before the send started
   *  sends nothing and rejects with its reason itself) */
  signal?: AbortSignal | undefined;
}

export type WaitReason = 'stdin_read' | 'inferred_idle' | 'timeout' | 'session_exit' | 'matched';
/** what settled a send: shell prompt marks, the stdin probe, output quiet under a relay, or none */
export type Evidence = 'prompt_marks' | 'stdin_probe' | 'relay' | 'none';

export interface ScreenCursor {
  row: number;
  col: number;
  visible: boolean;
}

export interface Screen {
  rows: number;
  cols: number;
  lines: string[];
  /** 0-based */
  cursor: ScreenCursor;
  alternate: boolean;
  title: string;
}

export interface SendResult {
  viewport: string;
  waitReason: WaitReason;
  sessionStatus: SessionStatus;
  truncated: boolean;
  /** with `truncated`: what the cut left out */
  omittedLines?: number | undefined;
  omittedBytes?: number | undefined;
  /** the command's status, when the send ended at the shell's own prompt; else null */
  exitCode: number | null;
  /** the shell's directory, when the send ended at its own prompt; else null */
  cwd: string | null;
  /** the program asked for input with echo off (a password prompt) */
  inputHidden: boolean;
  evidence: Evidence;
  /** the screen, when the send ended on the alternate screen */
  screen?: Screen | undefined;
  /** a cancel took the text back from the input queue before the shell read it (no signal) */
  takenBackBytes?: number | undefined;
  /** the shell did not run the line (`relayed`: a relay in front read it; whether its far side ran it is not known) */
  lineState?: LineState | undefined;
  /** for `queued`: the command the line waits behind (`swallowed`, `relayed`: the one that read it) */
  queuedBehind?: { pid: number; command: string } | undefined;
  /** a limit the session reached (as `SessionInfo.limitHit`) */
  limitHit?: LimitHit | undefined;
  /** what held when `waitReason` is `matched` */
  match?: Match | undefined;
  extra: Extra;
}

/** A send's condition: a new output line matching `output` (an ECMAScript regex, the echo
 *  excluded) or a process of the session listening on TCP `port` (1..65535); either settles it. */
export interface Until {
  output?: string | undefined;
  port?: number | undefined;
}

/** What held: the output line, or the port with the listening process. */
export type Match =
  | { output: string }
  | { port: number; pid: number; address: string };

/** A background send's answer (`started`): at once, or with `until` once the condition held
 *  (`waitReason: 'matched'`, `match`), its `timeoutMs` ran out (`'timeout'`; the job runs on),
 *  or the job ended first (`done: true`, `result`: how, as a send's). */
export interface JobStarted {
  /** the job's id: the send's request id (= `sendId`) */
  job: number;
  sessionId: string;
  /** with `until` only */
  waitReason?: WaitReason | undefined;
  match?: Match | undefined;
  /** with `until` only: the job had ended */
  done?: boolean | undefined;
  result?: SendResult | undefined;
  extra: Extra;
}

export interface OutputOptions {
  /** bytes into the send's output (0: its start); absent: the send's one consuming cursor */
  offset?: number | undefined;
  /** answer once new output came, the send ended, or this many ms passed */
  waitMs?: number | undefined;
}

/** A send's output from an offset. `delta` is the text from the reader's offset (whole UTF-8
 *  characters) to `nextOffset`; `droppedBytes` what the retained window (1 MiB) no longer
 *  had past that offset (`truncated` = `droppedBytes > 0`); `done` once the send had ended;
 *  `result` with `done` for a background job (a foreground send's is its `done`). */
export interface JobOutput extends OutputDelta {
  nextOffset: number;
  droppedBytes: number;
  done: boolean;
  result?: SendResult | undefined;
  extra: Extra;
}

export type StopSignal = 'SIGINT' | 'SIGTERM' | 'SIGKILL';

/** What `stop()` did: `stopped` once every process of the job is gone and the shell is back
 *  at its prompt; else `remaining` says which are left and why. */
export interface StopResult {
  stopped: boolean;
  /** sent, in order */
  signals: StopSignal[];
  remaining: { pid: number; command: string; why: string }[];
  /** the job's command had not started: its text was taken back, nothing of it ran */
  takenBackBytes?: number;
  extra: Extra;
}

/** A background send (`startSend(..., {background: true})`): a SendOperation whose `done`
 *  is the job's end (read by `output` long-polls, started when `done` is first read). */
export interface JobOperation extends SendOperation {
  /** the job's answer: at once, or with `until` once it held (see JobStarted) */
  readonly started: Promise<JobStarted>;
}

export type LineState = 'continuation' | 'kept' | 'queued' | 'refused' | 'swallowed' | 'relayed';

export interface OutputDelta {
  delta: string;
  truncated: boolean;
}

/** A live send: `done` settles exactly once; its output streams by `for await (const chunk
 *  of op)` (reads by offset, waiting for more: each loop its own reader), reads by
 *  `output({offset, waitMs})`, or polls by `readOutput()` (the one consuming cursor). */
export interface SendOperation extends AsyncIterable<string> {
  /** the request id the repl knows this send by (a job's id) */
  readonly sendId: number;
  /** rejects only for a caller who awaits it: a send nobody awaits never ends the process */
  readonly done: Promise<SendResult>;
  /** bytes the loops over this send skipped, being too slow for the retained window (1 MiB):
   *  0 unless a chunk came after a gap; read it in the loop to tell */
  readonly droppedBytes: number;
  /** consuming: each call returns what arrived since the previous one */
  readOutput(): Promise<OutputDelta>;
  /** the output from `offset` (absent: the consuming cursor), waiting up to `waitMs` for more */
  output(options?: OutputOptions): Promise<JobOutput>;
  /** ends the send's job (SIGINT, SIGTERM, SIGKILL to its processes, not the shell) and
   *  resolves once they are gone and the shell is at its prompt; `done` then resolves */
  stop(): Promise<StopResult>;
  /** SIGINT the session's foreground group; false once the send had settled, or when a
   *  relay in front (ssh, script) had its text: nothing was done, and `done` resolves with
   *  the send's result (`lineState: 'relayed'`). Otherwise `done` then
   *  rejects with a DshptyError `ABORTED` whose `result` is the send's answer (an
   *  AbortSignal's reason is then the error's `cause`). */
  cancel(): Promise<boolean>;
}

export interface ReadOptions {
  /** lines back from the newest */
  offset?: number | undefined;
  count?: number | undefined;
}

export interface ReadPage {
  text: string;
  totalLines: number;
  lineBegin: number;
  lineEnd: number;
  truncated: boolean;
  omittedLines?: number | undefined;
  omittedBytes?: number | undefined;
}

export interface SignalResult {
  delivered: boolean;
  targetPgid: number;
}

export interface ResizeOptions {
  rows: number;
  cols: number;
}

export interface AttachOptions {
  name?: string | undefined;
}

/** How the repl child ended. */
export interface ReplExit {
  code: number | null;
  signal: string | null;
}

/** The child's answer to `hello`. */
export interface ReplHello {
  name: string;
  version: string;
  protocol: number;
}
