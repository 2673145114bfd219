// Which dshpty-repl to run: the caller's choice, then $DSHPTY_REPL, then the PATH.
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';

import { DshptyError } from './errors.js';

const PROGRAM = 'dshpty-repl';

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

export function locateRepl(explicit: string | undefined, env: NodeJS.ProcessEnv): string {
  const chosen = explicit ?? (env.DSHPTY_REPL ? env.DSHPTY_REPL : undefined);
  if (chosen !== undefined) {
    const path = isAbsolute(chosen) || chosen.includes('/') ? resolve(chosen) : chosen;
    if (path.includes('/') && !executable(path))
      throw new DshptyError('REPL_NOT_FOUND', `${path} is not an executable file`);
    return path;
  }
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, PROGRAM);
    if (executable(candidate)) return candidate;
  }
  throw new DshptyError('REPL_NOT_FOUND', `${PROGRAM} is not on the PATH (pass {repl} or set DSHPTY_REPL)`);
}
