import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import { createLogger } from '@svc/service-kit';
import { DropCounter, droppedAuditEvents } from './drops';
import { RotatingFileWriter, StdoutWriter } from './log-backend';

const quiet = createLogger('test', { write: () => undefined });

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'audit-log-'));
}

/** A clock that moves one second per reading, from a fixed start. */
function steppingClock(start = Date.parse('2026-11-27T07:00:00.000Z')): () => Date {
  let t = start;
  return () => new Date((t += 1000));
}

describe('the rotating audit log', () => {
  test('events are written one JSON per line, appended to an existing file', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'audit.log');
    fs.writeFileSync(file, '{"old":true}\n');
    const writer = new RotatingFileWriter(file, { maxBytes: 1024 * 1024, maxBackups: 0, maxAgeDays: 0, maxQueuedEvents: 100 }, new DropCounter('log-test-a', quiet));
    writer.write('{"n":1}');
    writer.write('{"n":2}');
    await writer.flush();
    expect(fs.readFileSync(file, 'utf8')).toBe('{"old":true}\n{"n":1}\n{"n":2}\n');
    await writer.close();
  });

  test('past maxBytes the file is renamed to <name>-<timestamp><ext>, and only maxBackups backups are kept', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'audit.log');
    const writer = new RotatingFileWriter(file, { maxBytes: 100, maxBackups: 2, maxAgeDays: 0, maxQueuedEvents: 100, now: steppingClock() }, new DropCounter('log-test-b', quiet));
    const line = (n: number): string => JSON.stringify({ n, pad: 'x'.repeat(60) });
    // Each line is about 80 bytes: every write after the first rotates.
    for (let n = 1; n <= 5; n++) {
      writer.write(line(n));
      await writer.flush();
    }
    const names = fs.readdirSync(dir).sort();
    expect(names).toEqual(['audit-2026-11-27T07-00-03.000.log', 'audit-2026-11-27T07-00-04.000.log', 'audit.log']);
    expect(fs.readFileSync(file, 'utf8')).toBe(line(5) + '\n');
    expect(fs.readFileSync(path.join(dir, 'audit-2026-11-27T07-00-04.000.log'), 'utf8')).toBe(line(4) + '\n');
    expect(writer.backups().map((b) => path.basename(b.file))).toEqual(['audit-2026-11-27T07-00-04.000.log', 'audit-2026-11-27T07-00-03.000.log']);
    await writer.close();
  });

  test('backups older than maxAgeDays are removed; other files are left alone', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'audit.log');
    fs.writeFileSync(path.join(dir, 'audit-2026-11-01T00-00-00.000.log'), 'old\n');
    fs.writeFileSync(path.join(dir, 'audit-2026-11-26T12-00-00.000.log'), 'recent\n');
    fs.writeFileSync(path.join(dir, 'audit-notes.log'), 'not a backup\n');
    fs.writeFileSync(file, 'x'.repeat(50) + '\n');
    const writer = new RotatingFileWriter(file, { maxBytes: 60, maxBackups: 0, maxAgeDays: 7, maxQueuedEvents: 100, now: steppingClock() }, new DropCounter('log-test-c', quiet));
    writer.write('{"rotate":"now"}');
    await writer.flush();
    expect(fs.readdirSync(dir).sort()).toEqual(['audit-2026-11-26T12-00-00.000.log', 'audit-2026-11-27T07-00-01.000.log', 'audit-notes.log', 'audit.log']);
    await writer.close();
  });

  test('a full queue drops events and counts them', async () => {
    const dir = tempDir();
    const writer = new RotatingFileWriter(path.join(dir, 'audit.log'), { maxBytes: 0, maxBackups: 0, maxAgeDays: 0, maxQueuedEvents: 3 }, new DropCounter('log-test-d', quiet));
    const taken = [1, 2, 3, 4, 5].map((n) => writer.write(`{"n":${n}}`));
    expect(taken).toEqual([true, true, true, false, false]);
    expect(droppedAuditEvents('log-test-d')).toBe(2);
    await writer.flush();
    expect(fs.readFileSync(path.join(dir, 'audit.log'), 'utf8')).toBe('{"n":1}\n{"n":2}\n{"n":3}\n');
    // Written, the queue takes events again.
    expect(writer.write('{"n":6}')).toBe(true);
    await writer.close();
  });

  test('standard output: lines, and drops while too much waits', () => {
    // A stream that never drains: what is written stays waiting.
    const out = new PassThrough({ highWaterMark: 1 });
    const writer = new StdoutWriter(new DropCounter('log-test-e', quiet), 20, out);
    expect(writer.write('{"a":1}')).toBe(true);
    expect(writer.write('{"filler":"xxxxxxxxxxxxxxxxxxxx"}')).toBe(true);
    expect(writer.write('{"b":2}')).toBe(false);
    expect(droppedAuditEvents('log-test-e')).toBe(1);
    expect(out.read().toString()).toBe('{"a":1}\n{"filler":"xxxxxxxxxxxxxxxxxxxx"}\n');
  });
});

describe('dropped events', () => {
  test('counted per backend and in total; a warning at most once per interval', () => {
    const lines: string[] = [];
    const log = createLogger('test', { write: (l: string) => void lines.push(l) });
    let now = 0;
    const counter = new DropCounter('drop-test', log, 1000, () => now);
    const before = droppedAuditEvents();
    counter.drop(1, 'full');
    counter.drop(2, 'full');
    now = 500;
    counter.drop(1, 'full');
    expect(lines).toHaveLength(1);
    now = 1500;
    counter.drop(1, 'full');
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[1] as string)).toMatchObject({ msg: 'audit events dropped', backend: 'drop-test', dropped: 4, total: 5 });
    expect(droppedAuditEvents('drop-test')).toBe(5);
    expect(droppedAuditEvents() - before).toBe(5);
  });
});
