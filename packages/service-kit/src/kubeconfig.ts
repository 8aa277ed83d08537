import * as fs from 'node:fs';
import * as path from 'node:path';
import { load } from 'js-yaml';

/**
 * The connection a kubeconfig file describes (its current context): the
 * controllers' way to the API, and the token webhook's way to its remote
 * service, which uses the same client-configuration format.
 */
export interface Credentials {
  server: string;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  token?: string;
}

interface KubeconfigFile {
  'current-context'?: string;
  clusters?: Array<{ name: string; cluster: { server: string; 'certificate-authority'?: string; 'certificate-authority-data'?: string } }>;
  users?: Array<{ name: string; user: { 'client-certificate'?: string; 'client-certificate-data'?: string; 'client-key'?: string; 'client-key-data'?: string; token?: string } }>;
  contexts?: Array<{ name: string; context: { cluster: string; user: string } }>;
}

/** A kubeconfig that cannot be used, naming the file and the field. */
export class KubeconfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KubeconfigError';
  }
}

/** Reads the current context of a kubeconfig: embedded data or files relative to it. */
export function loadKubeconfig(file: string): Credentials {
  let doc: KubeconfigFile;
  try {
    doc = (load(fs.readFileSync(file, 'utf8')) ?? {}) as KubeconfigFile;
  } catch (err) {
    throw new KubeconfigError(`${file}: ${(err as Error).message}`);
  }
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new KubeconfigError(`${file}: not a kubeconfig document`);
  const contexts = doc.contexts ?? [];
  const context = contexts.find((c) => c.name === doc['current-context']) ?? contexts[0];
  const cluster = (doc.clusters ?? []).find((c) => c.name === context?.context.cluster)?.cluster ?? (contexts.length === 0 ? doc.clusters?.[0]?.cluster : undefined);
  const user = (doc.users ?? []).find((u) => u.name === context?.context.user)?.user ?? (contexts.length === 0 ? doc.users?.[0]?.user : undefined) ?? {};
  if (!cluster?.server) throw new KubeconfigError(`${file}: clusters[].cluster.server: no cluster server in the current context`);
  const read = (data: string | undefined, ref: string | undefined, field: string): Buffer | undefined => {
    if (data) return Buffer.from(data, 'base64');
    if (!ref) return undefined;
    try {
      return fs.readFileSync(path.resolve(path.dirname(file), ref));
    } catch (err) {
      throw new KubeconfigError(`${file}: ${field}: ${(err as Error).message}`);
    }
  };
  const creds: Credentials = { server: cluster.server.replace(/\/+$/, '') };
  const ca = read(cluster['certificate-authority-data'], cluster['certificate-authority'], 'clusters[].cluster.certificate-authority');
  const cert = read(user['client-certificate-data'], user['client-certificate'], 'users[].user.client-certificate');
  const key = read(user['client-key-data'], user['client-key'], 'users[].user.client-key');
  if (ca) creds.ca = ca;
  if (cert) creds.cert = cert;
  if (key) creds.key = key;
  if (user.token) creds.token = user.token;
  return creds;
}
