import type { ApiObject } from '@svc/apimachinery';
import type { Logger } from '@svc/service-kit';
import type { ApiClient, WatchEvent } from './client';

/**
 * The reflector loop a controller runs over one collection: list, hand every
 * object to `onList`, watch from the list's resourceVersion and hand every
 * event to `onEvent` until the watch ends (its timeout, which is also the
 * resync period, a restart, a 410), then list again. Runs until `signal`
 * aborts; a failure is logged and retried after a second.
 */
export async function runListWatch(
  client: ApiClient,
  collection: string,
  handlers: { onList(items: ApiObject[]): void; onEvent(e: WatchEvent): void; onSynced?(): void },
  opts: { resyncSeconds: number; signal: AbortSignal; log: Logger; query?: string },
): Promise<void> {
  const extra = opts.query ? `&${opts.query}` : '';
  while (!opts.signal.aborted) {
    try {
      const list = await client.request<{ metadata?: { resourceVersion?: string }; items?: ApiObject[] }>('GET', `${collection}${opts.query ? `?${opts.query}` : ''}`);
      handlers.onSynced?.();
      handlers.onList(list.items ?? []);
      const rv = encodeURIComponent(list.metadata?.resourceVersion ?? '');
      await client.watch(`${collection}?watch=true&allowWatchBookmarks=true&timeoutSeconds=${Math.max(1, opts.resyncSeconds)}&resourceVersion=${rv}${extra}`, handlers.onEvent, opts.signal);
    } catch (err) {
      if (opts.signal.aborted) break;
      opts.log.warn('list or watch failed; retrying', { collection, err: (err as Error).message });
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}
