import 'reflect-metadata';
import type { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { clientCertificateAuthenticator, authenticateCertificate, MAX_CERTIFICATE_BYTES, parseCaBundle } from './x509';

/** Client certificate verification, with certificates made here for each case. */
const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY = 24 * 3600 * 1000;
const NOW = new Date('2030-06-01T00:00:00Z');

interface Issued {
  cert: x509.X509Certificate;
  keys: webcrypto.CryptoKeyPair;
  der: Uint8Array;
}

interface IssueOptions {
  ca?: boolean;
  /** Leave out basicConstraints altogether. */
  noBasicConstraints?: boolean;
  pathLength?: number;
  eku?: string[] | null;
  notBefore?: Date;
  notAfter?: Date;
}

let serial = 1;

async function issue(subject: string, issuer: Issued | undefined, opts: IssueOptions = {}): Promise<Issued> {
  const keys = await crypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
  const extensions: x509.Extension[] = [await x509.SubjectKeyIdentifierExtension.create(keys.publicKey)];
  if (issuer) extensions.push(await x509.AuthorityKeyIdentifierExtension.create(issuer.keys.publicKey));
  if (!opts.noBasicConstraints) extensions.push(new x509.BasicConstraintsExtension(opts.ca ?? false, opts.pathLength, true));
  if (opts.ca) extensions.push(new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true));
  else extensions.push(new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true));
  const eku = opts.eku === undefined ? (opts.ca ? null : [x509.ExtendedKeyUsage.clientAuth]) : opts.eku;
  if (eku) extensions.push(new x509.ExtendedKeyUsageExtension(eku));
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: (serial++).toString(16).padStart(2, '0'),
    subject,
    issuer: issuer ? issuer.cert.subject : subject,
    notBefore: opts.notBefore ?? new Date(NOW.getTime() - DAY),
    notAfter: opts.notAfter ?? new Date(NOW.getTime() + 365 * DAY),
    publicKey: keys.publicKey,
    signingKey: (issuer ?? { keys }).keys.privateKey,
    signingAlgorithm: ALG,
    extensions,
  });
  return { cert, keys, der: new Uint8Array(cert.rawData) };
}

