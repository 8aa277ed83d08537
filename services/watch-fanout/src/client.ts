import * as grpc from '@grpc/grpc-js';
import { ApiError } from '@svc/apimachinery';
import { watch } from '@svc/proto';
import { callUnary, fromGrpcError, outgoingMetadata, type CallOptions, channelTo, type InternalTls, boundMethod } from '@svc/service-kit';

/** The gateway's end of the bus travels with the client: both are what a caller of watch-fanout needs. */
export { ChangeSubscriber, type ChangeListener } from './subscriber';
export { NATS_TLS_FLAGS, natsTlsFromFlags, type NatsTlsFiles } from './nats-options';

function isUnavailable(err: unknown): boolean {
  return (err as { code?: number } | null)?.code === grpc.status.UNAVAILABLE;
}

/**
 * Typed client of the watch-fanout service. Given several replicas
 * (comma-separated addresses), calls take turns among them, and a call that
 * finds its replica unavailable before any answer moves on to the next.
 */
export class WatchFanoutClient {
  private readonly clients: watch.WatchFanoutClient[];
  private next = 0;

  constructor(addresses: string, tls: InternalTls) {
    const list = addresses.split(',').map((a) => a.trim()).filter(Boolean);
    if (list.length === 0) throw new Error('watch-fanout client needs at least one address');
    this.clients = list.map((a) => new watch.WatchFanoutClient(...channelTo(a, 'watch-fanout', tls)));
  }

  close(): void {
    for (const c of this.clients) c.close();
  }

  /** The replicas in the order this call tries them. */
  private rotation(): watch.WatchFanoutClient[] {
    const start = this.next++ % this.clients.length;
    return [...this.clients.slice(start), ...this.clients.slice(0, start)];
  }

  /**
   * The changes after `after` (up to `until`, 0 = the replica's head) under
   * `prefix`, ending with a PROGRESS event naming the revision they are
   * complete up to.
   */
  async *catchUp(after: number, until: number, prefix: string, opts: CallOptions = {}): AsyncGenerator<watch.ChangeEvent> {
    const replicas = this.rotation();
    for (const [i, client] of replicas.entries()) {
      const call = client.catchUp({ afterRevision: after, untilRevision: until, keyPrefix: prefix }, outgoingMetadata(opts), {
        deadline: new Date(Date.now() + (opts.timeoutMs ?? 30000)),
      });
      let answered = false;
      try {
        for await (const msg of call as AsyncIterable<watch.ChangeEvent>) {
          answered = true;
          yield msg;
        }
        return;
      } catch (err) {
        if (!answered && i < replicas.length - 1 && isUnavailable(err)) continue;
        throw fromGrpcError(err, 'watch-fanout');
      } finally {
        call.cancel();
      }
    }
  }

  async head(opts?: CallOptions): Promise<{ revision: number; oldestRevision: number }> {
    const replicas = this.rotation();
    for (const [i, client] of replicas.entries()) {
      try {
        return await callUnary('watch-fanout', boundMethod(client, client.head), {}, opts);
      } catch (err) {
        if (i === replicas.length - 1 || !(err instanceof ApiError && err.code === 503)) throw err;
      }
    }
    throw new Error('unreachable');
  }
}
