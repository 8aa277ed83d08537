import { X509Certificate } from 'node:crypto';
import type { UserInfo } from '@svc/apimachinery';

/**
 * Client certificate authentication: the subject's common name is the user,
 * each organization a group. The chain is verified against the client CA
 * bundle here as well, so a misconfigured gateway cannot mint identities.
 */
export function parseCaBundle(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((b) => new X509Certificate(b));
}

function subjectFields(subject: string): Array<[string, string]> {
  return subject
    .split('\n')
    .map((line) => {
      const eq = line.indexOf('=');
      return [line.slice(0, eq), line.slice(eq + 1)] as [string, string];
    })
    .filter(([k]) => k.length > 0);
}

export type CertificateResult = { ok: true; user: UserInfo } | { ok: false; error: string };

export function authenticateCertificate(chainDer: Uint8Array[], roots: X509Certificate[], now: Date = new Date()): CertificateResult {
  const [leafDer, ...intermediatesDer] = chainDer;
  if (!leafDer) return { ok: false, error: 'no client certificate' };
  let leaf: X509Certificate;
  let intermediates: X509Certificate[];
  try {
    leaf = new X509Certificate(Buffer.from(leafDer));
    intermediates = intermediatesDer.map((d) => new X509Certificate(Buffer.from(d)));
  } catch {
    return { ok: false, error: 'client certificate cannot be parsed' };
  }
  if (now < new Date(leaf.validFrom) || now > new Date(leaf.validTo)) {
    return { ok: false, error: 'x509: certificate has expired or is not yet valid' };
  }
  // Walk up from the leaf through the presented intermediates to a trusted root.
  let current = leaf;
  const pool = [...intermediates];
  for (let depth = 0; depth < 8; depth++) {
    const root = roots.find((r) => current.checkIssued(r) && current.verify(r.publicKey));
    if (root) {
      const fields = subjectFields(leaf.subject);
      const username = fields.find(([k]) => k === 'CN')?.[1] ?? '';
      if (!username) return { ok: false, error: 'client certificate has no common name' };
      const groups = fields.filter(([k]) => k === 'O').map(([, v]) => v);
      return { ok: true, user: { username, uid: '', groups, extra: {} } };
    }
    const next = pool.findIndex((c) => current.checkIssued(c) && current.verify(c.publicKey));
    if (next < 0) break;
    current = pool.splice(next, 1)[0] as X509Certificate;
  }
  return { ok: false, error: 'x509: certificate signed by unknown authority' };
}
