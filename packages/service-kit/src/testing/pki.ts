import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { InternalTls } from '../internal-tls';

/**
 * Certificates for this package's own tests (the system's are made by
 * @svc/testenv, which depends on this package): a CA and certificates for
 * identities, with the openssl command line.
 */
export interface TestPki {
  dir: string;
  tlsFor(identity: string): InternalTls;
  remove(): void;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

export function makeTestPki(caName = 'test-ca'): TestPki {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-test-pki-'));
  openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'ca.key', '-subj', `/CN=${caName}`, '-days', '2', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign', '-out', 'ca.crt'], dir);
  const issued = new Map<string, InternalTls>();
  return {
    dir,
    tlsFor(identity) {
      const known = issued.get(identity);
      if (known) return known;
      fs.writeFileSync(path.join(dir, `${identity}.ext`), `basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=DNS:${identity},DNS:localhost,IP:127.0.0.1\n`);
      openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${identity}.key`, '-subj', `/CN=${identity}`, '-out', `${identity}.csr`], dir);
      openssl(['x509', '-req', '-in', `${identity}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', `${identity}.ext`, '-out', `${identity}.crt`], dir);
      const tls = { ca: fs.readFileSync(path.join(dir, 'ca.crt')), cert: fs.readFileSync(path.join(dir, `${identity}.crt`)), key: fs.readFileSync(path.join(dir, `${identity}.key`)) };
      issued.set(identity, tls);
      return tls;
    },
    remove: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

/** A kubeconfig-format connection file for a webhook at `server`, trusting `tls.ca` and presenting `tls`'s certificate. */
export function webhookKubeconfig(server: string, tls: InternalTls): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: webhook',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${tls.ca.toString('base64')}`,
    'users:',
    '- name: client',
    '  user:',
    `    client-certificate-data: ${tls.cert.toString('base64')}`,
    `    client-key-data: ${tls.key.toString('base64')}`,
    'contexts:',
    '- name: webhook',
    '  context: {cluster: webhook, user: client}',
    'current-context: webhook',
    '',
  ].join('\n');
}
