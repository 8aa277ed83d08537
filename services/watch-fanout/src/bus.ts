import { RetentionPolicy, StorageType, DiscardPolicy, type JetStreamManager } from 'nats';
import { parseObjectKey } from '@svc/apimachinery';
import { watch } from '@svc/proto';

/**
 * The change bus: one JetStream stream holds the published changes for the
 * history window; every message is a protobuf `ChangeEvent`. Subjects are
 * `svc.changes.<resource>.<group>` (dots in a group become `_`, the core
 * group is `core`), so a subscriber can narrow to what it watches.
 */
export const STREAM_NAME = 'SVC_CHANGES';
export const SUBJECT_PREFIX = 'svc.changes';
export const ALL_SUBJECTS = `${SUBJECT_PREFIX}.>`;
export const PROGRESS_SUBJECT = `${SUBJECT_PREFIX}._progress._`;

export function subjectFor(key: string): string {
  const parsed = parseObjectKey(key);
  if (!parsed) return PROGRESS_SUBJECT;
  return `${SUBJECT_PREFIX}.${parsed.resource}.${parsed.group ? parsed.group.replace(/\./g, '_') : 'core'}`;
}

export function encodeEvent(event: watch.ChangeEvent): Uint8Array {
  return watch.ChangeEvent.encode(event).finish();
}

export function decodeEvent(data: Uint8Array): watch.ChangeEvent {
  return watch.ChangeEvent.decode(data);
}

/** An event without its objects, for changes too large for one bus message. */
export function truncate(event: watch.ChangeEvent): watch.ChangeEvent {
  return { ...event, object: Buffer.alloc(0), prevObject: Buffer.alloc(0), truncated: true };
}

export async function ensureStream(jsm: JetStreamManager, windowMs: number): Promise<void> {
  const config = {
    name: STREAM_NAME,
    subjects: [ALL_SUBJECTS],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    max_age: windowMs * 1_000_000,
    duplicate_window: Math.min(windowMs, 120_000) * 1_000_000,
    num_replicas: 1,
  };
  try {
    await jsm.streams.info(STREAM_NAME);
    await jsm.streams.update(STREAM_NAME, config);
  } catch (err) {
    if (!/stream not found/i.test((err as Error).message)) throw err;
    try {
      await jsm.streams.add(config);
    } catch (addErr) {
      // Another replica created it between our check and our add.
      if (!/already in use|already exists/i.test((addErr as Error).message)) throw addErr;
    }
  }
}
