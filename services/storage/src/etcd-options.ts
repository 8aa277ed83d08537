import { ExponentialBackoff, handleWhen, noop, retry } from 'cockatiel';
import { GRPCUnavailableError, type IOptions } from 'etcd3';

/**
 * How every etcd client of the system (storage, watch-fanout) talks to etcd.
 *
 * The etcd3 client's defaults put a circuit breaker on each host that opens
 * after three consecutive "recoverable" failures (an answer too large for
 * one request, or one request's deadline, count as such) and then fails
 * every call of every caller for five seconds; and they retry each of those
 * failures three times. With one etcd, one bad request became an outage.
 * Here nothing is shared between calls: no breaker; only a transport failure
 * (etcd unreachable) is retried, once, quickly, and then answered 503 by the
 * caller; every other failure is that request's alone.
 *
 * A response may be large (an unpaged list is read in batches, see
 * EtcdStore.list): the limit is set for a batch of objects of the largest
 * size etcd accepts.
 */
export const ETCD_MAX_RESPONSE_BYTES = 512 * 1024 * 1024;

export function etcdFaultHandling(): NonNullable<IOptions['faultHandling']> {
  return {
    host: () => noop,
    global: retry(
      handleWhen((err) => err instanceof GRPCUnavailableError),
      { maxAttempts: 1, backoff: new ExponentialBackoff({ initialDelay: 50, maxDelay: 250 }) },
    ),
  };
}

export function etcdClientOptions(hosts: string[], extra: Partial<IOptions> = {}): IOptions {
  return {
    hosts,
    faultHandling: etcdFaultHandling(),
    grpcOptions: { 'grpc.max_receive_message_length': ETCD_MAX_RESPONSE_BYTES },
    ...extra,
  };
}
