// Compiled (never run) against the installed package under --strict and
// --exactOptionalPropertyTypes: each `@ts-expect-error` line must be a type error (tsc
// fails on one that compiles), so a typo in a field, a code or a closed set is caught.
import { DshptyError, DshptyService, type SendResult, type SpawnOptions } from 'dshpty';

export async function strict(service: DshptyService, r: SendResult, error: DshptyError): Promise<number> {
  // @ts-expect-error: no such field (results have no index signature)
  void r.viewprot;
  // @ts-expect-error: no such code
  if (error.code === 'SEND_ACTIV') return 1;
  if (error.code === 'SEND_ACTIVE' && String(error).includes('SEND_ACTIVE')) return 2;
  // @ts-expect-error: no such wait reason
  if (r.waitReason === 'idle') return 3;
  // @ts-expect-error: no such evidence
  if (r.evidence === 'prompt') return 4;
  // @ts-expect-error: no such terminal
  const bad: SpawnOptions = { type: 'shell', terminal: 'vt100' };
  const agent = service.mintOwner('agent');
  // @ts-expect-error: no such signal
  await service.signal(agent, 'pty-1', 'SIGSTOP');
  // @ts-expect-error: no such until member
  service.startSend(agent, 'pty-1', { background: true, until: { regex: 'ready' } });
  const job = service.startSend(agent, 'pty-1', { background: true, until: { output: 'ready', port: undefined } });
  const stop = await job.stop();
  // @ts-expect-error: a stop sends no SIGHUP
  if (stop.signals[0] === 'SIGHUP') return 5;
  const started = await job.started;
  // @ts-expect-error: a match is an output line or a port, narrowed first
  void started.match?.port;
  // @ts-expect-error: a foreground send has no start
  void service.startSend(agent, 'pty-1', { text: 'ls' }).started;
  // Optional fields take `undefined` (exactOptionalPropertyTypes).
  const options: SpawnOptions = { type: 'shell', name: undefined, cwd: undefined, sandbox: 'read-only', rc: 'none' };
  const extra: unknown = r.extra['someNewerField'];
  const omitted: number | undefined = r.omittedBytes;
  const status = r.sessionStatus.kind === 'exited' ? r.sessionStatus.signal : null;
  const kill: 'SIGKILL' | 'SIGINT' | 'SIGTERM' | 'SIGTSTP' | 'SIGHUP' | null = status;
  const aborted: SendResult | undefined = error.result;
  void bad;
  void options;
  void extra;
  void kill;
  void aborted;
  await service.dispose({ force: true });
  return omitted ?? 0;
}
