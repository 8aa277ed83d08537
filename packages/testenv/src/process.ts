import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';

/**
 * Child processes of the environment. Each runs in its own process group so
 * stopping it stops anything it started, and its output goes to a log file.
 */
export interface ManagedProcess {
  name: string;
  pid: number;
  logFile: string;
  alive(): boolean;
  /** SIGTERM, then SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
  /** Resolves with the exit code when the process ends. */
  exited: Promise<number | null>;
}

export interface SpawnOptions {
  name: string;
  command: string;
  args: string[];
  logFile: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Also copy output to this stream (make up shows service logs). */
  tee?: NodeJS.WritableStream;
}

export function spawnManaged(opts: SpawnOptions): ManagedProcess {
  const log = fs.openSync(opts.logFile, 'a');
  const stdio: Array<'ignore' | 'pipe' | number> = opts.tee ? ['ignore', 'pipe', 'pipe'] : ['ignore', log, log];
  const child: ChildProcess = spawn(opts.command, opts.args, {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
    stdio,
    detached: true,
  });
  if (opts.tee) {
    const tee = opts.tee;
    const forward = (chunk: Buffer): void => {
      fs.writeSync(log, chunk);
      tee.write(chunk);
    };
    child.stdout?.on('data', forward);
    child.stderr?.on('data', forward);
  }
  let running = child.pid !== undefined;
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      running = false;
      resolve(code);
    });
    child.once('error', () => {
      running = false;
      resolve(null);
    });
  });
  void exited.then(() => {
    try {
      fs.closeSync(log);
    } catch {
      // already closed
    }
  });
  const pid = child.pid ?? -1;
  const signalGroup = (signal: NodeJS.Signals): void => {
    try {
      process.kill(-pid, signal);
    } catch {
      // the group is gone already
    }
  };
  return {
    name: opts.name,
    pid,
    logFile: opts.logFile,
    alive: () => running,
    exited,
    async stop(graceMs = 5000) {
      if (!running) return;
      signalGroup('SIGTERM');
      const timer = setTimeout(() => signalGroup('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
      // Anything the process left in its group goes too.
      signalGroup('SIGKILL');
    },
  };
}

export function tailLog(file: string, lines = 30): string {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}
