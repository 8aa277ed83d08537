import { execFileSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ensureInternalPki, ensurePki, ensureServingCertificate, INTERNAL_IDENTITIES, issueClientCertificate } from './pki';

/** The certificates the harness and the pki step issue in process, checked by openssl and by Node. */
describe('pki', () => {
  let dir: string;

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-pki-test-'));
  });

  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const cert = (file: string): crypto.X509Certificate => new crypto.X509Certificate(fs.readFileSync(file));
  const opensslVerify = (ca: string, ...certs: string[]): string => execFileSync('openssl', ['verify', '-CAfile', ca, ...certs], { encoding: 'utf8' });
  const text = (file: string): string => execFileSync('openssl', ['x509', '-in', file, '-noout', '-text'], { encoding: 'utf8' });

  test('the client-facing CA, the serving certificate, the admin and any client: subjects, names, uses and keys', async () => {
    const pki = await ensurePki(path.join(dir, 'client'), ['localhost', '127.0.0.1', 'gateway', '::1']);
    expect(opensslVerify(pki.caCert, pki.servingCert, pki.adminCert)).toMatch(/serving\.crt: OK\n.*admin\.crt: OK/);
    const ca = cert(pki.caCert);
    expect(ca.ca).toBe(true);
    expect(ca.subject).toBe('CN=svc-ca');
    expect(text(pki.caCert)).toMatch(/Basic Constraints: critical\s+CA:TRUE[\s\S]*Key Usage: critical\s+Certificate Sign, CRL Sign/);
    const serving = cert(pki.servingCert);
    expect(serving.subject).toBe('CN=svc-gateway');
    expect(serving.subjectAltName).toBe('DNS:localhost, IP Address:127.0.0.1, DNS:gateway, IP Address:0:0:0:0:0:0:0:1');
    expect(serving.checkHost('gateway')).toBe('gateway');
    expect(serving.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(serving.verify(ca.publicKey)).toBe(true);
    expect(serving.ca).toBe(false);
    expect(serving.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(serving.publicKey.asymmetricKeyDetails).toEqual({ namedCurve: 'prime256v1' });
    expect(serving.checkPrivateKey(crypto.createPrivateKey(fs.readFileSync(pki.servingKey)))).toBe(true);
    const admin = cert(pki.adminCert);
    expect(admin.subject).toBe('O=system:masters\nCN=svc-admin');
    expect(admin.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
    expect(admin.subjectAltName).toBeUndefined();
    // Private keys readable by their owner only.
    expect(fs.statSync(pki.adminKey).mode & 0o777).toBe(0o600);
    const sa = crypto.createPrivateKey(fs.readFileSync(pki.serviceAccountKey));
    expect(sa.asymmetricKeyType).toBe('rsa');
    expect(sa.asymmetricKeyDetails?.modulusLength).toBe(2048);
    const bob = await issueClientCertificate(pki, 'bob', 'bob', ['dev', 'ops']);
    expect(cert(bob.cert).subject).toBe('O=dev\nO=ops\nCN=bob');
    expect(opensslVerify(pki.caCert, bob.cert)).toMatch(/OK/);
  });

  test('an existing set is kept: a second call issues nothing', async () => {
    const first = await ensurePki(path.join(dir, 'kept'));
    const before = fs.readFileSync(first.servingCert, 'utf8');
    const second = await ensurePki(path.join(dir, 'kept'));
    expect(fs.readFileSync(second.servingCert, 'utf8')).toBe(before);
    expect(fs.readFileSync(second.caCert, 'utf8')).toBe(fs.readFileSync(first.caCert, 'utf8'));
  });

  test('the internal CA and one certificate per identity, server and client, naming the identity', async () => {
    const internal = await ensureInternalPki(path.join(dir, 'internal'), { storage: ['storage.svc-system.svc'] });
    expect(cert(internal.caCert).subject).toBe('CN=svc-internal-ca');
    for (const identity of INTERNAL_IDENTITIES) {
      const own = cert(internal.identities[identity].cert);
      expect(own.subject).toBe(`O=svc:internal\nCN=${identity}`);
      expect(own.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
      expect(own.checkHost(identity)).toBe(identity);
      expect(own.checkIP('127.0.0.1')).toBe('127.0.0.1');
    }
    expect(cert(internal.identities.storage.cert).checkHost('storage.svc-system.svc')).toBe('storage.svc-system.svc');
    expect(opensslVerify(internal.caCert, ...INTERNAL_IDENTITIES.map((i) => internal.identities[i].cert))).not.toMatch(/error/);
    // The client-facing CA does not vouch for the internal identities.
    const clientCa = path.join(dir, 'client', 'ca.crt');
    expect(() => execFileSync('openssl', ['verify', '-CAfile', clientCa, internal.identities.gateway.cert], { stdio: 'pipe' })).toThrow();
  });

  test("a webhook's CA and serving certificate", async () => {
    const files = await ensureServingCertificate(path.join(dir, 'webhook'), ['127.0.0.1', 'localhost']);
    expect(cert(files.caCert).subject).toBe('CN=svc-webhook-serving-ca');
    expect(cert(files.cert).subject).toBe('CN=127.0.0.1');
    expect(cert(files.cert).checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(opensslVerify(files.caCert, files.cert)).toMatch(/OK/);
  });
});
