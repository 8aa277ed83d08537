import { ApiError } from '@svc/apimachinery';
import { watch } from '@svc/proto';
import { History } from './history';

const ev = (revision: number, prevRevision: number, key = '/registry/configmaps/ns/a'): watch.ChangeEvent => ({
  type: watch.EventType.EVENT_TYPE_MODIFIED,
  key,
  revision,
  prevRevision,
  object: Buffer.from('{}'),
  prevObject: Buffer.alloc(0),
  truncated: false,
});
const progress = (revision: number, prevRevision: number): watch.ChangeEvent => ({ ...ev(revision, prevRevision), type: watch.EventType.EVENT_TYPE_PROGRESS, key: '' });

describe('history window', () => {
  test('is complete from the first progress marker and serves ranges by prefix', () => {
    const h = new History(60000, () => 0);
    h.append(progress(10, 0));
    h.append(ev(12, 10));
    h.append(ev(15, 12, '/registry/secrets/ns/b'));
    h.append(ev(20, 15));
    expect(h.completeFrom).toBe(10);
    expect(h.range(10, 0, '/registry/configmaps/').map((e) => e.revision)).toEqual([12, 20]);
    expect(h.range(12, 15, '/registry/').map((e) => e.revision)).toEqual([15]);
    expect(h.range(20, 0, '')).toEqual([]);
  });

  test('a revision before the window is 410 Expired', () => {
    const h = new History(60000, () => 0);
    h.append(progress(10, 0));
    const err = (() => {
      try {
        h.range(9, 0, '');
      } catch (e) {
        return e as ApiError;
      }
      return undefined;
    })();
    expect(err?.code).toBe(410);
    expect(err?.reason).toBe('Expired');
  });

  test('pruning by age moves the complete point past the dropped events', () => {
    let now = 0;
    const h = new History(1000, () => now);
    h.append(progress(1, 0));
    h.append(ev(2, 1));
    now = 500;
    h.append(ev(3, 2));
    now = 1200;
    h.prune();
    expect(h.completeFrom).toBe(2);
    expect(h.range(2, 0, '').map((e) => e.revision)).toEqual([3]);
    expect(() => h.range(1, 0, '')).toThrow(ApiError);
  });

  test('duplicates are ignored and a broken chain resets the history', () => {
    const h = new History(60000, () => 0);
    h.append(progress(5, 0));
    h.append(ev(6, 5));
    expect(h.append(ev(6, 5))).toBe('duplicate');
    expect(h.append(progress(50, 0))).toBe('reset');
    expect(h.completeFrom).toBe(50);
    expect(() => h.range(6, 0, '')).toThrow(/too old resource version/);
  });

  test('waitFor resolves when the head arrives and times out with 504 otherwise', async () => {
    const h = new History(60000, () => 0);
    h.append(progress(1, 0));
    const waiting = h.waitFor(2, 1000);
    h.append(ev(2, 1));
    await expect(waiting).resolves.toBeUndefined();
    await expect(h.waitFor(99, 20)).rejects.toMatchObject({ code: 504 });
  });
  test('the history is bounded in bytes: the oldest changes go first and catch-up before them is 410', () => {
    const big = (revision: number, prevRevision: number): watch.ChangeEvent => ({ ...ev(revision, prevRevision), object: Buffer.alloc(1000), prevObject: Buffer.alloc(1000) });
    const h = new History(60000, () => 0, 5000);
    h.append(progress(1, 0));
    for (let r = 2; r <= 10; r++) h.append(big(r, r - 1));
    expect(h.bytes).toBeLessThanOrEqual(5000);
    expect(h.size).toBe(2);
    expect(h.completeFrom).toBe(8);
    expect(h.range(8, 0, '').map((e) => e.revision)).toEqual([9, 10]);
    expect(() => h.range(5, 0, '')).toThrow(/too old resource version: 5/);
  });
});
