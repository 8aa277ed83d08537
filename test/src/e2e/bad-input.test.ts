import * as fs from 'node:fs';
import * as tls from 'node:tls';
import * as https from 'node:https';
import { startEnvironment, type Environment } from '@svc/testenv';
import { ProtobufObjectCodec } from '@svc/protobuf-codec';
import { adminRequest } from './http';

/**
 * Bad input gets the right Status (code, reason, a message naming the
 * problem), never a 500 or a hang, and nothing stored changes.
 */
describe('bad input', () => {
  let env: Environment;
  const base = '/api/v1/namespaces/default/configmaps';
  const good = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'keep' }, data: { k: 'v' } };
  let before: string;

  const expectStatus = (res: { status: number; json(): Record<string, unknown> }, code: number, reason: string, message: RegExp) => {
    expect(res.status).toBe(code);
    const status = res.json();
    expect(status).toMatchObject({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason });
    expect(String(status['message'])).toMatch(message);
  };

  beforeAll(async () => {
    env = await startEnvironment();
    expect((await adminRequest(env, 'POST', base, JSON.stringify(good))).status).toBe(201);
    before = (await adminRequest(env, 'GET', `${base}/keep`)).body;
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test('malformed JSON is 400 BadRequest', async () => {
    expectStatus(await adminRequest(env, 'POST', base, '{"apiVersion": "v1", "kind": '), 400, 'BadRequest', /json parse error/);
  });

  test('a body of the wrong kind is 400 naming both kinds, as the original decoder does', async () => {
    expectStatus(
      await adminRequest(env, 'POST', base, JSON.stringify({ ...good, kind: 'Secret' })),
      400,
      'BadRequest',
      /^Secret in version "v1" cannot be handled as a ConfigMap: converting \(v1\.Secret\) to \(core\.ConfigMap\): unknown conversion$/,
    );
  });

  test('a wrong apiVersion in the body is 400', async () => {
    expectStatus(await adminRequest(env, 'POST', base, JSON.stringify({ ...good, apiVersion: 'v2' })), 400, 'BadRequest', /^ConfigMap in version "v2" cannot be handled as a ConfigMap: no kind "ConfigMap" is registered for version "v2"/);
  });

  test('a missing name is 422 Invalid naming metadata.name', async () => {
    const res = await adminRequest(env, 'POST', base, JSON.stringify({ ...good, metadata: {} }));
    expectStatus(res, 422, 'Invalid', /metadata\.name: Required value/);
    expect((res.json()['details'] as { causes: Array<{ field: string }> }).causes[0]?.field).toBe('metadata.name');
  });

  test.each([['a/b'], ['..'], ['UPPER']])('the name %j is 422 Invalid', async (name) => {
    expectStatus(await adminRequest(env, 'POST', base, JSON.stringify({ ...good, metadata: { name } })), 422, 'Invalid', /metadata\.name: Invalid value/);
  });

  test('a value of the wrong type is 400 naming the field', async () => {
    expectStatus(await adminRequest(env, 'POST', base, JSON.stringify({ ...good, metadata: { name: 'typed' }, data: { k: 1 } })), 400, 'BadRequest', /data\[k\]/);
  });

  test('unknown fields: Strict rejects naming them, Warn accepts with a Warning header', async () => {
    const body = JSON.stringify({ ...good, metadata: { name: 'unknown-fields' }, bogus: 1 });
    expectStatus(await adminRequest(env, 'POST', `${base}?fieldValidation=Strict`, body), 400, 'BadRequest', /unknown field "bogus"/);
    const warned = await adminRequest(env, 'POST', base, body);
    expect(warned.status).toBe(201);
    expect(String(warned.headers['warning'])).toContain('unknown field \\"bogus\\"');
    expect(warned.json()['bogus']).toBeUndefined();
  });

  test('duplicate fields: Strict rejects naming them and stores nothing, Warn keeps the last value with a Warning', async () => {
    const body = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup","labels":{"a":"1","a":"2"}},"data":{"k":"first","k":"last"}}';
    const strict = await adminRequest(env, 'POST', `${base}?fieldValidation=Strict`, body);
    expectStatus(strict, 400, 'BadRequest', /strict decoding error: duplicate field "metadata\.labels\.a", duplicate field "data\.k"/);
    expect((await adminRequest(env, 'GET', `${base}/dup`)).status).toBe(404);
    const warned = await adminRequest(env, 'POST', base, body);
    expect(warned.status).toBe(201);
    expect(String(warned.headers['warning'])).toContain('duplicate field \\"data.k\\"');
    expect(warned.json()['data']).toEqual({ k: 'last' });
    const ignored = await adminRequest(env, 'PUT', `${base}/dup?fieldValidation=Ignore`, body);
    expect(ignored.status).toBe(200);
    expect(ignored.headers['warning']).toBeUndefined();
  });

  test('an unknown resource, group or version is 404', async () => {
    expectStatus(await adminRequest(env, 'GET', '/api/v1/namespaces/default/widgets'), 404, 'NotFound', /could not find the requested resource/);
    expectStatus(await adminRequest(env, 'GET', '/apis/nope.svc.io/v1/things'), 404, 'NotFound', /could not find/);
    expectStatus(await adminRequest(env, 'GET', '/api/v2/namespaces/default/configmaps'), 404, 'NotFound', /could not find/);
  });

  test('a body over 3 MiB is 413', async () => {
    const huge = JSON.stringify({ ...good, metadata: { name: 'huge' }, data: { k: 'x'.repeat(3 * 1024 * 1024 + 10) } });
    expectStatus(await adminRequest(env, 'POST', base, huge), 413, 'RequestEntityTooLarge', /larger than the limit/);
  });

  test('an object under 3 MiB that etcd refuses as too large is 413, and nothing is stored', async () => {
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'too-big' }, spec: { containers: [{ name: 'c', image: 'x', args: Array.from({ length: 40 }, () => 'y'.repeat(50000)) }] } };
    expectStatus(await adminRequest(env, 'POST', '/api/v1/namespaces/default/pods', JSON.stringify(pod)), 413, 'RequestEntityTooLarge', /larger than the store accepts/);
    expect((await adminRequest(env, 'GET', '/api/v1/namespaces/default/pods/too-big')).status).toBe(404);
  });

  test('a watch with a timeoutSeconds that is not a number is 400, not an endless stream', async () => {
    expectStatus(await adminRequest(env, 'GET', `${base}?watch=true&timeoutSeconds=abc`), 400, 'BadRequest', /timeoutSeconds/);
  });

  test('a field label the kind cannot be selected by is 400 for a list, a watch and a deletecollection alike', async () => {
    for (const [method, query] of [['GET', ''], ['GET', '&watch=true'], ['DELETE', '']] as const) {
      expectStatus(await adminRequest(env, method, `${base}?fieldSelector=data.k%3Dv${query}`), 400, 'BadRequest', /^"data\.k" is not a known field selector: only "metadata\.name", "metadata\.namespace"$/);
    }
    expect((await adminRequest(env, 'GET', `${base}?fieldSelector=metadata.name%3Dkeep`)).status).toBe(200);
  });

  test('requests the HTTP parser refuses get a Status; long selectors fit under the 1 MiB header limit', async () => {
    const raw = (text: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const socket = tls.connect({ host: '127.0.0.1', port: Number(new URL(env.url).port), ca: fs.readFileSync(env.pki.caCert), servername: 'localhost' }, () => socket.end(text));
        let got = '';
        socket.on('data', (c: Buffer) => (got += c.toString()));
        socket.on('end', () => resolve(got));
        socket.on('error', reject);
      });
    const garbled = await raw('GET /api/v1 HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n');
    expect(garbled).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(garbled.slice(garbled.indexOf('\r\n\r\n') + 4))).toMatchObject({ kind: 'Status', code: 400, reason: 'BadRequest' });
    const huge = await raw(`GET /api/v1 HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(1024 * 1024 + 10)}\r\n\r\n`);
    expect(huge).toMatch(/^HTTP\/1\.1 431 /);
    expect(JSON.parse(huge.slice(huge.indexOf('\r\n\r\n') + 4))).toMatchObject({ kind: 'Status', code: 431 });
    const selector = encodeURIComponent(`app in (${Array.from({ length: 3000 }, (_, i) => `v${i}`).join(',')})`);
    expect((await adminRequest(env, 'GET', `${base}?labelSelector=${selector}`)).status).toBe(200);
  });

  test('an unsupported body media type is 415 and an unsupported Accept is 406', async () => {
    expectStatus(await adminRequest(env, 'POST', base, 'x', { 'content-type': 'text/plain' }), 415, 'UnsupportedMediaType', /unknown format/);
    expectStatus(await adminRequest(env, 'GET', `${base}/keep`, undefined, { accept: 'image/png' }), 406, 'NotAcceptable', /media types/);
  });

  test('list parameter rules of the resourceVersion table are 400', async () => {
    expectStatus(await adminRequest(env, 'GET', `${base}?resourceVersionMatch=Exact`), 400, 'BadRequest', /resourceVersionMatch/);
    expectStatus(await adminRequest(env, 'GET', `${base}?resourceVersion=abc`), 400, 'BadRequest', /invalid resource version/);
    expectStatus(await adminRequest(env, 'GET', `${base}?limit=1&continue=x&resourceVersion=5`), 400, 'BadRequest', /continue/);
  });

  test('an invalid dryRun value is 422 for CreateOptions; dryRun=All stores nothing', async () => {
    expectStatus(await adminRequest(env, 'POST', `${base}?dryRun=Some`, JSON.stringify({ ...good, metadata: { name: 'dry' } })), 422, 'Invalid', /^CreateOptions\.meta\.svc\.io "" is invalid: dryRun/);
    expect((await adminRequest(env, 'POST', `${base}?dryRun=All`, JSON.stringify({ ...good, metadata: { name: 'dry' } }))).status).toBe(201);
    expect((await adminRequest(env, 'GET', `${base}/dry`)).status).toBe(404);
  });

  test('a request without credentials is anonymous and, under AlwaysDeny, 403 Forbidden', async () => {
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      https
        .get(`${env.url}${base}`, { ca: fs.readFileSync(env.pki.caCert), agent: false }, (r) => {
          let body = '';
          r.on('data', (c: Buffer) => (body += c.toString()));
          r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
        })
        .on('error', reject);
    });
    expect(res.status).toBe(403);
    expect(JSON.parse(res.body)).toMatchObject({ reason: 'Forbidden', message: expect.stringContaining('User "system:anonymous" cannot list resource "configmaps"') });
  });

  test.each([
    ['without the 4-byte prefix', Buffer.from('{"kind":"ConfigMap"}'), /4-byte prefix/],
    ['that is not protobuf after the prefix', Buffer.from([0x6b, 0x38, 0x73, 0x00, 0xff, 0xff, 0xff]), /envelope could not be read/],
    ['of another kind', Buffer.from(new ProtobufObjectCodec().encode({ apiVersion: 'v1', kind: 'Status', metadata: {} })), /^Status in version "v1" cannot be handled as a ConfigMap: /],
  ])('a protobuf body %s is 400', async (_what, body, message) => {
    expectStatus(await adminRequest(env, 'POST', base, body, { 'content-type': 'application/vnd.kubernetes.protobuf' }), 400, 'BadRequest', message);
  });

  test('nothing stored changed through all of the above', async () => {
    expect((await adminRequest(env, 'GET', `${base}/keep`)).body).toBe(before);
  });

  test('a backend that is down gives 503 with Retry-After, and the gateway keeps serving the rest', async () => {
    const authz = env.processes.find((p) => p.name === 'authz');
    await authz?.stop();
    // A request the gateway has not authorized before (decisions are cached
    // for a few seconds): system:masters is decided by authz too, so it
    // cannot be authorized now.
    const res = await adminRequest(env, 'GET', `${base}/never-asked-for`);
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.json()).toMatchObject({ kind: 'Status', reason: 'ServiceUnavailable', code: 503 });
    const health = await adminRequest(env, 'GET', '/livez');
    expect(health.status).toBe(200);
    const ready = await adminRequest(env, 'GET', '/readyz?verbose');
    expect(ready.status).toBe(500);
    expect(ready.body).toContain('[-]authz failed');
  });
});
