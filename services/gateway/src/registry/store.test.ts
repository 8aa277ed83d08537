import { ApiError, ResourceRegistry, type ApiObject, type ResourceDefinition, type StatusCause, type StoredKey } from '@svc/apimachinery';
import { configMapDefinition, eventDefinition, namespaceDefinition, podDefinition, podGracePeriod, rbacDefinitions, registerBuiltins } from '@svc/kinds';
import { checkIdentity, createObject, deleteCollection, deleteObject, getObject, listObjects, updateObject, type ComputedWrite, type WriteContext } from './store';
import { DEFAULT_LIMITS } from '../server';
import type { AdmissionView } from './write-context';
import { FakeAdmission, FakeAuthz, FakeStorage, TEST_USER, fakeDeps } from './testing/fakes';

/**
 * The generic store on its own, against in-memory storage and admission:
 * every branch of create, update, delete and deletecollection, and what
 * get and list pass to storage. The end-to-end suites run the same store
 * against etcd and the real services.
 */

const NOW = new Date('2024-05-01T10:00:00.000Z');
const CREATED = '2024-05-01T10:00:00Z';
const MODIFIED = 'the object has been modified; please apply your changes to the latest version and try again';

const configMaps = configMapDefinition();
const events = eventDefinition();
const namespaces = namespaceDefinition();
const rbac = new Map(rbacDefinitions().map((d) => [d.kind, d]));
const roles = rbac.get('Role') as ResourceDefinition;
const roleBindings = rbac.get('RoleBinding') as ResourceDefinition;

interface Options {
  namespace?: string;
  subresource?: string;
  dryRun?: boolean;
  fieldManager?: string;
  fieldValidation?: WriteContext['fieldValidation'];
  duplicateFields?: string[];
  /** Refuses the write when it turns out to create. */
  createRefused?: ApiError;
  allowedVerbs?: string[];
}

/** A write context over fresh fakes, and what the store told them. */
function setup(def: ResourceDefinition, o: Options = {}) {
  const storage = new FakeStorage();
  const admission = new FakeAdmission();
  const authz = new FakeAuthz(o.allowedVerbs ?? []);
  const warnings: string[] = [];
  const createChecks: string[] = [];
  const ctx: WriteContext = {
    deps: fakeDeps({ storage, admission, authz }),
    def,
    user: TEST_USER,
    requestId: 'req-1',
    namespace: o.namespace ?? 'team',
    subresource: o.subresource ?? '',
    dryRun: o.dryRun ?? false,
    fieldValidation: o.fieldValidation ?? 'Strict',
    ...(o.fieldManager !== undefined ? { fieldManager: o.fieldManager } : {}),
    ...(o.duplicateFields !== undefined ? { duplicateFields: o.duplicateFields } : {}),
    authorizeCreate: async () => {
      createChecks.push(def.plural);
      if (o.createRefused) throw o.createRefused;
    },
    warn: (text) => warnings.push(text),
    now: NOW,
  };
  return { storage, admission, authz, warnings, createChecks, ctx };
}

type Setup = ReturnType<typeof setup>;

function key(def: ResourceDefinition, name: string, namespace = 'team'): StoredKey {
  return { group: def.group, resource: def.plural, namespace: def.namespaced ? namespace : '', name };
}

const cm = (name: string, data: Record<string, string> = { a: '1' }, metadata: Record<string, unknown> = {}): ApiObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ...metadata }, data });

/** The error a promise is rejected with (fails the test when it resolves). */
async function failure(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('expected the call to fail');
}

/** Creates through the store and answers what was stored (as storage answers it). */
async function seed(s: Setup, obj: ApiObject): Promise<ApiObject> {
  const res = await createObject({ ...s.ctx, dryRun: false, fieldManager: 'creator' }, obj);
  s.storage.calls.length = 0;
  s.admission.calls.length = 0;
  s.createChecks.length = 0;
  return res.object;
}

const ops = (s: Setup) => s.storage.calls.map((c) => c.op);

