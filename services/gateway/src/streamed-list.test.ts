import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { writeJsonList } from './responses';

/**
 * A list streamed to a client that stops reading: the gateway produces
 * items only as fast as the socket drains, so what it holds stays bounded
 * however long the list; once the client reads again it gets the whole,
 * well-formed list.
 */
describe('a streamed JSON list', () => {
  let ITEMS = 20_000;
  const item = (i: number, pad: number): Buffer => Buffer.from(JSON.stringify({ name: `item-${i}`, pad: 'x'.repeat(pad) }));
  let server: http.Server;
  let produced = 0;
  let maxUnsent = 0;

  beforeAll(async () => {
    const app = express();
    app.get('/list', (req, res) => {
      // Items of 1 KiB are gathered into writes; fragments of 64 KiB (the cache's joined runs) are written as they are.
      const pad = Number(req.query['pad'] ?? 1000);
      const items = function* (): Generator<Buffer> {
        for (let i = 0; i < ITEMS; i++) {
          produced++;
          maxUnsent = Math.max(maxUnsent, res.writableLength);
          yield item(i, pad);
        }
      };
      void writeJsonList(req, res, { kind: 'json', mediaType: 'application/json' }, { kind: 'ThingList', metadata: { resourceVersion: '7' }, items: [] }, 'items', items());
    });
    server = http.createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  });

  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });

  it.each([
    ['items', 20_000, 1000],
    ['large fragments', 400, 64 * 1024],
  ])('is produced only as the client reads, and arrives whole (%s)', async (_what, count, pad) => {
    ITEMS = count;
    produced = 0;
    maxUnsent = 0;
    const { port } = server.address() as AddressInfo;
    const chunks: Buffer[] = [];
    await new Promise<void>((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: `/list?pad=${pad}` }, (res) => {
        res.pause();
        // While the client does not read, the server stops once the socket's buffers are full.
        setTimeout(() => {
          expect(produced).toBeLessThan(ITEMS / 2);
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve());
          res.resume();
        }, 300);
      });
      req.on('error', reject);
    });
    expect(produced).toBe(ITEMS);
    expect(maxUnsent).toBeLessThan(1024 * 1024 + pad);
    const body = JSON.parse(Buffer.concat(chunks).toString()) as { kind: string; metadata: { resourceVersion: string }; items: { name: string }[] };
    expect(body.kind).toBe('ThingList');
    expect(body.metadata.resourceVersion).toBe('7');
    expect(body.items.length).toBe(ITEMS);
    expect(body.items[ITEMS - 1]?.name).toBe(`item-${ITEMS - 1}`);
  });
});