describe('client certificate verification', () => {
  let root: Issued;
  let roots: x509.X509Certificate[];
  let otherRoot: Issued;
  let intermediate: Issued;

  beforeAll(async () => {
    root = await issue('CN=svc-ca', undefined, { ca: true });
    roots = parseCaBundle(root.cert.toString('pem'));
    otherRoot = await issue('CN=svc-ca', undefined, { ca: true }); // same name, other key
    intermediate = await issue('CN=svc-intermediate', root, { ca: true, pathLength: 0 });
  });

  const verify = (chain: Uint8Array[]) => authenticateCertificate(chain, roots, NOW);

  test('a leaf signed by the client CA names the user (CN) and groups (O)', async () => {
    const leaf = await issue('O=dev, O=ops, CN=alice', root);
    expect(await verify([leaf.der])).toEqual({ ok: true, user: { username: 'alice', uid: '', groups: ['dev', 'ops'], extra: {} }, notAfter: leaf.cert.notAfter });
  });

  test('the root may be sent along with the leaf', async () => {
    const leaf = await issue('CN=alice', root);
    expect(await verify([leaf.der, root.der])).toMatchObject({ ok: true });
  });

  test('a leaf under a presented intermediate of the client CA verifies', async () => {
    const leaf = await issue('CN=bob', intermediate);
    expect(await verify([leaf.der, intermediate.der])).toMatchObject({ ok: true, user: { username: 'bob' } });
  });

  test.each<[string, () => Promise<Uint8Array[]>, RegExp]>([
    ['signed by an unknown CA', async () => [(await issue('CN=eve', otherRoot)).der], /unknown authority/],
    ['signed by an unknown CA that is presented too', async () => [(await issue('CN=eve', otherRoot)).der, otherRoot.der], /unknown authority/],
    ['under an intermediate that is not presented', async () => [(await issue('CN=bob', intermediate)).der], /unknown authority/],
    [
      'under an intermediate of an unknown CA',
      async () => {
        const rogue = await issue('CN=svc-intermediate', otherRoot, { ca: true });
        return [(await issue('CN=bob', rogue)).der, rogue.der];
      },
      /unknown authority/,
    ],
    ['expired', async () => [(await issue('CN=alice', root, { notBefore: new Date(NOW.getTime() - 10 * DAY), notAfter: new Date(NOW.getTime() - DAY) })).der], /has expired/],
    ['not yet valid', async () => [(await issue('CN=alice', root, { notBefore: new Date(NOW.getTime() + DAY) })).der], /not yet valid/],
    [
      'under an expired intermediate',
      async () => {
        const old = await issue('CN=old-intermediate', root, { ca: true, notBefore: new Date(NOW.getTime() - 10 * DAY), notAfter: new Date(NOW.getTime() - DAY) });
        return [(await issue('CN=bob', old)).der, old.der];
      },
      /issuer certificate .* has expired/,
    ],
    [
      'under an issuer with CA:FALSE',
      async () => {
        const notCa = await issue('CN=not-a-ca', root, { ca: false, eku: null });
        return [(await issue('CN=bob', notCa)).der, notCa.der];
      },
      /is not a CA/,
    ],
    [
      'under an issuer without basicConstraints',
      async () => {
        const notCa = await issue('CN=no-constraints', root, { noBasicConstraints: true, eku: null });
        return [(await issue('CN=bob', notCa)).der, notCa.der];
      },
      /is not a CA/,
    ],
    [
      'below an intermediate whose path length is exceeded',
      async () => {
        const second = await issue('CN=second-intermediate', intermediate, { ca: true });
        return [(await issue('CN=bob', second)).der, second.der, intermediate.der];
      },
      /path length/,
    ],
    ['without the clientAuth extended key usage', async () => [(await issue('CN=server', root, { eku: [x509.ExtendedKeyUsage.serverAuth] })).der], /incompatible key usage/],
    ['without any extended key usage', async () => [(await issue('CN=bare', root, { eku: null })).der], /incompatible key usage/],
    ['without a common name', async () => [(await issue('O=dev', root)).der], /no common name/],
    ['garbage bytes', async () => [new Uint8Array(Buffer.from('not a certificate at all'))], /cannot be parsed/],
    ['a good leaf followed by garbage', async () => [(await issue('CN=alice', root)).der, new Uint8Array([0x30, 0x03, 0x02, 0x01])], /cannot be parsed/],
    ['a certificate over the size limit', async () => [new Uint8Array(MAX_CERTIFICATE_BYTES + 1).fill(0x30)], /larger than/],
  ])('a certificate %s is refused', async (_what, chain, error) => {
    const result = await verify(await chain());
    expect(result.ok).toBe(false);
    expect(result.ok ? '' : result.error).toMatch(error);
  });

  test('a chain of 50 certificates is refused before any of it is parsed', async () => {
    const chain: Issued[] = [];
    let issuer = root;
    for (let i = 0; i < 49; i++) {
      issuer = await issue(`CN=link-${i}`, issuer, { ca: true });
      chain.unshift(issuer);
    }
    const leaf = await issue('CN=deep', issuer);
    const result = await verify([leaf.der, ...chain.map((c) => c.der)]);
    expect(result).toEqual({ ok: false, error: expect.stringMatching(/chain of 50 certificates is longer than 10/) });
  });

  test('no client CA configured: a presented certificate is refused, not ignored', async () => {
    const leaf = await issue('CN=alice', root);
    expect(await authenticateCertificate([leaf.der], [], NOW)).toMatchObject({ ok: false });
  });

  test('a verified chain is remembered for a minute, and not past its own expiry', async () => {
    const leaf = await issue('CN=carol', root);
    const trusted = [...roots];
    let now = NOW;
    const method = clientCertificateAuthenticator(trusted, () => now);
    const ask = () => method.authenticateRequest({ clientCertificateChain: [leaf.der], headers: {} }, []);
    expect((await ask()).status).toBe('authenticated');
    // Remembered: even with the CA gone, within the minute the answer stands.
    trusted.length = 0;
    now = new Date(NOW.getTime() + 59_000);
    expect((await ask()).status).toBe('authenticated');
    now = new Date(NOW.getTime() + 61_000);
    expect((await ask()).status).toBe('rejected');
  });
});