describe('createObject', () => {
  test('sets the metadata a create owns and stores the object under its key', async () => {
    const s = setup(configMaps);
    const res = await createObject(s.ctx, cm('cm', { a: '1' }, { deletionTimestamp: '2020-01-01T00:00:00Z', deletionGracePeriodSeconds: 5 }));
    const meta = res.object.metadata ?? {};
    expect(meta.uid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(res.object).toEqual({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'team', uid: meta.uid, creationTimestamp: CREATED, resourceVersion: '101' }, data: { a: '1' } });
    expect(res.revision).toBe(101);
    expect(s.storage.peek(key(configMaps, 'cm'))).toEqual(res.object);
    expect(s.storage.callsOf('create')).toEqual([{ op: 'create', key: key(configMaps, 'cm'), object: { ...res.object, metadata: { ...meta, resourceVersion: undefined } }, opts: { requestId: 'req-1', timeoutMs: DEFAULT_LIMITS.backendTimeoutMs, dryRun: false } }].map((c) => JSON.parse(JSON.stringify(c)) as unknown));
    expect(s.admission.seen).toEqual([{ operation: 'CREATE', phase: 'mutating-then-validating', dryRun: false }]);
    expect(s.admission.calls[0]).toMatchObject({ namespace: 'team', name: 'cm', subresource: '', userInfo: TEST_USER, kind: { group: '', version: 'v1', kind: 'ConfigMap' }, resource: { group: '', version: 'v1', resource: 'configmaps' } });
    expect(s.admission.calls[0]?.oldObject).toBeUndefined();
  });

  test('two creates get different uids', async () => {
    const s = setup(configMaps);
    const a = await createObject(s.ctx, cm('a'));
    const b = await createObject(s.ctx, cm('b'));
    expect(a.object.metadata?.uid).not.toBe(b.object.metadata?.uid);
  });

  test('a body with a resourceVersion is 400 and nothing is admitted or stored', async () => {
    const s = setup(configMaps);
    const err = await failure(createObject(s.ctx, cm('cm', {}, { resourceVersion: '7' })));
    expect([err.code, err.reason, err.message]).toEqual([400, 'BadRequest', 'resourceVersion should not be set on objects to be created']);
    expect(s.admission.calls).toEqual([]);
    expect(s.storage.calls).toEqual([]);
  });

  test('a body in another namespace than the request is 400', async () => {
    const s = setup(configMaps);
    const err = await failure(createObject(s.ctx, cm('cm', {}, { namespace: 'elsewhere' })));
    expect([err.code, err.reason, err.message]).toEqual([400, 'BadRequest', 'the namespace of the provided object (elsewhere) does not match the namespace sent on the request (team)']);
    expect(s.createChecks).toEqual([]);
    expect(s.storage.calls).toEqual([]);
  });

  test('the type meta must be the endpoint’s; the upstream group name is read as ours', async () => {
    const s = setup(configMaps);
    const registry = new ResourceRegistry();
    registerBuiltins(registry);
    const ctx = { ...s.ctx, deps: { ...s.ctx.deps, registry } };
    // In the original decoder's words: a version it does not serve, a kind it cannot convert, a kind it does not know.
    const wrongVersion = await failure(createObject(ctx, { ...cm('cm'), apiVersion: 'v2' }));
    expect([wrongVersion.code, wrongVersion.reason, wrongVersion.message]).toEqual([
      400,
      'BadRequest',
      'ConfigMap in version "v2" cannot be handled as a ConfigMap: no kind "ConfigMap" is registered for version "v2" in scheme "pkg/api/legacyscheme/scheme.go:30"',
    ]);
    const wrongKind = await failure(createObject(ctx, { ...cm('cm'), kind: 'Secret' }));
    expect([wrongKind.code, wrongKind.message]).toEqual([400, 'Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion']);
    const otherGroup = await failure(createObject(ctx, { ...cm('cm'), apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role' }));
    expect(otherGroup.message).toBe('Role in version "v1" cannot be handled as a ConfigMap: converting (v1.Role) to (core.ConfigMap): unknown conversion');
    const unknownKind = await failure(createObject(ctx, { ...cm('cm'), apiVersion: 'apps/v1', kind: 'Gadget' }));
    expect(unknownKind.message).toBe('Gadget in version "v1" cannot be handled as a ConfigMap: no kind "Gadget" is registered for version "apps/v1" in scheme "pkg/api/legacyscheme/scheme.go:30"');
    const numericKind = await failure(createObject(ctx, { ...cm('cm'), kind: 5 as unknown as string }));
    expect(numericKind.message).toBe(
      'the object provided is unrecognized (must be of type ConfigMap): couldn\'t get version/kind; json parse error: json: cannot unmarshal number into Go struct field .kind of type string ({"apiVersion":"v1","kind":5,"m ...)',
    );
    expect(s.storage.calls).toEqual([]);
    const badMeta = await failure(createObject(s.ctx, { ...cm('cm'), metadata: [] as unknown as ApiObject['metadata'] }));
    expect([badMeta.code, badMeta.message]).toEqual([400, 'metadata must be an object']);
    expect(s.storage.calls).toEqual([]);

    // Without apiVersion and kind the endpoint's are meant, as the original's decoder defaults them.
    const { apiVersion: _v, kind: _k, ...bare } = cm('bare');
    expect((await createObject(ctx, bare as ApiObject)).object).toMatchObject({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bare' } });
    const r = setup(roles, { allowedVerbs: ['escalate'] });
    const res = await createObject(r.ctx, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'reader' }, rules: [] });
    expect(res.object.apiVersion).toBe('rbac.authorization.svc.io/v1');
  });

  test('a cluster-scoped kind is stored without a namespace, prepared and defaulted by its strategy', async () => {
    const s = setup(namespaces);
    const res = await createObject(s.ctx, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'demo' }, status: { phase: 'Terminating' } });
    expect(s.storage.callsOf('create').map((c) => c.key)).toEqual([{ group: '', resource: 'namespaces', namespace: '', name: 'demo' }]);
    expect(res.object.metadata?.namespace).toBeUndefined();
    expect(res.object['spec']).toEqual({ finalizers: ['svc'] });
    expect(res.object['status']).toEqual({ phase: 'Active' });
    expect(res.object.metadata?.labels).toEqual({ 'svc.io/metadata.name': 'demo' });
    expect(s.admission.calls[0]?.namespace).toBe('');
  });

  test('a namespace in the body of a cluster-scoped object is dropped, on create and on update', async () => {
    const s = setup(namespaces);
    const created = await createObject(s.ctx, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'demo', namespace: 'team' } });
    expect(created.object.metadata?.namespace).toBeUndefined();
    const updated = await updateObject(s.ctx, 'demo', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'demo', namespace: 'team', labels: { l: 'v' } } });
    expect(updated.result.object.metadata?.namespace).toBeUndefined();
    expect(updated.result.object.metadata?.labels).toEqual({ l: 'v', 'svc.io/metadata.name': 'demo' });
    expect(s.storage.peek(key(namespaces, 'demo'))?.metadata?.namespace).toBeUndefined();
  });

  test('an invalid object is 422 with every cause, before admission', async () => {
    const s = setup(configMaps);
    const err = await failure(createObject(s.ctx, cm('Bad_Name', { 'a b': '1' }, { labels: { 'x/y/z': 'v' } })));
    expect([err.code, err.reason]).toEqual([422, 'Invalid']);
    const causes = err.details?.causes ?? [];
    expect(causes.map((c) => c.field)).toEqual(['metadata.name', 'metadata.labels', 'data[a b]']);
    expect(err.message).toBe(`ConfigMap "Bad_Name" is invalid: ${causes.map((c) => `${c.field ?? ''}: ${c.message ?? ''}`).join(', ')}`);
    expect(err.details).toMatchObject({ name: 'Bad_Name', group: '', kind: 'ConfigMap' });
    expect(s.admission.calls).toEqual([]);
    expect(s.storage.calls).toEqual([]);
  });

  test('a body without a name or generateName is 422 naming metadata.name', async () => {
    const s = setup(configMaps);
    const err = await failure(createObject(s.ctx, { apiVersion: 'v1', kind: 'ConfigMap', data: {} }));
    expect([err.code, err.message]).toEqual([422, 'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required']);
    expect(err.details?.causes).toEqual([{ reason: 'FieldValueRequired', field: 'metadata.name', message: 'Required value: name or generateName is required' }]);
  });

  test('a finalizer that is not a qualified name is 422', async () => {
    const s = setup(configMaps);
    const err = await failure(createObject(s.ctx, cm('cm', {}, { finalizers: ['not a name'] })));
    expect(err.code).toBe(422);
    expect(err.details?.causes?.map((c) => c.field)).toEqual(['metadata.finalizers']);
  });

  test('orphan and foregroundDeletion together are 422', async () => {
    const s = setup(configMaps);
    const err = await failure(createObject(s.ctx, cm('cm', {}, { finalizers: ['orphan', 'foregroundDeletion'] })));
    expect(err.details?.causes).toEqual([{ reason: 'FieldValueInvalid', field: 'metadata.finalizers', message: 'Invalid value: ["orphan","foregroundDeletion"]: finalizer orphan and foregroundDeletion cannot be both set' }]);
    expect(s.storage.calls).toEqual([]);
  });

  test('a negative generation is 422; a null finalizer is a Required-value refusal, not a crash', async () => {
    const s = setup(configMaps);
    const negative = await failure(createObject(s.ctx, cm('cm', {}, { generation: -1 })));
    expect([negative.code, negative.message]).toEqual([422, 'ConfigMap "cm" is invalid: metadata.generation: Invalid value: -1: must be greater than or equal to 0']);
    const nullFinalizer = await failure(createObject(s.ctx, cm('cm', {}, { finalizers: [null] })));
    expect([nullFinalizer.code, nullFinalizer.details?.causes?.map((c) => c.message?.replace(/ \(e\.g\..*$/, ''))]).toEqual([
      422,
      ['Invalid value: "": name part must be non-empty', "Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"],
    ]);
    const nullOwner = await failure(createObject(s.ctx, cm('cm', {}, { ownerReferences: [null] })));
    expect([nullOwner.code, nullOwner.details?.causes?.map((c) => c.field)]).toEqual([422, ['metadata.ownerReferences.apiVersion', 'metadata.ownerReferences.kind', 'metadata.ownerReferences.name', 'metadata.ownerReferences.uid']]);
    expect(s.storage.calls).toEqual([]);
  });

  test('owner references without uid, kind or name, or with an apiVersion that does not parse, are 422 naming the field', async () => {
    const s = setup(configMaps);
    const refs = [
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner' },
      { apiVersion: 'a/b/c', kind: '', name: '', uid: 'u2' },
    ];
    const err = await failure(createObject(s.ctx, cm('cm', {}, { ownerReferences: refs })));
    expect(err.code).toBe(422);
    expect(err.details?.causes).toEqual(expect.arrayContaining([
      { reason: 'FieldValueInvalid', field: 'metadata.ownerReferences.uid', message: 'Invalid value: "": uid must not be empty' },
      { reason: 'FieldValueInvalid', field: 'metadata.ownerReferences.apiVersion', message: 'Invalid value: "a/b/c": version must not be empty' },
      { reason: 'FieldValueInvalid', field: 'metadata.ownerReferences.kind', message: 'Invalid value: "": kind must not be empty' },
      { reason: 'FieldValueInvalid', field: 'metadata.ownerReferences.name', message: 'Invalid value: "": name must not be empty' },
    ]));
    expect(s.storage.calls).toEqual([]);
  });

  test('two controller references, or an Event as owner, are 422; valid references are stored', async () => {
    const s = setup(configMaps);
    const ref = (name: string, extra: Record<string, unknown> = {}) => ({ apiVersion: 'apps.svc.io/v1', kind: 'Thing', name, uid: `uid-${name}`, ...extra });
    const two = await failure(createObject(s.ctx, cm('cm', {}, { ownerReferences: [ref('a', { controller: true }), ref('b', { controller: true })] })));
    expect(two.details?.causes?.[0]?.message).toBe('Invalid value: "Thing/a": Only one reference can have Controller set to true. Found "true" in references for Thing/a and Thing/b');
    const event = await failure(createObject(s.ctx, cm('cm', {}, { ownerReferences: [{ apiVersion: 'v1', kind: 'Event', name: 'e', uid: 'u' }] })));
    expect(event.details?.causes?.[0]?.field).toBe('metadata.ownerReferences');
    const created = await createObject(s.ctx, cm('cm', {}, { ownerReferences: [ref('a', { controller: true }), ref('b')] }));
    expect(created.object.metadata?.ownerReferences?.map((r) => r.uid)).toEqual(['uid-a', 'uid-b']);
  });

  test('a strategy runs prepareForCreate, then defaults, then validation', async () => {
    const order: string[] = [];
    const def: ResourceDefinition = {
      ...configMaps,
      strategy: {
        prepareForCreate: (obj) => {
          order.push('prepare');
          obj['data'] = { prepared: 'yes' };
        },
        applyDefaults: (obj) => {
          order.push('defaults');
          obj['data'] = { ...(obj['data'] as Record<string, string>), defaulted: 'yes' };
        },
        validate: (obj) => {
          order.push('validate');
          return (obj['data'] as Record<string, string>)['defaulted'] === 'yes' ? [] : [{ reason: 'FieldValueRequired', field: 'data.defaulted', message: 'Required value' }];
        },
      },
    };
    const s = setup(def);
    const res = await createObject(s.ctx, cm('cm', { sent: 'x' }));
    expect(order).toEqual(['prepare', 'defaults', 'validate']);
    expect(res.object['data']).toEqual({ prepared: 'yes', defaulted: 'yes' });
  });

  describe('generateName', () => {
    test('a name is generated from the prefix', async () => {
      const s = setup(configMaps);
      const res = await createObject(s.ctx, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'cm-' } });
      const name = res.object.metadata?.name ?? '';
      expect(name).toMatch(/^cm-[a-z0-9]{5}$/);
      expect(res.object.metadata?.generateName).toBe('cm-');
      expect(s.storage.callsOf('create').map((c) => c.key.name)).toEqual([name]);
      expect(s.admission.calls[0]?.name).toBe(name);
    });

    test('a collision is retried with a new suffix', async () => {
      const s = setup(configMaps);
      s.storage.raceOn('create', 1);
      const res = await createObject(s.ctx, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'cm-' } });
      const names = s.storage.callsOf('create').map((c) => c.key.name);
      expect(names).toHaveLength(2);
      expect(names[0]).not.toBe(names[1]);
      expect(s.storage.callsOf('create')[1]?.object.metadata?.name).toBe(names[1]);
      expect(res.object.metadata?.name).toBe(names[1]);
      expect(s.storage.byKey.size).toBe(2);
      expect(s.admission.calls).toHaveLength(1);
    });

    test('after eight collisions the last is AlreadyExists', async () => {
      const s = setup(configMaps);
      s.storage.raceOn('create', 1, 2, 3, 4, 5, 6, 7, 8);
      const err = await failure(createObject(s.ctx, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'cm-' } }));
      const names = s.storage.callsOf('create').map((c) => c.key.name);
      expect(names).toHaveLength(8);
      expect(new Set(names).size).toBe(8);
      expect([err.code, err.reason, err.message]).toEqual([409, 'AlreadyExists', `configmaps "${names[7] ?? ''}" already exists`]);
    });

    test('an explicit name wins over generateName and a collision is not retried', async () => {
      const s = setup(configMaps);
      await seed(s, cm('cm'));
      const err = await failure(createObject(s.ctx, cm('cm', {}, { generateName: 'cm-' })));
      expect([err.code, err.reason, err.message]).toEqual([409, 'AlreadyExists', 'configmaps "cm" already exists']);
      expect(s.storage.callsOf('create')).toHaveLength(1);
    });
  });

  test('a dry run is admitted as one and storage is told so; nothing is stored', async () => {
    const s = setup(configMaps, { dryRun: true });
    const res = await createObject(s.ctx, cm('cm'));
    expect(s.admission.seen).toEqual([{ operation: 'CREATE', phase: 'mutating-then-validating', dryRun: true }]);
    expect(s.storage.callsOf('create').map((c) => c.opts?.dryRun)).toEqual([true]);
    expect(s.storage.byKey.size).toBe(0);
    expect(res.object.metadata?.uid).toBeDefined();
    expect(res.object.metadata?.creationTimestamp).toBe(CREATED);
  });

  test('the fields set are recorded for the field manager', async () => {
    const s = setup(configMaps, { fieldManager: 'robot' });
    const res = await createObject(s.ctx, cm('cm', { a: '1' }, { labels: { l: 'v' } }));
    expect(res.object.metadata?.managedFields).toEqual([
      { manager: 'robot', operation: 'Update', apiVersion: 'v1', time: CREATED, fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { '.': {}, 'f:a': {} }, 'f:metadata': { 'f:labels': { '.': {}, 'f:l': {} } } } },
    ]);
    const none = setup(configMaps);
    expect((await createObject(none.ctx, cm('cm'))).object.metadata?.managedFields).toBeUndefined();
  });

  test('a create is authorized as create; a refusal stops before admission and storage', async () => {
    const s = setup(configMaps);
    await createObject(s.ctx, cm('cm'));
    expect(s.createChecks).toEqual(['configmaps']);

    const refused = setup(configMaps, { createRefused: ApiError.forbidden({ group: '', resource: 'configmaps' }, 'cm', 'User "robot" cannot create resource "configmaps"') });
    const err = await failure(createObject(refused.ctx, cm('cm')));
    expect([err.code, err.message]).toEqual([403, 'configmaps "cm" is forbidden: User "robot" cannot create resource "configmaps"']);
    expect(refused.createChecks).toEqual(['configmaps']);
    expect(refused.admission.calls).toEqual([]);
    expect(refused.storage.calls).toEqual([]);
  });

  describe('decoding', () => {
    test('unknown fields are 400 when strict, a warning each when warned, dropped when ignored', async () => {
      const body = { ...cm('cm'), extra: 1 };
      const strict = setup(configMaps, { duplicateFields: ['data'] });
      const err = await failure(createObject(strict.ctx, body));
      expect([err.code, err.message]).toEqual([400, 'strict decoding error: unknown field "extra", duplicate field "data"']);
      expect(strict.storage.calls).toEqual([]);

      const warned = setup(configMaps, { fieldValidation: 'Warn', duplicateFields: ['data'] });
      const res = await createObject(warned.ctx, body);
      expect(warned.warnings).toEqual(['unknown field "extra"', 'duplicate field "data"']);
      expect(res.object['extra']).toBeUndefined();

      const ignored = setup(configMaps, { fieldValidation: 'Ignore' });
      expect((await createObject(ignored.ctx, body)).object['extra']).toBeUndefined();
      expect(ignored.warnings).toEqual([]);
    });

    test('a value of the wrong type is 400 naming the field', async () => {
      const s = setup(configMaps);
      const err = await failure(createObject(s.ctx, { ...cm('cm'), data: { a: 1 } as unknown as Record<string, string> }));
      expect(err.code).toBe(400);
      expect(err.message.startsWith('ConfigMap in version "v1" cannot be handled as a ConfigMap: ')).toBe(true);
      expect(err.details?.causes?.[0]?.field).toBe('data[a]');
      expect(s.storage.calls).toEqual([]);
    });

    test('a kind decoded unstructured leaves mistyped values to validation; its metadata is still typed', async () => {
      const s = setup({ ...configMaps, decoding: 'unstructured' });
      const res = await createObject(s.ctx, { ...cm('cm'), data: { a: 1 } as unknown as Record<string, string> });
      expect(res.object['data']).toEqual({ a: 1 });
      const err = await failure(createObject(s.ctx, cm('other', {}, { creationTimestamp: 'yesterday' })));
      expect(err.code).toBe(400);
      expect(err.message.startsWith('ConfigMap in version "v1" cannot be handled as a ConfigMap: ')).toBe(true);
      expect(err.details?.causes?.[0]?.field).toBe('metadata.creationTimestamp');
    });
  });

  describe('admission', () => {
    test('a mutation is validated again, then admitted by the validating phase, and stored', async () => {
      const s = setup(configMaps);
      s.admission.mutate = (input) => ({ ...(input.object as ApiObject), data: { a: '1', added: 'yes' } });
      const res = await createObject(s.ctx, cm('cm'));
      expect(s.admission.seen.map((c) => c.phase)).toEqual(['mutating-then-validating', 'validating']);
      expect(s.admission.calls[1]?.object?.['data']).toEqual({ a: '1', added: 'yes' });
      expect(res.object['data']).toEqual({ a: '1', added: 'yes' });
    });

    test('a mutation the kind finds invalid is 422 and not stored', async () => {
      const s = setup(configMaps);
      s.admission.mutate = (input) => ({ ...(input.object as ApiObject), data: { 'no spaces': 'x' } });
      const err = await failure(createObject(s.ctx, cm('cm')));
      expect([err.code, err.details?.causes?.map((c) => c.field)]).toEqual([422, ['data[no spaces]']]);
      expect(s.admission.calls).toHaveLength(1);
      expect(s.storage.calls).toEqual([]);
    });

    test('a mutation is decoded, its system fields kept and its unknown fields dropped; a refusal names the webhook', async () => {
      const s = setup(configMaps);
      s.admission.mutate = (input) => ({ ...(input.object as ApiObject), extra: 'dropped', metadata: { ...(input.object?.metadata ?? {}), uid: 'forged', resourceVersion: '7' } });
      const res = await createObject(s.ctx, cm('cm'));
      expect(res.object['extra']).toBeUndefined();
      expect(res.object.metadata?.uid).not.toBe('forged');
      expect(s.admission.calls[0]?.options).toEqual({ kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1' });

      const typed = setup(configMaps);
      typed.admission.mutate = (input) => ({ ...(input.object as ApiObject), data: 'not a map' });
      const undecodable = await failure(createObject(typed.ctx, cm('cm')));
      expect(undecodable.code).toBe(400);
      expect(undecodable.message).toMatch(/cannot be handled as a ConfigMap: .* \(the object as changed by admission webhook "fake\.webhook\.example\.com"\)$/);
      expect(typed.storage.calls).toEqual([]);

      const moved = setup(configMaps);
      moved.admission.mutate = (input) => ({ ...(input.object as ApiObject), metadata: { ...(input.object?.metadata ?? {}), namespace: 'elsewhere' } });
      const err = await failure(createObject(moved.ctx, cm('cm')));
      expect([err.code, err.details?.causes?.map((c) => c.field)]).toEqual([422, ['metadata.namespace']]);
      expect(moved.storage.calls).toEqual([]);
    });

    test('a refusal is the error of the write and nothing is stored', async () => {
      const s = setup(configMaps);
      s.admission.refuse = () => ApiError.forbidden({ group: '', resource: 'configmaps' }, 'cm', 'no');
      const err = await failure(createObject(s.ctx, cm('cm')));
      expect([err.code, err.message]).toEqual([403, 'configmaps "cm" is forbidden: no']);
      expect(s.storage.calls).toEqual([]);
    });

    test('its warnings reach the request', async () => {
      const s = setup(configMaps);
      s.admission.warnings = ['careful'];
      await createObject(s.ctx, cm('a'));
      expect(s.warnings).toEqual(['careful']);
    });
  });
});

