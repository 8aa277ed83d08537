import { randomUUID } from 'node:crypto';
import { Etcd3, type IKeyValue } from 'etcd3';
import { etcdClientOptions, etcdTlsOptions, type EtcdTlsFiles } from '@svc/storage/etcd-options';
import { PLAIN_TRANSFORMER, ValueTransformError, type EncryptionAtRest } from '@svc/storage/encryption';
import { connect, consumerOpts, Events, type NatsConnection } from 'nats';
import { ApiError } from '@svc/apimachinery';
import { watch } from '@svc/proto';
import { createLogger, serverStream, startGrpcServer, unary, type Logger, loadInternalTls, type InternalTlsFiles } from '@svc/service-kit';
import { ALL_SUBJECTS, decodeEvent, ensureStream } from './bus';
import { History } from './history';
import { natsConnectOptions, type NatsTlsFiles } from './nats-options';
import { Publisher, setResourceVersion } from './publisher';
import { registerFanoutGauges } from './fanout-metrics';

/** Who may call this service (the identities of the internal certificates): gateways, and authz and admission for the state they follow. */
const ALLOWED_CALLERS = ['gateway', 'authz', 'admission'];

export interface WatchFanoutConfig {
  listen: string;
  /** host:port of the plaintext grpc.health.v1 port; empty or unset: none. */
  healthBindAddress?: string;
  /** This service's internal certificate and the internal CA (mutual TLS on every gRPC edge). */
  internalTls: InternalTlsFiles;
  etcdEndpoints: string[];
  /** Client certificate for etcd (TLS); plain connections without. */
  etcdTls?: EtcdTlsFiles;
  natsUrl: string;
  /** Client certificate for NATS (TLS); NATS maps it to the publisher's user. */
  natsTls?: NatsTlsFiles;
  /** Replica identity in the leader election; random when unset. */
  id?: string;
  /** How long changes stay in the history window (SPEC: 5 minutes). */
  historyWindowMs?: number;
  /** Most bytes of changes kept, in memory and in the bus stream (default 128 MiB). */
  historyMaxBytes?: number;
  /** How often the leading replica compacts etcd (0 never; default 5 minutes). */
  compactionIntervalMs?: number;
  /**
   * Encryption at rest, from the same --encryption-provider-config as
   * storage's. watch-fanout reads values straight from etcd (its watch, and
   * the fill-in of events too large for the bus), so it opens them itself:
   * routing them through storage would add a hop to every change and make
   * the publisher depend on storage being up. The bus then carries plain
   * objects, as gateways' caches hold them (the original's watch cache
   * holds decrypted objects too); NATS is internal and reached over mutual
   * TLS. Both services must be given the same file (the deployments mount
   * one file into both), and reload it on their own.
   */
  encryption?: EncryptionAtRest;
  logger?: Logger;
}

export interface WatchFanoutHandle {
  address: string;
  port: number;
  /** The plaintext health port's host:port, when --health-bind-address asked for one. */
  healthAddress?: string;
  history: History;
  publisher: Publisher;
  close(): Promise<void>;
}

const DEFAULT_WINDOW_MS = 5 * 60 * 1000;
const DEFAULT_HISTORY_BYTES = 128 * 1024 * 1024;
/** How long the health check waits for etcd's status. */
const ETCD_HEALTH_TIMEOUT_MS = 1000;
/** How long a catch-up waits for a revision the gateway saw before this replica did. */
const CATCH_UP_WAIT_MS = 10_000;

/**
 * Starts a watch-fanout replica: it keeps the history window from the bus,
 * serves catch-up, and campaigns to be the one publisher.
 */
