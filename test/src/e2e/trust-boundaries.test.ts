import 'reflect-metadata';
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as os from 'node:os';
import * as path from 'node:path';
import type { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { issueClientCertificate, kubeconfig, startEnvironment, type Environment } from '@svc/testenv';
import { run } from './helpers';
import { adminRequest } from './http';

/**
 * The trust boundaries at the HTTP front, through the whole system: a path
 * is decided on as it was parsed, once (no `..` detour past the public
 * health paths), a credential that does not verify is 401 and never
 * anonymous, impersonation is allowed only to whoever may impersonate and
 * the request is then authorized as the impersonated identity, and headers
 * that merely name a user change nothing.
 */

interface RawResponse {
  status: number;
  body: string;
}

interface Credentials {
  cert?: string | Buffer;
  key?: string | Buffer;
  headers?: Record<string, string>;
}

/** GET with the path exactly as given: Node's client does not normalise it. */
function rawGet(env: Environment, rawPath: string, creds: Credentials = {}): Promise<RawResponse> {
  const url = new URL(env.url);
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: url.hostname,
        port: url.port,
        path: rawPath,
        method: 'GET',
        ca: fs.readFileSync(env.pki.caCert),
        // The serving certificate names 127.0.0.1, whatever Host header a test sends.
        servername: '',
        checkServerIdentity: () => undefined,
        agent: false,
        timeout: 20000,
        ...(creds.cert !== undefined ? { cert: creds.cert, key: creds.key } : {}),
        headers: creds.headers ?? {},
      },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('request timed out')));
    req.end();
  });
}

function expectStatus(res: RawResponse, code: number, reason: string, message?: RegExp | string): void {
  expect({ status: res.status, body: res.body }).toMatchObject({ status: code });
  const status = JSON.parse(res.body) as Record<string, unknown>;
  expect(status).toMatchObject({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason });
  if (message !== undefined) expect(String(status['message'])).toMatch(message);
}

// --- certificates the environment's CA (or another one) signs, made here ---

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY = 24 * 3600 * 1000;

interface Signer {
  name: string;
  privateKey: webcrypto.CryptoKey;
}

interface Made {
  pem: string;
  keyPem: string;
  signer: Signer;
}

/** Certificates as one PEM bundle, leaf first. */
function pemBundle(...certs: Made[]): string {
  return certs.map((c) => `${c.pem.trim()}\n`).join('');
}

function pemBody(pem: string): Buffer {
  return Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
}

async function caOfEnvironment(env: Environment): Promise<Signer> {
  const cert = new x509.X509Certificate(fs.readFileSync(env.pki.caCert, 'utf8'));
  const privateKey = await crypto.subtle.importKey('pkcs8', pemBody(fs.readFileSync(env.pki.caKey, 'utf8')), ALG, false, ['sign']);
  return { name: cert.subject, privateKey };
}

interface MakeOptions {
  ca?: boolean;
  eku?: string[];
  notBefore?: Date;
  notAfter?: Date;
  /** Bytes of padding in an extension, to make the certificate large. */
  padding?: number;
}

