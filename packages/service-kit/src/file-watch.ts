import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Follows a configuration file's content: `onChange(text)` runs when the
 * content differs from the last content seen. Change events (fs.watch on the
 * file's directory, so that a file replaced by a rename, as editors and
 * Kubernetes ConfigMap mounts do, keeps being followed) are backed by a poll,
 * because events are not reliable on every filesystem. The timer is
 * injectable so tests drive the poll.
 */
export interface FileWatchTimers {
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

export interface FileWatchOptions {
  /** The poll period; 60 s by default. */
  pollMs?: number;
  timers?: FileWatchTimers;
  /** Called when the file cannot be read (it stays unread until it can be). */
  onReadError?: (err: Error) => void;
}

export interface FileWatch {
  /** Reads the file now and calls onChange if its content changed. */
  check(): void;
  close(): void;
}

const DEFAULT_TIMERS: FileWatchTimers = {
  setInterval: (fn, ms) => setInterval(fn, ms).unref(),
  clearInterval: (h) => clearInterval(h as NodeJS.Timeout),
};

export function contentHash(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Watches `file`, whose content `initialText` is already applied. */
export function watchFileContent(file: string, initialText: string, onChange: (text: string) => void, options: FileWatchOptions = {}): FileWatch {
  let last = contentHash(initialText);
  const timers = options.timers ?? DEFAULT_TIMERS;
  const check = (): void => {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      options.onReadError?.(err as Error);
      return;
    }
    const hash = contentHash(text);
    if (hash === last) return;
    last = hash;
    onChange(text);
  };
  let watcher: fs.FSWatcher | undefined;
  try {
    watcher = fs.watch(path.dirname(file), { persistent: false }, (_event, name) => {
      if (name === null || name === path.basename(file)) check();
    });
    watcher.on('error', () => watcher?.close());
  } catch {
    watcher = undefined; // the poll still follows the file
  }
  const handle = timers.setInterval(check, options.pollMs ?? 60_000);
  return {
    check,
    close: () => {
      watcher?.close();
      timers.clearInterval(handle);
    },
  };
}