describe('updateObject', () => {
  async function seeded(def: ResourceDefinition = configMaps, o: Options = {}) {
    const s = setup(def, o);
    const stored = await seed(s, cm('cm', { a: '1' }));
    return { ...s, stored, rv: stored.metadata?.resourceVersion ?? '' };
  }

  test('a compare-and-swap at the current resourceVersion replaces the object', async () => {
    const s = await seeded();
    const out = await updateObject(s.ctx, 'cm', cm('cm', { a: '2' }, { resourceVersion: s.rv }));
    expect(out.created).toBe(false);
    expect(out.result.object['data']).toEqual({ a: '2' });
    expect(out.result.object.metadata?.resourceVersion).toBe('102');
    expect(s.storage.callsOf('update').map((c) => [c.key, c.pre, c.opts?.dryRun])).toEqual([[key(configMaps, 'cm'), { revision: 101 }, false]]);
    expect(s.admission.calls.map((c) => [c.operation, c.oldObject?.['data']])).toEqual([['UPDATE', { a: '1' }]]);
    expect(s.createChecks).toEqual([]);
  });

  test('a mutation may not rename the object; its immutable metadata is carried', async () => {
    const s = await seeded();
    s.admission.mutate = (input) => ({ ...(input.object as ApiObject), metadata: { ...(input.object?.metadata ?? {}), name: 'renamed' } });
    const err = await failure(updateObject(s.ctx, 'cm', cm('cm', { a: '2' }, { resourceVersion: s.rv })));
    expect([err.code, err.details?.causes?.map((c) => c.field), err.message]).toEqual([422, ['metadata.name'], expect.stringContaining('(the object as changed by admission webhook "fake.webhook.example.com")')]);
    expect(ops(s)).toEqual(['get']);

    s.admission.mutate = (input) => ({ ...(input.object as ApiObject), metadata: { ...(input.object?.metadata ?? {}), creationTimestamp: '2001-01-01T00:00:00Z' }, data: { a: '3' } });
    const out = await updateObject(s.ctx, 'cm', cm('cm', { a: '2' }, { resourceVersion: s.rv }));
    expect([out.result.object['data'], out.result.object.metadata?.creationTimestamp]).toEqual([{ a: '3' }, s.stored.metadata?.creationTimestamp]);
    expect(s.admission.calls[0]?.options).toEqual({ kind: 'UpdateOptions', apiVersion: 'meta.k8s.io/v1' });
  });

  test('a write with an admission view shows admission the view, and a changed view goes back onto the object', async () => {
    const s = await seeded();
    const view: AdmissionView = {
      kind: { group: 'autoscaling', version: 'v1', kind: 'Scale' },
      of: (o) => ({ apiVersion: 'autoscaling/v1', kind: 'Scale', metadata: { name: o.metadata?.name ?? '' }, spec: { replicas: Number((o['data'] as Record<string, string> | undefined)?.['a'] ?? 0) } }),
      onto: (v, o) => ({ ...o, data: { a: String((v['spec'] as { replicas: number }).replicas) } }),
    };
    s.admission.mutate = (input) => ({ ...(input.object as ApiObject), spec: { replicas: 7 } });
    const out = await updateObject({ ...s.ctx, admissionView: view }, 'cm', cm('cm', { a: '2' }, { resourceVersion: s.rv }));
    expect(s.admission.calls.map((c) => [c.phase, c.kind.kind, c.object?.['spec'], c.oldObject?.['spec']])).toEqual([
      ['mutating-then-validating', 'Scale', { replicas: 2 }, { replicas: 1 }],
      ['validating', 'Scale', { replicas: 7 }, { replicas: 1 }],
    ]);
    expect(out.result.object['data']).toEqual({ a: '7' });
  });

  test('a stale resourceVersion is 409 and nothing is written', async () => {
    const s = await seeded();
    const err = await failure(updateObject(s.ctx, 'cm', cm('cm', { a: '2' }, { resourceVersion: '100' })));
    expect([err.code, err.reason, err.message]).toEqual([409, 'Conflict', `Operation cannot be fulfilled on configmaps "cm": ${MODIFIED}`]);
    expect(ops(s)).toEqual(['get']);
  });

  test('a resourceVersion that is not a number is 400', async () => {
    const s = await seeded();
    const err = await failure(updateObject(s.ctx, 'cm', cm('cm', { a: '2' }, { resourceVersion: 'abc' })));
    expect([err.code, err.message]).toEqual([400, 'invalid resourceVersion "abc"']);
  });

  test('a uid of another object is 409', async () => {
    const s = await seeded();
    const err = await failure(updateObject(s.ctx, 'cm', cm('cm', { a: '2' }, { uid: 'other' })));
    expect([err.code, err.message]).toEqual([409, `Operation cannot be fulfilled on configmaps "cm": Precondition failed: UID in precondition: other, UID in object meta: ${s.stored.metadata?.uid ?? ''}`]);
    expect(ops(s)).toEqual(['get']);
  });

  test('without a resourceVersion, a kind that requires one is 422; one that does not is replaced', async () => {
    const strict = await seeded({ ...configMaps, allowUnconditionalUpdate: false });
    const err = await failure(updateObject(strict.ctx, 'cm', cm('cm', { a: '2' })));
    expect([err.code, err.reason, err.message]).toEqual([422, 'Invalid', 'ConfigMap "cm" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update']);
    expect(ops(strict)).toEqual(['get']);

    const loose = await seeded();
    const out = await updateObject(loose.ctx, 'cm', cm('cm', { a: '2' }));
    expect(out.result.object['data']).toEqual({ a: '2' });
  });

  test('resourceVersion "0" is no precondition: an unconditional update where the kind allows one, else 422', async () => {
    const loose = await seeded();
    const out = await updateObject(loose.ctx, 'cm', cm('cm', { a: '2' }, { resourceVersion: '0' }));
    expect([out.result.object['data'], out.result.object.metadata?.resourceVersion]).toEqual([{ a: '2' }, '102']);
    expect(loose.storage.callsOf('update').map((c) => c.pre)).toEqual([{ revision: 101 }]);

    const strict = await seeded({ ...configMaps, allowUnconditionalUpdate: false });
    const err = await failure(updateObject(strict.ctx, 'cm', cm('cm', { a: '2' }, { resourceVersion: '0' })));
    expect([err.code, err.reason, err.message]).toEqual([422, 'Invalid', 'ConfigMap "cm" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update']);
    expect(ops(strict)).toEqual(['get']);
  });

  test('uid and creationTimestamp are carried; deletionTimestamp and deletionGracePeriodSeconds cannot be set (422, as the original)', async () => {
    const s = await seeded();
    const out = await updateObject(s.ctx, 'cm', cm('cm', { a: '2' }, { uid: undefined, creationTimestamp: '2000-01-01T00:00:00Z' }));
    expect(out.result.object.metadata).toEqual({ name: 'cm', namespace: 'team', uid: s.stored.metadata?.uid, creationTimestamp: CREATED, resourceVersion: '102' });
    const marked = await failure(updateObject(s.ctx, 'cm', cm('cm', { a: '3' }, { deletionTimestamp: '2000-01-01T00:00:00Z', deletionGracePeriodSeconds: 3 })));
    expect([marked.code, marked.details?.causes]).toEqual([
      422,
      [
        { reason: 'FieldValueInvalid', field: 'metadata.deletionTimestamp', message: 'Invalid value: "2000-01-01T00:00:00Z": field is immutable' },
        { reason: 'FieldValueInvalid', field: 'metadata.deletionGracePeriodSeconds', message: 'Invalid value: 3: field is immutable' },
      ],
    ]);
  });

  test('a client cannot change the generation: the stored one is kept (none for a kind without one)', async () => {
    const s = await seeded();
    const out = await updateObject(s.ctx, 'cm', cm('cm', { a: '2' }, { generation: -5 }));
    expect(out.result.object.metadata?.generation).toBeUndefined();
    const generated = setup(configMaps);
    await seed(generated, cm('g', { a: '1' }, { generation: 7 }));
    const kept = await updateObject(generated.ctx, 'g', cm('g', { a: '2' }, { generation: 1 }));
    expect(kept.result.object.metadata?.generation).toBe(7);
  });

  test('a write whose manager owns no field stores no managedFields at all (not an empty list)', async () => {
    const s = setup(configMaps, { fieldManager: 'robot' });
    const created = await createObject(s.ctx, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bare', managedFields: [] } });
    expect(created.object.metadata).not.toHaveProperty('managedFields');
    const withData = await createObject(s.ctx, cm('full'));
    expect(withData.object.metadata?.managedFields?.map((e) => e.manager)).toEqual(['robot']);
  });

  test('a generated object keeps its generateName when the body leaves it out', async () => {
    const s = setup(configMaps);
    const stored = await seed(s, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'cm-' } });
    const name = stored.metadata?.name ?? '';
    const out = await updateObject(s.ctx, name, cm(name, { a: '2' }));
    expect(out.result.object.metadata?.generateName).toBe('cm-');
  });

  test('the object is updated in the request’s namespace', async () => {
    const s = await seeded();
    const out = await updateObject(s.ctx, 'cm', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm' }, data: { a: '2' } });
    expect(out.result.object.metadata?.namespace).toBe('team');
  });

  test('a strategy prepares the update against the old object and validates the change', async () => {
    const seen: Array<[unknown, unknown]> = [];
    const def: ResourceDefinition = {
      ...configMaps,
      strategy: {
        prepareForUpdate: (obj, old) => {
          seen.push([obj['data'], old['data']]);
          obj['binaryData'] = old['binaryData'];
        },
        validateUpdate: (obj, old): StatusCause[] =>
          (obj['data'] as Record<string, string>)['a'] === 'frozen' ? [{ reason: 'FieldValueForbidden', field: 'data.a', message: `Forbidden: was ${(old['data'] as Record<string, string>)['a'] ?? ''}` }] : [],
      },
    };
    const s = setup(def);
    await seed(s, { ...cm('cm', { a: '1' }), binaryData: { b: 'AAAA' } });
    const out = await updateObject(s.ctx, 'cm', cm('cm', { a: '2' }));
    expect(seen).toEqual([[{ a: '2' }, { a: '1' }]]);
    expect(out.result.object['binaryData']).toEqual({ b: 'AAAA' });
    const err = await failure(updateObject(s.ctx, 'cm', cm('cm', { a: 'frozen' })));
    expect([err.code, err.message]).toEqual([422, 'ConfigMap "cm" is invalid: data.a: Forbidden: was 2']);
  });

  describe('a write that changes nothing', () => {
    test('is not written: same resourceVersion', async () => {
      const s = await seeded();
      const out = await updateObject(s.ctx, 'cm', cm('cm', { a: '1' }, { resourceVersion: s.rv }));
      expect(out.result.object.metadata?.resourceVersion).toBe(s.rv);
      expect(out.result.revision).toBe(101);
      expect(s.storage.callsOf('update')).toEqual([]);
      expect(s.admission.calls).toHaveLength(1);
    });

    test('is not written whatever the order of its keys', async () => {
      const s = await seeded();
      const meta = s.stored.metadata ?? {};
      const reordered: ApiObject = { data: { a: '1' }, metadata: { uid: meta.uid, resourceVersion: s.rv, creationTimestamp: meta.creationTimestamp, namespace: 'team', name: 'cm' }, kind: 'ConfigMap', apiVersion: 'v1' };
      const out = await updateObject(s.ctx, 'cm', reordered);
      expect(out.result.object.metadata?.resourceVersion).toBe(s.rv);
      expect(s.storage.callsOf('update')).toEqual([]);
    });

    test('a changed value of a map key is written', async () => {
      const s = await seeded();
      await updateObject(s.ctx, 'cm', cm('cm', { a: '1', b: '2' }));
      expect(s.storage.callsOf('update')).toHaveLength(1);
    });

    test('a change of managedFields alone is written (kubectl migrating its managers); the same entries again are not', async () => {
      const s = await seeded(configMaps, { fieldManager: 'kubectl-patch' });
      const migrated = [{ manager: 'kubectl', operation: 'Apply', apiVersion: 'v1', time: CREATED, fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { 'f:a': {} } } }];
      const body = (): ApiObject => cm('cm', { a: '1' }, { resourceVersion: s.rv, managedFields: migrated });
      const out = await updateObject(s.ctx, 'cm', body());
      expect(s.storage.callsOf('update')).toHaveLength(1);
      expect(out.result.object.metadata?.managedFields).toEqual(migrated);
      const again = await updateObject(s.ctx, 'cm', { ...body(), metadata: { ...body().metadata, resourceVersion: out.result.object.metadata?.resourceVersion } });
      expect(again.result.revision).toBe(out.result.revision);
      expect(s.storage.callsOf('update')).toHaveLength(1);
    });
  });

  describe('a write computed from the current object (a transform)', () => {
    const addKey =
      (k: string) =>
      (current: ApiObject): ComputedWrite => {
        const next = { ...current, data: { ...((current['data'] as Record<string, string>) ?? {}), [k]: 'x' } };
        return { sent: next, object: next };
      };

    test('is retried after a lost race, computed again from what is then current', async () => {
      const s = await seeded();
      s.storage.raceOn('update', 1, 2);
      let computed = 0;
      const out = await updateObject(s.ctx, 'cm', {}, (current) => {
        computed++;
        return addKey('b')(current);
      });
      expect(computed).toBe(3);
      expect(ops(s)).toEqual(['get', 'update', 'get', 'update', 'get', 'update']);
      expect(s.storage.callsOf('update').map((c) => c.pre.revision)).toEqual([101, 102, 103]);
      expect(out.result.object['data']).toEqual({ a: '1', b: 'x' });
      expect(out.result.revision).toBe(104);
    });

    test('is retried a bounded number of times, then 409', async () => {
      const s = await seeded();
      s.storage.raceOn('update', ...Array.from({ length: 101 }, (_, i) => i + 1));
      const err = await failure(updateObject(s.ctx, 'cm', {}, addKey('b')));
      expect([err.code, err.reason, err.message]).toEqual([409, 'Conflict', `Operation cannot be fulfilled on configmaps "cm": ${MODIFIED}`]);
      expect(s.storage.callsOf('update')).toHaveLength(101);
    });

    test('that carries a resourceVersion is checked against the object it is applied to again', async () => {
      const s = await seeded();
      s.storage.raceOn('update', 1);
      const err = await failure(
        updateObject(s.ctx, 'cm', {}, (current) => {
          const next = { ...current, data: { b: 'x' }, metadata: { ...(current.metadata ?? {}), resourceVersion: s.rv } };
          return { sent: next, object: next };
        }),
      );
      expect([err.code, err.message]).toEqual([409, `Operation cannot be fulfilled on configmaps "cm": ${MODIFIED}`]);
      expect(ops(s)).toEqual(['get', 'update', 'get']);
    });

    test('a missing object is computed from an empty one', async () => {
      const s = setup(events);
      const seen: ApiObject[] = [];
      const out = await updateObject(s.ctx, 'ev', {}, (current) => {
        seen.push(current);
        const next = { apiVersion: 'v1', kind: 'Event', metadata: { name: 'ev' }, involvedObject: { kind: 'Pod', name: 'p', namespace: 'team' }, reason: 'Test', message: 'm' };
        return { sent: next, object: next };
      });
      expect(seen).toEqual([{}]);
      expect(out.created).toBe(true);
    });
  });

  test('a lost race under the client’s own resourceVersion is 409 and not retried', async () => {
    const s = await seeded();
    s.storage.raceOn('update', 1);
    const err = await failure(updateObject(s.ctx, 'cm', cm('cm', { a: '2' }, { resourceVersion: s.rv })));
    expect([err.code, err.message]).toEqual([409, `Operation cannot be fulfilled on configmaps "cm": ${MODIFIED}`]);
    expect(ops(s)).toEqual(['get', 'update']);
  });

  test('a retried update reports each warning once', async () => {
    const s = await seeded(configMaps, { fieldValidation: 'Warn' });
    s.admission.warnings = ['careful'];
    s.storage.raceOn('update', 1);
    await updateObject(s.ctx, 'cm', { ...cm('cm', { a: '2' }), extra: true });
    expect(s.storage.callsOf('update')).toHaveLength(2);
    expect(s.warnings).toEqual(['unknown field "extra"', 'careful']);
  });

  test('an update without resourceVersion is retried after a lost race', async () => {
    const s = await seeded();
    s.storage.raceOn('update', 1);
    const out = await updateObject(s.ctx, 'cm', cm('cm', { a: '2' }));
    expect(ops(s)).toEqual(['get', 'update', 'get', 'update']);
    expect(out.result.object['data']).toEqual({ a: '2' });
  });

  test('a dry run is admitted as one and storage is told so; the stored object is unchanged', async () => {
    const s = await seeded(configMaps, { dryRun: true });
    const before = s.storage.snapshot();
    const out = await updateObject(s.ctx, 'cm', cm('cm', { a: '2' }));
    expect(out.result.object['data']).toEqual({ a: '2' });
    expect(s.storage.callsOf('update').map((c) => c.opts?.dryRun)).toEqual([true]);
    expect(s.admission.seen).toEqual([{ operation: 'UPDATE', phase: 'mutating-then-validating', dryRun: true }]);
    expect(s.storage.snapshot()).toBe(before);
  });

  test('the changed fields are recorded for the field manager', async () => {
    const s = await seeded(configMaps, { fieldManager: 'editor' });
    const out = await updateObject(s.ctx, 'cm', cm('cm', { a: '1', b: '2' }));
    expect(out.result.object.metadata?.managedFields).toEqual([
      { manager: 'creator', operation: 'Update', apiVersion: 'v1', time: CREATED, fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { '.': {}, 'f:a': {} } } },
      { manager: 'editor', operation: 'Update', apiVersion: 'v1', time: CREATED, fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { 'f:b': {} } } },
    ]);
  });

  describe('of a missing object', () => {
    const event = (name: string, metadata: Record<string, unknown> = {}): ApiObject => ({ apiVersion: 'v1', kind: 'Event', metadata: { name, ...metadata }, involvedObject: { kind: 'Pod', name: 'p', namespace: 'team' }, reason: 'Test', message: 'm' });

    test('creates it for a kind that allows create on update, authorized as create', async () => {
      const s = setup(events);
      const out = await updateObject(s.ctx, 'ev', event('ev', { resourceVersion: '5' }));
      expect(out.created).toBe(true);
      expect(out.result.object.metadata?.resourceVersion).toBe('101');
      expect(s.createChecks).toEqual(['events']);
      expect(s.admission.seen.map((c) => c.operation)).toEqual(['CREATE']);
      expect(ops(s)).toEqual(['get', 'create']);
    });

    test('a refused create stores nothing', async () => {
      const s = setup(events, { createRefused: ApiError.forbidden({ group: '', resource: 'events' }, 'ev', 'no') });
      const err = await failure(updateObject(s.ctx, 'ev', event('ev')));
      expect(err.code).toBe(403);
      expect(s.admission.calls).toEqual([]);
      expect(ops(s)).toEqual(['get']);
    });

    test('is 404 for a kind that does not allow create on update', async () => {
      const s = setup(configMaps);
      const err = await failure(updateObject(s.ctx, 'cm', cm('cm')));
      expect([err.code, err.reason, err.message]).toEqual([404, 'NotFound', 'configmaps "cm" not found']);
      expect(s.createChecks).toEqual([]);
      expect(ops(s)).toEqual(['get']);
    });

    test('is 404 through a subresource', async () => {
      const s = setup(events, { subresource: 'status' });
      const err = await failure(updateObject(s.ctx, 'ev', event('ev')));
      expect([err.code, err.message]).toEqual([404, 'events "ev" not found']);
      expect(ops(s)).toEqual(['get']);
    });
  });

  describe('identity', () => {
    test.each([
      ['a rename', { name: 'other' }, 'the name of the object (other) does not match the name on the URL (cm)'],
      ['no name', {}, 'the name of the object () does not match the name on the URL (cm)'],
      ['a namespace move', { name: 'cm', namespace: 'elsewhere' }, 'the namespace of the provided object (elsewhere) does not match the namespace sent on the request (team)'],
    ])('%s is 400 and nothing is written', async (_what, metadata, message) => {
      const s = await seeded();
      const before = s.storage.snapshot();
      const err = await failure(updateObject(s.ctx, 'cm', { apiVersion: 'v1', kind: 'ConfigMap', metadata, data: { a: '2' } }));
      expect([err.code, err.reason, err.message]).toEqual([400, 'BadRequest', message]);
      expect(ops(s)).toEqual(['get']);
      expect(s.admission.calls).toEqual([]);
      expect(s.storage.snapshot()).toBe(before);
    });

    test('what was sent is checked, not what a subresource maps it onto', async () => {
      const s = await seeded();
      const err = await failure(updateObject(s.ctx, 'cm', {}, (current) => ({ sent: { metadata: { name: 'other' } }, object: current })));
      expect([err.code, err.message]).toEqual([400, 'the name of the object (other) does not match the name on the URL (cm)']);
      expect(ops(s)).toEqual(['get']);
    });

    test('a rename of a missing object is 400, not a create', async () => {
      const s = setup(events);
      const err = await failure(updateObject(s.ctx, 'ev', { apiVersion: 'v1', kind: 'Event', metadata: { name: 'other' } }));
      expect([err.code, err.message]).toEqual([400, 'the name of the object (other) does not match the name on the URL (ev)']);
      expect(s.createChecks).toEqual([]);
      expect(ops(s)).toEqual(['get']);
    });
  });
});

