import { ApiError, type ApiObject } from '@svc/apimachinery';
import { AUTOUPDATE_SPEC_ANNOTATION, mandatoryFlowSchemas, mandatoryPriorityLevelConfigurations, suggestedFlowSchemas, suggestedPriorityLevelConfigurations } from '@svc/kinds';
import { createLogger } from '@svc/service-kit';
import type { WatchEvent } from './client';
import { FIELD_MANAGER, FlowControlBootstrap, parseBool, reviseIfNeeded } from './flowcontrol-bootstrap';

const quiet = createLogger('test', { write: () => undefined });
const BASE = '/apis/flowcontrol.svc.io/v1/';

/**
 * An in-memory flowcontrol.svc.io/v1: both collections, creates, updates
 * with resourceVersion preconditions and generation counting, deletes with
 * preconditions, and watches that stream every change.
 */
class FakeApi {
  readonly objects = new Map<string, ApiObject>();
  readonly calls: string[] = [];
  /** The next write to this `plural/name` fails with this error. */
  readonly failNext = new Map<string, ApiError>();
  private readonly watchers = new Map<string, Set<(e: WatchEvent) => void>>();
  private rv = 1;

  private emit(plural: string, type: string, obj: ApiObject): void {
    for (const w of this.watchers.get(plural) ?? []) w({ type, object: structuredClone(obj) });
  }

  /** Stores an object as a user would write it. */
  set(plural: string, obj: ApiObject): ApiObject {
    const key = `${plural}/${obj.metadata?.name ?? ''}`;
    const old = this.objects.get(key);
    const specChanged = old !== undefined && JSON.stringify(old['spec']) !== JSON.stringify(obj['spec']);
    const generation = old ? (old.metadata?.generation ?? 1) + (specChanged ? 1 : 0) : 1;
    const stored = { ...structuredClone(obj), metadata: { ...structuredClone(obj.metadata), uid: old?.metadata?.uid ?? `uid-${key}`, generation, resourceVersion: String(++this.rv) } };
    this.objects.set(key, stored);
    this.emit(plural, old ? 'MODIFIED' : 'ADDED', stored);
    return stored;
  }

  remove(plural: string, name: string): void {
    const key = `${plural}/${name}`;
    const obj = this.objects.get(key);
    if (!obj) return;
    this.objects.delete(key);
    this.emit(plural, 'DELETED', obj);
  }

  get(plural: string, name: string): ApiObject | undefined {
    return this.objects.get(`${plural}/${name}`);
  }

  async request<T = ApiObject>(method: string, path: string, body?: unknown): Promise<T> {
    const [bare = '', query = ''] = path.split('?');
    const [plural = '', name] = bare.slice(BASE.length).split('/');
    if (method !== 'GET') this.calls.push(`${method} ${plural}${name ? `/${name}` : ''}${query ? `?${query}` : ''}`);
    const failure = this.failNext.get(`${plural}/${name ?? (body as ApiObject | undefined)?.metadata?.name ?? ''}`);
    if (failure && method !== 'GET') {
      this.failNext.delete(`${plural}/${name ?? (body as ApiObject).metadata?.name ?? ''}`);
      throw failure;
    }
    const gr = { group: 'flowcontrol.svc.io', resource: plural };
    if (method === 'GET' && !name) {
      const items = [...this.objects.entries()].filter(([k]) => k.startsWith(`${plural}/`)).map(([, v]) => structuredClone(v));
      return { metadata: { resourceVersion: String(this.rv) }, items } as T;
    }
    if (method === 'POST') {
      const obj = body as ApiObject;
      if (this.get(plural, obj.metadata?.name ?? '')) throw ApiError.alreadyExists(gr, obj.metadata?.name ?? '');
      return this.set(plural, obj) as T;
    }
    const current = this.get(plural, name ?? '');
    if (!current) throw ApiError.notFound(gr, name ?? '');
    if (method === 'PUT') {
      const obj = body as ApiObject;
      if (obj.metadata?.resourceVersion !== current.metadata?.resourceVersion) throw ApiError.conflict(gr, name ?? '', 'the object has been modified');
      return this.set(plural, obj) as T;
    }
    if (method === 'DELETE') {
      const pre = (body as { preconditions?: { resourceVersion?: string } }).preconditions ?? {};
      if (pre.resourceVersion && pre.resourceVersion !== current.metadata?.resourceVersion) throw ApiError.conflict(gr, name ?? '', 'Precondition failed');
      this.remove(plural, name ?? '');
      return current as T;
    }
    return structuredClone(current) as T;
  }

