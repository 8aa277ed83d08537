import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as os from 'node:os';
import * as path from 'node:path';
import { startEnvironment, type Environment } from '@svc/testenv';
import { adminRequest, type HttpResponse } from './http';

/**
 * Nothing secret reaches a log line: neither a Secret's values (as sent, or
 * base64 as stored) nor a bearer token, valid or not, whatever the request
 * does with them (create, read, patch, watch, a body that fails to parse,
 * a rejected credential). Every service logs at debug level here, which
 * logs every request.
 */
describe('secrets stay out of the logs', () => {
  let env: Environment;
  let tokenFile: string;
  const canary = `canary-${randomBytes(12).toString('hex')}`;
  const canaryB64 = Buffer.from(canary).toString('base64');
  const token = `token-${randomBytes(16).toString('hex')}`;
  const badToken = `badtoken-${randomBytes(16).toString('hex')}`;
  const base = '/api/v1/namespaces/default/secrets';

  function tokenRequest(bearer: string, method: string, urlPath: string, body?: string): Promise<HttpResponse> {
    return new Promise((resolve, reject) => {
      const req = https.request(
        `${env.url}${urlPath}`,
        { method, ca: fs.readFileSync(env.pki.caCert), headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' }, timeout: 20000, agent: false },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const raw = Buffer.concat(chunks);
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: raw.toString('utf8'), raw, json: () => JSON.parse(raw.toString('utf8')) as Record<string, unknown> });
          });
        },
      );
      req.on('error', reject);
      req.on('timeout', () => req.destroy(new Error('request timed out')));
      if (body !== undefined) req.write(body);
      req.end();
    });
  }

  beforeAll(async () => {
    tokenFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-tokens-')), 'tokens.csv');
    fs.writeFileSync(tokenFile, `${token},token-admin,uid-1,"system:masters"\n`);
    const previous = process.env['SVC_LOG_LEVEL'];
    process.env['SVC_LOG_LEVEL'] = 'debug';
    try {
      env = await startEnvironment({ tokenAuthFile: tokenFile });
    } finally {
      if (previous === undefined) delete process.env['SVC_LOG_LEVEL'];
      else process.env['SVC_LOG_LEVEL'] = previous;
    }
  });

  afterAll(async () => {
    await env?.stop(true);
    fs.rmSync(path.dirname(tokenFile), { recursive: true, force: true });
  });

  it('logs neither the values of a Secret nor a bearer token', async () => {
    const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db' }, data: { password: canaryB64 }, stringData: { again: canary } };
    expect((await adminRequest(env, 'POST', base, JSON.stringify(secret))).status).toBe(201);
    const read = await tokenRequest(token, 'GET', `${base}/db`);
    expect(read.status).toBe(200);
    expect(read.body).toContain(canaryB64);
    expect((await tokenRequest(token, 'GET', base)).status).toBe(200);
    const patch = await tokenRequest(token, 'PATCH', `${base}/db`, JSON.stringify({ stringData: { more: canary } }));
    expect(patch.status).toBe(415); // a JSON content type is not a patch type
    const merge = await adminRequest(env, 'PATCH', `${base}/db`, JSON.stringify({ stringData: { more: canary } }), { 'content-type': 'application/merge-patch+json' });
    expect(merge.status).toBe(200);
    const watch = await tokenRequest(token, 'GET', `${base}?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3Ddb`);
    expect(watch.status).toBe(200);
    expect(watch.body).toContain(canaryB64);
    // Bodies that fail: unparseable, of the wrong kind, with an invalid key.
    expect((await adminRequest(env, 'POST', base, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"},"stringData":{"k":"${canary}"`)).status).toBe(400);
    expect((await adminRequest(env, 'POST', base, JSON.stringify({ ...secret, kind: 'ConfigMap' }))).status).toBe(400);
    expect((await adminRequest(env, 'POST', base, JSON.stringify({ ...secret, metadata: { name: 'y' }, data: { 'bad key!': canaryB64 } }))).status).toBe(422);
    // A token no authenticator accepts, and one in a malformed header.
    expect((await tokenRequest(badToken, 'GET', `${base}/db`)).status).toBe(401);
    expect((await tokenRequest(`${badToken} ${canary}`, 'GET', `${base}/db`)).status).toBe(401);

    // Logs are written by other processes: give them a moment to flush, then read every one.
    await new Promise((r) => setTimeout(r, 500));
    const logDir = path.join(env.dir, 'logs');
    const logs = fs.readdirSync(logDir).filter((f) => f.endsWith('.log'));
    expect(logs).toEqual(expect.arrayContaining(['gateway.log', 'authn.log', 'authz.log', 'admission.log', 'storage.log', 'watch-fanout-0.log']));
    const gatewayLog = fs.readFileSync(path.join(logDir, 'gateway.log'), 'utf8');
    expect(gatewayLog).toContain('"path":"/api/v1/namespaces/default/secrets/db"'); // debug request lines were written
    for (const file of logs) {
      const text = fs.readFileSync(path.join(logDir, file), 'utf8');
      for (const needle of [canary, canaryB64, token, badToken]) {
        if (text.includes(needle)) throw new Error(`${file} contains a secret value: ${text.split('\n').find((l) => l.includes(needle))}`);
      }
    }
  });
});