describe('checkIdentity', () => {
  test('a collection write names no URL name; a body without a namespace takes the request’s', () => {
    expect(() => checkIdentity(configMaps, { metadata: { name: 'x' } }, undefined, 'team')).not.toThrow();
    expect(() => checkIdentity(configMaps, { metadata: { name: 'x' } }, 'x', 'team')).not.toThrow();
  });

  test('a cluster-scoped kind does not compare namespaces', () => {
    expect(() => checkIdentity(namespaces, { metadata: { name: 'x', namespace: 'team' } }, 'x', 'elsewhere')).not.toThrow();
  });
});

describe('deleteObject', () => {
  async function seeded(def: ResourceDefinition = configMaps, obj: ApiObject = cm('cm'), o: Options = {}) {
    const s = setup(def, o);
    const stored = await seed(s, obj);
    return { ...s, stored, rv: stored.metadata?.resourceVersion ?? '' };
  }

  test('deletes at the revision read, with its uid, after admission', async () => {
    const s = await seeded();
    const out = await deleteObject(s.ctx, 'cm', {});
    expect(out.removed).toBe(true);
    expect(out.object).toEqual(s.stored);
    expect(s.storage.byKey.size).toBe(0);
    expect(s.storage.callsOf('delete').map((c) => [c.key, c.pre, c.opts?.dryRun])).toEqual([[key(configMaps, 'cm'), { revision: 101, uid: s.stored.metadata?.uid }, false]]);
    expect(s.admission.calls.map((c) => [c.operation, c.name, c.object, c.oldObject])).toEqual([['DELETE', 'cm', undefined, s.stored]]);
  });

  test('admission is given the DeleteOptions', async () => {
    const s = await seeded();
    await deleteObject({ ...s.ctx, dryRun: true }, 'cm', { propagationPolicy: 'Foreground', preconditions: { uid: s.stored.metadata?.uid ?? '' } });
    expect(s.admission.calls[0]?.options).toEqual({ kind: 'DeleteOptions', apiVersion: 'meta.k8s.io/v1', dryRun: ['All'], propagationPolicy: 'Foreground', preconditions: { uid: s.stored.metadata?.uid } });
  });

  describe('propagation policy', () => {
    const finalizersOf = (o: ApiObject) => o.metadata?.finalizers;

    test.each([
      ['Foreground', { propagationPolicy: 'Foreground' }, ['keep', 'foregroundDeletion']],
      ['Orphan', { propagationPolicy: 'Orphan' }, ['keep', 'orphan']],
      ['orphanDependents true', { orphanDependents: true }, ['keep', 'orphan']],
    ])('%s marks the object with the collector\'s finalizer', async (_name, options, want) => {
      const s = await seeded(configMaps, cm('cm', {}, { finalizers: ['keep'] }));
      const out = await deleteObject(s.ctx, 'cm', options);
      expect(out.removed).toBe(false);
      expect(finalizersOf(out.object)).toEqual(want);
      expect(out.object.metadata?.deletionTimestamp).toBe(CREATED);
      expect(s.admission.calls[0]?.options).toEqual(expect.objectContaining(options));
    });

    test('Foreground on an object without finalizers marks it instead of deleting it; Background deletes it', async () => {
      const s = await seeded();
      const out = await deleteObject(s.ctx, 'cm', { propagationPolicy: 'Foreground' });
      expect([out.removed, finalizersOf(out.object)]).toEqual([false, ['foregroundDeletion']]);
      const other = await seeded(configMaps, cm('other'));
      expect((await deleteObject(other.ctx, 'other', { propagationPolicy: 'Background' })).removed).toBe(true);
    });

    test('a later delete changes the finalizers of a terminating object; no policy keeps them; Background drops them and the object goes', async () => {
      const s = await seeded();
      await deleteObject(s.ctx, 'cm', { propagationPolicy: 'Foreground' });
      const orphaned = await deleteObject(s.ctx, 'cm', { propagationPolicy: 'Orphan' });
      expect(finalizersOf(orphaned.object)).toEqual(['orphan']);
      const kept = await deleteObject(s.ctx, 'cm', {});
      expect([kept.removed, finalizersOf(kept.object)]).toEqual([false, ['orphan']]);
      const gone = await deleteObject(s.ctx, 'cm', { orphanDependents: false });
      expect(gone.removed).toBe(true);
      expect(s.storage.byKey.size).toBe(0);
    });

    test('a dry run stores nothing', async () => {
      const s = await seeded();
      const out = await deleteObject({ ...s.ctx, dryRun: true }, 'cm', { propagationPolicy: 'Orphan' });
      expect(finalizersOf(out.object)).toEqual(['orphan']);
      expect(finalizersOf(s.storage.byKey.values().next().value?.object as ApiObject)).toBeUndefined();
    });
  });

  test('a missing object is 404', async () => {
    const s = setup(configMaps);
    const err = await failure(deleteObject(s.ctx, 'cm', {}));
    expect([err.code, err.message]).toEqual([404, 'configmaps "cm" not found']);
    expect(s.admission.calls).toEqual([]);
  });

  test.each([
    ['uid', { uid: 'other' }, (uid: string) => `Precondition failed: UID in precondition: other, UID in object meta: ${uid}`],
    ['resourceVersion', { resourceVersion: '7' }, () => 'Precondition failed: ResourceVersion in precondition: 7, ResourceVersion in object meta: 101'],
  ])('a %s precondition that does not hold is 409 and nothing is deleted', async (_what, preconditions, why) => {
    const s = await seeded();
    const err = await failure(deleteObject(s.ctx, 'cm', { preconditions }));
    expect([err.code, err.reason, err.message]).toEqual([409, 'Conflict', `Operation cannot be fulfilled on configmaps "cm": ${why(s.stored.metadata?.uid ?? '')}`]);
    expect(ops(s)).toEqual(['get']);
    expect(s.admission.calls).toEqual([]);
    expect(s.storage.byKey.size).toBe(1);
  });

  test('preconditions that hold delete', async () => {
    const s = await seeded();
    const out = await deleteObject(s.ctx, 'cm', { preconditions: { uid: s.stored.metadata?.uid ?? '', resourceVersion: s.rv } });
    expect(out.removed).toBe(true);
  });

  test('a refusal of admission deletes nothing', async () => {
    const s = await seeded();
    s.admission.refuse = () => ApiError.forbidden({ group: '', resource: 'configmaps' }, 'cm', 'kept');
    const err = await failure(deleteObject(s.ctx, 'cm', {}));
    expect([err.code, err.message]).toEqual([403, 'configmaps "cm" is forbidden: kept']);
    expect(ops(s)).toEqual(['get']);
  });

  test('a race is retried from a new read', async () => {
    const s = await seeded();
    s.storage.raceOn('delete', 1);
    const out = await deleteObject(s.ctx, 'cm', {});
    expect(out.removed).toBe(true);
    expect(ops(s)).toEqual(['get', 'delete', 'get', 'delete']);
    expect(s.storage.callsOf('delete').map((c) => c.pre.revision)).toEqual([101, 102]);
  });

  test('a race is retried a bounded number of times (as an update is), then 409', async () => {
    const s = await seeded();
    s.storage.raceOn('delete', ...Array.from({ length: 101 }, (_, i) => i + 1));
    const err = await failure(deleteObject(s.ctx, 'cm', {}));
    expect([err.code, err.message]).toEqual([409, `Operation cannot be fulfilled on configmaps "cm": ${MODIFIED}`]);
    expect(s.storage.callsOf('delete')).toHaveLength(101);
  });

  test('a retried delete reports each warning once', async () => {
    const s = await seeded();
    s.admission.warnings = ['careful'];
    s.storage.raceOn('delete', 1);
    await deleteObject(s.ctx, 'cm', {});
    expect(s.admission.calls).toHaveLength(2);
    expect(s.warnings).toEqual(['careful']);
  });

  test('a race under the client’s preconditions is 409 and not retried', async () => {
    const s = await seeded();
    s.storage.raceOn('delete', 1);
    const err = await failure(deleteObject(s.ctx, 'cm', { preconditions: { resourceVersion: s.rv } }));
    expect([err.code, err.message]).toEqual([409, `Operation cannot be fulfilled on configmaps "cm": ${MODIFIED}`]);
    expect(ops(s)).toEqual(['get', 'delete']);
  });

  test('a dry run is admitted as one and storage is told so; the object stays', async () => {
    const s = await seeded(configMaps, cm('cm'), { dryRun: true });
    const out = await deleteObject(s.ctx, 'cm', {});
    expect(out.removed).toBe(true);
    expect(s.admission.seen).toEqual([{ operation: 'DELETE', phase: 'mutating-then-validating', dryRun: true }]);
    expect(s.storage.callsOf('delete').map((c) => c.opts?.dryRun)).toEqual([true]);
    expect(s.storage.byKey.size).toBe(1);
  });

  describe('finalizers', () => {
    const held = cm('cm', { a: '1' }, { finalizers: ['example.com/hold', 'example.com/other'] });

    test('an object with finalizers is only marked; a second delete leaves it as it is', async () => {
      const s = await seeded(configMaps, held);
      const first = await deleteObject(s.ctx, 'cm', {});
      expect(first.removed).toBe(false);
      expect(first.object.metadata).toMatchObject({ deletionTimestamp: CREATED, deletionGracePeriodSeconds: 0, finalizers: ['example.com/hold', 'example.com/other'], resourceVersion: '102' });
      expect(s.storage.callsOf('update').map((c) => c.pre)).toEqual([{ revision: 101 }]);
      expect(s.storage.callsOf('delete')).toEqual([]);

      s.storage.calls.length = 0;
      const second = await deleteObject({ ...s.ctx, now: new Date('2030-01-01T00:00:00Z') }, 'cm', {});
      expect(ops(s)).toEqual(['get']);
      expect(second).toEqual({ object: s.storage.peek(key(configMaps, 'cm')), removed: false });
      expect(second.object.metadata?.deletionTimestamp).toBe(CREATED);
      expect(second.object.metadata?.resourceVersion).toBe('102');
    });

    test('a dry run marks nothing', async () => {
      const s = await seeded(configMaps, held, { dryRun: true });
      const out = await deleteObject(s.ctx, 'cm', {});
      expect(out.object.metadata?.deletionTimestamp).toBe(CREATED);
      expect(s.storage.callsOf('update').map((c) => c.opts?.dryRun)).toEqual([true]);
      expect(s.storage.peek(key(configMaps, 'cm'))?.metadata?.deletionTimestamp).toBeUndefined();
    });

    test('removing a finalizer keeps the object; removing the last deletes it', async () => {
      const s = await seeded(configMaps, held);
      await deleteObject(s.ctx, 'cm', {});
      const one = await updateObject(s.ctx, 'cm', cm('cm', { a: '1' }, { finalizers: ['example.com/other'] }));
      expect(one.result.object.metadata?.deletionTimestamp).toBe(CREATED);
      expect(s.storage.callsOf('delete')).toEqual([]);

      const last = await updateObject(s.ctx, 'cm', cm('cm', { a: '1' }, { finalizers: [] }));
      expect(s.storage.byKey.size).toBe(0);
      expect(s.storage.callsOf('delete').map((c) => c.pre)).toEqual([{ revision: 104 }]);
      expect(last.created).toBe(false);
      expect(last.result.object.metadata?.finalizers).toEqual([]);
    });

    test('removing the last finalizer in a dry run deletes nothing', async () => {
      const s = await seeded(configMaps, held);
      await deleteObject(s.ctx, 'cm', {});
      await updateObject({ ...s.ctx, dryRun: true }, 'cm', cm('cm', { a: '1' }, { finalizers: [] }));
      expect(s.storage.callsOf('delete')).toEqual([]);
      expect(s.storage.byKey.size).toBe(1);
    });

    test('no finalizer can be added to an object being deleted (422)', async () => {
      const s = await seeded(configMaps, held);
      await deleteObject(s.ctx, 'cm', {});
      const before = s.storage.snapshot();
      const err = await failure(updateObject(s.ctx, 'cm', cm('cm', { a: '1' }, { finalizers: ['example.com/hold', 'example.com/new'] })));
      expect([err.code, err.reason, err.message]).toEqual([422, 'Invalid', 'ConfigMap "cm" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers ["example.com/new"]']);
      expect(s.storage.snapshot()).toBe(before);
    });

    test('a finalizer can be added to an object not being deleted', async () => {
      const s = await seeded();
      const out = await updateObject(s.ctx, 'cm', cm('cm', { a: '1' }, { finalizers: ['example.com/new'] }));
      expect(out.result.object.metadata?.finalizers).toEqual(['example.com/new']);
    });

    test('a kind’s own finalization holds the object and its strategy marks it (a Namespace turns Terminating)', async () => {
      const s = setup(namespaces);
      await seed(s, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'demo' } });
      const out = await deleteObject(s.ctx, 'demo', {});
      expect(out.removed).toBe(false);
      expect(out.object['status']).toEqual({ phase: 'Terminating' });
      expect(out.object.metadata?.deletionTimestamp).toBe(CREATED);
      expect(s.storage.callsOf('update').map((c) => c.key)).toEqual([key(namespaces, 'demo')]);
    });
  });
});

