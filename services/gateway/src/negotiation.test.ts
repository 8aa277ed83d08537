import { ApiError } from '@svc/apimachinery';
import { checkDecodedSize, decodeBody, MAX_DECODED_DEPTH, parseJson, parseYaml } from './negotiation';

function expectBadRequest(fn: () => unknown, message: RegExp): void {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(ApiError);
  expect((caught as ApiError).code).toBe(400);
  expect((caught as ApiError).message).toMatch(message);
}

/** Nine aliases of nine aliases, `levels` deep: a few hundred bytes that expand to 9^levels values. */
function aliasBomb(levels: number): string {
  const lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]'];
  for (let i = 1; i <= levels; i++) lines.push(`a${i}: &a${i} [${Array.from({ length: 9 }, () => `*a${i - 1}`).join(',')}]`);
  return lines.join('\n') + '\n';
}

describe('bounded decoding', () => {
  it('refuses a YAML alias bomb after a bounded walk, naming the limit', () => {
    const body = Buffer.from(aliasBomb(8));
    expect(body.length).toBeLessThan(1000);
    const started = Date.now();
    expectBadRequest(() => parseYaml(body), /expands to more than \d+ values .*excessive aliasing/);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('keeps YAML with a few aliases, and copies them so no two places share an object', () => {
    const value = parseYaml(Buffer.from('base: &b {k: v}\none: *b\ntwo: *b\n')) as Record<string, Record<string, string>>;
    expect(value['one']).toEqual({ k: 'v' });
    expect(value['one']).not.toBe(value['two']);
  });

  it('refuses JSON nested deeper than the limit, and accepts it at the limit', () => {
    const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);
    expect(() => parseJson(Buffer.from(nested(MAX_DECODED_DEPTH)))).not.toThrow();
    expectBadRequest(() => parseJson(Buffer.from(nested(MAX_DECODED_DEPTH + 1))), new RegExp(`nested deeper than the limit of ${MAX_DECODED_DEPTH} levels`));
    // A million levels (2 MB) are refused as quickly.
    expectBadRequest(() => decodeBody('application/json', Buffer.from(`{"a":${nested(1_000_000)}}`), undefined), /nested deeper/);
  });

  it('counts values against the body size', () => {
    expect(() => checkDecodedSize({ a: [1, 2, 3] }, 20, 'JSON')).not.toThrow();
    const many = Array.from({ length: 20_000 }, () => 0);
    expectBadRequest(() => checkDecodedSize(many, 10, 'YAML'), /expands to more than/);
  });
});

describe('YAML with a repeated key', () => {
  const twice = Buffer.from('data:\n  a: "1"\ndata:\n  b: "2"\n');

  it('is refused unless the caller takes repeated keys', () => {
    expectBadRequest(() => parseYaml(twice), /^error converting YAML to JSON: duplicated mapping key/);
  });

  it('keeps the last value when the caller takes repeated keys, telling it of each', () => {
    const told: string[] = [];
    expect(parseYaml(twice, (problem) => told.push(problem))).toEqual({ data: { b: '2' } });
    expect(told).toEqual([expect.stringMatching(/^duplicated mapping key/)]);
  });

  it('still refuses YAML that is not well-formed, and aliases past the bound, when repeated keys are taken', () => {
    expectBadRequest(() => parseYaml(Buffer.from('a: [1, 2\n'), () => undefined), /^error converting YAML to JSON/);
    expectBadRequest(() => parseYaml(Buffer.from('a: 1\na: 2\nb: [1, 2\n'), () => undefined), /^error converting YAML to JSON/);
    expectBadRequest(() => parseYaml(Buffer.from(`${aliasBomb(8)}dup: 1\ndup: 2\n`), () => undefined), /excessive aliasing/);
  });
});