/** A certificate for `subject` signed by `issuer` (self-signed when undefined). */
async function make(subject: string, issuer: Signer | undefined, opts: MakeOptions = {}): Promise<Made> {
  const keys = await crypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(opts.ca ?? false, undefined, true),
    new x509.KeyUsagesExtension(opts.ca ? x509.KeyUsageFlags.keyCertSign : x509.KeyUsageFlags.digitalSignature, true),
  ];
  const eku = opts.eku ?? (opts.ca ? undefined : [x509.ExtendedKeyUsage.clientAuth]);
  if (eku) extensions.push(new x509.ExtendedKeyUsageExtension(eku));
  if (opts.padding) extensions.push(new x509.Extension('1.3.6.1.4.1.55555.1', false, new Uint8Array([0x04, 0x82, opts.padding >> 8, opts.padding & 0xff, ...new Uint8Array(opts.padding)])));
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: Date.now().toString(16) + Math.floor(Math.random() * 1e6).toString(16),
    subject,
    issuer: issuer?.name ?? subject,
    notBefore: opts.notBefore ?? new Date(Date.now() - DAY),
    notAfter: opts.notAfter ?? new Date(Date.now() + 30 * DAY),
    publicKey: keys.publicKey,
    signingKey: issuer?.privateKey ?? keys.privateKey,
    signingAlgorithm: ALG,
    extensions,
  });
  const pkcs8 = Buffer.from(await crypto.subtle.exportKey('pkcs8', keys.privateKey));
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${pkcs8.toString('base64').replace(/(.{64})/g, '$1\n')}\n-----END PRIVATE KEY-----\n`;
  return { pem: cert.toString('pem'), keyPem, signer: { name: subject, privateKey: keys.privateKey } };
}

describe('trust boundaries (AlwaysDeny, anonymous on by default)', () => {
  let env: Environment;
  let tmp: string;
  let bob: { cert: Buffer; key: Buffer };
  let admin: { cert: Buffer; key: Buffer };
  const SECRET_VALUE = 'the-launch-code-4711';
  const SECRET_B64 = Buffer.from(SECRET_VALUE).toString('base64');
  const secrets = '/api/v1/namespaces/tb/secrets';

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-trust-'));
    const tokenFile = path.join(tmp, 'tokens.csv');
    fs.writeFileSync(tokenFile, 'good-token-0123456789,carol,carol-uid,dev\n');
    env = await startEnvironment({ authorizationMode: 'AlwaysDeny', tokenAuthFile: tokenFile });
    admin = { cert: fs.readFileSync(env.pki.adminCert), key: fs.readFileSync(env.pki.adminKey) };
    const issued = await issueClientCertificate(env.pki, 'trust-bob', 'bob', ['dev']);
    bob = { cert: fs.readFileSync(issued.cert), key: fs.readFileSync(issued.key) };
    const ns = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'tb' } };
    expect((await adminRequest(env, 'POST', '/api/v1/namespaces', JSON.stringify(ns))).status).toBe(201);
    const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'launch' }, data: { code: SECRET_B64 } };
    expect((await adminRequest(env, 'POST', secrets, JSON.stringify(secret))).status).toBe(201);
  });

  afterAll(async () => {
    await env?.stop(true);
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  const revealed = (res: RawResponse): boolean => res.body.includes(SECRET_B64) || res.body.includes(SECRET_VALUE);

  test('the secret is readable by the admin, by its plain path and with ordinary percent-encoding', async () => {
    for (const p of [secrets, `${secrets}/`, `${secrets}/launch`, '/api/v1/namespaces/t%62/secrets/l%61unch', '/api/v1/namespaces/tb/secrets/%6C%61%75%6E%63%68']) {
      const res = await rawGet(env, p, admin);
      expect({ p, status: res.status }).toEqual({ p, status: 200 });
      expect(revealed(res)).toBe(true);
    }
  });

  test('the public health paths answer without credentials', async () => {
    for (const p of ['/healthz', '/livez', '/readyz', '/readyz/', '/readyz/etcd', '/livez/ping']) {
      expect({ p, status: (await rawGet(env, p)).status }).toEqual({ p, status: 200 });
    }
  });

  // Every way of writing a path that could mean something else than it says.
  const DETOURS: Array<[string, number]> = [];
  for (const pub of ['healthz', 'livez', 'readyz']) {
    DETOURS.push(
      [`/${pub}/../api/v1/namespaces/tb/secrets`, 400],
      [`/${pub}/%2e%2e/api/v1/namespaces/tb/secrets`, 400],
      [`/${pub}/%2E%2E/api/v1/namespaces/tb/secrets`, 400],
      [`/${pub}/.%2e/api/v1/namespaces/tb/secrets`, 400],
      [`/${pub}/%2e./api/v1/namespaces/tb/secrets`, 400],
      [`/${pub}/./../api/v1/namespaces/tb/secrets`, 400],
      [`/${pub}/etcd/../../api/v1/namespaces/tb/secrets`, 400],
      [`/${pub}%2f..%2fapi/v1/namespaces/tb/secrets`, 400],
      [`/${pub}%2F%2E%2E%2Fapi%2Fv1%2Fnamespaces%2Ftb%2Fsecrets`, 400],
      [`/${pub}/%252e%252e/api/v1/namespaces/tb/secrets`, 400],
      [`/${pub}/%5c../api/v1/namespaces/tb/secrets`, 400],
      [`/${pub}\\..\\api/v1/namespaces/tb/secrets`, 400],
      [`/${pub}//../api/v1/namespaces/tb/secrets`, 404],
      [`/${pub}/..`, 400],
      [`/${pub}/%00`, 400],
    );
  }
  DETOURS.push(
    [`${secrets}/../secrets`, 400],
    [`${secrets}/./launch`, 400],
    [`${secrets}/launch/..`, 400],
    [`${secrets}/launch/%2e`, 400],
    ['/api/v1/namespaces/tb/configmaps/../secrets', 400],
    ['/api/v1/namespaces/x/../tb/secrets', 400],
    [`/${secrets}`, 404],
    ['//api/v1/namespaces/tb/secrets', 404],
    ['/api//v1/namespaces/tb/secrets', 404],
    [`${secrets}//launch`, 404],
    [`${secrets}%2flaunch`, 400],
    [`${secrets}%2Flaunch`, 400],
    [`${secrets}/launch%00`, 400],
    [`${secrets}/%zz`, 400],
    [`${secrets}/%C3`, 400],
    [`${secrets}/launch%5c`, 400],
    [`https://127.0.0.1${secrets}`, 400],
  );

  const IDENTITIES: Array<[string, () => Credentials]> = [
    ['no credentials', () => ({})],
    ['a non-admin certificate', () => bob],
    ['the admin certificate', () => admin],
  ];

  test.each(IDENTITIES)('with %s, no detour reaches a handler and each gets its Status', async (_who, creds) => {
    for (const [p, code] of DETOURS) {
      const res = await rawGet(env, p, creds());
      expect({ p, status: res.status, revealed: revealed(res) }).toEqual({ p, status: code, revealed: false });
      expectStatus(res, code, code === 400 ? 'BadRequest' : 'NotFound');
    }
  });

  test('the plain path is still decided on normally: anonymous and bob are 403, never shown the secret', async () => {
    const anonymous = await rawGet(env, secrets);
    expectStatus(anonymous, 403, 'Forbidden', /User "system:anonymous" cannot list resource "secrets"/);
    const asBob = await rawGet(env, secrets, bob);
    expectStatus(asBob, 403, 'Forbidden', /User "bob" cannot list resource "secrets"/);
    expect(revealed(anonymous) || revealed(asBob)).toBe(false);
  });

  test('headers naming a user or groups do not change who the request is', async () => {
    const proxyHeaders = { 'X-Remote-User': 'svc-admin', 'X-Remote-Group': 'system:masters', 'X-Remote-Extra-Scopes': 'all' };
    const anonymous = await rawGet(env, secrets, { headers: proxyHeaders });
    expectStatus(anonymous, 403, 'Forbidden', /User "system:anonymous"/);
    const asBob = await rawGet(env, secrets, { ...bob, headers: proxyHeaders });
    expectStatus(asBob, 403, 'Forbidden', /User "bob"/);
    expect(revealed(anonymous) || revealed(asBob)).toBe(false);
  });

  test('a Host header naming another server changes no decision', async () => {
    const host = { Host: 'api.other-cluster.example:6443' };
    expectStatus(await rawGet(env, secrets, { headers: host }), 403, 'Forbidden', /User "system:anonymous"/);
    expectStatus(await rawGet(env, `/healthz/../api/v1/namespaces/tb/secrets`, { headers: host }), 400, 'BadRequest');
    const asAdmin = await rawGet(env, `${secrets}/launch`, { ...admin, headers: host });
    expect(asAdmin.status).toBe(200);
    const asBadToken = await rawGet(env, secrets, { headers: { ...host, Authorization: 'Bearer nope' } });
    expectStatus(asBadToken, 401, 'Unauthorized', /^Unauthorized$/);
  });

  test('bearer tokens: an unknown one is 401, a known one is its user', async () => {
    for (const value of ['Bearer nope', 'Bearer ', 'Bearer good-token-0123456789x', 'bearer GOOD-TOKEN-0123456789']) {
      const res = await rawGet(env, secrets, { headers: { Authorization: value } });
      if (value === 'Bearer ') expectStatus(res, 403, 'Forbidden', /system:anonymous/); // no token at all: anonymous
      else expectStatus(res, 401, 'Unauthorized', /^Unauthorized$/);
    }
    expectStatus(await rawGet(env, secrets, { headers: { Authorization: 'Bearer good-token-0123456789' } }), 403, 'Forbidden', /User "carol"/);
  });

  describe('client certificates that do not verify are 401, never anonymous', () => {
    const cases: Array<[string, (ca: Signer) => Promise<{ cert: string; key: string }>]> = [
      [
        'signed by another CA with the same name',
        async (ca) => {
          const other = await make(ca.name, undefined, { ca: true });
          const leaf = await make('CN=svc-admin, O=system:masters', other.signer);
          return { cert: leaf.pem, key: leaf.keyPem };
        },
      ],
      [
        'self-signed',
        async () => {
          const leaf = await make('CN=svc-admin, O=system:masters', undefined);
          return { cert: leaf.pem, key: leaf.keyPem };
        },
      ],
      [
        'expired',
        async (ca) => {
          const leaf = await make('CN=svc-admin, O=system:masters', ca, { notBefore: new Date(Date.now() - 10 * DAY), notAfter: new Date(Date.now() - DAY) });
          return { cert: leaf.pem, key: leaf.keyPem };
        },
      ],
      [
        'not yet valid',
        async (ca) => {
          const leaf = await make('CN=svc-admin, O=system:masters', ca, { notBefore: new Date(Date.now() + DAY) });
          return { cert: leaf.pem, key: leaf.keyPem };
        },
      ],
      [
        'without the clientAuth extended key usage',
        async (ca) => {
          const leaf = await make('CN=svc-admin, O=system:masters', ca, { eku: [x509.ExtendedKeyUsage.serverAuth] });
          return { cert: leaf.pem, key: leaf.keyPem };
        },
      ],
      [
        'issued by a certificate of the CA that is not a CA',
        async (ca) => {
          const notCa = await make('CN=not-a-ca', ca, { ca: false });
          const leaf = await make('CN=svc-admin, O=system:masters', notCa.signer);
          return { cert: pemBundle(leaf, notCa), key: leaf.keyPem };
        },
      ],
      [
        'under an intermediate of an unknown CA',
        async () => {
          const other = await make('CN=elsewhere-ca', undefined, { ca: true });
          const intermediate = await make('CN=elsewhere-intermediate', other.signer, { ca: true });
          const leaf = await make('CN=svc-admin, O=system:masters', intermediate.signer);
          return { cert: pemBundle(leaf, intermediate), key: leaf.keyPem };
        },
      ],
      [
        'oversized (a 20 KiB extension)',
        async (ca) => {
          const leaf = await make('CN=svc-admin, O=system:masters', ca, { padding: 20 * 1024 });
          return { cert: leaf.pem, key: leaf.keyPem };
        },
      ],
      [
        'at the end of a chain of 50 certificates from the CA',
        async (ca) => {
          let issuer = ca;
          const chain: Made[] = [];
          for (let i = 0; i < 49; i++) {
            const link = await make(`CN=link-${i}`, issuer, { ca: true });
            chain.unshift(link);
            issuer = link.signer;
          }
          const leaf = await make('CN=svc-admin, O=system:masters', issuer);
          return { cert: pemBundle(leaf, ...chain), key: leaf.keyPem };
        },
      ],
    ];

    test.each(cases)('%s', async (_what, build) => {
      const creds = await build(await caOfEnvironment(env));
      for (const p of [secrets, `${secrets}/launch`, '/api/v1/namespaces', '/version']) {
        const res = await rawGet(env, p, creds);
        expectStatus(res, 401, 'Unauthorized', /^Unauthorized$/);
        expect(revealed(res)).toBe(false);
      }
      // Not a fall through to the bearer token either.
      expectStatus(await rawGet(env, secrets, { ...creds, headers: { Authorization: 'Bearer good-token-0123456789' } }), 401, 'Unauthorized');
    });

    test('an intermediate chain from the CA itself verifies (the checks above are not blanket refusals)', async () => {
      const ca = await caOfEnvironment(env);
      const intermediate = await make('CN=svc-intermediate', ca, { ca: true });
      const leaf = await make('CN=svc-admin, O=system:masters', intermediate.signer);
      const res = await rawGet(env, `${secrets}/launch`, { cert: pemBundle(leaf, intermediate), key: leaf.keyPem });
      expect(res.status).toBe(200);
    });
  });

  test('impersonation: allowed for whoever may impersonate, then authorized as the impersonated identity', async () => {
    const kubeconfigPath = path.join(tmp, 'admin.kubeconfig');
    fs.writeFileSync(kubeconfigPath, kubeconfig(env.url, env.pki.caCert, env.pki.adminCert, env.pki.adminKey));
    const kubectl = (args: string[]) => run('kubectl', ['--kubeconfig', kubeconfigPath, '--cache-dir', path.join(tmp, 'kube-cache'), ...args]);
    expect((await kubectl(['get', 'secrets', '-n', 'tb', '-o', 'json'])).stdout).toContain(SECRET_B64);
    // The admin (system:masters) may impersonate; the request then runs as "someone", whom AlwaysDeny refuses.
    const asSomeone = await kubectl(['get', 'secrets', '-n', 'tb', '--as=someone', '-o', 'json']);
    expect(asSomeone.code).not.toBe(0);
    expect(asSomeone.stdout).not.toContain(SECRET_B64);
    expect(asSomeone.stderr).toContain('User "someone" cannot list resource "secrets" in API group "" in the namespace "tb"');
    // With a group that may do everything, the impersonated identity reads it: --as-group is honoured.
    const asMaster = await kubectl(['get', 'secrets', '-n', 'tb', '--as=someone', '--as-group=system:masters', '-o', 'json']);
    expect(asMaster.stderr).toBe('');
    expect(asMaster.stdout).toContain(SECRET_B64);

    // Those who may not impersonate are refused, naming what they asked for; nobody gets anything from it.
    for (const creds of [{}, bob]) {
      for (const [header, value, resource] of [
        ['Impersonate-User', 'system:admin', 'users'],
        ['Impersonate-User', 'system:serviceaccount:tb:default', 'serviceaccounts'],
      ] as const) {
        const res = await rawGet(env, secrets, { ...creds, headers: { [header]: value } });
        expectStatus(res, 403, 'Forbidden', new RegExp(`cannot impersonate resource "${resource}"`));
        expect(revealed(res)).toBe(false);
      }
      const group = await rawGet(env, secrets, { ...creds, headers: { 'Impersonate-User': 'x', 'Impersonate-Group': 'system:masters' } });
      expect(group.status).toBe(403);
      expect(revealed(group)).toBe(false);
    }
    // Groups, a uid or extra fields without a user are not a request to impersonate anybody: 400.
    for (const header of ['Impersonate-Group', 'Impersonate-Uid', 'Impersonate-Extra-Scopes']) {
      expectStatus(await rawGet(env, secrets, { ...admin, headers: { [header]: 'x' } }), 400, 'BadRequest', /requires Impersonate-User/);
    }
    // The public paths have no requester whose impersonation could be allowed.
    expectStatus(await rawGet(env, '/healthz', { headers: { 'Impersonate-User': 'someone' } }), 403, 'Forbidden', /Impersonate-User/);
  });
});

describe('anonymous requests under AlwaysAllow', () => {
  let env: Environment;

  beforeAll(async () => {
    env = await startEnvironment({ authorizationMode: 'AlwaysAllow' });
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test('are off by default: a request without credentials is 401, not allowed everything', async () => {
    expectStatus(await rawGet(env, '/api/v1/namespaces'), 401, 'Unauthorized', /^Unauthorized$/);
    expectStatus(await rawGet(env, '/api/v1/namespaces/default/secrets'), 401, 'Unauthorized');
    expectStatus(await rawGet(env, '/healthz/../api/v1/namespaces/default/secrets'), 400, 'BadRequest');
  });

  test('credentials still work and the health paths stay public', async () => {
    const res = await rawGet(env, '/api/v1/namespaces', { cert: fs.readFileSync(env.pki.adminCert), key: fs.readFileSync(env.pki.adminKey) });
    expect(res.status).toBe(200);
    expect((await rawGet(env, '/readyz')).status).toBe(200);
    expectStatus(await rawGet(env, '/api/v1/namespaces', { headers: { Authorization: 'Bearer nope' } }), 401, 'Unauthorized');
  });
});
