import * as fs from 'node:fs';
import * as path from 'node:path';
import type { DropCounter } from './drops';
import type { AuditBackend } from './types';

/**
 * The log backend (`--audit-log-path`): one JSON event per line, written
 * after the request's turn of the event loop: the lines of one turn wait in
 * a bounded queue and leave in one write; past the bound an event is
 * dropped and counted. The file rotates as the original server's (lumberjack) does: a
 * write that would take it past `maxBytes` first renames it to
 * `<name>-<UTC timestamp><ext>` (`audit-2026-11-27T07-33-03.123.log`) and
 * starts a new one; then only the newest `maxBackups` backups are kept
 * (0: all) and none older than `maxAgeDays` (0: any age).
 */
export interface RotationOptions {
  /** Size past which the file rotates (lumberjack's default, 100 MB, when 0). */
  maxBytes: number;
  maxBackups: number;
  maxAgeDays: number;
  /** Events waiting to be written at most; more are dropped. */
  maxQueuedEvents: number;
  /** The clock (tests name their backups with it). */
  now?: () => Date;
}

const DEFAULT_MAX_BYTES = 100 * 1024 * 1024;
const DAY_MS = 24 * 60 * 60 * 1000;

/** `2026-11-27T07-33-03.123`: lumberjack's backup time format (UTC). */
function backupStamp(t: Date): string {
  return t.toISOString().slice(0, -1).replace(/:/g, '-');
}

function parseBackupStamp(stamp: string): number | undefined {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})\.(\d{3})$/.exec(stamp);
  if (!m) return undefined;
  const t = Date.parse(`${m[1]}T${m[2]}:${m[3]}:${m[4]}.${m[5]}Z`);
  return Number.isNaN(t) ? undefined : t;
}

export class RotatingFileWriter implements AuditBackend {
  readonly name = 'log';
  private fd: number;
  private size: number;
  private queue: string[] = [];
  private writing = false;
  private flushed: Array<() => void> = [];
  private closed = false;
  private readonly maxBytes: number;
  private readonly now: () => Date;

  constructor(
    readonly file: string,
    private readonly options: RotationOptions,
    private readonly drops: DropCounter,
  ) {
    this.maxBytes = options.maxBytes > 0 ? options.maxBytes : DEFAULT_MAX_BYTES;
    this.now = options.now ?? (() => new Date());
    fs.mkdirSync(path.dirname(file), { recursive: true });
    this.fd = fs.openSync(file, 'a', 0o600);
    this.size = fs.fstatSync(this.fd).size;
  }

  write(eventJson: string): boolean {
    if (this.closed) return false;
    if (this.queue.length >= this.options.maxQueuedEvents) {
      this.drops.drop(1, `the log's queue of ${this.options.maxQueuedEvents} events is full`);
      return false;
    }
    this.queue.push(eventJson);
    if (!this.writing) {
      this.writing = true;
      setImmediate(() => this.writeQueued());
    }
    return true;
  }

  /** Resolves once everything queued so far is written. */
  flush(): Promise<void> {
    if (!this.writing) return Promise.resolve();
    return new Promise((resolve) => this.flushed.push(resolve));
  }

  /**
   * Writes what the turn queued in one synchronous write (into the page
   * cache: cheaper than handing each small write to the thread pool, which
   * costs several times the write itself; the original's log backend writes
   * synchronously too).
   */
  private writeQueued(): void {
    const lines = this.queue;
    this.queue = [];
    this.writing = false;
    if (lines.length > 0) {
      const data = Buffer.from(lines.join('\n') + '\n');
      try {
        if (this.size > 0 && this.size + data.length > this.maxBytes) this.rotate();
        let offset = 0;
        while (offset < data.length) offset += fs.writeSync(this.fd, data, offset, data.length - offset);
        this.size += data.length;
      } catch (err) {
        this.drops.drop(lines.length, `the log could not be written: ${(err as Error).message}`);
      }
    }
    const waiting = this.flushed;
    this.flushed = [];
    for (const resolve of waiting) resolve();
  }

  private rotate(): void {
    fs.closeSync(this.fd);
    const ext = path.extname(this.file);
    const base = path.basename(this.file, ext);
    const dir = path.dirname(this.file);
    fs.renameSync(this.file, path.join(dir, `${base}-${backupStamp(this.now())}${ext}`));
    this.fd = fs.openSync(this.file, 'a', 0o600);
    this.size = 0;
    this.removeOldBackups(dir, base, ext);
  }

  /** The backups of this file, newest first. */
  backups(): Array<{ file: string; time: number }> {
    const ext = path.extname(this.file);
    const base = path.basename(this.file, ext);
    const dir = path.dirname(this.file);
    return this.listBackups(dir, base, ext);
  }

  private listBackups(dir: string, base: string, ext: string): Array<{ file: string; time: number }> {
    const out: Array<{ file: string; time: number }> = [];
    for (const name of fs.readdirSync(dir)) {
      if (!name.startsWith(`${base}-`) || !name.endsWith(ext)) continue;
      const time = parseBackupStamp(name.slice(base.length + 1, name.length - ext.length));
      if (time !== undefined) out.push({ file: path.join(dir, name), time });
    }
    return out.sort((a, b) => b.time - a.time);
  }

  private removeOldBackups(dir: string, base: string, ext: string): void {
    const { maxBackups, maxAgeDays } = this.options;
    if (maxBackups <= 0 && maxAgeDays <= 0) return;
    const cutoff = maxAgeDays > 0 ? this.now().getTime() - maxAgeDays * DAY_MS : -Infinity;
    for (const [i, backup] of this.listBackups(dir, base, ext).entries()) {
      if ((maxBackups > 0 && i >= maxBackups) || backup.time < cutoff) fs.rmSync(backup.file, { force: true });
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
    fs.closeSync(this.fd);
  }
}

/**
 * `--audit-log-path=-`: events on standard output, dropped (and counted)
 * while more than `maxBufferedBytes` wait for it.
 */
export class StdoutWriter implements AuditBackend {
  readonly name = 'log';

  constructor(
    private readonly drops: DropCounter,
    private readonly maxBufferedBytes = 64 * 1024 * 1024,
    private readonly out: NodeJS.WritableStream & { writableLength: number } = process.stdout,
  ) {}

  write(eventJson: string): boolean {
    if (this.out.writableLength > this.maxBufferedBytes) {
      this.drops.drop(1, `standard output holds more than ${this.maxBufferedBytes} bytes not yet written`);
      return false;
    }
    this.out.write(eventJson + '\n');
    return true;
  }

  async close(): Promise<void> {
    // Standard output is the process's; what is buffered leaves with it.
  }
}
