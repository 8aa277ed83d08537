import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import { forget, reapOnExit } from './reaper';

/**
 * Child processes of the environment. Each runs in its own process group so
 * stopping it stops anything it started, its output goes to a log file, and
 * the reaper (reaper.ts) kills the group if this process dies first. With a
 * restart policy the process is supervised: when it dies without being
 * asked to, it is started again after a backoff that doubles up to a bound
 * (and resets once a run has lasted a while), and each restart is logged.
 */
export interface ManagedProcess {
  name: string;
  /** The current run's pid (it changes when the process is restarted). */
  readonly pid: number;
  logFile: string;
  /** How often the supervisor started it again. */
  readonly restarts: number;
  alive(): boolean;
  /** SIGTERM, then SIGKILL after `graceMs`; no restart follows. */
  stop(graceMs?: number): Promise<void>;
  /** Sends a signal to the current run's process group (fault tests); a supervised process comes back. */
  kill(signal?: NodeJS.Signals): void;
  /** Resolves once the current run is up again after a restart (immediately when it is running). */
  running(): Promise<void>;
  /** Resolves with the exit code when the process ends for good (stopped, or exited unsupervised). */
  exited: Promise<number | null>;
}

export interface RestartPolicy {
  /** First backoff; doubled after each quick failure. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** A run that lasted this long resets the backoff. */
  resetAfterMs?: number;
  /** Told about every restart (for logs). */
  onRestart?(info: { name: string; exitCode: number | null; signal: string | null; restarts: number; backoffMs: number }): void;
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
  /** Supervise: start it again when it dies unasked. */
  restart?: RestartPolicy;
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  if (pid <= 0) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is gone already
  }
}

export function spawnManaged(opts: SpawnOptions): ManagedProcess {
  const log = fs.openSync(opts.logFile, 'a');
  let child: ChildProcess;
  let running = false;
  let stopping = false;
  let restarts = 0;
  let backoffMs = opts.restart?.initialBackoffMs ?? 500;
  let restartTimer: NodeJS.Timeout | undefined;
  let resolveExited: (code: number | null) => void = () => undefined;
  const exited = new Promise<number | null>((resolve) => (resolveExited = resolve));
  let upWaiters: Array<() => void> = [];

  const launch = (): void => {
    const startedAt = Date.now();
    const stdio: Array<'ignore' | 'pipe' | number> = opts.tee ? ['ignore', 'pipe', 'pipe'] : ['ignore', log, log];
    child = spawn(opts.command, opts.args, { cwd: opts.cwd, env: { ...process.env, ...opts.env }, stdio, detached: true });
    const pid = child.pid ?? -1;
    running = pid > 0;
    reapOnExit(pid);
    if (opts.tee) {
      const tee = opts.tee;
      const forward = (chunk: Buffer): void => {
        fs.writeSync(log, chunk);
        tee.write(chunk);
      };
      child.stdout?.on('data', forward);
      child.stderr?.on('data', forward);
    }
    for (const w of upWaiters) w();
    upWaiters = [];
    let ended = false;
    const onEnd = (code: number | null, signal: NodeJS.Signals | null): void => {
      if (ended) return;
      ended = true;
      running = false;
      // Anything the process left in its group goes too.
      signalGroup(pid, 'SIGKILL');
      forget(pid);
      if (stopping || !opts.restart) {
        finish(code);
        return;
      }
      const policy = opts.restart;
      if (Date.now() - startedAt >= (policy.resetAfterMs ?? 30_000)) backoffMs = policy.initialBackoffMs ?? 500;
      const wait = backoffMs;
      backoffMs = Math.min(backoffMs * 2, policy.maxBackoffMs ?? 30_000);
      restarts++;
      policy.onRestart?.({ name: opts.name, exitCode: code, signal, restarts, backoffMs: wait });
      restartTimer = setTimeout(() => {
        restartTimer = undefined;
        if (!stopping) launch();
      }, wait);
    };
    child.once('exit', onEnd);
    child.once('error', () => onEnd(null, null));
  };

  const finish = (code: number | null): void => {
    try {
      fs.closeSync(log);
    } catch {
      // already closed
    }
    for (const w of upWaiters) w();
    upWaiters = [];
    resolveExited(code);
  };

  launch();
  return {
    name: opts.name,
    get pid() {
      return child.pid ?? -1;
    },
    logFile: opts.logFile,
    get restarts() {
      return restarts;
    },
    alive: () => running,
    exited,
    kill(signal = 'SIGKILL') {
      if (running) signalGroup(child.pid ?? -1, signal);
    },
    running: () => (running || stopping ? Promise.resolve() : new Promise<void>((resolve) => upWaiters.push(resolve))),
    async stop(graceMs = 5000) {
      stopping = true;
      if (restartTimer) {
        clearTimeout(restartTimer);
        restartTimer = undefined;
        finish(null);
        return;
      }
      if (!running) {
        await exited;
        return;
      }
      const pid = child.pid ?? -1;
      signalGroup(pid, 'SIGTERM');
      const timer = setTimeout(() => signalGroup(pid, 'SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
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