export async function start(config: WatchFanoutConfig): Promise<WatchFanoutHandle> {
  const log = config.logger ?? createLogger('watch-fanout');
  const tls = loadInternalTls(config.internalTls);
  const id = config.id ?? `watch-fanout-${randomUUID().slice(0, 8)}`;
  const windowMs = config.historyWindowMs ?? DEFAULT_WINDOW_MS;
  const etcd = new Etcd3(etcdClientOptions(config.etcdEndpoints, { dialTimeout: 3000, ...etcdTlsOptions(config.etcdTls) }));
  const nc: NatsConnection = await connect(natsConnectOptions(config.natsUrl, id, config.natsTls));
  let natsUp = true;
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === Events.Disconnect) natsUp = false;
      else if (s.type === Events.Reconnect) natsUp = true;
    }
  })();
  const etcdAnswers = async (): Promise<boolean> => {
    await etcd.maintenance.status({ deadline: Date.now() + ETCD_HEALTH_TIMEOUT_MS });
    return true;
  };
  const jsm = await nc.jetstreamManager();
  const maxBytes = config.historyMaxBytes ?? DEFAULT_HISTORY_BYTES;
  await ensureStream(jsm, windowMs, maxBytes);
  const js = nc.jetstream();
  const history = new History(windowMs, Date.now, maxBytes);

  // Every replica follows the bus from the start of the window.
  // (An ordered push consumer: the pull-based `consume()` API needs a newer
  // server than Debian's nats-server 2.9.)
  const follow = consumerOpts();
  follow.orderedConsumer();
  follow.deliverAll();
  // An ordered consumer lives in the NATS server's memory: after a restart of
  // NATS the client makes it again once two idle heartbeats are missed. At the
  // library's 5 s the history stands still for some 13 s, past how long a
  // catch-up waits for it (CATCH_UP_WAIT_MS), and every gateway that missed a
  // change meanwhile ends its watches with 410; at 1 s it follows again in time.
  follow.idleHeartbeat(1000);
  const messages = await js.subscribe(ALL_SUBJECTS, follow);
  const following = (async () => {
    for await (const m of messages) {
      try {
        if (history.append(decodeEvent(m.data)) === 'reset') log.warn('history reset by the publisher', { revision: history.head });
      } catch (err) {
        log.error('undecodable bus message', { err, seq: m.seq });
      }
    }
  })();

  const publisher = new Publisher({ etcd, nc, jsm, log, id, maxPayload: nc.info?.max_payload ?? 1024 * 1024, compactionIntervalMs: config.compactionIntervalMs ?? DEFAULT_WINDOW_MS, ...(config.encryption ? { values: config.encryption } : {}), ensureStream: () => ensureStream(jsm, windowMs, maxBytes) });
  publisher.start();
  const unregisterGauges = registerFanoutGauges({ isLeader: () => publisher.isLeader, historyEvents: () => history.size, historyBytes: () => history.bytes });
  const pruneTimer = setInterval(() => history.prune(), 10_000);

  /**
   * Fills in an event that was too large for the bus from etcd's own
   * history: the object and, as on the bus, the state before it (without
   * which a watcher could not tell MODIFIED from ADDED, nor follow an object
   * out of its selector). History etcd no longer holds is a 410, never an
   * empty event.
   */
  const resolve = async (e: watch.ChangeEvent): Promise<watch.ChangeEvent> => {
    if (!e.truncated) return e;
    const readAt = async (revision: number): Promise<IKeyValue> => {
      const kv = (await etcd.kv.range({ key: Buffer.from(e.key), revision })).kvs[0];
      if (!kv) throw ApiError.expired(`the change of ${e.key} at revision ${e.revision} is no longer in etcd's history`);
      try {
        return { ...kv, value: (config.encryption ?? PLAIN_TRANSFORMER).fromStorage(kv.key, kv.value) };
      } catch (err) {
        throw err instanceof ValueTransformError ? ApiError.internal(err.message, err) : err;
      }
    };
    const deleted = e.type === watch.EventType.EVENT_TYPE_DELETED;
    const hasPrevious = deleted || e.type === watch.EventType.EVENT_TYPE_MODIFIED;
    const previous = hasPrevious ? await readAt(e.revision - 1) : undefined;
    const current = deleted ? (previous as IKeyValue) : await readAt(e.revision);
    return {
      ...e,
      object: setResourceVersion(current.value, e.revision),
      prevObject: previous ? setResourceVersion(previous.value, Number(previous.mod_revision)) : Buffer.alloc(0),
      truncated: false,
    };
  };

  const implementation: watch.WatchFanoutServer = {
    catchUp: serverStream(log, 'CatchUp', async (req: watch.CatchUpRequest, send, ctx) => {
      if (req.untilRevision > 0) await history.waitFor(req.untilRevision, CATCH_UP_WAIT_MS, ctx.signal);
      const upTo = req.untilRevision > 0 ? req.untilRevision : history.head;
      const events = history.range(req.afterRevision, upTo, req.keyPrefix);
      for (const e of events) await send(await resolve(e));
      await send({ type: watch.EventType.EVENT_TYPE_PROGRESS, key: '', revision: upTo, prevRevision: 0, object: Buffer.alloc(0), prevObject: Buffer.alloc(0), truncated: false });
    }),
    head: unary(log, 'Head', async () => ({ revision: history.head, oldestRevision: Math.max(history.completeFrom, 0) })),
  };
  const server = await startGrpcServer(config.listen, [{ definition: watch.WatchFanoutService, implementation }], {
    security: { tls, allowedCallers: ALLOWED_CALLERS, log },
    // Serving while connected to NATS (the history follows the bus) and etcd answers (the publisher's watch and catch-up reads need it).
    health: { ready: async () => natsUp && !nc.isClosed() && (await etcdAnswers()), bindAddress: config.healthBindAddress ?? '' },
  });
  log.info('watch-fanout listening', { address: server.address, id, windowMs });

  return {
    address: server.address,
    port: server.port,
    ...(server.healthAddress ? { healthAddress: server.healthAddress } : {}),
    history,
    publisher,
    close: async () => {
      clearInterval(pruneTimer);
      unregisterGauges();
      config.encryption?.close();
      await server.close();
      await publisher.stop();
      messages.unsubscribe();
      await following.catch(() => undefined);
      await nc.drain().catch(() => undefined);
      etcd.close();
    },
  };
}