describe('graceful deletion (pods)', () => {
  const pods = podDefinition();
  const pod = (name: string, spec: Record<string, unknown> = {}, metadata: Record<string, unknown> = {}): ApiObject => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, ...metadata },
    spec: { containers: [{ name: 'c', image: 'busybox' }], ...spec },
  });
  const at = (seconds: number) => new Date(NOW.getTime() + seconds * 1000).toISOString().replace('.000Z', 'Z');

  test('a pod bound to no node is deleted at once, whatever the grace period asked for', async () => {
    const s = setup(pods);
    await seed(s, pod('web'));
    const out = await deleteObject(s.ctx, 'web', { gracePeriodSeconds: 30 });
    expect(out.removed).toBe(true);
    expect(ops(s)).toEqual(['get', 'delete']);
  });

  test('a bound pod is marked with its terminationGracePeriodSeconds; a second delete leaves it; a shorter period moves the deadline back; 0 deletes it', async () => {
    const s = setup(pods);
    await seed(s, pod('web', { nodeName: 'n1' }));
    const first = await deleteObject(s.ctx, 'web', {});
    expect(first.removed).toBe(false);
    expect(first.object.metadata).toMatchObject({ deletionTimestamp: at(30), deletionGracePeriodSeconds: 30 });
    expect(s.storage.callsOf('delete')).toEqual([]);

    s.storage.calls.length = 0;
    const again = await deleteObject({ ...s.ctx, now: new Date(NOW.getTime() + 5000) }, 'web', { gracePeriodSeconds: 60 });
    expect(ops(s)).toEqual(['get']);
    expect(again.object.metadata).toMatchObject({ deletionTimestamp: at(30), deletionGracePeriodSeconds: 30 });

    const shorter = await deleteObject(s.ctx, 'web', { gracePeriodSeconds: 10 });
    expect(shorter.removed).toBe(false);
    expect(shorter.object.metadata).toMatchObject({ deletionTimestamp: at(10), deletionGracePeriodSeconds: 10 });

    const forced = await deleteObject(s.ctx, 'web', { gracePeriodSeconds: 0 });
    expect(forced.removed).toBe(true);
    expect(s.storage.byKey.size).toBe(0);
  });

  test('a bound pod deleted with grace 0, or one that has finished, goes at once; a negative period is 1', async () => {
    const s = setup(pods);
    await seed(s, pod('forced', { nodeName: 'n1' }));
    expect((await deleteObject(s.ctx, 'forced', { gracePeriodSeconds: 0 })).removed).toBe(true);
    const done = await seed(s, pod('done', { nodeName: 'n1' }));
    await updateObject({ ...s.ctx, subresource: 'status' }, 'done', { ...done, status: { phase: 'Succeeded' } });
    expect(podGracePeriod({ ...done, status: { phase: 'Succeeded' } }, 30)).toBe(0);
    expect(podGracePeriod(done, -5)).toBe(1);
    expect(podGracePeriod(done, undefined)).toBe(30);
  });

  test('a bound pod with finalizers is marked with its grace period; an update of a terminating pod within its period keeps it', async () => {
    const s = setup(pods);
    await seed(s, pod('web', { nodeName: 'n1' }, { finalizers: ['example.com/hold'] }));
    const marked = await deleteObject(s.ctx, 'web', { gracePeriodSeconds: 20 });
    expect(marked.object.metadata).toMatchObject({ deletionTimestamp: at(20), deletionGracePeriodSeconds: 20 });
    const released = await updateObject(s.ctx, 'web', { ...marked.object, metadata: { ...marked.object.metadata, finalizers: [] } });
    expect(released.result.object.metadata?.deletionGracePeriodSeconds).toBe(20);
    expect(s.storage.byKey.size).toBe(1);
    expect((await deleteObject(s.ctx, 'web', { gracePeriodSeconds: 0 })).removed).toBe(true);
  });

  test('a kind that does not delete gracefully ignores the grace period', async () => {
    const s = setup(configMaps);
    await seed(s, cm('cm'));
    expect((await deleteObject(s.ctx, 'cm', { gracePeriodSeconds: 30 })).removed).toBe(true);
  });
});

