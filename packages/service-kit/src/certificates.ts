// @peculiar/x509 resolves its ASN.1 codecs through tsyringe, which needs a
// reflect-metadata polyfill loaded before it.
import 'reflect-metadata';
import * as crypto from 'node:crypto';
import * as x509 from '@peculiar/x509';

/**
 * X.509 certificates issued in process (WebCrypto through @peculiar/x509,
 * no openssl binary): certificate authorities and the certificates they
 * sign, as PEM. The integration harness (@svc/testenv) and the deployments'
 * pki step (deploy/scripts/pki.js, through the harness) issue every
 * certificate of the system with these functions.
 *
 * Keys are ECDSA P-256 (PKCS#8 PEM, `BEGIN PRIVATE KEY`), signatures
 * ECDSA with SHA-256; CAs carry a critical basicConstraints CA:TRUE and a
 * critical keyUsage keyCertSign and cRLSign; every certificate carries a
 * subject key identifier and issued ones the issuer's authority key
 * identifier.
 */

type CryptoKey = crypto.webcrypto.CryptoKey;
type CryptoKeyPair = crypto.webcrypto.CryptoKeyPair;
const webcrypto = crypto.webcrypto;
// The global WebCrypto types @peculiar/x509 is declared with are the DOM's; Node's implement them.
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const EC_KEY: crypto.webcrypto.EcKeyGenParams = { name: 'ECDSA', namedCurve: 'P-256' };
const SIGNING: crypto.webcrypto.EcdsaParams = { name: 'ECDSA', hash: 'SHA-256' };
const DAY_MS = 24 * 60 * 60 * 1000;
/** Issued certificates start a minute in the past, so a peer whose clock is slightly behind accepts them. */
const CLOCK_SKEW_MS = 60 * 1000;

/** A certificate and its private key, both PEM. */
export interface IssuedCertificate {
  cert: string;
  key: string;
}

/**
 * A subject as relative distinguished names in order, for example
 * `[['O', 'system:masters'], ['CN', 'alice']]` (what openssl writes as
 * `/O=system:masters/CN=alice`). Attribute values are UTF8 strings.
 */
export type SubjectName = Array<[attribute: 'CN' | 'O' | 'OU', value: string]>;

/** Which of a leaf certificate's uses it holds (its extendedKeyUsage). */
export type CertificateUsage = 'server' | 'client' | 'server-and-client';

export interface IssueOptions {
  subject: SubjectName;
  usage: CertificateUsage;
  /** DNS names and IP addresses (IPv4 or IPv6) of the subjectAltName; none when empty. */
  hosts?: string[];
  /** Validity in days (default 3650). */
  days?: number;
}

/** `CN=a` style subject, one RDN per attribute, for common names given alone. */
export function commonName(cn: string): SubjectName {
  return [['CN', cn]];
}

/** A subject with one O per group and the user as CN (the identity a client certificate carries). */
export function userSubject(user: string, groups: string[] = []): SubjectName {
  return [...groups.map((g): ['O', string] => ['O', g]), ['CN', user]];
}

function jsonName(subject: SubjectName): x509.JsonName {
  if (subject.length === 0) throw new Error('a certificate subject needs at least one attribute');
  return subject.map(([attribute, value]) => ({ [attribute]: [value] }));
}

function pem(label: string, der: ArrayBuffer): string {
  const body = Buffer.from(der).toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '');
  return `-----BEGIN ${label}-----\n${body}\n-----END ${label}-----\n`;
}

function serialNumber(): string {
  // 16 random bytes with the top bit clear: a positive integer, as RFC 5280 asks.
  const bytes = crypto.randomBytes(16);
  bytes[0] = (bytes[0] as number) & 0x7f | 0x01;
  return bytes.toString('hex');
}

function validity(days: number): { notBefore: Date; notAfter: Date } {
  const now = Date.now();
  return { notBefore: new Date(now - CLOCK_SKEW_MS), notAfter: new Date(now + days * DAY_MS) };
}

async function newKeyPair(): Promise<CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(EC_KEY, true, ['sign', 'verify'])) as CryptoKeyPair;
}

async function privateKeyPem(key: CryptoKey): Promise<string> {
  return pem('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', key));
}

/** A self-signed certificate authority (ECDSA P-256, 10 years unless told otherwise). */
export async function createCertificateAuthority(subject: SubjectName, days = 3650): Promise<IssuedCertificate> {
  const keys = await newKeyPair();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(),
    name: jsonName(subject),
    ...validity(days),
    signingAlgorithm: SIGNING,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert: cert.toString('pem') + '\n', key: await privateKeyPem(keys.privateKey) };
}

const IP_V4 = /^\d{1,3}(\.\d{1,3}){3}$/;

/** subjectAltName entries: an IPv4 or IPv6 literal is an IP address, anything else a DNS name. */
function altNames(hosts: string[]): x509.JsonGeneralNames {
  return hosts.map((h) => (IP_V4.test(h) || h.includes(':') ? { type: 'ip' as const, value: h } : { type: 'dns' as const, value: h }));
}

const USAGES: Record<CertificateUsage, string[]> = {
  server: [x509.ExtendedKeyUsage.serverAuth],
  client: [x509.ExtendedKeyUsage.clientAuth],
  'server-and-client': [x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth],
};

/**
 * A leaf certificate signed by `ca` (PEM certificate and key, as made by
 * createCertificateAuthority or read from files): basicConstraints CA:FALSE,
 * a critical keyUsage digitalSignature and keyEncipherment, the
 * extendedKeyUsage of `usage` and the subjectAltName of `hosts`.
 */
export async function issueCertificate(ca: IssuedCertificate, options: IssueOptions): Promise<IssuedCertificate> {
  const caCert = new x509.X509Certificate(ca.cert);
  const caKey = await importPrivateKey(ca.key, caCert);
  const keys = await newKeyPair();
  const hosts = options.hosts ?? [];
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: jsonName(options.subject),
    issuer: caCert.subject,
    ...validity(options.days ?? 3650),
    signingAlgorithm: SIGNING,
    publicKey: keys.publicKey,
    signingKey: caKey,
    extensions: [
      new x509.BasicConstraintsExtension(false),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension(USAGES[options.usage]),
      ...(hosts.length > 0 ? [new x509.SubjectAlternativeNameExtension(altNames(hosts))] : []),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(caCert.publicKey),
    ],
  });
  return { cert: cert.toString('pem') + '\n', key: await privateKeyPem(keys.privateKey) };
}

/** The CA's PEM private key as a signing key (PKCS#8, or SEC1 `EC PRIVATE KEY` as older openssl wrote it). */
async function importPrivateKey(keyPem: string, caCert: x509.X509Certificate): Promise<CryptoKey> {
  const algorithm = caCert.publicKey.algorithm;
  if (algorithm.name !== 'ECDSA') throw new Error(`the CA's key is ${algorithm.name}; only ECDSA CAs can issue certificates here`);
  const der = crypto.createPrivateKey(keyPem).export({ format: 'der', type: 'pkcs8' });
  return webcrypto.subtle.importKey('pkcs8', der, algorithm as crypto.webcrypto.EcKeyImportParams, false, ['sign']);
}

/** An RSA private key (PKCS#8 PEM), as the signing key of service-account tokens. */
export function createRsaPrivateKey(bits = 2048): string {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: bits });
  return privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
}