  watch(path: string, onEvent: (e: WatchEvent) => void, signal: AbortSignal): Promise<void> {
    const plural = (path.split('?')[0] ?? '').slice(BASE.length);
    const set = this.watchers.get(plural) ?? new Set();
    this.watchers.set(plural, set);
    set.add(onEvent);
    return new Promise((resolve) => signal.addEventListener('abort', () => (set.delete(onEvent), resolve()), { once: true }));
  }
}

async function until(probe: () => boolean, ms = 5000): Promise<void> {
  for (const deadline = Date.now() + ms; !probe(); await new Promise((r) => setTimeout(r, 5))) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
  }
}

const specOf = (obj: ApiObject | undefined): Record<string, unknown> => (obj?.['spec'] ?? {}) as Record<string, unknown>;
const annotationOf = (obj: ApiObject | undefined): string | undefined => obj?.metadata?.annotations?.[AUTOUPDATE_SPEC_ANNOTATION];
const PLS = 'prioritylevelconfigurations';
const FSS = 'flowschemas';
const all = (): Array<[string, ApiObject]> => [
  ...[...mandatoryPriorityLevelConfigurations(), ...suggestedPriorityLevelConfigurations()].map((o) => [PLS, o] as [string, ApiObject]),
  ...[...mandatoryFlowSchemas(), ...suggestedFlowSchemas()].map((o) => [FSS, o] as [string, ApiObject]),
];

describe('parseBool and reviseIfNeeded', () => {
  const wanted = suggestedPriorityLevelConfigurations()[0] as ApiObject;
  const equal = (a: ApiObject, b: ApiObject): boolean => JSON.stringify(a['spec']) === JSON.stringify(b['spec']);
  const changed = (annotation: string | undefined, generation: number): ApiObject => ({
    ...structuredClone(wanted),
    metadata: { name: 'system', generation, resourceVersion: '9', ...(annotation === undefined ? {} : { annotations: { [AUTOUPDATE_SPEC_ANNOTATION]: annotation } }) },
    spec: { type: 'Limited', limited: { nominalConcurrencyShares: 1, lendablePercent: 0, limitResponse: { type: 'Reject' } } },
  });

  test('reads the annotation as Go reads booleans', () => {
    expect(['1', 't', 'TRUE', 'True', 'true'].map(parseBool)).toEqual([true, true, true, true, true]);
    expect(['0', 'f', 'FALSE', 'False', 'false'].map(parseBool)).toEqual([false, false, false, false, false]);
    expect([undefined, 'yes', ''].map(parseBool)).toEqual([undefined, undefined, undefined]);
  });

  test('a suggested object annotated true gets the default spec back; false keeps the user spec', () => {
    expect(specOf(reviseIfNeeded(changed('true', 3), wanted, false, equal))).toEqual(wanted['spec']);
    expect(reviseIfNeeded(changed('false', 3), wanted, false, equal)).toBeUndefined();
  });

  test('without a readable annotation a suggested object is updated only at generation 1, and the decision is written', () => {
    const fresh = reviseIfNeeded(changed(undefined, 1), wanted, false, equal);
    expect([specOf(fresh), annotationOf(fresh), fresh?.metadata?.resourceVersion]).toEqual([wanted['spec'], 'true', '9']);
    const edited = reviseIfNeeded(changed('maybe', 2), wanted, false, equal);
    expect([specOf(edited)['limited'], annotationOf(edited)]).toEqual([{ nominalConcurrencyShares: 1, lendablePercent: 0, limitResponse: { type: 'Reject' } }, 'false']);
  });

  test('a mandatory object always follows the default and is annotated true', () => {
    const revised = reviseIfNeeded(changed('false', 5), wanted, true, equal);
    expect([specOf(revised), annotationOf(revised)]).toEqual([wanted['spec'], 'true']);
    expect(reviseIfNeeded({ ...structuredClone(wanted), metadata: { ...wanted.metadata, generation: 4 } }, wanted, true, equal)).toBeUndefined();
  });
});

