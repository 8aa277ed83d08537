/**
 * The watch fan-out: one leader tails etcd and publishes every change to the
 * NATS bus in revision order; every replica keeps the history window and
 * serves catch-up. `start(config)` runs a replica, `WatchFanoutClient` calls
 * it, and `ChangeSubscriber` is the gateway's end of the bus.
 */
export { start, type WatchFanoutConfig, type WatchFanoutHandle } from './server';
export { WatchFanoutClient } from './client';
export { ChangeSubscriber, type ChangeListener } from './subscriber';
export { History, type AppendOutcome } from './history';
export { Publisher, ELECTION_NAME } from './publisher';
export { STREAM_NAME, SUBJECT_PREFIX, subjectFor, encodeEvent, decodeEvent, ensureStream, AckedPublisher, type PublishAck } from './bus';
export { WATCH_FANOUT_FLAGS } from './flags';
