import { connect, type NatsConnection, type Subscription } from 'nats';
import { watch } from '@svc/proto';
import { tracingEnabled, type Logger } from '@svc/service-kit';
import { ALL_SUBJECTS, TRACEPARENT_HEADER, decodeEvent } from './bus';
import { natsConnectOptions, type NatsTlsFiles } from './nats-options';

/**
 * The receiving end of the bus, for gateways: one NATS subscription per
 * process, decoded once and handed to every local listener in bus order.
 * Delivery on the bus is at most once; listeners detect gaps through
 * `prev_revision` and fill them with a catch-up.
 */
/** `traceparent`: the trace of the write behind the change, when it was traced and this process traces. */
export type ChangeListener = (event: watch.ChangeEvent, traceparent?: string) => void;

export class ChangeSubscriber {
  private readonly listeners = new Set<ChangeListener>();
  private subscription: Subscription | undefined;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly log: Logger,
  ) {}

  static async connect(natsUrl: string, log: Logger, tls?: NatsTlsFiles, name = 'gateway'): Promise<ChangeSubscriber> {
    const nc = await connect(natsConnectOptions(natsUrl, name, tls));
    const subscriber = new ChangeSubscriber(nc, log);
    subscriber.subscription = nc.subscribe(ALL_SUBJECTS, {
      callback: (err, msg) => {
        if (err) {
          log.warn('bus subscription error', { err });
          return;
        }
        let event: watch.ChangeEvent;
        try {
          event = decodeEvent(msg.data);
        } catch (decodeErr) {
          log.error('undecodable bus message', { err: decodeErr });
          return;
        }
        // Headers are decoded only while tracing is on.
        const traceparent = tracingEnabled() && msg.headers ? msg.headers.get(TRACEPARENT_HEADER) || undefined : undefined;
        for (const l of subscriber.listeners) l(event, traceparent);
      },
    });
    return subscriber;
  }

  /** Whether the bus connection is up (for readiness). */
  get connected(): boolean {
    return !this.nc.isClosed() && this.nc.status !== undefined;
  }

  listen(listener: ChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.subscription?.unsubscribe();
    await this.nc.drain().catch(() => undefined);
  }

  /** Round trip to the NATS server; rejects when it is unreachable. */
  async ping(): Promise<void> {
    await this.nc.flush();
  }

  get logger(): Logger {
    return this.log;
  }
}
