// Options into request fields. Only what the caller gave is sent: a repl that predates a
// field refuses it with its own INVALID_ARGUMENT rather than being sent defaults it does not
// know, and a newer one applies its own defaults.
import type { SendOptions, SpawnOptions } from './types.js';

function given(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) if (value !== undefined) out[key] = value;
  return out;
}

export function openFields(options: SpawnOptions): Record<string, unknown> {
  const network = typeof options.network === 'boolean' ? (options.network ? 'on' : 'off') : options.network;
  return given({
    type: options.type,
    name: options.name,
    cwd: options.cwd,
    shell: options.shell,
    rc: options.rc,
    history: options.history,
    terminal: options.terminal,
    sandbox: options.sandbox,
    network,
    linger: options.linger,
    limits: options.limits,
    record: options.record,
  });
}

export function sendFields(sessionId: string, options: SendOptions): Record<string, unknown> {
  return given({
    sessionId,
    text: options.text,
    keys: options.keys,
    submit: options.submit,
    timeoutMs: options.timeoutMs,
    idleMs: options.idleMs,
    until: options.until,
    background: options.background,
  });
}

/** The repl's default send deadline: its `--timeout-ms` among `args`, else its own 30000. */
export function replSendTimeoutMs(args: readonly string[]): number {
  let value: string | undefined;
  args.forEach((arg, i) => {
    if (arg === '--timeout-ms') value = args[i + 1];
    else if (arg.startsWith('--timeout-ms=')) value = arg.slice('--timeout-ms='.length);
  });
  const ms = Number(value);
  return value !== undefined && Number.isFinite(ms) && ms > 0 ? ms : 30_000;
}
