// The shapes the service returns and takes. Field names are the JSON face's own
// (docs/tool-protocol.md); results carry every field the repl sent, so a field a newer
// repl adds (such as `evidence`) is there before these types name it.

/** How a session stands. `exitCode`/`signal` are null when unknown. */
export type SessionStatus =
  | { kind: 'running' }
  | { kind: 'exited'; exitCode: number | null; signal: string | null; reason?: string }
  | { kind: 'lost'; reason: string }
  | { kind: 'reconnecting'; reason: string };

/** Options of `spawn`; only the fields given are sent to the repl. */
export interface SpawnOptions {
  /** the backend type: `shell`, or a `--remote NAME` given at start-up */
  type: string;
  /** owner-local display name, unique among the owner's sessions */
  name?: string;
  cwd?: string;
  /** `bash`, `zsh`, `fish`, or an absolute path whose basename is one of them */
  shell?: string;
  /** startup files: `none` (default) or `user` */
  rc?: string;
  /** `private` (default), `off`, or an absolute file path */
  history?: string;
  /** `dumb` (default) or `xterm` */
  terminal?: string;
  /** a sandbox mode (docs/shell-backend.md) */
  sandbox?: string;
  /** `on` or `off` (booleans are sent as `on`/`off`) */
  network?: string | boolean;
  /** seconds the session outlives its host (0..604800; 0 = dies with the host) */
  linger?: number;
}

export interface SessionInfo {
  sessionId: string;
  name?: string;
  type: string;
  pid?: number;
  status: SessionStatus;
  [field: string]: unknown;
}

export interface SpawnResult extends SessionInfo {
  /** what the session printed while starting */
  motd: string;
  truncated: boolean;
}

export interface SendOptions {
  text?: string;
  /** tmux key names (`Enter`, `C-c`, `Up`, ...) typed after the text */
  keys?: string[];
  /** press Enter after the text (default: true with text, false with keys only) */
  submit?: boolean;
  timeoutMs?: number;
  idleMs?: number;
  /** aborting sends a real SIGINT to the session's foreground group; `done` then rejects
   *  with `signal.reason` once the send has answered */
  signal?: AbortSignal;
}

export type WaitReason = 'stdin_read' | 'inferred_idle' | 'timeout' | 'session_exit';

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
  /** the command's status, when the send ended at the shell's own prompt; else null */
  exitCode: number | null;
  /** the shell's directory, when the send ended at its own prompt; else null */
  cwd: string | null;
  /** the program asked for input with echo off (a password prompt) */
  inputHidden: boolean;
  /** the screen, when the send ended on the alternate screen */
  screen?: Screen;
  /** a cancel took the text back from the input queue before the shell read it (no signal) */
  takenBackBytes?: number;
  /** the shell did not run the line */
  lineState?: LineState;
  /** for `queued`: the command the line waits behind */
  queuedBehind?: { pid: number; command: string };
  [field: string]: unknown;
}

export type LineState = 'continuation' | 'kept' | 'queued' | 'refused';

export interface OutputDelta {
  delta: string;
  truncated: boolean;
}

/** A live send: `done` settles exactly once; `readOutput` polls what it printed so far. */
export interface SendOperation {
  /** the request id the repl knows this send by */
  readonly sendId: number;
  readonly done: Promise<SendResult>;
  /** consuming: each call returns what arrived since the previous one */
  readOutput(): Promise<OutputDelta>;
  /** SIGINT the session's foreground group; false once the send had settled. `done` then
   *  rejects with a DshptyError `ABORTED` (an AbortSignal gives its own reason instead). */
  cancel(): Promise<boolean>;
}

export interface ReadOptions {
  /** lines back from the newest */
  offset?: number;
  count?: number;
}

export interface ReadPage {
  text: string;
  totalLines: number;
  lineBegin: number;
  lineEnd: number;
  truncated: boolean;
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
  name?: string;
}

/** How the repl child ended. */
export interface ReplExit {
  code: number | null;
  signal: string | null;
}
