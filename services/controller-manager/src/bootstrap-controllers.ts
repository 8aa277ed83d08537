import { createHmac } from 'node:crypto';
import { ApiError, PUBLIC_NAMESPACE, SYSTEM_NAMESPACE, type ApiObject } from '@svc/apimachinery';
import {
  BOOTSTRAP_TOKEN_SECRET_PREFIX,
  CLUSTER_INFO_CONFIG_MAP,
  JWS_KEY_PREFIX,
  bootstrapTokenExpired,
  readBootstrapTokenSecret,
  type BootstrapTokenSecret,
} from '@svc/kinds';
import type { Logger } from '@svc/service-kit';
import type { ApiClient } from './client';
import type { SharedInformer, SharedInformerFactory } from './informer';
import { runWorkers, WorkQueue, type WorkQueueOptions } from './work-queue';

/**
 * The bootstrap-token controllers (SPEC sections 3 and 5):
 * - the signer keeps `jws-kubeconfig-<id>` in the public `cluster-info`
 *   ConfigMap equal to a detached HS256 JWS of its `kubeconfig` for every
 *   unexpired token allowed to sign, and removes the others;
 * - the cleaner deletes bootstrap-token Secrets once they expire.
 * Both follow the Secrets of the system namespace through one shared informer.
 */

const SECRETS = `/api/v1/namespaces/${SYSTEM_NAMESPACE}/secrets`;
const CLUSTER_INFO = `/api/v1/namespaces/${PUBLIC_NAMESPACE}/configmaps/${CLUSTER_INFO_CONFIG_MAP}`;

/**
 * A detached JWS (compact form with an empty payload part) over `content`,
 * HS256 keyed with the whole token `<id>.<secret>`, the key id in the header.
 */
export function detachedSignature(content: string, tokenId: string, tokenSecret: string): string {
  const header = Buffer.from(JSON.stringify({ alg: 'HS256', kid: tokenId })).toString('base64url');
  const payload = Buffer.from(content).toString('base64url');
  const signature = createHmac('sha256', `${tokenId}.${tokenSecret}`).update(`${header}.${payload}`).digest('base64url');
  return `${header}..${signature}`;
}

/** The bootstrap tokens among `secrets` that parse. */
function tokensOf(secrets: ApiObject[]): Array<{ secret: ApiObject; token: BootstrapTokenSecret }> {
  const out: Array<{ secret: ApiObject; token: BootstrapTokenSecret }> = [];
  for (const secret of secrets) {
    if (!(secret.metadata?.name ?? '').startsWith(BOOTSTRAP_TOKEN_SECRET_PREFIX)) continue;
    const read = readBootstrapTokenSecret(secret);
    if ('token' in read) out.push({ secret, token: read.token });
  }
  return out;
}

interface TokenControllerOptions {
  /** The longest a sync waits for the next expiry before looking again. */
  resyncMs: number;
  now?: () => Date;
  queue?: WorkQueueOptions;
}

/** The one key of the queue: every change leads to one sync of everything, as upstream's signer queues it. */
const SYNC_KEY = 'sync';

/**
 * Shared shape of the two controllers: the shared informer of the system
 * namespace's Secrets queues a sync on every change; a sync that fails comes
 * back rate-limited, one that waits for an expiry asks to be queued again then.
 */
abstract class TokenSecretController {
  protected readonly secrets: SharedInformer;
  private readonly queue: WorkQueue;
  private workers: Promise<void> | undefined;

  constructor(
    protected readonly client: ApiClient,
    protected readonly informers: SharedInformerFactory,
    protected readonly log: Logger,
    protected readonly opts: TokenControllerOptions,
  ) {
    this.secrets = informers.informerFor(SECRETS);
    this.queue = new WorkQueue(opts.queue);
  }

  get synced(): boolean {
    return this.secrets.hasSynced();
  }

  protected now(): Date {
    return this.opts.now ? this.opts.now() : new Date();
  }

  protected tokens(): Array<{ secret: ApiObject; token: BootstrapTokenSecret }> {
    return tokensOf(this.secrets.list());
  }

  start(): void {
    if (this.workers) return;
    const changed = (): void => this.queue.add(SYNC_KEY);
    for (const informer of this.watched()) informer.addEventHandler({ onAdd: changed, onUpdate: changed, onDelete: changed });
    // A first sync even when the lists bring nothing (cluster-info may have to be created).
    this.queue.add(SYNC_KEY);
    this.workers = runWorkers(1, this.queue, async () => {
      // Nothing is decided on a partial picture.
      if (!this.synced) return { requeueAfterMs: 200 };
      const next = await this.sync();
      return next === undefined ? undefined : { requeueAfterMs: next };
    }, (_key, err) => this.log.warn('sync failed; retrying', { err: err.message }));
  }

  /** The informers whose changes call for a sync. */
  protected watched(): SharedInformer[] {
    return [this.secrets];
  }

