import { removeResourceVersion, resourceVersionLayout, withResourceVersion } from './resource-version-json';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** What the splice must equal: parse, spread with the resourceVersion, serialise. */
function reference(json: Buffer, resourceVersion: string): Buffer {
  const obj = JSON.parse(json.toString('utf8')) as { metadata?: Record<string, Json> | null };
  return Buffer.from(JSON.stringify({ ...obj, metadata: { ...(obj.metadata ?? {}), resourceVersion } }));
}

/** What removing must equal: parse, drop metadata.resourceVersion when there is one, serialise. */
function referenceRemoved(json: Buffer): Buffer {
  const obj = JSON.parse(json.toString('utf8')) as { metadata?: Record<string, Json> | null };
  const meta = obj.metadata;
  if (!meta || meta['resourceVersion'] === undefined) return Buffer.from(JSON.stringify(obj));
  const { resourceVersion: _omit, ...rest } = meta;
  return Buffer.from(JSON.stringify({ ...obj, metadata: rest }));
}

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');
const spliced = (text: string, rv = '42'): string | undefined => withResourceVersion(bytes(text), rv)?.toString('utf8');

/** Splices `text` and checks the result against the parse-and-serialise reference. */
function expectSpliced(text: string, rv = '42'): string {
  const out = withResourceVersion(bytes(text), rv);
  expect(out).toBeDefined();
  expect(out?.toString('utf8')).toBe(reference(bytes(text), rv).toString('utf8'));
  return out?.toString('utf8') ?? '';
}

