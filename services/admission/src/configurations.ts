import type { ApiObject } from '@svc/apimachinery';
import { APIEXTENSIONS_GROUP } from '@svc/kinds';
import type { Logger } from '@svc/service-kit';
import type { StorageClient } from '@svc/storage/client';
import type { WatchFanoutClient } from '@svc/watch-fanout/client';
import { ObjectFeed, type FeedSink, type FeedSource } from '@svc/watch-fanout/feed';

/**
 * The stored objects of `admissionregistration.svc.io` that admission acts
 * on (webhook configurations, policies and their bindings), and the custom
 * resource definitions (the versions a resource is served at), kept in memory
 * and current by watch-fanout's object feed: a list at one revision, then
 * the changes after it (within the feed's poll interval plus one call), as
 * the original server keeps them in informers. Each kind's objects are
 * listed in name order (the order the original calls webhook
 * configurations in), and `generation` moves on with every change, so a
 * reader can keep what it compiled from a list until it moves.
 */

export const ADMISSION_REGISTRATION_GROUP = 'admissionregistration.svc.io';

export type AdmissionConfigurationKind = 'MutatingWebhookConfiguration' | 'ValidatingWebhookConfiguration' | 'ValidatingAdmissionPolicy' | 'ValidatingAdmissionPolicyBinding' | 'CustomResourceDefinition';

/** The kinds of the group and the resources they are stored under. */
export const ADMISSION_CONFIGURATION_SOURCES: ReadonlyArray<FeedSource & { kind: AdmissionConfigurationKind }> = [
  { group: ADMISSION_REGISTRATION_GROUP, resource: 'mutatingwebhookconfigurations', kind: 'MutatingWebhookConfiguration' },
  { group: ADMISSION_REGISTRATION_GROUP, resource: 'validatingwebhookconfigurations', kind: 'ValidatingWebhookConfiguration' },
  { group: ADMISSION_REGISTRATION_GROUP, resource: 'validatingadmissionpolicies', kind: 'ValidatingAdmissionPolicy' },
  { group: ADMISSION_REGISTRATION_GROUP, resource: 'validatingadmissionpolicybindings', kind: 'ValidatingAdmissionPolicyBinding' },
  // The versions each custom resource is served at (rules with matchPolicy Equivalent).
  { group: APIEXTENSIONS_GROUP, resource: 'customresourcedefinitions', kind: 'CustomResourceDefinition' },
];

const KINDS = new Set<string>(ADMISSION_CONFIGURATION_SOURCES.map((s) => s.kind));

/** What admission reads: the current objects of one kind, and a number that changes whenever any of them does. */
export interface AdmissionConfigurationReader {
  list(kind: AdmissionConfigurationKind): readonly ApiObject[];
  readonly generation: number;
  /** Whether the objects have been read once; before that `list` answers nothing. */
  readonly ready: boolean;
}

export class AdmissionConfigurations implements FeedSink, AdmissionConfigurationReader {
  private readonly objects = new Map<string, Map<string, ApiObject>>();
  /** Each kind's list in name order, made again after a change. */
  private readonly sorted = new Map<string, readonly ApiObject[]>();
  private changes = 0;
  private loaded: () => boolean = () => true;

  /** A feed that keeps these configurations equal to the stored objects; started, and stopped by the caller. */
  follow(storage: StorageClient, fanout: WatchFanoutClient, opts: { log: Logger; pollMs?: number }): ObjectFeed {
    const feed = new ObjectFeed(this, storage, fanout, { log: opts.log, name: 'admission configurations', ...(opts.pollMs !== undefined ? { pollMs: opts.pollMs } : {}) }, [...ADMISSION_CONFIGURATION_SOURCES]);
    this.loaded = () => feed.ready;
    feed.start();
    return feed;
  }

  get generation(): number {
    return this.changes;
  }

  get ready(): boolean {
    return this.loaded();
  }

  list(kind: AdmissionConfigurationKind): readonly ApiObject[] {
    let list = this.sorted.get(kind);
    if (!list) {
      const byName = this.objects.get(kind);
      list = byName ? [...byName.keys()].sort().map((name) => byName.get(name) as ApiObject) : [];
      this.sorted.set(kind, list);
    }
    return list;
  }

  clear(): void {
    this.objects.clear();
    this.sorted.clear();
    this.changes++;
  }

  apply(kind: string, obj: ApiObject, deleted = false): void {
    if (!KINDS.has(kind)) return;
    const name = obj.metadata?.name ?? '';
    let byName = this.objects.get(kind);
    if (!byName) this.objects.set(kind, (byName = new Map()));
    if (deleted) {
      if (!byName.delete(name)) return;
    } else {
      const known = byName.get(name);
      // A change read twice (the feed may) changes nothing the second time.
      if (known && known.metadata?.resourceVersion !== undefined && known.metadata.resourceVersion === obj.metadata?.resourceVersion) return;
      byName.set(name, obj);
    }
    this.sorted.delete(kind);
    this.changes++;
  }

  get size(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const { kind } of ADMISSION_CONFIGURATION_SOURCES) out[kind] = this.objects.get(kind)?.size ?? 0;
    return out;
  }
}
