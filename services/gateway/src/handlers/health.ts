import type { Request, Response } from 'express';
import { queryValues } from '../context';

/**
 * /livez, /readyz and /healthz: 200 when every check passes. `verbose` lists
 * one line per check, `exclude=<name>` skips one, `/readyz/<name>` runs one.
 * Machines rely on the status code only.
 */
export type Check = () => Promise<void>;

export async function handleHealth(req: Request, res: Response, endpoint: string, checks: Record<string, Check>, only?: string): Promise<void> {
  const exclude = new Set(queryValues(req, 'exclude'));
  if (only !== undefined && !(only in checks)) {
    res.status(404).type('text/plain').send(`no such check: ${only}\n`);
    return;
  }
  const selected = only !== undefined ? [only] : Object.keys(checks);
  const results = await Promise.all(
    selected.map(async (name): Promise<string> => {
      if (exclude.has(name)) return `[+]${name} excluded: ok`;
      try {
        await (checks[name] as Check)();
        return `[+]${name} ok`;
      } catch {
        return `[-]${name} failed: reason withheld`;
      }
    }),
  );
  const ok = results.every((line) => line.startsWith('[+]'));
  const verbose = queryValues(req, 'verbose').length > 0;
  res.status(ok ? 200 : 500).type('text/plain');
  if (!verbose && ok) {
    res.send('ok');
    return;
  }
  res.send(`${results.join('\n')}\n${endpoint} check ${ok ? 'passed' : 'failed'}\n`);
}