describe('withResourceVersion', () => {
  it('adds the resourceVersion at the end of the top-level metadata', () => {
    expect(expectSpliced('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"d"},"data":{"k":"v"}}')).toBe(
      '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"d","resourceVersion":"42"},"data":{"k":"v"}}',
    );
  });

  it('ignores metadata keys nested in other fields, before and after the top-level one', () => {
    const text = JSON.stringify({
      spec: { template: { metadata: { name: 't', resourceVersion: '9' } }, list: [{ metadata: {} }, { metadata: { resourceVersion: '1' } }] },
      metadata: { name: 'x', labels: { metadata: 'resourceVersion' } },
      status: { metadata: { resourceVersion: '7' } },
    });
    const out = JSON.parse(expectSpliced(text)) as { spec: { template: { metadata: Record<string, string> } }; metadata: Record<string, unknown>; status: { metadata: Record<string, string> } };
    expect(out.metadata['resourceVersion']).toBe('42');
    expect(out.spec.template.metadata['resourceVersion']).toBe('9');
    expect(out.status.metadata['resourceVersion']).toBe('7');
  });

  it('is not fooled by strings that look like metadata or structure', () => {
    expectSpliced(JSON.stringify({ data: { k: '"metadata":{"resourceVersion":"1"}}', 'x"}': '{[' }, metadata: { name: '\\"}' } }));
    expectSpliced(JSON.stringify({ 'metadata"': { resourceVersion: '1' }, metadata: { name: 'a' } }));
  });

  it('handles empty, null and missing metadata, and an empty object', () => {
    expect(expectSpliced('{"kind":"A","metadata":{},"spec":{}}')).toBe('{"kind":"A","metadata":{"resourceVersion":"42"},"spec":{}}');
    expect(expectSpliced('{"kind":"A","metadata":null,"spec":{}}')).toBe('{"kind":"A","metadata":{"resourceVersion":"42"},"spec":{}}');
    expect(expectSpliced('{"kind":"A","spec":{}}')).toBe('{"kind":"A","spec":{},"metadata":{"resourceVersion":"42"}}');
    expect(expectSpliced('{}')).toBe('{"metadata":{"resourceVersion":"42"}}');
  });

  it('replaces an existing resourceVersion where it stands, whatever its value', () => {
    expect(expectSpliced('{"metadata":{"resourceVersion":"7","name":"a"}}')).toBe('{"metadata":{"resourceVersion":"42","name":"a"}}');
    expectSpliced('{"metadata":{"name":"a","resourceVersion":12}}');
    expectSpliced('{"metadata":{"name":"a","resourceVersion":null,"uid":"u"}}');
    expectSpliced('{"metadata":{"name":"a","resourceVersion":{"x":[1,2]}}}');
  });

  it('keeps escapes, control characters and any Unicode as JSON.stringify writes them', () => {
    expectSpliced(JSON.stringify({ metadata: { name: 'a', annotations: { t: 'tab\there "q" back\\slash \n\r\b\f \u0001\u001f\u007f é ✓ 😀 \u2028' } } }));
    expectSpliced(JSON.stringify({ metadata: { name: 'ü' }, n: [0, -1, 1.5, 1e21, 1e-7, -2.5e-8, 123456789012345680000, true, false, null] }));
  });

  it('answers undefined for anything that is not an object, and for a metadata neither object nor null', () => {
    for (const text of ['[]', '[{"metadata":{}}]', '"x"', '1', 'null', 'true', '', '{"metadata":"ab"}', '{"metadata":["a"]}', '{"metadata":1}', '{"metadata":true}']) {
      expect(spliced(text)).toBeUndefined();
    }
  });

  it('answers undefined for JSON that serialising its parse would change', () => {
    const changed = [
      '{ "metadata":{}}',
      '{"metadata":{} }',
      '{"metadata" :{}}',
      '{"metadata":{}}\n',
      '\ufeff{"metadata":{}}',
      '{"a":"\\/"}',
      '{"a":"\\u0041"}',
      '{"a":"\\u001F"}',
      '{"a":"\\u000a"}',
      '{"a":"\\ud83d\\ude00"}',
      '{"a":1.0}',
      '{"a":1e3}',
      '{"a":1E+21}',
      '{"a":-0}',
      '{"a":01}',
      '{"a":1,"a":2}',
      '{"metadata":{},"metadata":{}}',
      '{"metadata":{"resourceVersion":"1","resourceVersion":"2"}}',
      '{"spec":{"x":{"k":1,"k":1}}}',
      '{"b":1,"1":2}',
    ];
    for (const text of changed) {
      const out = spliced(text);
      expect([text, out]).toEqual([text, undefined]);
      // The reference would indeed not give the same bytes back (or cannot parse them).
      let same = false;
      try {
        same = JSON.stringify(JSON.parse(text)) === text;
      } catch {
        same = false;
      }
      expect([text, same]).toEqual([text, false]);
    }
  });

  it('leaves keys that are array indices to the parse, even where they would not move', () => {
    expect(spliced('{"metadata":{"labels":{"0":"a"}}}')).toBeUndefined();
    expect(spliced('{"data":{"4294967294":"a","b":1}}')).toBeUndefined();
  });

  it('answers undefined for invalid JSON and invalid UTF-8', () => {
    const invalid = ['{', '{"a":}', '{"a":1,}', '{"a" 1}', '{"a":tru}', '{"a":nul}', '{"a":"x}', '{"a":"\\x"}', '{"a":[1,]}', '{"a":1}}', '{a:1}', '{"a":NaN}', '{"a":-Infinity}', '{"a":"\u0001"}', '{"a":--1}'];
    for (const text of invalid) expect([text, spliced(text)]).toEqual([text, undefined]);
    expect(withResourceVersion(Buffer.concat([bytes('{"a":"'), Buffer.from([0xc3, 0x28]), bytes('"}')]), '1')).toBeUndefined();
    expect(withResourceVersion(Buffer.concat([bytes('{"a":"'), Buffer.from([0xed, 0xa0, 0x80]), bytes('"}')]), '1')).toBeUndefined();
  });

  it('finds duplicates in objects with many keys', () => {
    const many = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`key-${i}`, i]));
    const text = JSON.stringify({ metadata: { name: 'a' }, data: many });
    expectSpliced(text);
    expect(spliced(text.replace('"key-99"', '"key-3"'))).toBeUndefined();
    expect(spliced(text.replace('"key-20"', '"key-7"'))).toBeUndefined();
  });

  it('leaves nesting deeper than it follows to the parse', () => {
    const deep = `{"metadata":{},"x":${'['.repeat(600)}${']'.repeat(600)}}`;
    expect(spliced(deep)).toBeUndefined();
    expectSpliced(`{"metadata":{},"x":${'['.repeat(100)}${']'.repeat(100)}}`);
  });

  it('agrees with the reference on random objects and on every one-byte change of them', () => {
    const random = seeded(7);
    let accepted = 0;
    let mutantsAccepted = 0;
    for (let n = 0; n < 400; n++) {
      const obj = randomObject(random);
      const text = JSON.stringify(obj);
      const json = bytes(text);
      const rv = String(Math.floor(random() * 1e9));
      const out = withResourceVersion(json, rv);
      // Every serialised object without index-like keys, whose metadata is an object, null or absent, is taken.
      const meta = obj['metadata'];
      const metadataTaken = meta === undefined || meta === null || (typeof meta === 'object' && !Array.isArray(meta));
      if (metadataTaken && !/"\d+":/.test(text)) expect(out).toBeDefined();
      if (out) {
        accepted++;
        expect(out.toString('utf8')).toBe(reference(json, rv).toString('utf8'));
        const layout = resourceVersionLayout(json);
        expect(layout).toBeDefined();
        if (layout) expect(removeResourceVersion(json, layout).toString('utf8')).toBe(referenceRemoved(json).toString('utf8'));
      }
      for (let m = 0; m < 10; m++) {
        const mutant = Buffer.from(json);
        const at = Math.floor(random() * mutant.length);
        mutant[at] = MUTATION_BYTES[Math.floor(random() * MUTATION_BYTES.length)] as number;
        const result = withResourceVersion(mutant, rv);
        if (!result) continue;
        mutantsAccepted++;
        // Whatever is accepted parses, and splices to exactly the reference.
        expect(result.toString('utf8')).toBe(reference(mutant, rv).toString('utf8'));
      }
    }
    expect(accepted).toBeGreaterThan(100);
    expect(mutantsAccepted).toBeGreaterThan(100);
  });
});

