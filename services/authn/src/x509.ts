// @peculiar/x509 resolves its ASN.1 codecs through tsyringe, which needs a
// reflect-metadata polyfill loaded before it.
import 'reflect-metadata';
import { createHash } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import type { UserInfo } from '@svc/apimachinery';
import { NOT_MINE, rejected, type RequestAuthenticator } from './methods';

/**
 * Client certificate authentication: the subject's common name is the user,
 * each organization a group. The gateway forwards whatever chain the client
 * presented (its TLS layer does not require a verified one), so this is
 * where a certificate is verified, with a maintained X.509 library rather
 * than a walk of our own: chain building and signatures by @peculiar/x509,
 * on top of that the checks the original server's verifier makes (validity
 * of every certificate, CA basic constraints and path length, key usage,
 * client-auth extended key usage). Anything that does not verify is an
 * error, which authn answers with 401; it never falls through to another
 * method or to anonymous.
 */

// WebCrypto for @peculiar/x509: Node's own.
x509.cryptoProvider.set(globalThis.crypto);

/** More certificates than any real client chain has; longer chains are refused before any work. */
export const MAX_CHAIN_LENGTH = 10;
/** A certificate larger than this is refused unparsed. */
export const MAX_CERTIFICATE_BYTES = 16 * 1024;

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const ANY_EXTENDED_KEY_USAGE = '2.5.29.37.0';

export type CertificateResult = { ok: true; user: UserInfo; notAfter: Date } | { ok: false; error: string };

/** The trust anchors: every certificate of a PEM bundle. */
export function parseCaBundle(pem: string): x509.X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((b) => new x509.X509Certificate(b));
}

function parse(der: Uint8Array): x509.X509Certificate | undefined {
  try {
    return new x509.X509Certificate(new Uint8Array(der));
  } catch {
    return undefined;
  }
}

function sameCertificate(a: x509.X509Certificate, b: x509.X509Certificate): boolean {
  return Buffer.from(a.rawData).equals(Buffer.from(b.rawData));
}

function allowsClientAuth(cert: x509.X509Certificate): boolean {
  const eku = cert.getExtension(x509.ExtendedKeyUsageExtension);
  if (!eku) return false;
  const usages = eku.usages.map(String);
  return usages.includes(CLIENT_AUTH) || usages.includes(ANY_EXTENDED_KEY_USAGE);
}

/**
 * Why `chain` (leaf first, anchored at one of the roots) may not be used for
 * client authentication at `now`, or undefined when it may.
 */
function chainProblem(chain: x509.X509Certificate[], now: Date): string | undefined {
  for (const [i, cert] of chain.entries()) {
    const what = i === 0 ? 'certificate' : `issuer certificate ${JSON.stringify(cert.subject)}`;
    if (now < cert.notBefore) return `x509: ${what} is not yet valid`;
    if (now > cert.notAfter) return `x509: ${what} has expired`;
    if (i === 0) continue;
    const constraints = cert.getExtension(x509.BasicConstraintsExtension);
    if (!constraints?.ca) return `x509: ${what} is not a CA (no basicConstraints CA:TRUE)`;
    // pathLen counts the intermediates below this CA (the leaf excluded).
    if (constraints.pathLength !== undefined && i - 1 > constraints.pathLength) return `x509: ${what} exceeds its path length constraint`;
    const usage = cert.getExtension(x509.KeyUsagesExtension);
    if (usage && (usage.usages & x509.KeyUsageFlags.keyCertSign) === 0) return `x509: ${what} may not sign certificates`;
    // An extended key usage on an issuer restricts what it may issue for.
    const eku = cert.getExtension(x509.ExtendedKeyUsageExtension);
    if (eku && !allowsClientAuth(cert)) return `x509: ${what} is not valid for client authentication`;
  }
  if (!allowsClientAuth(chain[0] as x509.X509Certificate)) return 'x509: certificate specifies an incompatible key usage (no clientAuth extended key usage)';
  return undefined;
}

/**
 * Verifies `chainDer` (the presented chain, leaf first) against `roots` and
 * returns the identity it names.
 */
export async function authenticateCertificate(chainDer: Uint8Array[], roots: x509.X509Certificate[], now: Date = new Date()): Promise<CertificateResult> {
  if (chainDer.length === 0) return { ok: false, error: 'no client certificate' };
  if (chainDer.length > MAX_CHAIN_LENGTH) return { ok: false, error: `x509: certificate chain of ${chainDer.length} certificates is longer than ${MAX_CHAIN_LENGTH}` };
  if (chainDer.some((der) => der.length > MAX_CERTIFICATE_BYTES)) return { ok: false, error: `x509: certificate larger than ${MAX_CERTIFICATE_BYTES} bytes` };
  const presented = chainDer.map(parse);
  const [leaf, ...intermediates] = presented;
  if (!leaf || intermediates.some((c) => c === undefined)) return { ok: false, error: 'x509: client certificate cannot be parsed' };
  if (roots.length === 0) return { ok: false, error: 'x509: a client certificate was presented but no client CA is configured' };

  // Roots first, so that a presented certificate named like a root never stands in for it.
  const builder = new x509.X509ChainBuilder({ certificates: [...roots, ...(intermediates as x509.X509Certificate[])] });
  let chain: x509.X509Certificate[];
  try {
    chain = [...(await builder.build(leaf))];
  } catch {
    return { ok: false, error: 'x509: certificate chain cannot be built' };
  }
  const anchor = chain[chain.length - 1] as x509.X509Certificate;
  if (!roots.some((root) => sameCertificate(root, anchor))) return { ok: false, error: 'x509: certificate signed by unknown authority' };
  const problem = chainProblem(chain, now);
  if (problem) return { ok: false, error: problem };

  const username = leaf.subjectName.getField('CN').at(-1) ?? '';
  if (!username) return { ok: false, error: 'x509: client certificate has no common name' };
  const groups = leaf.subjectName.getField('O');
  const notAfter = new Date(Math.min(...chain.map((c) => c.notAfter.getTime())));
  return { ok: true, user: { username, uid: '', groups, extra: {} }, notAfter };
}

/**
 * Client certificates as an authentication method. A presented chain that
 * does not verify is rejected (401), never passed on to another method.
 */
/**
 * How long a verified chain is remembered (never past the earliest expiry in
 * it): verification costs milliseconds of CPU, and every gateway asks for
 * each new connection.
 */
export const VERIFIED_CHAIN_CACHE_MS = 60_000;

export function clientCertificateAuthenticator(roots: x509.X509Certificate[], now: () => Date = () => new Date()): RequestAuthenticator {
  const verified = new Map<string, { user: UserInfo; until: number }>();
  return {
    name: 'x509',
    async authenticateRequest(input, audiences) {
      if (input.clientCertificateChain.length === 0) return NOT_MINE;
      const hash = createHash('sha256');
      for (const der of input.clientCertificateChain) hash.update(der).update('\0');
      const key = hash.digest('base64');
      const at = now().getTime();
      const known = verified.get(key);
      if (known && known.until > at) return { status: 'authenticated', user: known.user, audiences: [...audiences] };
      const cert = await authenticateCertificate(input.clientCertificateChain, roots, now());
      if (!cert.ok) return rejected(cert.error);
      if (verified.size >= 10000) verified.delete(verified.keys().next().value as string);
      verified.set(key, { user: cert.user, until: Math.min(at + VERIFIED_CHAIN_CACHE_MS, cert.notAfter.getTime()) });
      return { status: 'authenticated', user: cert.user, audiences: [...audiences] };
    },
  };
}
