// Compiled (never run) against the installed package by the test driver: the declarations
// describe the API as a TypeScript host uses it.
import { DshptyError, DshptyService, type JobOperation, type JobOutput, type JobStarted, type SendResult, type SessionStatus,
  type SpawnResult, type StopResult } from 'dshpty';

export async function consumer(): Promise<string> {
  const service: DshptyService = await DshptyService.start({ repl: 'dshpty-repl', args: ['--cwd', '/tmp'] });
  const agent = service.mintOwner('agent');
  const spawned: SpawnResult = await service.spawn(agent, { type: 'shell', name: 'main', cwd: '/tmp', linger: 0 });
  const controller = new AbortController();
  const op = service.startSend(agent, spawned.sessionId, { text: 'ls', submit: true, signal: controller.signal });
  const { delta, truncated }: { delta: string; truncated: boolean } = await op.readOutput();
  const result: SendResult = await op.done;
  const status: SessionStatus = result.sessionStatus;
  const exit: number | null = status.kind === 'exited' ? status.exitCode : result.exitCode;
  // A background job: its start (with until: what held), its output by offset, its stop.
  const job: JobOperation = service.startSend(agent, spawned.sessionId, {
    text: 'npm run dev', background: true, until: { port: 5173 }, timeoutMs: 60000,
  });
  const started: JobStarted = await job.started;
  const port: number | undefined = started.match && 'port' in started.match ? started.match.port : undefined;
  const out: JobOutput = await job.output({ offset: 0, waitMs: 1000 });
  let followed = '';
  for await (const chunk of job) followed += chunk;
  const stopped: StopResult = await job.stop();
  const jobResult: SendResult = await job.done;
  const page = await service.read(agent, spawned.sessionId, { offset: 0, count: 20 });
  const { delivered } = await service.signal(agent, spawned.sessionId, 'SIGINT');
  const killed: boolean = await service.kill(agent, spawned.sessionId);
  const active: boolean = await service.hasOwnerActivity(agent);
  try {
    await service.list(agent);
  } catch (error) {
    if (error instanceof DshptyError && error.code === 'NO_SESSION') return error.message;
  }
  await service.disposeOwner(agent);
  await service.dispose();
  const jobText = `${port}${out.nextOffset}${out.droppedBytes}${out.result?.exitCode}${followed}${job.droppedBytes}`;
  return `${jobText}${stopped.signals.join()}${jobResult.waitReason}${delta}${truncated}${exit}${page.text}${delivered}${killed}${active}${result.screen?.lines.join('')}`;
}
