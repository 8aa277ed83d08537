import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnManaged } from './process';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(cond: () => boolean, timeoutMs = 10000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('managed processes', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-process-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('restarts a supervised process that dies, with backoff, and stops it for good', async () => {
    const restarts: number[] = [];
    const proc = spawnManaged({
      name: 'sleeper',
      command: 'sleep',
      args: ['60'],
      logFile: path.join(dir, 'sleeper.log'),
      restart: { initialBackoffMs: 50, maxBackoffMs: 200, onRestart: (info) => restarts.push(info.backoffMs) },
    });
    const first = proc.pid;
    proc.kill('SIGKILL');
    await until(() => proc.restarts === 1);
    await proc.running();
    expect(proc.pid).not.toBe(first);
    expect(alive(first)).toBe(false);
    proc.kill('SIGKILL');
    await until(() => proc.restarts === 2);
    await proc.running();
    expect(restarts).toEqual([50, 100]); // doubled after a quick failure
    const last = proc.pid;
    await proc.stop();
    await proc.exited;
    expect(alive(last)).toBe(false);
    await new Promise((r) => setTimeout(r, 300));
    expect(proc.restarts).toBe(2); // a stop is not a failure
    expect(proc.alive()).toBe(false);
  });

  it('does not restart an unsupervised process', async () => {
    const proc = spawnManaged({ name: 'once', command: 'sh', args: ['-c', 'exit 3'], logFile: path.join(dir, 'once.log') });
    expect(await proc.exited).toBe(3);
    expect(proc.restarts).toBe(0);
  });

  it('leaves no child behind when its parent is killed with SIGKILL', async () => {
    // A parent that starts a supervised child through spawnManaged, prints the child's pid, then waits.
    const script = `
      const { spawnManaged } = require(${JSON.stringify(path.join(__dirname, 'process.js'))});
      const p = spawnManaged({ name: 'orphan', command: 'sleep', args: ['60'], logFile: ${JSON.stringify(path.join(dir, 'orphan.log'))}, restart: {} });
      process.stdout.write(String(p.pid) + '\\n');
      setInterval(() => undefined, 1000);
    `;
    const parent = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const childPid = await new Promise<number>((resolve) => parent.stdout?.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
    expect(alive(childPid)).toBe(true);
    parent.kill('SIGKILL');
    await until(() => !alive(childPid), 15000);
  });
});
