import { Writable } from 'node:stream';
import { WriteBatcher } from './write-batcher';

/** A socket that records each write the stream layer hands it (a corked stream hands them over together). */
function recorder(): Writable & { writes: string[] } {
  const writes: string[] = [];
  const w = new Writable({
    write(chunk: Buffer, _enc, cb) {
      writes.push(chunk.toString());
      cb();
    },
    writev(chunks, cb) {
      writes.push(chunks.map((c) => (c.chunk as Buffer).toString()).join(''));
      cb();
    },
  });
  return Object.assign(w, { writes });
}

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the watch write batcher', () => {
  it('past the fan-out, lets the writes of one interval go to each socket as one write, and nothing before the interval ends', async () => {
    const batcher = new WriteBatcher(30, 1);
    const a = recorder();
    const b = recorder();
    for (const s of [a, b]) {
      batcher.hold(s);
      s.write('1');
    }
    batcher.hold(a);
    a.write('2');
    await new Promise((r) => setImmediate(r));
    await tick(5);
    expect([a.writes, b.writes]).toEqual([[], []]);
    await tick(60);
    expect([a.writes, b.writes]).toEqual([['12'], ['1']]);
    // The next interval starts afresh; one socket alone is within the fan-out and goes at the end of the turn.
    batcher.hold(a);
    a.write('3');
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(a.writes).toEqual(['12', '3']);
    batcher.stop();
  });

  it('with no interval, batches only what is written in one turn of the event loop', async () => {
    const batcher = new WriteBatcher(0);
    const a = recorder();
    batcher.hold(a);
    a.write('1');
    batcher.hold(a);
    a.write('2');
    await new Promise((r) => setImmediate(r));
    await tick(5);
    expect(a.writes).toEqual(['12']);
  });

  it('lets everything go when stopped, and skips sockets already gone', async () => {
    const batcher = new WriteBatcher(10_000);
    const a = recorder();
    const gone = recorder();
    batcher.hold(a);
    a.write('x');
    batcher.hold(gone);
    gone.destroy();
    batcher.stop();
    await tick(5);
    expect(a.writes).toEqual(['x']);
  });
});
