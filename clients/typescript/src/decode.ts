// Wire results into the typed shapes: each known field where its type says, every other
// field (one a newer repl added) under `extra`, so nothing the repl sent is lost and no
// result needs an index signature.
import type { Extra, SendResult, SessionInfo, SpawnResult } from './types.js';

type Wire = Record<string, unknown>;

const SESSION_FIELDS = ['sessionId', 'name', 'type', 'pid', 'status', 'confinement', 'replayedBytes', 'gapBytes',
  'sendEnded', 'limitHit'];
const SPAWN_FIELDS = new Set([...SESSION_FIELDS, 'motd', 'truncated', 'omittedLines', 'omittedBytes']);
const SESSION_SET = new Set(SESSION_FIELDS);
const SEND_FIELDS = new Set(['viewport', 'waitReason', 'sessionStatus', 'truncated', 'omittedLines', 'omittedBytes',
  'exitCode', 'cwd', 'inputHidden', 'evidence', 'screen', 'takenBackBytes', 'lineState', 'queuedBehind', 'limitHit']);

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
