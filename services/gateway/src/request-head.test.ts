import { MAX_HEADER_FIELDS, requestHeadRefusal } from './request-head';

describe('request heads node lets through and the original refuses', () => {
  const head = (httpVersion: string, ...names: string[]) => ({ httpVersion, rawHeaders: names.flatMap((n) => [n, 'v']) });

  it('serves one Host header, and HTTP/1.0 without one', () => {
    expect(requestHeadRefusal(head('1.1', 'Host', 'Accept'))).toBeUndefined();
    expect(requestHeadRefusal(head('1.0'))).toBeUndefined();
    expect(requestHeadRefusal(head('1.0', 'host'))).toBeUndefined();
  });

  it('refuses HTTP/1.1 without Host (400)', () => {
    const err = requestHeadRefusal(head('1.1', 'Accept'));
    expect(err?.code).toBe(400);
    expect(err?.reason).toBe('BadRequest');
    expect(err?.message).toBe('Bad Request: missing required Host header');
  });

  it('refuses two Host headers in any case (400)', () => {
    const err = requestHeadRefusal(head('1.1', 'Host', 'HOST'));
    expect(err?.code).toBe(400);
    expect(err?.message).toBe('Bad Request: too many Host headers');
    expect(requestHeadRefusal(head('1.0', 'host', 'host'))?.code).toBe(400);
  });

  it(`refuses more than ${MAX_HEADER_FIELDS} header fields (431)`, () => {
    const many = (n: number) => head('1.1', 'Host', ...Array.from({ length: n - 1 }, (_, i) => `X-H${i}`));
    expect(requestHeadRefusal(many(MAX_HEADER_FIELDS))).toBeUndefined();
    const err = requestHeadRefusal(many(MAX_HEADER_FIELDS + 1));
    expect(err?.code).toBe(431);
    expect(err?.message).toMatch(/more than 2000 header fields/);
  });

  it('has no Host rule for HTTP/2, and does not count its pseudo-headers as fields', () => {
    const pseudo = [':method', ':path', ':scheme', ':authority'];
    expect(requestHeadRefusal(head('2.0', ...pseudo, 'accept'))).toBeUndefined();
    expect(requestHeadRefusal(head('2.0', ...pseudo, 'host', 'host'))).toBeUndefined();
    const fields = (n: number) => head('2.0', ...pseudo, ...Array.from({ length: n }, (_, i) => `x-h${i}`));
    expect(requestHeadRefusal(fields(MAX_HEADER_FIELDS))).toBeUndefined();
    expect(requestHeadRefusal(fields(MAX_HEADER_FIELDS + 1))?.code).toBe(431);
  });
});
