import * as fs from 'node:fs';
import * as tls from 'node:tls';
import { startEnvironment, type Environment } from '@svc/testenv';
import { adminRequest, type HttpResponse } from './http';

/**
 * Every request gets an answer: query parameters out of their type's range
 * or not of their type are 400 naming the parameter (never a 500), a write
 * larger than the store accepts is 413 before it reaches etcd (never a 500),
 * and request heads node's parser lets through but the original's refuses
 * (no or two Host headers, too many header fields, CONNECT, an unknown
 * Expect) get a status line and a Status body, then the connection closes.
 */
describe('every request gets an answer', () => {
  let env: Environment;
  const ns = '/api/v1/namespaces/default';
  const huge = '99999999999999999999999';

  const expectStatus = (res: HttpResponse, code: number, reason: string, message: RegExp): void => {
    expect(`${res.status} ${res.body.slice(0, 300)}`).toMatch(new RegExp(`^${code} `));
    expect(res.json()).toMatchObject({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason });
    expect(String(res.json()['message'])).toMatch(message);
  };
  /** 400 BadRequest naming the parameter in its message and as the cause's field. */
  const expectParamRefused = (res: HttpResponse, param: string, why: RegExp): void => {
    expectStatus(res, 400, 'BadRequest', new RegExp(`^${param}: Invalid value: .*${why.source}`));
    expect(res.json()).toMatchObject({ details: { causes: [{ reason: 'FieldValueInvalid', field: param }] } });
  };

  interface RawAnswer {
    code: number;
    head: string;
    body: string;
    /** The server closed the connection after its answer. */
    closed: boolean;
  }

  /** Sends bytes no client library sends, as the admin over TLS, and reads until the server closes (or 10 s pass). */
  const raw = (text: string): Promise<RawAnswer> =>
    new Promise((resolve, reject) => {
      const socket = tls.connect(
        {
          host: '127.0.0.1',
          port: Number(new URL(env.url).port),
          servername: 'localhost',
          ca: fs.readFileSync(env.pki.caCert),
          cert: fs.readFileSync(env.pki.adminCert),
          key: fs.readFileSync(env.pki.adminKey),
          ALPNProtocols: ['http/1.1'],
        },
        () => socket.write(text),
      );
      let got = '';
      let closed = false;
      const done = (): void => {
        clearTimeout(timer);
        socket.destroy();
        const line = /^HTTP\/1\.[01] (\d{3}) /.exec(got);
        if (!line) {
          reject(new Error(`no status line (got ${JSON.stringify(got.slice(0, 200))}, closed: ${closed})`));
          return;
        }
        const split = got.indexOf('\r\n\r\n');
        resolve({ code: Number(line[1]), head: got.slice(0, split), body: split < 0 ? '' : got.slice(split + 4), closed });
      };
      const timer = setTimeout(done, 10000);
      socket.on('data', (c: Buffer) => (got += c.toString('latin1')));
      socket.on('end', () => {
        closed = true;
        done();
      });
      socket.on('close', () => {
        closed = true;
        done();
      });
      socket.on('error', () => done());
    });

  const expectRawStatus = (answer: RawAnswer, code: number, reason: string, message: RegExp): void => {
    expect(`${answer.code} ${answer.body.slice(0, 300)}`).toMatch(new RegExp(`^${code} `));
    expect(answer.head).toMatch(/\r\ncontent-type: application\/json/i);
    const status = JSON.parse(answer.body) as Record<string, unknown>;
    expect(status).toMatchObject({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason });
    expect(String(status['message'])).toMatch(message);
    expect(answer.head).toMatch(/\r\nconnection: close/i);
    expect(answer.closed).toBe(true);
  };

  beforeAll(async () => {
    env = await startEnvironment();
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'present' }, data: { k: 'v' } };
    expect((await adminRequest(env, 'POST', `${ns}/configmaps`, JSON.stringify(cm))).status).toBe(201);
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  afterEach(async () => {
    expect((await adminRequest(env, 'GET', '/readyz')).status).toBe(200);
  });

  test('a resourceVersion beyond int64 is 400 naming it, on get, list and watch', async () => {
    const why = /invalid resource version: out of range/;
    expectParamRefused(await adminRequest(env, 'GET', `${ns}/configmaps/present?resourceVersion=${huge}`), 'resourceVersion', why);
    expectParamRefused(await adminRequest(env, 'GET', `${ns}/configmaps?resourceVersion=${huge}`), 'resourceVersion', why);
    expectParamRefused(await adminRequest(env, 'GET', `${ns}/configmaps?watch=true&resourceVersion=${huge}`), 'resourceVersion', why);
    expectParamRefused(await adminRequest(env, 'GET', `${ns}/configmaps?resourceVersion=9223372036854775808`), 'resourceVersion', why);
    expectParamRefused(await adminRequest(env, 'GET', `${ns}/configmaps/present?resourceVersion=abc`), 'resourceVersion', /invalid resource version: must be a non-negative integer/);
    // Within int64 but beyond any revision: a version from the future, as the original answers it.
    expectStatus(await adminRequest(env, 'GET', `${ns}/configmaps/present?resourceVersion=9223372036854775807`), 504, 'Timeout', /Too large resource version/);
  });

  test('limit, timeoutSeconds and gracePeriodSeconds are int64: not an integer or beyond its range is 400 naming them', async () => {
    const range = /out of range: must be between -9223372036854775808 and 9223372036854775807/;
    expectParamRefused(await adminRequest(env, 'GET', `${ns}/configmaps?limit=${huge}`), 'limit', range);
    expectParamRefused(await adminRequest(env, 'GET', `${ns}/configmaps?limit=1.5`), 'limit', /must be an integer/);
    expectParamRefused(await adminRequest(env, 'GET', `${ns}/configmaps?timeoutSeconds=abc`), 'timeoutSeconds', /must be an integer/);
    expectParamRefused(await adminRequest(env, 'GET', `${ns}/configmaps?timeoutSeconds=${huge}`), 'timeoutSeconds', range);
    expectParamRefused(await adminRequest(env, 'GET', `${ns}/configmaps?watch=true&timeoutSeconds=${huge}`), 'timeoutSeconds', range);
    expectParamRefused(await adminRequest(env, 'GET', `${ns}/configmaps?watch=true&timeoutSeconds=abc`), 'timeoutSeconds', /must be an integer/);
    expectParamRefused(await adminRequest(env, 'DELETE', `${ns}/configmaps/present?gracePeriodSeconds=${huge}`), 'gracePeriodSeconds', range);
    expectParamRefused(await adminRequest(env, 'DELETE', `${ns}/configmaps/present?gracePeriodSeconds=soon`), 'gracePeriodSeconds', /must be an integer/);
    expect((await adminRequest(env, 'GET', `${ns}/configmaps/present`)).status).toBe(200);
    // The first value of a repeated parameter counts, as in the original.
    expectParamRefused(await adminRequest(env, 'GET', `${ns}/configmaps?limit=abc&limit=1`), 'limit', /"abc": must be an integer/);
    // Within range: the largest int64 is no limit at all; zero or less is none either.
    for (const limit of ['9223372036854775807', '0', '-1', '%2B1']) {
      const list = await adminRequest(env, 'GET', `${ns}/configmaps?limit=${limit}&timeoutSeconds=30`);
      expect(`${list.status} ${list.body.slice(0, 200)}`).toMatch(/^200 /);
      expect(list.json()).toMatchObject({ kind: 'ConfigMapList' });
    }
  });

  test('a list path with a trailing slash is the list', async () => {
    const list = await adminRequest(env, 'GET', `${ns}/configmaps/`);
    expect(list.status).toBe(200);
    expect(list.json()).toMatchObject({ kind: 'ConfigMapList' });
    expect(JSON.stringify(list.json()['items'])).toContain('"present"');
  });

  test('a write larger than the store accepts is 413 naming the limit, and nothing is stored', async () => {
    // Valid (its data is 1 MiB, the most a ConfigMap may hold; annotations under 256 KiB), yet with the
    // base64 of binaryData about 1.6 MiB as stored: more than etcd accepts.
    const binary = Buffer.alloc(1024 * 1024 - 16, 7).toString('base64');
    const tooBig = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'too-big', annotations: { note: 'n'.repeat(200 * 1024) } }, binaryData: { b: binary } };
    const body = JSON.stringify(tooBig);
    expect(body.length).toBeGreaterThan(1572864);
    expect(body.length).toBeLessThan(3 * 1024 * 1024);
    expectStatus(await adminRequest(env, 'POST', `${ns}/configmaps`, body), 413, 'RequestEntityTooLarge', /^Request entity too large: limit is 1572864: .*larger than the store accepts/);
    expectStatus(await adminRequest(env, 'GET', `${ns}/configmaps/too-big`), 404, 'NotFound', /not found/);

    // A 2 MiB object, over etcd's limit and its gRPC server's too.
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'too-big' }, spec: { containers: [{ name: 'c', image: 'x', args: ['y'.repeat(2 * 1024 * 1024)] }] } };
    expectStatus(await adminRequest(env, 'POST', `${ns}/pods`, JSON.stringify(pod)), 413, 'RequestEntityTooLarge', /^Request entity too large: limit is 1572864/);
    expectStatus(await adminRequest(env, 'GET', `${ns}/pods/too-big`), 404, 'NotFound', /not found/);

    // An update that would make a stored object too large leaves it as it was.
    const before = (await adminRequest(env, 'GET', `${ns}/configmaps/present`)).body;
    const grown = { ...tooBig, metadata: { ...tooBig.metadata, name: 'present' } };
    expectStatus(await adminRequest(env, 'PUT', `${ns}/configmaps/present`, JSON.stringify(grown)), 413, 'RequestEntityTooLarge', /limit is 1572864/);
    const patch = JSON.stringify({ metadata: { annotations: { note: 'n'.repeat(200 * 1024) } }, binaryData: { b: binary } });
    expectStatus(await adminRequest(env, 'PATCH', `${ns}/configmaps/present`, patch, { 'content-type': 'application/merge-patch+json' }), 413, 'RequestEntityTooLarge', /limit is 1572864/);
    expect((await adminRequest(env, 'GET', `${ns}/configmaps/present`)).body).toBe(before);

    // A dry run stores nothing, so it is not refused for its size (as in the original).
    expect((await adminRequest(env, 'POST', `${ns}/configmaps?dryRun=All`, body)).status).toBe(201);
    expect((await adminRequest(env, 'GET', `${ns}/configmaps/too-big`)).status).toBe(404);
  });

  test('a ConfigMap of 2 MiB of data is refused, never a 500, and nothing is stored', async () => {
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'two-mib' }, data: { k: 'x'.repeat(2 * 1024 * 1024) } };
    // Its data is over the 1 MiB a ConfigMap may hold: invalid, as the original checks before storing.
    expectStatus(await adminRequest(env, 'POST', `${ns}/configmaps`, JSON.stringify(cm)), 422, 'Invalid', /Too long: must have at most 1048576 bytes/);
    expectStatus(await adminRequest(env, 'GET', `${ns}/configmaps/two-mib`), 404, 'NotFound', /not found/);
  });

  test('two Host headers are 400 and the connection closes', async () => {
    expectRawStatus(await raw(`GET ${ns}/configmaps HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n`), 400, 'BadRequest', /too many Host headers/);
  });

  test('HTTP/1.1 without Host is 400; HTTP/1.0 without Host is served, then the connection closes', async () => {
    expectRawStatus(await raw(`GET ${ns}/configmaps HTTP/1.1\r\n\r\n`), 400, 'BadRequest', /missing required Host header/);
    const old = await raw(`GET ${ns}/configmaps HTTP/1.0\r\n\r\n`);
    expect(old.code).toBe(200);
    expect(JSON.parse(old.body)).toMatchObject({ kind: 'ConfigMapList' });
    expect(old.closed).toBe(true);
  });

  test('10,000 header fields are 431 and the connection closes', async () => {
    const headers = Array.from({ length: 10000 }, (_, i) => `X-H${i}: v\r\n`).join('');
    expectRawStatus(await raw(`GET ${ns}/configmaps HTTP/1.1\r\nHost: x\r\n${headers}\r\n`), 431, 'BadRequest', /more than 2000 header fields/);
  });

  test('CONNECT is 405 and the connection closes', async () => {
    expectRawStatus(await raw('CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n'), 405, 'MethodNotAllowed', /CONNECT/);
    expectRawStatus(await raw(`CONNECT ${ns}/configmaps HTTP/1.1\r\nHost: x\r\n\r\n`), 405, 'MethodNotAllowed', /CONNECT/);
  });

  test('an Expect other than 100-continue is 417 with a Status', async () => {
    expectRawStatus(await raw(`GET ${ns}/configmaps HTTP/1.1\r\nHost: x\r\nExpect: tea\r\n\r\n`), 417, 'BadRequest', /expectation "tea"/);
  });

  test('a well-formed raw request is still served on a connection that stays open', async () => {
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = tls.connect(
        { host: '127.0.0.1', port: Number(new URL(env.url).port), servername: 'localhost', ca: fs.readFileSync(env.pki.caCert), cert: fs.readFileSync(env.pki.adminCert), key: fs.readFileSync(env.pki.adminKey) },
        () => socket.write(`GET ${ns}/configmaps/present HTTP/1.1\r\nHost: x\r\n\r\n`),
      );
      let got = '';
      socket.on('data', (c: Buffer) => {
        got += c.toString();
        if (got.includes('"present"')) {
          socket.destroy();
          resolve(got);
        }
      });
      socket.on('error', reject);
      setTimeout(() => reject(new Error(`no answer: ${got.slice(0, 200)}`)), 10000).unref();
    });
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toMatch(/\r\nConnection: keep-alive/i);
  });
});
