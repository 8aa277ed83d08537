import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import * as readline from 'node:readline';

/**
 * Children of the environment run in process groups of their own (so a stop
 * reaches what they start), which means they would outlive a parent killed
 * with SIGKILL. The reaper closes that gap: a small process of its own that
 * the parent tells about every group it starts, over a pipe. When the pipe
 * closes, however the parent ended, the reaper kills every group it was told
 * about and exits.
 *
 * Protocol on the reaper's stdin, one line each: `add <pgid>`, `remove <pgid>`.
 */

let reaper: ChildProcess | undefined;

function send(line: string): void {
  reaper ??= startReaper();
  reaper.stdin?.write(`${line}\n`);
}

function startReaper(): ChildProcess {
  const child = spawn(process.execPath, [__filename, '--reap'], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
  // The reaper must not keep its parent alive, nor be waited for.
  child.unref();
  (child.stdin as unknown as Socket | null)?.unref();
  child.stdin?.on('error', () => undefined);
  return child;
}

/** Have the process group `pgid` killed if this process dies before it stops it. */
export function reapOnExit(pgid: number): void {
  if (pgid > 0) send(`add ${pgid}`);
}

/** The group stopped normally: nothing to reap. */
export function forget(pgid: number): void {
  if (pgid > 0 && reaper) send(`remove ${pgid}`);
}

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

/** The reaper's own main: collect groups until stdin closes, then kill them. */
function runReaper(): void {
  const groups = new Set<number>();
  const lines = readline.createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    const [verb, arg] = line.trim().split(/\s+/);
    const pgid = Number(arg);
    if (!Number.isInteger(pgid) || pgid <= 0) return;
    if (verb === 'add') groups.add(pgid);
    else if (verb === 'remove') groups.delete(pgid);
  });
  lines.on('close', () => {
    for (const pgid of groups) killGroup(pgid, 'SIGTERM');
    setTimeout(() => {
      for (const pgid of groups) killGroup(pgid, 'SIGKILL');
      process.exit(0);
    }, 2000);
  });
}

if (require.main === module && process.argv.includes('--reap')) runReaper();