describe('deleteCollection', () => {
  async function three(namespace = 'team') {
    const s = setup(configMaps, { namespace });
    for (const [ns, name] of [['team', 'a'], ['team', 'b'], ['team', 'c'], ['other', 'd']] as const) await seed({ ...s, ctx: { ...s.ctx, namespace: ns } }, cm(name));
    return s;
  }
  const remaining = (s: Setup) => [...s.storage.byKey.keys()];

  test('deletes what the list returns, each as a delete of its own, passing the list options', async () => {
    const s = await three();
    const out = await deleteCollection(s.ctx, { labelSelector: 'app=x', fieldSelector: 'metadata.name!=z', at: { minRevision: 3 }, limit: 500, continueToken: 'abc' }, {});
    expect(s.storage.callsOf('list')).toEqual([
      { op: 'list', key: { group: '', resource: 'configmaps', namespace: 'team' }, options: { labelSelector: 'app=x', fieldSelector: 'metadata.name!=z', at: { minRevision: 3 }, limit: 0, continueToken: 'abc' }, opts: { requestId: 'req-1', timeoutMs: DEFAULT_LIMITS.backendTimeoutMs } },
    ]);
    expect(out.items.map((i) => i.metadata?.name)).toEqual(['a', 'b', 'c']);
    expect(out.revision).toBe(104);
    expect(remaining(s)).toEqual(['/configmaps/other/d']);
    expect(s.admission.seen.map((c) => c.operation)).toEqual(['DELETE', 'DELETE', 'DELETE']);
  });

  test('every namespace: each object is deleted in its own', async () => {
    const s = await three('');
    const out = await deleteCollection(s.ctx, {}, {});
    expect(out.items.map((i) => `${i.metadata?.namespace ?? ''}/${i.metadata?.name ?? ''}`)).toEqual(['team/a', 'team/b', 'team/c', 'other/d']);
    expect(s.storage.callsOf('delete').map((c) => c.key.namespace)).toEqual(['team', 'team', 'team', 'other']);
    expect(s.storage.byKey.size).toBe(0);
  });

  test('an object gone in the meantime is skipped', async () => {
    const s = await three();
    const list = s.storage.list.bind(s.storage);
    s.storage.list = async (...args: Parameters<FakeStorage['list']>) => {
      const page = await list(...args);
      s.storage.byKey.delete(s.storage.keyOf(key(configMaps, 'b')));
      return page;
    };
    const out = await deleteCollection(s.ctx, {}, {});
    expect(out.items.map((i) => i.metadata?.name)).toEqual(['a', 'c']);
    expect(remaining(s)).toEqual(['/configmaps/other/d']);
  });

  test('any other failure ends it', async () => {
    const s = await three();
    s.admission.refuse = (input) => (input.name === 'b' ? ApiError.forbidden({ group: '', resource: 'configmaps' }, 'b', 'kept') : undefined);
    const err = await failure(deleteCollection(s.ctx, {}, {}));
    expect([err.code, err.message]).toEqual([403, 'configmaps "b" is forbidden: kept']);
    expect(remaining(s)).toEqual(['/configmaps/team/b', '/configmaps/team/c', '/configmaps/other/d']);
  });

  test('the delete options apply to each object; objects with finalizers are marked', async () => {
    const s = setup(configMaps);
    await seed(s, cm('a', {}, { finalizers: ['example.com/hold'] }));
    await seed(s, cm('b'));
    const out = await deleteCollection({ ...s.ctx, dryRun: true }, {}, { dryRun: true });
    expect(out.items.map((i) => [i.metadata?.name, i.metadata?.deletionTimestamp])).toEqual([
      ['a', CREATED],
      ['b', undefined],
    ]);
    expect(ops(s)).toEqual(['list', 'get', 'update', 'get', 'delete']);
    expect([...s.storage.callsOf('update'), ...s.storage.callsOf('delete')].map((c) => c.opts?.dryRun)).toEqual([true, true]);
    expect(s.storage.byKey.size).toBe(2);
    const pre = await failure(deleteCollection(s.ctx, {}, { preconditions: { resourceVersion: '1' } }));
    expect(pre.code).toBe(409);
  });
});

