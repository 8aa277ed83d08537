import * as fs from 'node:fs';
import * as path from 'node:path';
import * as tls from 'node:tls';
import { startEnvironment, type Environment } from '@svc/testenv';
import { until } from './helpers';
import { adminRequest } from './http';

/**
 * Watches hold bounded memory: a client that stops reading is cut off once
 * its unsent bytes pass the limit (16 MiB by default), while a reading
 * watcher of the same changes sees all of them. An object that leaves a
 * watch's label selector arrives as DELETED with the state the watcher was
 * last shown.
 */
describe('watch limits', () => {
  let env: Environment;
  const ns = '/api/v1/namespaces/default';

  /** A raw watch over TLS as the admin, returning the socket and what it has read so far. */
  function rawWatch(pathAndQuery: string, read: boolean): Promise<{ socket: tls.TLSSocket; received: () => string; closed: () => boolean }> {
    return new Promise((resolve, reject) => {
      const socket = tls.connect({
        host: '127.0.0.1',
        port: Number(new URL(env.url).port),
        ca: fs.readFileSync(env.pki.caCert),
        cert: fs.readFileSync(env.pki.adminCert),
        key: fs.readFileSync(env.pki.adminKey),
        servername: 'localhost',
      });
      let text = '';
      let closed = false;
      socket.on('close', () => {
        closed = true;
      });
      socket.on('error', () => undefined);
      socket.once('secureConnect', () => {
        socket.write(`GET ${pathAndQuery} HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n\r\n`);
        if (read) socket.on('data', (d: Buffer) => (text += d.toString('utf8')));
        else socket.pause();
        resolve({ socket, received: () => text, closed: () => closed });
      });
      socket.once('error', reject);
    });
  }

  beforeAll(async () => {
    env = await startEnvironment();
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test('a stalled watcher is ended past the buffer limit; a reading one gets every event', async () => {
    const big = 'x'.repeat(700 * 1024);
    expect((await adminRequest(env, 'POST', `${ns}/configmaps`, JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'big' }, data: { v: '0' } }))).status).toBe(201);
    const rv = ((await adminRequest(env, 'GET', `${ns}/configmaps/big`)).json()['metadata'] as { resourceVersion: string }).resourceVersion;
    const query = `${ns}/configmaps?watch=1&resourceVersion=${rv}&fieldSelector=metadata.name%3Dbig`;
    const stalled = await rawWatch(query, false);
    const reading = await rawWatch(query, true);
    const updates = 40; // 40 x 700 KiB: well past 16 MiB plus what socket buffers absorb
    for (let i = 1; i <= updates; i++) {
      const res = await adminRequest(env, 'PATCH', `${ns}/configmaps/big`, JSON.stringify({ data: { v: String(i), big } }), { 'content-type': 'application/merge-patch+json' });
      expect(res.status).toBe(200);
    }
    // The gateway cuts the stalled watch off; its socket closes once the client reads what was sent before.
    const logFile = path.join(env.dir, 'logs', 'gateway.log');
    await until(() => (fs.readFileSync(logFile, 'utf8').includes('watch ended: the client does not keep up') ? true : undefined), 30000);
    stalled.socket.resume();
    await until(() => (stalled.closed() ? true : undefined), 30000);
    const events = (): number => (reading.received().match(/"type":"MODIFIED"/g) ?? []).length;
    await until(() => (events() >= updates ? true : undefined), 30000).catch(() => {
      throw new Error(`the reading watcher got ${events()} of ${updates} events: ${reading.received().slice(0, 300)}`);
    });
    expect(reading.closed()).toBe(false);
    reading.socket.destroy();
    stalled.socket.destroy();
    expect((await adminRequest(env, 'GET', '/readyz')).status).toBe(200);
  });

  test('an object leaving the label selector arrives as DELETED with the state the watcher last saw', async () => {
    const create = await adminRequest(env, 'POST', `${ns}/configmaps`, JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'leaver', labels: { team: 'a' } }, data: { v: '1' } }));
    expect(create.status).toBe(201);
    const rv = (create.json()['metadata'] as { resourceVersion: string }).resourceVersion;
    const watcher = await rawWatch(`${ns}/configmaps?watch=1&resourceVersion=${rv}&labelSelector=team%3Da`, true);
    const moved = await adminRequest(env, 'PATCH', `${ns}/configmaps/leaver`, JSON.stringify({ metadata: { labels: { team: 'b' } }, data: { v: '2' } }), { 'content-type': 'application/merge-patch+json' });
    expect(moved.status).toBe(200);
    const movedRv = (moved.json()['metadata'] as { resourceVersion: string }).resourceVersion;
    const line = await until(() => watcher.received().split('\n').find((l) => l.includes('"type":"DELETED"')));
    const event = JSON.parse(line.slice(line.indexOf('{'))) as { object: { metadata: { labels: Record<string, string>; resourceVersion: string }; data: Record<string, string> } };
    expect(event.object.metadata.labels).toEqual({ team: 'a' });
    expect(event.object.data).toEqual({ v: '1' });
    expect(event.object.metadata.resourceVersion).toBe(movedRv);
    watcher.socket.destroy();
  });
});
