import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * A certificate authority, a serving certificate for the gateway and an
 * admin client certificate (CN svc-admin, O system:masters), made with the
 * openssl command line. Existing files are kept, so a restarted environment
 * keeps its identity.
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

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

function issue(dir: string, name: string, subject: string, ext: string): void {
  const key = `${name}.key`;
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', key], dir);
  openssl(['req', '-new', '-key', key, '-subj', subject, '-out', `${name}.csr`], dir);
  fs.writeFileSync(path.join(dir, `${name}.ext`), ext);
  openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '3650', '-sha256', '-extfile', `${name}.ext`, '-out', `${name}.crt`], dir);
  fs.rmSync(path.join(dir, `${name}.csr`));
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

function sanOf(hosts: string[]): string {
  return hosts.map((h) => (/^[0-9.]+$|:/.test(h) ? `IP:${h}` : `DNS:${h}`)).join(',');
}

function ensureCa(dir: string, name: string, subject: string): void {
  if (fs.existsSync(path.join(dir, `${name}.crt`))) return;
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', `${name}.key`], dir);
  openssl(['req', '-x509', '-new', '-key', `${name}.key`, '-subj', subject, '-days', '3650', '-sha256', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign', '-out', `${name}.crt`], dir);
}

/**
 * The internal CA and one certificate per identity under `dir`
 * (`ca.crt`, `<identity>.crt`, `<identity>.key`). Each certificate names
 * its identity, `localhost` and 127.0.0.1, plus `extraHosts[identity]` (for
 * example the DNS names of a deployment). Existing files are kept.
 */
export function ensureInternalPki(dir: string, extraHosts: Partial<Record<InternalIdentity, string[]>> = {}): InternalPki {
  fs.mkdirSync(dir, { recursive: true });
  ensureCa(dir, 'ca', '/CN=svc-internal-ca');
  const identities = {} as Record<InternalIdentity, CertificatePair>;
  for (const identity of INTERNAL_IDENTITIES) {
    const pair = { cert: path.join(dir, `${identity}.crt`), key: path.join(dir, `${identity}.key`) };
    if (!fs.existsSync(pair.cert)) {
      const hosts = [identity, 'localhost', '127.0.0.1', ...(extraHosts[identity] ?? [])];
      issue(dir, identity, `/O=svc:internal/CN=${identity}`, `basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=${sanOf(hosts)}\n`);
    }
    identities[identity] = pair;
  }
  return { dir, caCert: path.join(dir, 'ca.crt'), caKey: path.join(dir, 'ca.key'), identities };
}

export function ensurePki(dir: string, hosts: string[] = ['localhost', '127.0.0.1']): Pki {
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
  ensureCa(dir, 'ca', '/CN=svc-ca');
  if (!fs.existsSync(pki.servingCert)) {
    issue(dir, 'serving', '/CN=svc-gateway', `basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=${sanOf(hosts)}\n`);
  }
  if (!fs.existsSync(pki.adminCert)) {
    issue(dir, 'admin', '/O=system:masters/CN=svc-admin', 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n');
  }
  if (!fs.existsSync(pki.serviceAccountKey)) {
    openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', 'service-account.key'], dir);
    fs.chmodSync(pki.serviceAccountKey, 0o600);
  }
  return pki;
}

/**
 * A CA of its own and a serving certificate from it under `dir`
 * (`ca.crt`, `ca.key`, `tls.crt`, `tls.key`, the names a webhook server
 * built with controller-runtime reads), for `hosts` (DNS names or IP
 * addresses). Existing files are kept.
 */
export function ensureServingCertificate(dir: string, hosts: string[]): { caCert: string; cert: string; key: string } {
  fs.mkdirSync(dir, { recursive: true });
  ensureCa(dir, 'ca', '/CN=svc-webhook-serving-ca');
  const files = { caCert: path.join(dir, 'ca.crt'), cert: path.join(dir, 'tls.crt'), key: path.join(dir, 'tls.key') };
  if (!fs.existsSync(files.cert)) {
    issue(dir, 'tls', `/CN=${hosts[0] ?? 'localhost'}`, `basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=${sanOf(hosts)}\n`);
  }
  return files;
}

/** A client certificate for any user and groups, signed by the environment's CA. */
export function issueClientCertificate(pki: Pki, name: string, user: string, groups: string[]): { cert: string; key: string } {
  const subject = [...groups.map((g) => `/O=${g}`), `/CN=${user}`].join('');
  issue(pki.dir, name, subject, 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n');
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