describe('getObject and listObjects', () => {
  test('get passes the key, the read-at options and the call options', async () => {
    const s = setup(configMaps);
    const stored = await seed(s, cm('cm'));
    const res = await getObject(s.ctx, 'cm', { minRevision: 101 });
    expect(res.object).toEqual(stored);
    expect(s.storage.calls).toEqual([{ op: 'get', key: key(configMaps, 'cm'), at: { minRevision: 101 }, opts: { requestId: 'req-1', timeoutMs: DEFAULT_LIMITS.backendTimeoutMs } }]);
    await getObject(s.ctx, 'cm');
    expect(s.storage.calls[1]).toMatchObject({ at: {} });
  });

  test('a cluster-scoped kind is read without a namespace whatever the request’s', async () => {
    const s = setup(namespaces, { namespace: 'team' });
    await seed({ ...s, ctx: { ...s.ctx, namespace: '' } }, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'demo' } });
    await getObject(s.ctx, 'demo', { revision: 101 });
    await listObjects(s.ctx, {});
    expect(s.storage.calls.map((c) => c.key)).toEqual([
      { group: '', resource: 'namespaces', namespace: '', name: 'demo' },
      { group: '', resource: 'namespaces', namespace: '' },
    ]);
    expect(s.storage.calls[0]).toMatchObject({ at: { revision: 101 } });
  });

  test('a missing object is 404', async () => {
    const s = setup(configMaps);
    const err = await failure(getObject(s.ctx, 'nope'));
    expect([err.code, err.message]).toEqual([404, 'configmaps "nope" not found']);
  });

  test('list passes the collection key and the options unchanged', async () => {
    const s = setup(configMaps);
    await seed(s, cm('a'));
    const options = { labelSelector: 'a=b', fieldSelector: 'metadata.name=a', limit: 5, continueToken: 'tok', at: { revision: 101 } };
    const page = await listObjects(s.ctx, options);
    expect(page.items.map((i) => i.metadata?.name)).toEqual(['a']);
    expect(s.storage.calls).toEqual([{ op: 'list', key: { group: '', resource: 'configmaps', namespace: 'team' }, options, opts: { requestId: 'req-1', timeoutMs: DEFAULT_LIMITS.backendTimeoutMs } }]);
  });
});

