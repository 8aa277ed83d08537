import { ApiError, type ApiObject, type StoredKey, type UserInfo } from '@svc/apimachinery';
import type { AdmitInput, AdmitOutput } from '@svc/admission/client';
import type { Attributes, AuthorizerDecision, Rule } from '@svc/authz/client';
import type { CallOptions } from '@svc/service-kit';
import type { ListPage, ListRequestOptions, PreconditionOptions, ReadAtOptions, StoredResult, WriteOptions } from '@svc/storage/client';
import type { GatewayDeps } from '../../backends';
import { DEFAULT_LIMITS } from '../../server';
import type { ObjectStorage } from '../storage-interface';
import { WriteBatcher } from '../../watch/write-batcher';

/**
 * In-process fakes of the backends the generic store and the write handlers
 * call (storage, admission, authz), for unit tests that run without etcd or
 * the services. They keep the contracts the real services keep: objects
 * cross the wire as JSON, resourceVersion is the revision of the last write,
 * a write with a revision precondition is compare-and-swap.
 */

export const TEST_USER: UserInfo = { username: 'robot', uid: '', groups: ['system:authenticated'], extra: {} };

const CONFLICT_MESSAGE = 'the object has been modified; please apply your changes to the latest version and try again';

const json = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/** One call the fake storage received, with what it was given (as JSON). */
export type StorageCall =
  | { op: 'get'; key: StoredKey; at: ReadAtOptions; opts: CallOptions | undefined }
  | { op: 'list'; key: Omit<StoredKey, 'name'>; options: ListRequestOptions; opts: CallOptions | undefined }
  | { op: 'create'; key: StoredKey; object: ApiObject; opts: WriteOptions | undefined }
  | { op: 'update'; key: StoredKey; object: ApiObject; pre: PreconditionOptions; opts: WriteOptions | undefined }
  | { op: 'delete'; key: StoredKey; pre: PreconditionOptions; opts: WriteOptions | undefined };

interface Entry {
  object: ApiObject;
  revision: number;
}

/**
 * Storage in memory, keyed as the storage service keys objects. `revision`
 * counts writes; a read answers the object stamped with the revision of its
 * last write. Races are injected: another writer changes the object just
 * before the Nth update or delete (so the store's compare-and-swap fails as
 * it would), or creates the key just before the Nth create.
 */
export class FakeStorage implements ObjectStorage {
  readonly byKey = new Map<string, Entry>();
  readonly calls: StorageCall[] = [];
  revision = 100;
  private readonly counts = { create: 0, update: 0, delete: 0 };
  private readonly racesOn = { create: new Set<number>(), update: new Set<number>(), delete: new Set<number>() };

  keyOf(k: Pick<StoredKey, 'group' | 'resource' | 'namespace' | 'name'>): string {
    return `${k.group}/${k.resource}/${k.namespace}/${k.name}`;
  }

  /** Stores an object as it is, as if written before the test (its revision is the next one). */
  seed(key: StoredKey, object: ApiObject): StoredResult {
    const revision = ++this.revision;
    this.byKey.set(this.keyOf(key), { object: json(object), revision });
    return this.stamped(object, revision);
  }

  /** The stored object (as a reader sees it), or undefined. */
  peek(key: StoredKey): ApiObject | undefined {
    const hit = this.byKey.get(this.keyOf(key));
    return hit ? this.stamped(hit.object, hit.revision).object : undefined;
  }

  /** Every stored entry as JSON, to compare before and after a refused write. */
  snapshot(): string {
    return JSON.stringify([...this.byKey]);
  }

  /** Calls of one operation, in order. */
  callsOf<Op extends StorageCall['op']>(op: Op): Array<Extract<StorageCall, { op: Op }>> {
    return this.calls.filter((c): c is Extract<StorageCall, { op: Op }> => c.op === op);
  }

  /** Another writer wins the race on the Nth next call of `op` (1 is the next one), for each N given. */
  raceOn(op: 'create' | 'update' | 'delete', ...which: number[]): void {
    for (const n of which) this.racesOn[op].add(this.counts[op] + n);
  }

  private stamped(object: ApiObject, revision: number): StoredResult {
    return { object: json({ ...object, metadata: { ...(object.metadata ?? {}), resourceVersion: String(revision) } }), revision };
  }

  private existing(k: StoredKey): Entry {
    const hit = this.byKey.get(this.keyOf(k));
    if (!hit) throw ApiError.notFound({ group: k.group, resource: k.resource }, k.name);
    return hit;
  }

