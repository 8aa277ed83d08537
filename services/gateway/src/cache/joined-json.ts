import type { SharedObject } from '../watch/change';

/**
 * The JSON of a cached list's items, joined once and kept, so a list from
 * the cache is written as a few hundred buffers made earlier instead of one
 * buffer, one comma and one copy per item on every request (the profile of
 * a 10,000-item list put half of the gateway's time there).
 *
 * The objects of a collection, in key order, are cut into runs where the
 * content says so, not where a page starts: a run ends after an object
 * whose key hashes to 0 modulo MEAN_RUN_ITEMS, after MAX_RUN_ITEMS objects
 * or MAX_RUN_BYTES bytes, and before and after an object of SOLO_BYTES or
 * more (written alone, never copied). A change to one object therefore
 * invalidates one run, and every list of the collection (all namespaces or
 * one, any page) finds the same runs. A run is kept under the key of its
 * first object together with the objects it was made of; it is used only
 * while the page has exactly those objects (compared by identity, so a
 * changed object, which the cache holds as a new instance, makes it be
 * joined again).
 *
 * Bounds: a run is made only where the content, not a page's start, put
 * its first object (the objects of a page before its first cut are written
 * one by one), at most one run is kept per first object, the run of a
 * deleted object goes with it (`forget`), and the runs of a cache hold at
 * most `maxBytes` together (past that, pages are written one item at a
 * time until runs are forgotten or replaced by smaller ones). Filtered
 * pages, whose objects are not consecutive in the collection, are written
 * one by one and keep nothing.
 */

/** About this many objects per run: a run ends after an object whose key hash is 0 modulo this. */
export const MEAN_RUN_ITEMS = 64;
/** A run ends after this many objects whatever the hashes. */
export const MAX_RUN_ITEMS = 4 * MEAN_RUN_ITEMS;
/** A run ends once it holds this many bytes. */
export const MAX_RUN_BYTES = 256 * 1024;
/** Objects this large are written alone. */
export const SOLO_BYTES = 16 * 1024;

interface Run {
  readonly objects: readonly SharedObject[];
  readonly bytes: Buffer;
}

/** FNV-1a of a key: cheap, and the same in every gateway. */
export function keyHash(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Whether a run ends after this object by its key alone (cached on the instance: its key never changes). */
const endsByKey = new WeakMap<SharedObject, boolean>();
function cutAfter(o: SharedObject): boolean {
  let cut = endsByKey.get(o);
  if (cut === undefined) {
    cut = keyHash(o.key) % MEAN_RUN_ITEMS === 0;
    endsByKey.set(o, cut);
  }
  return cut;
}

function sameObjects(run: readonly SharedObject[], objects: readonly SharedObject[], from: number): boolean {
  for (let i = 0; i < run.length; i++) if (run[i] !== objects[from + i]) return false;
  return true;
}

function join(objects: readonly SharedObject[], size: number): Buffer {
  const out = Buffer.allocUnsafeSlow(size);
  let at = 0;
  for (let i = 0; i < objects.length; i++) {
    if (i > 0) out[at++] = 0x2c; // ','
    at += (objects[i] as SharedObject).json.copy(out, at);
  }
  return out;
}

export class JoinedJson {
  private readonly runs = new Map<string, Run>();
  private held = 0;

  constructor(private readonly maxBytes: number) {}

  /** Runs kept (at most one per object of the collection). */
  get size(): number {
    return this.runs.size;
  }

  /** Bytes the kept runs hold. */
  get bytes(): number {
    return this.held;
  }

  /** The object under `key` is gone: so is the run that starts at it. */
  forget(key: string): void {
    const run = this.runs.get(key);
    if (!run) return;
    this.runs.delete(key);
    this.held -= run.bytes.length;
  }

  clear(): void {
    this.runs.clear();
    this.held = 0;
  }

  /**
   * The items' JSON as fragments of one or more items joined by commas, in
   * order (the list encoder puts a comma between fragments). `consecutive`:
   * the objects follow each other in the collection (no selector left any
   * out), so runs may be used and kept.
   */
  *fragments(objects: readonly SharedObject[], consecutive: boolean): Generator<Buffer> {
    if (!consecutive) {
      for (const o of objects) yield o.json;
      return;
    }
    const n = objects.length;
    // Whether a run starting at `i` starts where the content put a cut (not where the page starts).
    let aligned = false;
    let i = 0;
    while (i < n) {
      const first = objects[i] as SharedObject;
      const kept = this.runs.get(first.key);
      if (kept && i + kept.objects.length <= n && sameObjects(kept.objects, objects, i)) {
        yield kept.bytes;
        i += kept.objects.length;
        aligned = true;
        continue;
      }
      if (first.json.length >= SOLO_BYTES) {
        yield first.json;
        aligned = true;
        i++;
        continue;
      }
      // The run from `i`: up to the next cut, or the page's end (then it is not kept: the page, not the content, ended it).
      let end = i;
      let bytes = 0;
      let cut: 'content' | 'length' | undefined;
      while (end < n) {
        const o = objects[end] as SharedObject;
        if (o.json.length >= SOLO_BYTES) {
          cut = 'content';
          break;
        }
        end++;
        bytes += o.json.length;
        if (cutAfter(o)) cut = 'content';
        else if (end - i >= MAX_RUN_ITEMS || bytes >= MAX_RUN_BYTES) cut = 'length';
        if (cut) break;
      }
      const size = bytes + end - i - 1;
      if (aligned && cut && this.held - (kept?.bytes.length ?? 0) + size <= this.maxBytes) {
        const made = objects.slice(i, end);
        const run = { objects: made, bytes: join(made, size) };
        this.forget(first.key);
        this.runs.set(first.key, run);
        this.held += size;
        yield run.bytes;
      } else {
        for (let j = i; j < end; j++) yield (objects[j] as SharedObject).json;
      }
      // A cut by length continues the chain the run was in: aligned only when that chain was.
      aligned = cut === 'content' || (cut === 'length' && aligned);
      i = end;
    }
  }
}
