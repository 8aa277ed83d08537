import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { issueClientCertificate, kubeconfig, type Pki } from './pki';

/**
 * Ready `@kubernetes/client-node` clients' configurations for an
 * environment: the admin's (system:masters) and any user's, authenticated
 * with a client certificate from the environment's CA. The library is the
 * caller's own (a peer dependency, an ES module loaded when first asked
 * for), so the `KubeConfig` is the class the caller's code imports.
 */

type ClientNode = typeof import('@kubernetes/client-node', { with: { 'resolution-mode': 'import' } });

let clientNode: Promise<ClientNode> | undefined;

function loadClientNode(): Promise<ClientNode> {
  clientNode ??= import('@kubernetes/client-node').catch((err: unknown) => {
    clientNode = undefined;
    throw new Error(`@kubernetes/client-node could not be loaded (install it beside @svc/testenv: npm install --save-dev @kubernetes/client-node@1): ${(err as Error).message}`);
  });
  return clientNode;
}

/** A KubeConfig of the kubeconfig text (what `kubeconfig()` writes). */
export async function kubeConfigFromText(text: string): Promise<KubeConfig> {
  const k8s = await loadClientNode();
  const kc = new k8s.KubeConfig();
  kc.loadFromString(text);
  return kc;
}

/** A file name per user and groups: the user's name made safe, and a digest of both. */
function fileNameOf(user: string, groups: string[]): string {
  const digest = crypto.createHash('sha256').update(JSON.stringify([user, groups])).digest('hex').slice(0, 12);
  return `user-${user.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 60)}-${digest}`;
}

/**
 * The kubeconfig (its path) of `user` in `groups`, signed by the
 * environment's CA; made once per user and groups, then reused.
 */
export async function userKubeconfigFile(pki: Pki, server: string, dir: string, user: string, groups: string[] = []): Promise<string> {
  if (!user) throw new Error('a user name is required');
  const name = fileNameOf(user, groups);
  const file = path.join(dir, `${name}.kubeconfig`);
  if (fs.existsSync(file)) return file;
  const issued = await issueClientCertificate(pki, name, user, groups);
  fs.writeFileSync(file, kubeconfig(server, pki.caCert, issued.cert, issued.key, user), { mode: 0o600 });
  return file;
}
