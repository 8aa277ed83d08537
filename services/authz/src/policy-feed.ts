import { ApiError, parseObjectKey, type ApiObject } from '@svc/apimachinery';
import { watch } from '@svc/proto';
import type { Logger } from '@svc/service-kit';
import type { StorageClient } from '@svc/storage/client';
import type { WatchFanoutClient } from '@svc/watch-fanout/client';
import type { RbacPolicy } from './rbac';

/**
 * Keeps an RbacPolicy equal to the stored roles and bindings: one list of
 * the four kinds at a single revision, then the changes after it from
 * watch-fanout's history, asked for whenever its head moves (checked every
 * `pollMs`). A change is in force within that interval plus one call. When
 * the history no longer reaches back far enough (410), everything is listed
 * again.
 */
export const RBAC_STORAGE_GROUP = 'rbac.authorization.svc.io';

const RESOURCES: Record<string, string> = {
  roles: 'Role',
  clusterroles: 'ClusterRole',
  rolebindings: 'RoleBinding',
  clusterrolebindings: 'ClusterRoleBinding',
};

const PREFIX = `/registry/${RBAC_STORAGE_GROUP}/`;
const PAGE = 500;

export interface PolicyFeedOptions {
  pollMs?: number;
  log: Logger;
}

export class PolicyFeed {
  private revision = 0;
  private synced = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly policy: RbacPolicy,
    private readonly storage: StorageClient,
    private readonly fanout: WatchFanoutClient,
    private readonly opts: PolicyFeedOptions,
  ) {}

  /** Whether the policy has been read once (authz is ready). */
  get ready(): boolean {
    return this.synced;
  }

  /** The revision the policy is complete up to. */
  get position(): number {
    return this.revision;
  }

  start(): void {
    let failures = 0;
    const tick = (): void => {
      if (this.stopped) return;
      this.running = this.step()
        .then(() => {
          if (failures > 0) this.opts.log.info('RBAC policy updates resumed', { failures });
          failures = 0;
        })
        .catch((err: unknown) => {
          // The first failure of a run is a warning; the rest of it (a peer still starting, say) is debug detail.
          if (failures++ === 0) this.opts.log.warn('RBAC policy update failed; retrying', { err: (err as Error).message });
          else this.opts.log.debug('RBAC policy update failed again', { err: (err as Error).message, failures });
        })
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, this.opts.pollMs ?? 200);
        });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  /** Lists everything at one revision. */
  private async relist(): Promise<void> {
    const revision = await this.storage.currentRevision({ timeoutMs: 10000 });
    const objects: Array<[string, ApiObject]> = [];
    for (const [resource, kind] of Object.entries(RESOURCES)) {
      let continueToken = '';
      do {
        const page = await this.storage.list({ group: RBAC_STORAGE_GROUP, resource, namespace: '' }, { at: { revision }, limit: PAGE, continueToken }, { timeoutMs: 30000 });
        for (const item of page.items) objects.push([kind, item]);
        continueToken = page.continueToken;
      } while (continueToken !== '');
    }
    this.policy.clear();
    for (const [kind, obj] of objects) this.policy.apply(kind, obj);
    this.revision = revision;
    this.synced = true;
    this.opts.log.info('RBAC policy loaded', { revision, ...this.policy.size });
  }

  /** One round: list if never listed, else apply the changes since the last revision. */
  async step(): Promise<void> {
    if (!this.synced) return this.relist();
    const head = await this.fanout.head({ timeoutMs: 5000 });
    if (head.revision <= this.revision) return;
    try {
      for await (const e of this.fanout.catchUp(this.revision, 0, PREFIX, { timeoutMs: 30000 })) {
        if (e.type === watch.EventType.EVENT_TYPE_PROGRESS) {
          this.revision = Math.max(this.revision, e.revision);
          continue;
        }
        this.applyEvent(e);
        this.revision = Math.max(this.revision, e.revision);
      }
    } catch (err) {
      if (err instanceof ApiError && err.code === 410) {
        this.opts.log.warn('RBAC policy fell behind the change history; listing again', { revision: this.revision });
        return this.relist();
      }
      throw err;
    }
  }

  private applyEvent(e: watch.ChangeEvent): void {
    const key = parseObjectKey(e.key);
    const kind = key ? RESOURCES[key.resource] : undefined;
    if (!key || !kind) return;
    if (e.type === watch.EventType.EVENT_TYPE_DELETED) {
      this.policy.apply(kind, { metadata: { name: key.name, ...(key.namespace ? { namespace: key.namespace } : {}) } }, true);
      return;
    }
    if (e.truncated || e.object.length === 0) {
      // Too large for the bus and not in the history: read everything again.
      this.synced = false;
      return;
    }
    this.policy.apply(kind, JSON.parse(Buffer.from(e.object).toString('utf8')) as ApiObject);
  }
}
