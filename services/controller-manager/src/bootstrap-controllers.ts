import { createHmac } from 'node:crypto';
import { ApiError, type ApiObject } from '@svc/apimachinery';
import {
  BOOTSTRAP_TOKEN_SECRET_PREFIX,
  CLUSTER_INFO_CONFIG_MAP,
  JWS_KEY_PREFIX,
  PUBLIC_NAMESPACE,
  SYSTEM_NAMESPACE,
  bootstrapTokenExpired,
  readBootstrapTokenSecret,
  type BootstrapTokenSecret,
} from '@svc/kinds';
import type { Logger } from '@svc/service-kit';
import type { ApiClient } from './client';
import { runListWatch } from './list-watch';

/**
 * The bootstrap-token controllers (SPEC sections 3 and 5):
 * - the signer keeps `jws-kubeconfig-<id>` in the public `cluster-info`
 *   ConfigMap equal to a detached HS256 JWS of its `kubeconfig` for every
 *   unexpired token allowed to sign, and removes the others;
 * - the cleaner deletes bootstrap-token Secrets once they expire.
 * Both list and watch the Secrets of the system namespace through the API.
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

/** The bootstrap tokens among the Secrets of the system namespace, by name. */
class TokenSecrets {
  readonly byName = new Map<string, ApiObject>();

  replace(items: ApiObject[]): void {
    this.byName.clear();
    for (const s of items) this.observe('ADDED', s);
  }

  observe(type: string, secret: ApiObject): void {
    const name = secret.metadata?.name ?? '';
    if (!name.startsWith(BOOTSTRAP_TOKEN_SECRET_PREFIX)) return;
    if (type === 'DELETED') this.byName.delete(name);
    else this.byName.set(name, secret);
  }

  tokens(): Array<{ secret: ApiObject; token: BootstrapTokenSecret }> {
    const out: Array<{ secret: ApiObject; token: BootstrapTokenSecret }> = [];
    for (const secret of this.byName.values()) {
      const read = readBootstrapTokenSecret(secret);
      if ('token' in read) out.push({ secret, token: read.token });
    }
    return out;
  }
}

interface LoopOptions {
  resyncMs: number;
  now?: () => Date;
}

/** Shared shape of the two controllers: a list-watch of the token Secrets and a debounced sync. */
abstract class TokenSecretController {
  protected readonly abort = new AbortController();
  protected readonly secrets = new TokenSecrets();
  protected loops: Promise<void>[] = [];
  private listed = false;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;

  constructor(
    protected readonly client: ApiClient,
    protected readonly log: Logger,
    protected readonly opts: LoopOptions,
  ) {}

  get synced(): boolean {
    return this.listed;
  }

  protected now(): Date {
    return this.opts.now ? this.opts.now() : new Date();
  }

  protected common(): { resyncSeconds: number; signal: AbortSignal; log: Logger } {
    return { resyncSeconds: Math.max(1, Math.round(this.opts.resyncMs / 1000)), signal: this.abort.signal, log: this.log };
  }

  start(): void {
    if (this.loops.length > 0) return;
    this.loops = [
      runListWatch(
        this.client,
        SECRETS,
        {
          onSynced: () => (this.listed = true),
          onList: (items) => {
            this.secrets.replace(items);
            this.schedule(0);
          },
          onEvent: (e) => {
            this.secrets.observe(e.type, e.object);
            this.schedule(0);
          },
        },
        this.common(),
      ),
      ...this.extraLoops(),
    ];
  }

  protected extraLoops(): Promise<void>[] {
    return [];
  }

  async stop(): Promise<void> {
    this.abort.abort();
    if (this.timer) clearTimeout(this.timer);
    await Promise.all(this.loops);
    await this.running;
  }

  /** Runs `sync` after `delayMs`; one run at a time, a request during a run runs it again after. */
  protected schedule(delayMs: number): void {
    if (this.abort.signal.aborted) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.sync()
        .catch((err: unknown) => {
          this.log.warn('sync failed; retrying', { err: (err as Error).message });
          return 1000;
        })
        .then((next) => {
          this.running = undefined;
          if (this.again) {
            this.again = false;
            this.schedule(100);
          } else if (next !== undefined) {
            this.schedule(next);
          }
        });
    }, delayMs);
    this.timer.unref();
  }

  /** Brings the world in line; resolves with when to look again (undefined: at the next change). */
  protected abstract sync(): Promise<number | undefined>;
}

/** Deletes bootstrap-token Secrets when they expire (`tokencleaner`). */
export class TokenCleaner extends TokenSecretController {
  protected async sync(): Promise<number | undefined> {
    const now = this.now();
    let next: number | undefined;
    for (const { secret, token } of this.secrets.tokens()) {
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

export interface SignerOptions extends LoopOptions {
  /** The kubeconfig published in cluster-info when the ConfigMap does not exist yet. */
  clusterInfoKubeconfig: string;
}

/** Keeps the `jws-kubeconfig-<id>` signatures of cluster-info current (`bootstrapsigner`). */
export class BootstrapSigner extends TokenSecretController {
  private clusterInfo: ApiObject | undefined;
  private clusterInfoListed = false;

  constructor(client: ApiClient, log: Logger, private readonly signerOpts: SignerOptions) {
    super(client, log, signerOpts);
  }

  override get synced(): boolean {
    return super.synced && this.clusterInfoListed;
  }

  protected override extraLoops(): Promise<void>[] {
    return [
      runListWatch(
        this.client,
        `/api/v1/namespaces/${PUBLIC_NAMESPACE}/configmaps`,
        {
          onSynced: () => (this.clusterInfoListed = true),
          onList: (items) => {
            this.clusterInfo = items.find((c) => c.metadata?.name === CLUSTER_INFO_CONFIG_MAP);
            this.schedule(0);
          },
          onEvent: (e) => {
            this.clusterInfo = e.type === 'DELETED' ? undefined : e.object;
            this.schedule(0);
          },
        },
        { ...this.common(), query: `fieldSelector=${encodeURIComponent(`metadata.name=${CLUSTER_INFO_CONFIG_MAP}`)}` },
      ),
    ];
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
    const current = this.clusterInfo ?? (await this.createClusterInfo());
    if (!current) return undefined;
    const data = { ...((current['data'] ?? {}) as Record<string, string>) };
    const content = data['kubeconfig'];
    if (typeof content !== 'string') return undefined;
    const now = this.now();
    const want = new Map<string, string>();
    let next: number | undefined;
    for (const { token } of this.secrets.tokens()) {
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
        this.clusterInfo = await this.client.request('PUT', CLUSTER_INFO, { ...current, data });
        this.log.info('updated the cluster-info signatures', { tokens: [...want.keys()].map((k) => k.slice(JWS_KEY_PREFIX.length)) });
      } catch (err) {
        // Changed meanwhile: the watch brings the new version and another sync.
        if (!(err instanceof ApiError && (err.code === 409 || err.code === 404))) throw err;
      }
    }
    return next === undefined ? undefined : Math.min(next + 100, this.opts.resyncMs);
  }
}