describe('the write guard of a kind', () => {
  const role = (name: string, rules: unknown[]): ApiObject => ({ apiVersion: 'rbac.authorization.svc.io/v1', kind: 'Role', metadata: { name }, rules });
  const readPods = { apiGroups: [''], resources: ['pods'], verbs: ['get'] };

  test('a Role write grants nothing its writer does not hold: 403 naming the rules, nothing stored', async () => {
    const s = setup(roles);
    const err = await failure(createObject(s.ctx, role('reader', [readPods])));
    expect(s.authz.asked.map((a) => [a.verb, a.apiGroup, a.resource, a.namespace, a.name])).toEqual([['escalate', 'rbac.authorization.svc.io', 'roles', 'team', 'reader']]);
    expect(s.authz.coverChecks).toEqual([{ namespace: 'team', rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'], resourceNames: [], nonResourceURLs: [] }] }]);
    expect([err.code, err.message]).toEqual([
      403,
      'roles.rbac.authorization.svc.io "reader" is forbidden: user "robot" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[""], Resources:["pods"], Verbs:["get"]}',
    ]);
    expect(s.storage.callsOf('create')).toEqual([]);
  });

  test('a writer who may escalate writes the Role; the guard runs on updates too', async () => {
    const s = setup(roles, { allowedVerbs: ['escalate'] });
    await createObject(s.ctx, role('reader', [readPods]));
    await updateObject(s.ctx, 'reader', role('reader', [readPods, { apiGroups: [''], resources: ['secrets'], verbs: ['get'] }]));
    expect(s.authz.asked.map((a) => a.verb)).toEqual(['escalate', 'escalate']);
    expect(s.authz.coverChecks).toEqual([]);
    expect(s.storage.callsOf('update')).toHaveLength(1);
  });

  test('the guard sees the object as admission mutated it', async () => {
    const s = setup(roles);
    s.admission.mutate = (input) => ({ ...(input.object as ApiObject), rules: [readPods] });
    await failure(createObject(s.ctx, role('reader', [])));
    expect(s.authz.coverChecks.map((c) => c.rules.length)).toEqual([1]);
  });

  test('a RoleBinding needs the permissions of the role it binds', async () => {
    const s = setup(roleBindings);
    s.storage.seed({ group: 'rbac.authorization.svc.io', resource: 'roles', namespace: 'team', name: 'reader' }, role('reader', [readPods]));
    const err = await failure(
      createObject(s.ctx, { apiVersion: 'rbac.authorization.svc.io/v1', kind: 'RoleBinding', metadata: { name: 'b' }, roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'Role', name: 'reader' }, subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.svc.io', name: 'u' }] }),
    );
    expect(err.code).toBe(403);
    expect(s.authz.asked.map((a) => [a.verb, a.resource, a.name])).toEqual([['bind', 'roles', 'reader']]);
    expect(s.authz.coverChecks.map((c) => c.rules.map((r) => r.resources))).toEqual([[['pods']]]);
  });

  test('deleting a Role is not guarded', async () => {
    const s = setup(roles, { allowedVerbs: ['escalate'] });
    await seed(s, role('reader', [readPods]));
    s.authz.asked.length = 0;
    await deleteObject(s.ctx, 'reader', {});
    expect(s.authz.asked).toEqual([]);
  });

  test('a ConfigMap write asks authz nothing', async () => {
    const s = setup(configMaps);
    await createObject(s.ctx, cm('cm'));
    await updateObject(s.ctx, 'cm', cm('cm', { a: '2' }));
    expect(s.authz.asked).toEqual([]);
    expect(s.authz.coverChecks).toEqual([]);
  });
});
