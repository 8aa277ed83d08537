import * as fs from 'node:fs';
import * as https from 'node:https';
import { ProtobufObjectCodec, PROTOBUF_PREFIX } from '@svc/protobuf-codec';
import { startEnvironment, type Environment } from '@svc/testenv';
import { adminRequest } from './http';

/**
 * The protobuf media type on the wire: reads answered in protobuf when the
 * client prefers it, JSON when it asks for JSON, and a watch stream framed
 * as upstream clients expect.
 */
describe('protobuf encoding', () => {
  let env: Environment;
  const codec = new ProtobufObjectCodec();
  const PROTOBUF = 'application/vnd.kubernetes.protobuf';
  const base = '/api/v1/namespaces/default/configmaps';

  beforeAll(async () => {
    env = await startEnvironment();
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test('a protobuf create is stored, and reads come back in the type Accept asks for', async () => {
    const body = codec.encode({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'pb', labels: { via: 'protobuf' } }, data: { k: 'v' } });
    const created = await adminRequest(env, 'POST', base, Buffer.from(body), { 'content-type': PROTOBUF, accept: `${PROTOBUF}, application/json` });
    expect(created.status).toBe(201);
    expect(created.headers['content-type']).toBe(PROTOBUF);
    expect(created.raw.subarray(0, 4)).toEqual(PROTOBUF_PREFIX);
    const decoded = codec.decode(created.raw);
    expect(decoded).toMatchObject({ kind: 'ConfigMap', metadata: { name: 'pb', namespace: 'default', labels: { via: 'protobuf' } }, data: { k: 'v' } });

    const asJson = await adminRequest(env, 'GET', `${base}/pb`, undefined, { accept: 'application/json' });
    expect(asJson.headers['content-type']).toMatch(/^application\/json/);
    const json = asJson.json() as { metadata: { uid: string; resourceVersion: string; creationTimestamp: string } };
    expect(decoded.metadata).toMatchObject({ uid: json.metadata.uid, resourceVersion: json.metadata.resourceVersion, creationTimestamp: json.metadata.creationTimestamp });

    const list = await adminRequest(env, 'GET', base, undefined, { accept: PROTOBUF });
    const items = codec.decode(list.raw)['items'] as Array<{ metadata: { name: string } }>;
    expect(codec.decode(list.raw)['kind']).toBe('ConfigMapList');
    expect(items.map((i) => i.metadata.name)).toContain('pb');
  });

  test('a watch in protobuf is a stream of length-prefixed WatchEvent frames', async () => {
    const frames: Buffer[] = [];
    const req = https.request(`${env.url}${base}?watch=true&fieldSelector=metadata.name%3Dwatched`, {
      ca: fs.readFileSync(env.pki.caCert),
      cert: fs.readFileSync(env.pki.adminCert),
      key: fs.readFileSync(env.pki.adminKey),
      headers: { accept: PROTOBUF },
      agent: false,
    });
    const received = new Promise<string>((resolve, reject) => {
      req.on('response', (res) => {
        let pending = Buffer.alloc(0);
        res.on('data', (chunk: Buffer) => {
          pending = Buffer.concat([pending, chunk]);
          while (pending.length >= 4 && pending.length >= 4 + pending.readUInt32BE(0)) {
            frames.push(pending.subarray(4, 4 + pending.readUInt32BE(0)));
            pending = pending.subarray(4 + pending.readUInt32BE(0));
          }
          if (frames.length > 0) resolve(String(res.headers['content-type']));
        });
      });
      req.on('error', reject);
    });
    req.end();
    await new Promise((r) => setTimeout(r, 500));
    const created = await adminRequest(env, 'POST', base, JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'watched' }, data: { a: 'b' } }));
    expect(created.status).toBe(201);
    expect(await received).toBe(PROTOBUF);
    req.destroy();
    // WatchEvent: type (1) = "ADDED", object (2) = RawExtension whose raw (1) is the enveloped object.
    const frame = frames[0] as Buffer;
    expect(frame[0]).toBe(0x0a);
    expect(frame.subarray(2, 2 + (frame[1] as number)).toString()).toBe('ADDED');
    const objectStart = frame.indexOf(PROTOBUF_PREFIX);
    expect(codec.decode(frame.subarray(objectStart))).toMatchObject({ kind: 'ConfigMap', metadata: { name: 'watched' }, data: { a: 'b' } });
  });
});
