import { addedMatcher, chunkedDecoder, lineSplitter } from './watch-stream';

const match = addedMatcher('fanout-');
const event = (type: string, name: string): string => JSON.stringify({ type, object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'n' }, data: { value: 'v'.repeat(50) } } });

/** Feeds `text` to a chunked decoder and line splitter in pieces of `piece` bytes; answers the lines' matches. */
function decode(text: string, piece: number): { indexes: number[]; ended: boolean } {
  const indexes: number[] = [];
  let ended = false;
  const decoder = chunkedDecoder(
    lineSplitter((buf, start, end) => indexes.push(match(buf, start, end))),
    () => (ended = true),
  );
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += piece) decoder(Buffer.from(bytes.subarray(i, i + piece)));
  return { indexes, ended };
}

const chunk = (s: string): string => `${Buffer.byteLength(s).toString(16)}\r\n${s}\r\n`;

describe('the watch stream of the load generator', () => {
  test('finds the number in the name of ADDED events only', () => {
    for (const [line, want] of [
      [event('ADDED', 'fanout-0'), 0],
      [event('ADDED', 'fanout-299'), 299],
      [event('MODIFIED', 'fanout-3'), -1],
      [event('ADDED', 'warm-3'), -1],
      [event('ADDED', 'fanout-x'), -1],
      [event('ADDED', 'fanout-12x'), -1],
    ] as const) {
      const buf = Buffer.from(line);
      expect(match(buf, 0, buf.length)).toBe(want);
    }
  });

  test('unframes chunks and splits lines however the bytes arrive', () => {
    const body = chunk(`${event('ADDED', 'fanout-1')}\n`) + chunk(`${event('ADDED', 'fanout-2')}\n${event('ADDED', 'fanout-3')}\n`) + chunk(event('ADDED', 'fanout-4').slice(0, 40)) + chunk(`${event('ADDED', 'fanout-4').slice(40)}\n`) + '0\r\n\r\n';
    for (const piece of [1, 2, 3, 7, 64, 100000]) expect(decode(body, piece)).toEqual({ indexes: [1, 2, 3, 4], ended: true });
  });

  test('does not take a match from the next line', () => {
    const text = `${JSON.stringify({ type: 'ADDED', object: { metadata: {} } })}\n${event('ADDED', 'fanout-5')}\n`;
    const buf = Buffer.from(text);
    const nl = buf.indexOf(0x0a);
    expect(match(buf, 0, nl)).toBe(-1);
    expect(match(buf, nl + 1, buf.length - 1)).toBe(5);
  });
});