describe('the flowcontrol-bootstrap controller', () => {
  let api: FakeApi;
  let controller: FlowControlBootstrap;

  beforeEach(async () => {
    api = new FakeApi();
  });

  afterEach(async () => {
    await controller.stop();
  });

  const run = async (): Promise<void> => {
    controller = new FlowControlBootstrap(api, quiet, { resyncMs: 60_000 });
    controller.start();
    await until(() => controller.synced);
  };

  test('creates every mandatory and suggested object, annotated true, with its field manager, and then writes nothing', async () => {
    await run();
    for (const [plural, wanted] of all()) {
      const stored = api.get(plural, wanted.metadata?.name ?? '');
      expect(specOf(stored)).toEqual(wanted['spec']);
      expect(annotationOf(stored)).toBe('true');
    }
    expect(api.calls.every((c) => c.startsWith('POST ') && c.endsWith(`?fieldManager=${FIELD_MANAGER}`))).toBe(true);
    expect(api.calls).toHaveLength(all().length);
    expect(await controller.ensureAll()).toEqual({ created: 0, updated: 0, deleted: 0, failed: 0 });
  });

  test('while one collection is still being listed, changes in the other do not keep the event loop busy', async () => {
    // Existing levels make the first informer report adds before the schemas' list has answered.
    for (const pl of suggestedPriorityLevelConfigurations()) api.set(PLS, pl);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const request = api.request.bind(api);
    api.request = async <T,>(method: string, path: string, body?: unknown): Promise<T> => {
      if (method === 'GET' && path.split('?')[0] === `${BASE}${FSS}`) await held;
      return request<T>(method, path, body);
    };
    controller = new FlowControlBootstrap(api, quiet, { resyncMs: 60_000 });
    controller.start();
    // A timer fires only if the controller's loop yields while it waits for the second list.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(controller.synced).toBe(false);
    release();
    await until(() => controller.synced);
    expect(api.get(FSS, 'catch-all')).toBeDefined();
  });

  test('recreates a deleted object at once (from the watch)', async () => {
    await run();
    api.remove(PLS, 'workload-low');
    api.remove(FSS, 'catch-all');
    await until(() => api.get(PLS, 'workload-low') !== undefined && api.get(FSS, 'catch-all') !== undefined);
    expect(specOf(api.get(FSS, 'catch-all'))).toEqual(specOf(mandatoryFlowSchemas().find((f) => f.metadata?.name === 'catch-all')));
  });

  test('puts back a mandatory spec, keeps the exempt level tuning, updates suggested objects only while annotated true', async () => {
    await run();
    const catchAll = api.get(PLS, 'catch-all') as ApiObject;
    api.set(PLS, { ...catchAll, spec: { type: 'Limited', limited: { nominalConcurrencyShares: 99, lendablePercent: 0, limitResponse: { type: 'Reject' } } } });
    const exempt = api.get(PLS, 'exempt') as ApiObject;
    api.set(PLS, { ...exempt, spec: { type: 'Exempt', exempt: { nominalConcurrencyShares: 7, lendablePercent: 10 } } });
    const system = api.get(PLS, 'system') as ApiObject;
    api.set(PLS, { ...system, spec: { type: 'Limited', limited: { nominalConcurrencyShares: 1, lendablePercent: 0, limitResponse: { type: 'Reject' } } } });
    const nodeHigh = api.get(PLS, 'node-high') as ApiObject;
    const mine = { type: 'Limited', limited: { nominalConcurrencyShares: 2, lendablePercent: 0, limitResponse: { type: 'Reject' } } };
    api.set(PLS, { ...nodeHigh, metadata: { ...nodeHigh.metadata, annotations: { [AUTOUPDATE_SPEC_ANNOTATION]: 'false' } }, spec: mine });
    await until(() => (specOf(api.get(PLS, 'catch-all'))['limited'] as { nominalConcurrencyShares: number }).nominalConcurrencyShares === 5);
    await until(() => (specOf(api.get(PLS, 'system'))['limited'] as { nominalConcurrencyShares: number }).nominalConcurrencyShares === 30);
    expect(await controller.ensureAll()).toEqual({ created: 0, updated: 0, deleted: 0, failed: 0 });
    expect(specOf(api.get(PLS, 'exempt'))).toEqual({ type: 'Exempt', exempt: { nominalConcurrencyShares: 7, lendablePercent: 10 } });
    expect(specOf(api.get(PLS, 'node-high'))).toEqual(mine);
  });

  test('a suggested object without the annotation that a user changed keeps its spec and is annotated false', async () => {
    const edited = structuredClone(suggestedFlowSchemas().find((f) => f.metadata?.name === 'service-accounts') as ApiObject);
    delete edited.metadata?.annotations;
    api.set(FSS, edited);
    api.set(FSS, { ...api.get(FSS, 'service-accounts'), spec: { ...specOf(edited), matchingPrecedence: 4242 } });
    await run();
    const stored = api.get(FSS, 'service-accounts');
    expect([specOf(stored)['matchingPrecedence'], annotationOf(stored)]).toEqual([4242, 'false']);
  });

  test('deletes objects annotated true that the configuration no longer has, and leaves the others', async () => {
    const old = { metadata: { name: 'endpoint-controller', annotations: { [AUTOUPDATE_SPEC_ANNOTATION]: 'true' } }, spec: { priorityLevelConfiguration: { name: 'workload-high' }, matchingPrecedence: 150 } };
    api.set(FSS, old);
    api.set(FSS, { ...old, metadata: { name: 'mine' } });
    api.set(FSS, { ...old, metadata: { name: 'kept', annotations: { [AUTOUPDATE_SPEC_ANNOTATION]: 'false' } } });
    await run();
    expect([api.get(FSS, 'endpoint-controller'), api.get(FSS, 'mine') !== undefined, api.get(FSS, 'kept') !== undefined]).toEqual([undefined, true, true]);
  });

  test('a failed write is retried on the next pass, and synced waits for a clean pass; a conflict waits for the change it met', async () => {
    api.failNext.set(`${PLS}/global-default`, new ApiError(500, 'InternalError', 'boom'));
    await run();
    const levels = mandatoryPriorityLevelConfigurations().length + suggestedPriorityLevelConfigurations().length;
    expect(api.calls.filter((c) => c.startsWith(`POST ${PLS}`))).toHaveLength(levels + 1);
    expect(api.get(PLS, 'global-default')).toBeDefined();
    api.failNext.set(`${PLS}/system`, ApiError.conflict({ group: 'flowcontrol.svc.io', resource: PLS }, 'system', 'the object has been modified'));
    const system = api.get(PLS, 'system') as ApiObject;
    api.set(PLS, { ...system, spec: { type: 'Limited', limited: { nominalConcurrencyShares: 1, lendablePercent: 0, limitResponse: { type: 'Reject' } } } });
    await until(() => api.calls.includes(`PUT ${PLS}/system?fieldManager=${FIELD_MANAGER}`));
    // The change the conflict stands for brings its own event, and a pass that writes the default again.
    api.set(FSS, { metadata: { name: 'poke' }, spec: {} });
    await until(() => (specOf(api.get(PLS, 'system'))['limited'] as { nominalConcurrencyShares: number }).nominalConcurrencyShares === 30);
    expect(controller.synced).toBe(true);
  });
});
