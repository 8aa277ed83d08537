import * as grpc from '@grpc/grpc-js';
import { watch } from '@svc/proto';
import { CLIENT_OPTIONS, callUnary, fromGrpcError, outgoingMetadata, type CallOptions } from '@svc/service-kit';

/** Typed client of the watch-fanout service. */
export class WatchFanoutClient {
  private readonly client: watch.WatchFanoutClient;

  constructor(address: string) {
    this.client = new watch.WatchFanoutClient(address, grpc.credentials.createInsecure(), CLIENT_OPTIONS);
  }

  close(): void {
    this.client.close();
  }

  /**
   * The changes after `after` (up to `until`, 0 = the replica's head) under
   * `prefix`, ending with a PROGRESS event naming the revision they are
   * complete up to.
   */
  async *catchUp(after: number, until: number, prefix: string, opts: CallOptions = {}): AsyncGenerator<watch.ChangeEvent> {
    const call = this.client.catchUp(
      { afterRevision: after, untilRevision: until, keyPrefix: prefix },
      outgoingMetadata(opts),
      { deadline: new Date(Date.now() + (opts.timeoutMs ?? 30000)) },
    );
    try {
      for await (const msg of call as AsyncIterable<watch.ChangeEvent>) yield msg;
    } catch (err) {
      throw fromGrpcError(err, 'watch-fanout');
    } finally {
      call.cancel();
    }
  }

  async head(opts?: CallOptions): Promise<{ revision: number; oldestRevision: number }> {
    return callUnary('watch-fanout', this.client.head.bind(this.client), {}, opts);
  }
}
