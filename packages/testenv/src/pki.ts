import * as fs from 'node:fs';
import * as path from 'node:path';
import { commonName, createCertificateAuthority, createRsaPrivateKey, issueCertificate, userSubject, type CertificateUsage, type SubjectName } from '@svc/service-kit/certificates';

/**
 * A certificate authority, a serving certificate for the gateway and an
 * admin client certificate (CN svc-admin, O system:masters), issued in
 * process (@svc/service-kit/certificates: ECDSA P-256, 10 years). Existing
 * files are kept, so a restarted environment keeps its identity.
 */
export interface Pki {
  dir: string;
  caCert: string;
  caKey: string;
  servingCert: string;
  servingKey: string;
  adminCert: string;
  adminKey: string;
  /** RSA private key that signs service-account tokens (its public half verifies them). */
  serviceAccountKey: string;
}

function writePrivate(file: string, text: string): void {
  fs.writeFileSync(file, text, { mode: 0o600 });
}

/** `<dir>/<name>.crt` and `.key`, signed by `<dir>/ca.crt` and `ca.key`. */
async function issue(dir: string, name: string, subject: SubjectName, usage: CertificateUsage, hosts: string[] = []): Promise<void> {
  const ca = { cert: fs.readFileSync(path.join(dir, 'ca.crt'), 'utf8'), key: fs.readFileSync(path.join(dir, 'ca.key'), 'utf8') };
  const issued = await issueCertificate(ca, { subject, usage, hosts });
  writePrivate(path.join(dir, `${name}.key`), issued.key);
  fs.writeFileSync(path.join(dir, `${name}.crt`), issued.cert);
}

/**
 * The identities inside the system. Each holds one certificate from the
 * internal CA (CN = the identity, usable as server and as client), which is
 * what every internal edge checks: gRPC between the services, etcd, NATS.
 */
export const INTERNAL_IDENTITIES = ['gateway', 'storage', 'authn', 'authz', 'admission', 'watch-fanout', 'etcd', 'nats'] as const;
export type InternalIdentity = (typeof INTERNAL_IDENTITIES)[number];

export interface CertificatePair {
  cert: string;
  key: string;
}

export interface InternalPki {
  dir: string;
  /** The internal CA: trusted only between the services, never by or for API clients. */
  caCert: string;
  caKey: string;
  identities: Record<InternalIdentity, CertificatePair>;
}

/** `<dir>/<name>.crt` and `.key`: a self-signed CA, made unless there. */
async function ensureCa(dir: string, name: string, cn: string): Promise<void> {
  if (fs.existsSync(path.join(dir, `${name}.crt`))) return;
  const ca = await createCertificateAuthority(commonName(cn));
  writePrivate(path.join(dir, `${name}.key`), ca.key);
  fs.writeFileSync(path.join(dir, `${name}.crt`), ca.cert);
}

/**
 * The internal CA and one certificate per identity under `dir`
 * (`ca.crt`, `<identity>.crt`, `<identity>.key`). Each certificate names
 * its identity, `localhost` and 127.0.0.1, plus `extraHosts[identity]` (for
 * example the DNS names of a deployment). Existing files are kept.
 */
export async function ensureInternalPki(dir: string, extraHosts: Partial<Record<InternalIdentity, string[]>> = {}): Promise<InternalPki> {
  fs.mkdirSync(dir, { recursive: true });
  await ensureCa(dir, 'ca', 'svc-internal-ca');
  const identities = {} as Record<InternalIdentity, CertificatePair>;
  for (const identity of INTERNAL_IDENTITIES) {
    const pair = { cert: path.join(dir, `${identity}.crt`), key: path.join(dir, `${identity}.key`) };
    if (!fs.existsSync(pair.cert)) {
      await issue(dir, identity, [['O', 'svc:internal'], ['CN', identity]], 'server-and-client', [identity, 'localhost', '127.0.0.1', ...(extraHosts[identity] ?? [])]);
    }
    identities[identity] = pair;
  }
  return { dir, caCert: path.join(dir, 'ca.crt'), caKey: path.join(dir, 'ca.key'), identities };
}

export async function ensurePki(dir: string, hosts: string[] = ['localhost', '127.0.0.1']): Promise<Pki> {
  fs.mkdirSync(dir, { recursive: true });
  const pki: Pki = {
    dir,
    caCert: path.join(dir, 'ca.crt'),
    caKey: path.join(dir, 'ca.key'),
    servingCert: path.join(dir, 'serving.crt'),
    servingKey: path.join(dir, 'serving.key'),
    adminCert: path.join(dir, 'admin.crt'),
    adminKey: path.join(dir, 'admin.key'),
    serviceAccountKey: path.join(dir, 'service-account.key'),
  };
  await ensureCa(dir, 'ca', 'svc-ca');
  if (!fs.existsSync(pki.servingCert)) await issue(dir, 'serving', commonName('svc-gateway'), 'server', hosts);
  if (!fs.existsSync(pki.adminCert)) await issue(dir, 'admin', userSubject('svc-admin', ['system:masters']), 'client');
  if (!fs.existsSync(pki.serviceAccountKey)) writePrivate(pki.serviceAccountKey, createRsaPrivateKey(2048));
  return pki;
}

/**
 * A CA of its own and a serving certificate from it under `dir`
 * (`ca.crt`, `ca.key`, `tls.crt`, `tls.key`, the names a webhook server
 * built with controller-runtime reads), for `hosts` (DNS names or IP
 * addresses). Existing files are kept.
 */
export async function ensureServingCertificate(dir: string, hosts: string[]): Promise<{ caCert: string; cert: string; key: string }> {
  fs.mkdirSync(dir, { recursive: true });
  await ensureCa(dir, 'ca', 'svc-webhook-serving-ca');
  const files = { caCert: path.join(dir, 'ca.crt'), cert: path.join(dir, 'tls.crt'), key: path.join(dir, 'tls.key') };
  if (!fs.existsSync(files.cert)) await issue(dir, 'tls', commonName(hosts[0] ?? 'localhost'), 'server', hosts);
  return files;
}

/** A client certificate for any user and groups (one O each), signed by the environment's CA. */
export async function issueClientCertificate(pki: Pki, name: string, user: string, groups: string[]): Promise<{ cert: string; key: string }> {
  await issue(pki.dir, name, userSubject(user, groups), 'client');
  return { cert: path.join(pki.dir, `${name}.crt`), key: path.join(pki.dir, `${name}.key`) };
}

/** A kubeconfig with everything embedded, usable by kubectl and the client libraries. */
export function kubeconfig(server: string, caCert: string, clientCert: string, clientKey: string, user = 'svc-admin'): string {
  const b64 = (file: string): string => fs.readFileSync(file).toString('base64');
  return kubeconfigWith(server, caCert, user, [`    client-certificate-data: ${b64(clientCert)}`, `    client-key-data: ${b64(clientKey)}`]);
}

/** A kubeconfig whose user authenticates with a bearer token. */
export function tokenKubeconfig(server: string, caCert: string, token: string, user = 'token-user'): string {
  return kubeconfigWith(server, caCert, user, [`    token: ${token}`]);
}

function kubeconfigWith(server: string, caCert: string, user: string, credentials: string[]): string {
  const b64 = (file: string): string => fs.readFileSync(file).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: svc',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${b64(caCert)}`,
    'users:',
    `- name: ${user}`,
    '  user:',
    ...credentials,
    'contexts:',
    '- name: svc',
    '  context:',
    '    cluster: svc',
    `    user: ${user}`,
    '    namespace: default',
    'current-context: svc',
    '',
  ].join('\n');
}