describe('removeResourceVersion', () => {
  const removed = (text: string): string => {
    const layout = resourceVersionLayout(bytes(text));
    expect(layout).toBeDefined();
    const out = layout ? removeResourceVersion(bytes(text), layout).toString('utf8') : '';
    expect(out).toBe(referenceRemoved(bytes(text)).toString('utf8'));
    return out;
  };

  it('removes the field and one comma, wherever it stands', () => {
    expect(removed('{"metadata":{"resourceVersion":"1","name":"a"},"x":1}')).toBe('{"metadata":{"name":"a"},"x":1}');
    expect(removed('{"metadata":{"name":"a","resourceVersion":"1","uid":"u"}}')).toBe('{"metadata":{"name":"a","uid":"u"}}');
    expect(removed('{"metadata":{"name":"a","resourceVersion":"1"}}')).toBe('{"metadata":{"name":"a"}}');
    expect(removed('{"metadata":{"resourceVersion":"1"}}')).toBe('{"metadata":{}}');
    expect(removed('{"metadata":{"resourceVersion":null}}')).toBe('{"metadata":{}}');
  });

  it('answers the same bytes when there is no resourceVersion', () => {
    for (const text of ['{"metadata":{"name":"a"}}', '{"metadata":null}', '{}', '{"spec":{"metadata":{"resourceVersion":"1"}}}']) {
      const json = bytes(text);
      const layout = resourceVersionLayout(json);
      expect(layout && removeResourceVersion(json, layout)).toBe(json);
    }
  });
});

/** Bytes that make a one-byte change likely to stay JSON, or to break it interestingly. */
const MUTATION_BYTES = Buffer.from(' {}[]:,"\\/0123456789-.eEtrufalsn\nabxyz\u007f', 'latin1');

/** A small linear congruential generator: the same cases on every run. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => (state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 4294967296;
}

const KEYS = ['metadata', 'resourceVersion', 'name', 'spec', 'a', 'b', 'x"y', 'back\\slash', 'é', '😀', '', '1', '01', 'k\n'];
const STRINGS = ['', 'v', '"metadata":{', '}', '\\', '\u0000\u0008\u0009\u000a\u000b\u000c\u000d\u001f', 'é✓😀', '\u2028', '"resourceVersion":"9"'];

function randomValue(random: () => number, depth: number): Json {
  const r = random();
  if (depth > 3 || r < 0.35) {
    const s = random();
    if (s < 0.3) return STRINGS[Math.floor(random() * STRINGS.length)] as string;
    if (s < 0.6) return [0, -1, 1.5, 1e21, 1e-7, -0.000001, 2 ** 53, 123.456][Math.floor(random() * 8)] as number;
    if (s < 0.8) return random() < 0.5;
    return null;
  }
  if (r < 0.6) return Array.from({ length: Math.floor(random() * 4) }, () => randomValue(random, depth + 1));
  return randomRecord(random, depth + 1);
}

function randomRecord(random: () => number, depth: number): { [key: string]: Json } {
  const out: { [key: string]: Json } = {};
  const n = Math.floor(random() * 5);
  for (let i = 0; i < n; i++) out[KEYS[Math.floor(random() * KEYS.length)] as string] = randomValue(random, depth);
  return out;
}

function randomObject(random: () => number): { [key: string]: Json } {
  const obj = randomRecord(random, 1);
  const m = random();
  if (m < 0.6) obj['metadata'] = randomRecord(random, 2);
  else if (m < 0.7) obj['metadata'] = null;
  else if (m < 0.8) delete obj['metadata'];
  if (random() < 0.3 && obj['metadata'] && typeof obj['metadata'] === 'object' && !Array.isArray(obj['metadata'])) obj['metadata']['resourceVersion'] = String(Math.floor(random() * 100));
  return obj;
}
