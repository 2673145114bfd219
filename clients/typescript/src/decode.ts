// Wire results into the typed shapes: each known field where its type says, every other
// field (one a newer repl added) under `extra`, so nothing the repl sent is lost and no
// result needs an index signature.
import type { Extra, JobOutput, JobStarted, SendResult, SessionInfo, SpawnResult, StopResult } from './types.js';

type Wire = Record<string, unknown>;

const SESSION_FIELDS = ['sessionId', 'name', 'type', 'pid', 'status', 'confinement', 'replayedBytes', 'gapBytes',
  'sendEnded', 'limitHit'];
const SPAWN_FIELDS = new Set([...SESSION_FIELDS, 'motd', 'truncated', 'omittedLines', 'omittedBytes']);
const SESSION_SET = new Set(SESSION_FIELDS);
const SEND_FIELDS = new Set(['viewport', 'waitReason', 'sessionStatus', 'truncated', 'omittedLines', 'omittedBytes',
  'exitCode', 'cwd', 'inputHidden', 'evidence', 'screen', 'takenBackBytes', 'lineState', 'queuedBehind', 'limitHit',
  'match']);
const STARTED_FIELDS = new Set(['job', 'sessionId', 'waitReason', 'match', 'done']);
const OUTPUT_FIELDS = new Set(['delta', 'truncated', 'nextOffset', 'droppedBytes', 'done']);
const STOP_FIELDS = new Set(['stopped', 'signals', 'remaining', 'takenBackBytes']);

function split<T extends { extra: Extra }>(wire: Wire, known: Set<string>): T {
  const out: Wire = {};
  const extra: Extra = {};
  for (const key of Object.keys(wire)) {
    if (known.has(key)) out[key] = wire[key];
    else extra[key] = wire[key];
  }
  out.extra = extra;
  return out as T;
}

export const decodeSession = (wire: unknown): SessionInfo => split<SessionInfo>(wire as Wire, SESSION_SET);
export const decodeSpawn = (wire: unknown): SpawnResult => split<SpawnResult>(wire as Wire, SPAWN_FIELDS);
export const decodeSend = (wire: unknown): SendResult => split<SendResult>(wire as Wire, SEND_FIELDS);
export const decodeStop = (wire: unknown): StopResult => split<StopResult>(wire as Wire, STOP_FIELDS);

function withResult<T extends { extra: Extra; result?: SendResult | undefined }>(wire: Wire, known: Set<string>): T {
  const out = split<T>(wire, known);
  // A failed job's `{error}` stays under `extra.result`; `done` rejects with it.
  if (wire.result !== undefined && !(wire.result as { error?: unknown }).error) {
    out.result = decodeSend(wire.result);
    delete out.extra.result;
  }
  return out;
}

export const decodeStarted = (wire: unknown): JobStarted => withResult<JobStarted>(wire as Wire, STARTED_FIELDS);
export const decodeOutput = (wire: unknown): JobOutput => withResult<JobOutput>(wire as Wire, OUTPUT_FIELDS);