  private checkPreconditions(k: StoredKey, hit: Entry, pre: PreconditionOptions): void {
    if (pre.revision && pre.revision !== hit.revision) throw ApiError.conflict({ group: k.group, resource: k.resource }, k.name, CONFLICT_MESSAGE);
    if (pre.uid && pre.uid !== hit.object.metadata?.uid) {
      throw ApiError.conflict({ group: k.group, resource: k.resource }, k.name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${hit.object.metadata?.uid ?? ''}`);
    }
  }

  /** The injected other writer: rewrites the object unchanged, which moves its revision. */
  private race(op: 'create' | 'update' | 'delete', k: StoredKey, object: ApiObject): void {
    const n = ++this.counts[op];
    if (!this.racesOn[op].delete(n)) return;
    const hit = this.byKey.get(this.keyOf(k));
    if (op === 'create') this.byKey.set(this.keyOf(k), { object: json({ ...object, metadata: { ...(object.metadata ?? {}), uid: 'someone-else' } }), revision: ++this.revision });
    else if (hit) this.byKey.set(this.keyOf(k), { object: hit.object, revision: ++this.revision });
  }

  async get(key: StoredKey, at: ReadAtOptions = {}, opts?: CallOptions): Promise<StoredResult> {
    this.calls.push({ op: 'get', key: json(key), at: json(at), opts });
    const hit = this.existing(key);
    return this.stamped(hit.object, hit.revision);
  }

  async list(key: Omit<StoredKey, 'name'>, options: ListRequestOptions = {}, opts?: CallOptions): Promise<ListPage> {
    this.calls.push({ op: 'list', key: json(key), options: json(options), opts });
    const prefix = key.namespace ? `${key.group}/${key.resource}/${key.namespace}/` : `${key.group}/${key.resource}/`;
    const items = [...this.byKey].filter(([k]) => k.startsWith(prefix)).map(([, e]) => this.stamped(e.object, e.revision).object);
    return { items, revision: this.revision, continueToken: '' };
  }

  async create(key: StoredKey, object: ApiObject, opts?: WriteOptions): Promise<StoredResult> {
    this.calls.push({ op: 'create', key: json(key), object: json(object), opts });
    this.race('create', key, object);
    if (this.byKey.has(this.keyOf(key))) throw ApiError.alreadyExists({ group: key.group, resource: key.resource }, key.name);
    if (opts?.dryRun) return this.stamped(object, this.revision);
    const revision = ++this.revision;
    this.byKey.set(this.keyOf(key), { object: json(object), revision });
    return this.stamped(object, revision);
  }

  async update(key: StoredKey, object: ApiObject, pre: PreconditionOptions = {}, opts?: WriteOptions): Promise<StoredResult> {
    this.calls.push({ op: 'update', key: json(key), object: json(object), pre: json(pre), opts });
    this.race('update', key, object);
    const hit = this.existing(key);
    this.checkPreconditions(key, hit, pre);
    if (opts?.dryRun) return this.stamped(object, hit.revision);
    const revision = ++this.revision;
    this.byKey.set(this.keyOf(key), { object: json(object), revision });
    return this.stamped(object, revision);
  }

  async delete(key: StoredKey, pre: PreconditionOptions = {}, opts?: WriteOptions): Promise<StoredResult> {
    this.calls.push({ op: 'delete', key: json(key), pre: json(pre), opts });
    this.race('delete', key, {});
    const hit = this.existing(key);
    this.checkPreconditions(key, hit, pre);
    const deleted = this.stamped(hit.object, hit.revision);
    if (opts?.dryRun) return deleted;
    this.byKey.delete(this.keyOf(key));
    return { object: deleted.object, revision: ++this.revision };
  }
}

/**
 * Admission as the admission service answers: in the combined phase a
 * mutation returns the changed object unvalidated, else the object is
 * validated in the same call; `refuse` stands for a validating plugin.
 */
export class FakeAdmission {
  readonly calls: AdmitInput[] = [];
  /** A changed object for the input, or undefined to leave it unchanged. */
  mutate: ((input: AdmitInput) => ApiObject | undefined) | undefined;
  /** An error for the input, or undefined to admit it. */
  refuse: ((input: AdmitInput) => ApiError | undefined) | undefined;
  warnings: string[] = [];
  /** The webhook named as the author of a change. */
  mutatedBy = 'fake.webhook.example.com';

  /** Operation, phase and dryRun of every call, in order. */
  get seen(): Array<{ operation: string; phase: string; dryRun: boolean }> {
    return this.calls.map((c) => ({ operation: c.operation, phase: c.phase, dryRun: c.dryRun }));
  }

  admit = async (input: AdmitInput): Promise<AdmitOutput> => {
    this.calls.push(json(input));
    if (input.phase !== 'validating') {
      const changed = this.mutate?.(json(input));
      if (changed || input.phase === 'mutating') return { ...(changed ? { object: json(changed) } : {}), warnings: [...this.warnings], validated: false, auditAnnotations: {}, mutatedBy: changed ? [this.mutatedBy] : [] };
    }
    const refusal = this.refuse?.(input);
    if (refusal) throw refusal;
    return { warnings: [...this.warnings], validated: true, auditAnnotations: {}, mutatedBy: [] };
  };
}

/** Authorization answers by verb, recording what was asked (`authorize`) and which rules had to be covered (`covers`). */
export class FakeAuthz {
  readonly asked: Attributes[] = [];
  readonly coverChecks: Array<{ namespace: string; rules: Rule[] }> = [];
  constructor(
    private readonly allowedVerbs: string[] = [],
    private readonly heldRules: (rule: Rule) => boolean = () => false,
  ) {}

  authorize = async (attrs: Attributes): Promise<AuthorizerDecision> => {
    this.asked.push(attrs);
    return { decision: this.allowedVerbs.includes(attrs.verb) ? 'allow' : 'deny', reason: '' };
  };

  covers = async (_user: UserInfo, namespace: string, rules: Rule[]): Promise<{ covered: boolean; uncovered: Rule[] }> => {
    this.coverChecks.push({ namespace, rules });
    const uncovered = rules.filter((r) => !this.heldRules(r));
    return { covered: uncovered.length === 0, uncovered };
  };
}

/** Gateway dependencies with the fakes in place of the backends; everything else is left out. */
export function fakeDeps(parts: { storage: FakeStorage; admission?: FakeAdmission; authz?: FakeAuthz }): GatewayDeps {
  return {
    limits: DEFAULT_LIMITS,
    storage: parts.storage,
    admission: parts.admission ?? new FakeAdmission(),
    authz: parts.authz ?? new FakeAuthz(),
    protobuf: undefined,
    webhookAgents: undefined,
    watchWrites: new WriteBatcher(0),
  } as unknown as GatewayDeps;
}
