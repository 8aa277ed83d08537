import { ApiError, type ApiObject } from '@svc/apimachinery';
import type { Logger } from '@svc/service-kit';
import type { ApiClient } from './client';
import type { SharedInformer, SharedInformerFactory } from './informer';
import { runWorkers, WorkQueue, type WorkQueueOptions } from './work-queue';

/** The account every namespace has, that pods without one run as. */
export const DEFAULT_SERVICE_ACCOUNT = 'default';

/**
 * Service accounts, as the original controller does it: every active
 * namespace has a `default` ServiceAccount, created when the namespace
 * appears and again when someone deletes it. It works through the API like
 * any client; a namespace that is terminating or gone is left alone. The
 * shared informers of namespaces and of default accounts queue namespaces;
 * a worker creates what is missing.
 */
export class ServiceAccountController {
  private readonly namespaces: SharedInformer;
  private readonly accounts: SharedInformer;
  private readonly queue: WorkQueue;
  private workers: Promise<void> | undefined;

  constructor(
    private readonly client: ApiClient,
    informers: SharedInformerFactory,
    private readonly log: Logger,
    opts: { queue?: WorkQueueOptions } = {},
  ) {
    this.namespaces = informers.informerFor('/api/v1/namespaces');
    this.accounts = informers.informerFor('/api/v1/serviceaccounts', `fieldSelector=${encodeURIComponent(`metadata.name=${DEFAULT_SERVICE_ACCOUNT}`)}`);
    this.queue = new WorkQueue(opts.queue);
  }

  get synced(): boolean {
    return this.namespaces.hasSynced();
  }

  start(): void {
    if (this.workers) return;
    const observe = (ns: ApiObject): void => {
      if (isActive(ns)) this.queue.add(ns.metadata?.name ?? '');
    };
    this.namespaces.addEventHandler({ onAdd: observe, onUpdate: (_old, ns) => observe(ns) });
    // A deleted default account comes back.
    this.accounts.addEventHandler({
      onDelete: (sa) => {
        const ns = sa.metadata?.namespace;
        if (ns) this.queue.add(ns);
      },
    });
    this.workers = runWorkers(2, this.queue, (ns) => this.ensure(ns), (ns, err) =>
      this.log.warn('could not create the default service account; retrying', { namespace: ns, err: err.message, retries: this.queue.numRequeues(ns) + 1 }),
    );
  }

  async stop(): Promise<void> {
    this.queue.shutDown();
    await this.workers;
  }

  /** Creates the default account of `namespace` unless it exists or the namespace is going. */
  private async ensure(namespace: string): Promise<void> {
    if (!namespace) return;
    const ns = this.namespaces.get(namespace);
    if (this.namespaces.hasSynced() && (!ns || !isActive(ns))) return;
    if (this.accounts.hasSynced() && this.accounts.get(`${namespace}/${DEFAULT_SERVICE_ACCOUNT}`)) return;
    const account = { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: DEFAULT_SERVICE_ACCOUNT, namespace } };
    try {
      await this.client.request('POST', `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts`, account);
      this.log.info('created the default service account', { namespace });
    } catch (err) {
      // Already there, or the namespace is going or gone: nothing to do.
      if (err instanceof ApiError && (err.code === 409 || err.code === 403 || err.code === 404)) return;
      throw err;
    }
  }
}

function isActive(ns: ApiObject): boolean {
  const phase = (ns['status'] as { phase?: string } | undefined)?.phase;
  return Boolean(ns.metadata?.name) && !ns.metadata?.deletionTimestamp && phase !== 'Terminating';
}