  async stop(): Promise<void> {
    this.queue.shutDown();
    await this.workers;
  }

  /** Brings the world in line; resolves with when to look again (undefined: at the next change). */
  protected abstract sync(): Promise<number | undefined>;
}

/** Deletes bootstrap-token Secrets when they expire (`tokencleaner`). */
export class TokenCleaner extends TokenSecretController {
  protected async sync(): Promise<number | undefined> {
    const now = this.now();
    let next: number | undefined;
    for (const { secret, token } of this.tokens()) {
      if (!token.expiration) continue;
      if (bootstrapTokenExpired(token, now)) {
        const name = secret.metadata?.name ?? '';
        try {
          await this.client.request('DELETE', `${SECRETS}/${encodeURIComponent(name)}`, { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid: secret.metadata?.uid } });
          this.log.info('deleted an expired bootstrap token', { secret: name, expired: token.expiration.toISOString() });
        } catch (err) {
          if (!(err instanceof ApiError && (err.code === 404 || err.code === 409))) throw err;
        }
      } else {
        next = Math.min(next ?? Infinity, token.expiration.getTime() - now.getTime());
      }
    }
    // Wake up when the next token expires (the watch's resync catches anything missed).
    return next === undefined ? undefined : Math.min(next + 100, this.opts.resyncMs);
  }
}

export interface SignerOptions extends TokenControllerOptions {
  /** The kubeconfig published in cluster-info when the ConfigMap does not exist yet. */
  clusterInfoKubeconfig: string;
}

/** Keeps the `jws-kubeconfig-<id>` signatures of cluster-info current (`bootstrapsigner`). */
export class BootstrapSigner extends TokenSecretController {
  private readonly configMaps: SharedInformer;

  constructor(client: ApiClient, informers: SharedInformerFactory, log: Logger, private readonly signerOpts: SignerOptions) {
    super(client, informers, log, signerOpts);
    this.configMaps = informers.informerFor(`/api/v1/namespaces/${PUBLIC_NAMESPACE}/configmaps`, `fieldSelector=${encodeURIComponent(`metadata.name=${CLUSTER_INFO_CONFIG_MAP}`)}`);
  }

  override get synced(): boolean {
    return super.synced && this.configMaps.hasSynced();
  }

  protected override watched(): SharedInformer[] {
    return [this.secrets, this.configMaps];
  }

  /** Publishes cluster-info with the configured kubeconfig; undefined when someone else just did, or the namespace is not there. */
  private async createClusterInfo(): Promise<ApiObject | undefined> {
    try {
      const created = await this.client.request('POST', `/api/v1/namespaces/${PUBLIC_NAMESPACE}/configmaps`, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: CLUSTER_INFO_CONFIG_MAP, namespace: PUBLIC_NAMESPACE },
        data: { kubeconfig: this.signerOpts.clusterInfoKubeconfig },
      });
      this.log.info('created the cluster-info ConfigMap', { namespace: PUBLIC_NAMESPACE });
      return created;
    } catch (err) {
      if (err instanceof ApiError && (err.code === 409 || err.code === 404 || err.code === 403)) return undefined;
      throw err;
    }
  }

  protected async sync(): Promise<number | undefined> {
    if (!this.synced) return undefined;
    const current = this.configMaps.get(`${PUBLIC_NAMESPACE}/${CLUSTER_INFO_CONFIG_MAP}`) ?? (await this.createClusterInfo());
    if (!current) return undefined;
    const data = { ...((current['data'] ?? {}) as Record<string, string>) };
    const content = data['kubeconfig'];
    if (typeof content !== 'string') return undefined;
    const now = this.now();
    const want = new Map<string, string>();
    let next: number | undefined;
    for (const { token } of this.tokens()) {
      if (!token.usageSigning || bootstrapTokenExpired(token, now)) continue;
      want.set(`${JWS_KEY_PREFIX}${token.id}`, detachedSignature(content, token.id, token.secret));
      if (token.expiration) next = Math.min(next ?? Infinity, token.expiration.getTime() - now.getTime());
    }
    let changed = false;
    for (const key of Object.keys(data)) {
      if (key.startsWith(JWS_KEY_PREFIX) && !want.has(key)) {
        delete data[key];
        changed = true;
      }
    }
    for (const [key, value] of want) {
      if (data[key] !== value) {
        data[key] = value;
        changed = true;
      }
    }
    if (changed) {
      try {
        await this.client.request('PUT', CLUSTER_INFO, { ...current, data });
        this.log.info('updated the cluster-info signatures', { tokens: [...want.keys()].map((k) => k.slice(JWS_KEY_PREFIX.length)) });
      } catch (err) {
        // Changed meanwhile: the informer brings the new version and another sync.
        if (!(err instanceof ApiError && (err.code === 409 || err.code === 404))) throw err;
      }
    }
    return next === undefined ? undefined : Math.min(next + 100, this.opts.resyncMs);
  }
}
