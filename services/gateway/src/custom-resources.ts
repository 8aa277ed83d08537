import { collectionPrefix, type ApiObject, type ResourceDefinition, type ResourceRegistry } from '@svc/apimachinery';
import { APIEXTENSIONS_GROUP, customResourceDefinitions } from '@svc/kinds';
import type { Change } from './watch/change';
import type { Logger } from '@svc/service-kit';
import type { StorageClient } from '@svc/storage/client';
import type { HubWatcher, WatchHub } from './watch/watch-hub';

/**
 * Serves custom resources: the gateway lists the CustomResourceDefinitions
 * at start and follows their changes on the change stream it already
 * consumes for watches, keeping one registry entry per served version of
 * every Established definition. Handlers, discovery and OpenAPI read the
 * registry, so they see no difference from built-in kinds; a removed
 * definition's entries go, and its paths answer 404.
 */
const CRD_KEY = { group: APIEXTENSIONS_GROUP, resource: 'customresourcedefinitions', namespace: '' };
const RETRY_MS = 1000;

function entryKey(def: Pick<ResourceDefinition, 'group' | 'version' | 'plural'>): string {
  return `${def.group}/${def.version}/${def.plural}`;
}

export class CustomResourceServing {
  /** Registry entries added for each definition, by definition name. */
  private readonly served = new Map<string, ResourceDefinition[]>();
  /** Which definition owns an entry: a definition never replaces a built-in kind or another's entry. */
  private readonly owners = new Map<string, string>();
  private listedAt = -1;
  private synced = false;
  private stopped = false;
  /** Changes that arrived while a list was in flight, applied after it. */
  private pending: Change[] = [];
  private detach: (() => void) | undefined;
  private watcher: HubWatcher | undefined;

  constructor(
    private readonly registry: ResourceRegistry,
    private readonly storage: StorageClient,
    private readonly hub: WatchHub,
    private readonly log: Logger,
  ) {}

  /** True once the definitions were listed and their kinds are served. */
  get isSynced(): boolean {
    return this.synced;
  }

  /** Lists the definitions (retrying until storage answers) and follows their changes. */
  async start(): Promise<void> {
    const prefix = collectionPrefix(CRD_KEY);
    const watcher: HubWatcher = {
      prefix,
      deliver: (e) => this.onChange(e),
      // The hub lost continuity: list again rather than miss a change.
      expire: (reason) => {
        this.log.warn('custom resource definitions: the change stream lost continuity; listing again', { reason: reason.message });
        void this.resync();
      },
      end: () => undefined,
      internal: true,
    };
    this.watcher = watcher;
    this.detach = this.hub.register(watcher).detach;
    await this.relist();
  }

  stop(): void {
    this.stopped = true;
    this.detach?.();
  }

  private async resync(): Promise<void> {
    if (this.stopped || !this.watcher) return;
    this.detach?.();
    this.detach = this.hub.register(this.watcher).detach;
    await this.relist();
  }

  private async relist(): Promise<void> {
    this.listedAt = -1;
    for (;;) {
      if (this.stopped) return;
      try {
        const page = await this.storage.list(CRD_KEY, {}, { timeoutMs: 10_000 });
        const seen = new Set<string>();
        for (const crd of page.items) {
          const name = crd.metadata?.name ?? '';
          seen.add(name);
          this.serve(name, crd);
        }
        for (const name of [...this.served.keys()]) if (!seen.has(name)) this.serve(name, undefined);
        this.listedAt = page.revision;
        const pending = this.pending.filter((e) => e.revision > page.revision);
        this.pending = [];
        for (const e of pending) this.apply(e);
        if (!this.synced) this.log.info('custom resource definitions listed', { definitions: page.items.length, revision: page.revision });
        this.synced = true;
        return;
      } catch (err) {
        this.log.warn('could not list custom resource definitions; retrying', { err: (err as Error).message });
        await new Promise((r) => setTimeout(r, RETRY_MS));
      }
    }
  }

  private onChange(e: Change): void {
    if (this.listedAt < 0) {
      this.pending.push(e);
      return;
    }
    if (e.revision > this.listedAt) this.apply(e);
  }

  private apply(e: Change): void {
    const name = e.key.slice(collectionPrefix(CRD_KEY).length);
    if (e.type === 'DELETED' || !e.object) {
      this.serve(name, undefined);
      return;
    }
    let crd: ApiObject;
    try {
      crd = e.object.copy();
    } catch (err) {
      this.log.warn('custom resource definition change could not be read', { name, err: (err as Error).message });
      return;
    }
    this.serve(name, crd);
  }

  /** Makes the registry hold exactly the entries `crd` stands for (none when it is gone or not Established). */
  private serve(name: string, crd: ApiObject | undefined): void {
    let wanted: ResourceDefinition[] = [];
    try {
      wanted = crd ? customResourceDefinitions(crd) : [];
    } catch (err) {
      this.log.warn('custom resource definition could not be served', { name, err: (err as Error).message });
    }
    const before = this.served.get(name) ?? [];
    const wantedKeys = new Set(wanted.map(entryKey));
    for (const def of before) {
      const key = entryKey(def);
      if (wantedKeys.has(key) || this.owners.get(key) !== name) continue;
      this.registry.remove(def.group, def.version, def.plural);
      this.owners.delete(key);
      const ended = this.hub.endWatchesOf(def);
      if (ended > 0) this.log.info('watches ended: the resource is no longer served', { name, resource: key, watches: ended });
    }
    const now: ResourceDefinition[] = [];
    for (const def of wanted) {
      const key = entryKey(def);
      const owner = this.owners.get(key);
      if ((owner === undefined && this.registry.lookup(def.group, def.version, def.plural)) || (owner !== undefined && owner !== name)) {
        this.log.warn('custom resource not served: the resource is already served', { name, resource: key, by: owner ?? 'a built-in kind' });
        continue;
      }
      this.owners.set(key, name);
      this.registry.add(def);
      now.push(def);
    }
    if (now.length > 0) this.served.set(name, now);
    else this.served.delete(name);
    const versions = (defs: ResourceDefinition[]): string => defs.map((d) => d.version).join(',');
    if (versions(before) !== versions(now)) this.log.info('custom resources served', { name, versions: now.map((d) => d.version) });
  }
}
