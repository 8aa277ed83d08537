import type { ApiObject, ResourceDefinition } from '@svc/apimachinery';
import type { WebhookConverterOptions } from './converter';
import { versionedObjects, type VersionedObjects } from './versioned-storage';

/**
 * Watch events of a kind stored in another version are converted once per
 * served version and the result is shared by every watch of that version on
 * this gateway, as upstream's watch cache converts an event once per
 * version: N watchers of a webhook-converted version cost one webhook call
 * per change, not N.
 *
 * The hub hands a change to its watchers one after another in the same
 * turn, so each claims the change's conversion as it receives it; the first
 * claim starts it, later ones share it. A conversion is kept only until
 * every claim has been taken or released, so memory stays bounded by what
 * watchers still wait for. Conversions of one version run one at a time in
 * the order they were first claimed; each watch keeps its own order by
 * taking its claims in order.
 */
export interface ConversionClaim {
  /** The stored objects as the served version shows them (shared: not to be changed); settles the claim. */
  take(): Promise<ApiObject[]>;
  /** Gives the claim up without taking it (the watch ended). */
  release(): void;
}

interface SharedResult {
  result: Promise<ApiObject[]>;
  claims: number;
}

export class SharedConversion {
  private readonly inFlight = new Map<string, SharedResult>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly objects: Pick<VersionedObjects, 'fromStorage'>) {}

  /** Conversions claimed and not yet taken by all their watchers. */
  get size(): number {
    return this.inFlight.size;
  }

  /** Claims the conversion of the change `id` (the same id, the same stored objects). */
  claim(id: string, stored: readonly ApiObject[]): ConversionClaim {
    let shared = this.inFlight.get(id);
    if (!shared) {
      const entry: SharedResult = { result: Promise.resolve([]), claims: 0 };
      // Nobody left to show it to: the webhook is not called.
      entry.result = this.queue.then(() => (entry.claims > 0 ? this.objects.fromStorage(stored) : []));
      // A failure is reported to whoever takes it; the queue goes on, and one nobody takes is not an unhandled rejection.
      this.queue = entry.result.catch(() => undefined);
      this.inFlight.set(id, entry);
      shared = entry;
    }
    const entry = shared;
    entry.claims++;
    let settled = false;
    const release = (): void => {
      if (settled) return;
      settled = true;
      entry.claims--;
      if (entry.claims === 0 && this.inFlight.get(id) === entry) this.inFlight.delete(id);
    };
    return {
      take: async () => {
        try {
          return await entry.result;
        } finally {
          release();
        }
      },
      release,
    };
  }
}

/** The shared conversions of each served version; a changed definition is a new one, and the old one goes with its last watch. */
export class WatchConversions {
  private readonly byDefinition = new WeakMap<ResourceDefinition, SharedConversion | null>();

  constructor(private readonly options?: WebhookConverterOptions) {}

  /** The shared conversion of `def`'s events, or undefined when its objects are stored as served. */
  for(def: ResourceDefinition): SharedConversion | undefined {
    let shared = this.byDefinition.get(def);
    if (shared === undefined) {
      const objects = versionedObjects(def, this.options);
      shared = objects ? new SharedConversion(objects) : null;
      this.byDefinition.set(def, shared);
    }
    return shared ?? undefined;
  }
}
