import { ApiError, type ApiObject } from '@svc/apimachinery';
import type { Logger } from '@svc/service-kit';
import type { ApiClient } from './client';
import { runListWatch } from './list-watch';

/** The account every namespace has, that pods without one run as. */
export const DEFAULT_SERVICE_ACCOUNT = 'default';

/**
 * Service accounts, as the original controller does it: every active
 * namespace has a `default` ServiceAccount, created when the namespace
 * appears and again when someone deletes it. It works through the API like
 * any client; a namespace that is terminating or gone is left alone.
 */
export class ServiceAccountController {
  private readonly abort = new AbortController();
  private loops: Promise<void>[] = [];
  private listed = false;
  private readonly pending = new Set<string>();

  constructor(
    private readonly client: ApiClient,
    private readonly log: Logger,
    private readonly opts: { resyncMs: number },
  ) {}

  get synced(): boolean {
    return this.listed;
  }

  start(): void {
    if (this.loops.length > 0) return;
    const common = { resyncSeconds: Math.round(this.opts.resyncMs / 1000), signal: this.abort.signal, log: this.log };
    this.loops = [
      runListWatch(
        this.client,
        '/api/v1/namespaces',
        {
          onSynced: () => (this.listed = true),
          onList: (items) => items.forEach((ns) => this.observeNamespace(ns)),
          onEvent: (e) => {
            if (e.type === 'ADDED' || e.type === 'MODIFIED') this.observeNamespace(e.object);
          },
        },
        common,
      ),
      // A deleted default account comes back.
      runListWatch(
        this.client,
        '/api/v1/serviceaccounts',
        {
          onList: () => undefined,
          onEvent: (e) => {
            const ns = e.object.metadata?.namespace;
            if (e.type === 'DELETED' && ns) this.ensure(ns);
          },
        },
        { ...common, query: `fieldSelector=${encodeURIComponent(`metadata.name=${DEFAULT_SERVICE_ACCOUNT}`)}` },
      ),
    ];
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.all(this.loops);
  }

  private observeNamespace(ns: ApiObject): void {
    const name = ns.metadata?.name;
    const phase = (ns['status'] as { phase?: string } | undefined)?.phase;
    if (name && !ns.metadata?.deletionTimestamp && phase !== 'Terminating') this.ensure(name);
  }

  /** Creates the default account of `namespace` unless it exists; once at a time per namespace. */
  private ensure(namespace: string): void {
    if (this.abort.signal.aborted || this.pending.has(namespace)) return;
    this.pending.add(namespace);
    const account = { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: DEFAULT_SERVICE_ACCOUNT, namespace } };
    this.client
      .request('POST', `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts`, account)
      .then(
        () => this.log.info('created the default service account', { namespace }),
        (err: unknown) => {
          // Already there, or the namespace is going or gone: nothing to do.
          if (err instanceof ApiError && (err.code === 409 || err.code === 403 || err.code === 404)) return;
          this.log.warn('could not create the default service account; retrying at the next resync', { namespace, err: (err as Error).message });
        },
      )
      .finally(() => this.pending.delete(namespace));
  }
}
