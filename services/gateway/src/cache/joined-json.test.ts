import { SharedObject } from '../watch/change';
import { JoinedJson, MAX_RUN_ITEMS, SOLO_BYTES, keyHash, MEAN_RUN_ITEMS } from './joined-json';

/** Objects of a collection in key order, small unless `big` names them. */
function collection(count: number, big: ReadonlySet<number> = new Set()): SharedObject[] {
  return Array.from({ length: count }, (_, i) => {
    const name = `cm-${String(i).padStart(5, '0')}`;
    const key = `/registry/configmaps/ns/${name}`;
    const value = big.has(i) ? 'x'.repeat(SOLO_BYTES) : `v${i}`;
    return new SharedObject(key, Buffer.from(JSON.stringify({ metadata: { name, resourceVersion: String(i + 1) }, data: { value } })), i + 1);
  });
}

/** The list's items as the encoder writes them: the fragments joined by commas. */
const written = (fragments: Iterable<Buffer>): string => [...fragments].map((b) => b.toString()).join(',');
const expected = (objects: readonly SharedObject[]): string => objects.map((o) => o.json.toString()).join(',');

describe('list items joined once', () => {
  it('writes exactly the items, whatever page of the collection is asked for', () => {
    const objects = collection(1000, new Set([10, 11, 500, 999]));
    const joined = new JoinedJson(64 << 20);
    for (const [from, to] of [
      [0, 1000],
      [0, 1000],
      [137, 1000],
      [3, 420],
      [11, 12],
      [0, 0],
      [998, 1000],
    ] as const) {
      const page = objects.slice(from, to);
      expect(written(joined.fragments(page, true))).toBe(expected(page));
    }
    expect(written(joined.fragments(objects.filter((_, i) => i % 3 === 0), false))).toBe(expected(objects.filter((_, i) => i % 3 === 0)));
  });

  it('keeps the joined bytes between lists and joins again only the run a change touched', () => {
    const objects = collection(2000);
    const joined = new JoinedJson(64 << 20);
    const first = [...joined.fragments(objects, true)];
    expect(first.length).toBeLessThan(objects.length / 8);
    const kept = joined.size;
    expect(kept).toBeGreaterThan(0);
    const again = [...joined.fragments(objects, true)];
    // The same buffers, not new copies.
    expect(again.filter((b) => first.includes(b)).length).toBe(again.length);

    const changed = [...objects];
    const at = 1000;
    const old = changed[at] as SharedObject;
    changed[at] = new SharedObject(old.key, Buffer.from(old.json.toString().replace('"v1000"', '"changed"')), 5000);
    const after = [...joined.fragments(changed, true)];
    expect(written(after)).toBe(expected(changed));
    expect(after.filter((b) => !first.includes(b))).toHaveLength(1);
    expect(joined.size).toBe(kept);
  });

  it('ends a run by the keys, so a run never holds more than its item limit and big objects are written alone', () => {
    const objects = collection(3000, new Set([100, 2500]));
    const joined = new JoinedJson(64 << 20);
    const fragments = [...joined.fragments(objects, true)];
    const itemsIn = (b: Buffer): number => (JSON.parse(`[${b.toString()}]`) as unknown[]).length;
    expect(Math.max(...fragments.map(itemsIn))).toBeLessThanOrEqual(MAX_RUN_ITEMS);
    expect(fragments).toContain((objects[100] as SharedObject).json);
    expect(fragments).toContain((objects[2500] as SharedObject).json);
    // Runs end after the objects whose key hash says so (other cuts are the limits and big objects).
    const ends = fragments.filter((b) => itemsIn(b) > 1).map((b) => (JSON.parse(`[${b.toString()}]`) as Array<{ metadata: { name: string } }>).at(-1)?.metadata.name);
    const byHash = ends.filter((name) => keyHash(`/registry/configmaps/ns/${name}`) % MEAN_RUN_ITEMS === 0);
    expect(byHash.length).toBeGreaterThan(ends.length / 2);
  });

  it('holds no more than its byte limit, and forgets the run of a deleted object', () => {
    const objects = collection(2000);
    const limit = 20_000;
    const joined = new JoinedJson(limit);
    expect(written(joined.fragments(objects, true))).toBe(expected(objects));
    expect(joined.bytes).toBeGreaterThan(0);
    expect(joined.bytes).toBeLessThanOrEqual(limit);
    // Past the limit the rest is written item by item, still complete.
    expect(written(joined.fragments(objects, true))).toBe(expected(objects));
    expect(joined.bytes).toBeLessThanOrEqual(limit);

    const unbounded = new JoinedJson(64 << 20);
    [...unbounded.fragments(objects, true)];
    const runs = unbounded.size;
    const before = unbounded.bytes;
    for (const o of objects) unbounded.forget(o.key);
    expect(runs).toBeGreaterThan(0);
    expect(before).toBeGreaterThan(0);
    expect(unbounded.size).toBe(0);
    expect(unbounded.bytes).toBe(0);
  });

  it('keeps nothing for a filtered page, whose objects are not consecutive', () => {
    const objects = collection(1000).filter((_, i) => i % 2 === 0);
    const joined = new JoinedJson(64 << 20);
    expect([...joined.fragments(objects, false)]).toHaveLength(objects.length);
    expect(joined.size).toBe(0);
  });
});
