import { randomUUID } from 'node:crypto';
import {
  ApiError,
  canonicalGroup,
  checkFieldLabels,
  checkAgainstSchema,
  generateNameFrom,
  groupVersion,
  rfc3339,
  validateAnnotations,
  validateDns1123Label,
  validateDns1123Subdomain,
  validateLabels,
  validatePathSegmentName,
  validateQualifiedName,
  type ApiObject,
  type ResourceDefinition,
  type ResourceRegistry,
  type StatusCause,
  type StoredKey,
} from '@svc/apimachinery';
import { trackUpdate } from '@svc/merge';
import type { ListPage, ListRequestOptions, ReadAtOptions, StoredResult } from '@svc/storage/client';
import type { GatewayDeps } from '../backends';
import { DEFAULT_WEBHOOK_CONVERTER_OPTIONS, type WebhookConverterOptions } from '../conversion/converter';
import { storageFor } from '../conversion/versioned-storage';
import type { ObjectStorage } from './storage-interface';
import { callOptionsWithin } from '../request-timeout';
import type { WriteContext } from './write-context';
import { jsonUnmarshalMessage } from './decode-messages';
import { validateOwnerReferences } from './owner-references';
import { withPropagationFinalizers } from './propagation';
import { writeGuardOf } from './write-guards';

export type { FieldValidation, WriteContext } from './write-context';

/**
 * The generic store, the only way from the handlers to storage: create,
 * get, list, update, delete and deletecollection for every kind, built-in
 * and custom, configured by the kind's registry entry (strategy hooks,
 * schema) instead of a class per kind, and calling one storage interface
 * (storage-interface.ts) that version conversion decorates. Order on
 * create, as in the original server: metadata, prepareForCreate, defaults,
 * validation, mutating admission, validation again, validating admission
 * and the kind's write guard, storage.
 */

/** Records the fields a create, update or non-apply patch changed, for its field manager. */
function recordManagedFields(ctx: WriteContext, obj: ApiObject, old: ApiObject | undefined): ApiObject {
  if (ctx.fieldManager === undefined) return obj;
  let tracked;
  try {
    tracked = trackUpdate({
      old,
      new: obj,
      manager: ctx.fieldManager,
      apiVersion: groupVersion(ctx.def),
      now: ctx.now ?? new Date(),
      schema: ctx.def.schema,
      ...(ctx.subresource ? { subresource: ctx.subresource } : {}),
    });
  } catch (err) {
    throw ApiError.from(err);
  }
  const { managedFields: _sent, ...meta } = obj.metadata ?? {};
  // No entries is no field, as the original writes it (never `managedFields: []`).
  if (tracked.managedFields.length === 0) return { ...obj, metadata: meta };
  return { ...obj, metadata: { ...meta, managedFields: tracked.managedFields as NonNullable<ApiObject['metadata']>['managedFields'] } };
}

/**
 * The storage of a served version: storage itself, or for a kind stored in
 * another version a view that converts what is written and read.
 */
export function resourceStorage(deps: GatewayDeps, def: ResourceDefinition): ObjectStorage {
  return storageFor(deps.storage, def, conversionOptions(deps));
}

export function conversionOptions(deps: Pick<GatewayDeps, 'limits' | 'webhookAgents'>): WebhookConverterOptions {
  return { ...DEFAULT_WEBHOOK_CONVERTER_OPTIONS, timeoutMs: deps.limits.conversionWebhookTimeoutMs, agents: deps.webhookAgents };
}

/** Where `def`'s objects are stored: its own group and plural, or the storage it shares with another kind. */
export function keyOf(def: ResourceDefinition, namespace: string, name: string): StoredKey {
  const { group, resource } = def.storedAs ?? { group: def.group, resource: def.plural };
  return { group, resource, namespace: def.namespaced ? namespace : '', name };
}

/** What a read needs: the kind, the request's namespace, and the request it belongs to. */
export type ReadContext = Pick<WriteContext, 'deps' | 'def' | 'namespace' | 'requestId' | 'deadline'>;

/** Options of one storage call: bounded by the backend timeout and by what is left of the request's deadline (taken per call). */
function callOptionsOf(ctx: ReadContext) {
  return callOptionsWithin(ctx, ctx.deps.limits.backendTimeoutMs);
}

/** One object, the latest or one not older than `at`, as the served version reads it (404 when missing). */
export function getObject(ctx: ReadContext, name: string, at: ReadAtOptions = {}): Promise<StoredResult> {
  return resourceStorage(ctx.deps, ctx.def).get(keyOf(ctx.def, ctx.namespace, name), at, callOptionsOf(ctx));
}

/** A page of the collection (the request's namespace, or every namespace), as the options select it. */
export function listObjects(ctx: ReadContext, options: ListRequestOptions): Promise<ListPage> {
  checkFieldLabels(ctx.def, options.fieldSelector);
  const { group, resource, namespace } = keyOf(ctx.def, ctx.namespace, '');
  return resourceStorage(ctx.deps, ctx.def).list({ group, resource, namespace }, options, callOptionsOf(ctx));
}

function gr(def: ResourceDefinition) {
  return { group: def.group, resource: def.plural };
}

function validateName(def: ResourceDefinition, name: string, field: string): StatusCause[] {
  switch (def.nameValidation ?? 'dns-subdomain') {
    case 'dns-label':
      return validateDns1123Label(name, field);
    case 'path-segment':
      return validatePathSegmentName(name, field);
    default:
      return validateDns1123Subdomain(name, field);
  }
}

/** What the decoder knows besides the endpoint's kind: every kind served (a body of another is converted or refused). */
export type KnownKinds = Pick<ResourceRegistry, 'lookupKind'>;

/** The Go package of the original's internal type of a group, as its conversion errors name it (`core.Secret`, `apps.Deployment`). */
function internalPackage(def: Pick<ResourceDefinition, 'group' | 'storedAs'>): string {
  if (def.group === '' || def.storedAs?.group === '') return 'core';
  return def.group.split('.')[0] ?? def.group;
}

/** apiVersion and kind, when given, are strings: the original's decoder cannot read the type otherwise. */
export function checkTypeMetaStrings(def: Pick<ResourceDefinition, 'kind'>, obj: ApiObject): void {
  for (const field of ['apiVersion', 'kind'] as const) if (obj[field] !== undefined && obj[field] !== null && typeof obj[field] !== 'string') throw unrecognized(def, obj, field);
}

/**
 * The original decoder's refusal of a body of `apiVersion` and `kind` sent
 * for `target` (its kind in its version): another served version of the
 * kind is "the API version in the data ... does not match"; a kind the
 * server knows "cannot be handled as" the target (no conversion between
 * them); one it does not know is "not registered".
 */
export function typeMetaRefusal(target: Pick<ResourceDefinition, 'group' | 'version' | 'kind' | 'storedAs'>, apiVersion: string, kind: string, known?: KnownKinds): ApiError {
  const slash = apiVersion.indexOf('/');
  const group = slash < 0 ? '' : canonicalGroup(apiVersion.slice(0, slash));
  const version = apiVersion.slice(slash + 1);
  const other = known?.lookupKind(group, version, kind);
  const served = other !== undefined && other.decoding !== 'unstructured';
  if (served && kind === target.kind) return ApiError.badRequest(`the API version in the data (${apiVersion}) does not match the expected API version (${groupVersion(target)})`);
  const cause = served
    ? `converting (${version}.${kind}) to (${internalPackage(target)}.${target.kind}): unknown conversion`
    : `no kind "${kind}" is registered for version "${apiVersion}" in scheme "pkg/api/legacyscheme/scheme.go:30"`;
  return ApiError.badRequest(`${kind} in version "${version}" cannot be handled as a ${target.kind}: ${cause}`);
}

/** The original's decoder when apiVersion or kind is not a string: it cannot read the type, and says so with the start of the body. */
function unrecognized(def: Pick<ResourceDefinition, 'kind'>, obj: ApiObject, field: 'apiVersion' | 'kind'): ApiError {
  const value: unknown = obj[field];
  const type = Array.isArray(value) ? 'array' : typeof value === 'boolean' ? 'bool' : typeof value;
  const body = JSON.stringify(obj);
  const summary = body.length > 30 ? `${body.slice(0, 30)} ...` : body;
  return ApiError.badRequest(
    `the object provided is unrecognized (must be of type ${def.kind}): couldn't get version/kind; json parse error: json: cannot unmarshal ${type} into Go struct field .${field} of type string (${summary})`,
  );
}

/**
 * Checks apiVersion and kind of a body sent to an endpoint. Either may be
 * left out (the endpoint's are meant, as the original's decoder defaults
 * them). A body that names the upstream name of the group
 * (`rbac.authorization.k8s.io/v1`) is taken as ours and stored under our
 * name. Another kind or version is refused in the original decoder's words
 * (typeMetaRefusal). Custom resources are read as the original reads them,
 * unstructured.
 */
export function checkTypeMeta(def: ResourceDefinition, obj: ApiObject, known?: KnownKinds): void {
  const gv = groupVersion(def);
  if (typeof obj.apiVersion === 'string' && obj.apiVersion !== gv) {
    const slash = obj.apiVersion.indexOf('/');
    if (slash > 0 && `${canonicalGroup(obj.apiVersion.slice(0, slash))}${obj.apiVersion.slice(slash)}` === gv) obj.apiVersion = gv;
  }
  if (def.decoding === 'unstructured') {
    if (obj.apiVersion !== undefined && obj.apiVersion !== gv) {
      throw ApiError.badRequest(`the API version in the data (${String(obj.apiVersion)}) does not match the expected API version (${gv})`);
    }
    if (obj.kind !== undefined && obj.kind !== def.kind) {
      throw ApiError.badRequest(`the kind in the data (${String(obj.kind)}) does not match the expected kind (${def.kind})`);
    }
  } else {
    checkTypeMetaStrings(def, obj);
    const apiVersion = typeof obj.apiVersion === 'string' && obj.apiVersion !== '' ? obj.apiVersion : gv;
    const kind = typeof obj.kind === 'string' && obj.kind !== '' ? obj.kind : def.kind;
    if (apiVersion !== gv || kind !== def.kind) throw typeMetaRefusal(def, apiVersion, kind, known);
  }
  if (obj.metadata !== undefined && (typeof obj.metadata !== 'object' || obj.metadata === null || Array.isArray(obj.metadata))) {
    throw ApiError.badRequest('metadata must be an object');
  }
}

/** Schema check: type errors are 400; unknown fields by the fieldValidation level; the result is pruned. */
export function decodeAgainstSchema(ctx: WriteContext, obj: ApiObject): ApiObject {
  const unstructured = ctx.def.decoding === 'unstructured';
  // Built-in kinds decode each typed scalar (bytes, times, sized integers, quantities) by its format; custom resources only their metadata, which is typed there too.
  const result = checkAgainstSchema(obj, ctx.def.schema, { unstructured, formats: unstructured ? 'metadata' : true });
  // Custom resources are decoded unstructured: a mistyped value is the schema validation's to report (422).
  const undecodable = unstructured ? result.formatErrors : result.typeErrors;
  if (undecodable.length > 0) {
    const first = undecodable[0] as StatusCause;
    const reason = jsonUnmarshalMessage(first, obj) ?? first.message ?? '';
    throw ApiError.badRequest(`${ctx.def.kind} in version "${ctx.def.version}" cannot be handled as a ${ctx.def.kind}: ${reason}`, undecodable);
  }
  const problems = [...result.unknownFields.map((f) => `unknown field "${f}"`), ...(ctx.duplicateFields ?? []).map((f) => `duplicate field "${f}"`)];
  if (problems.length > 0) {
    if (ctx.fieldValidation === 'Strict') throw ApiError.badRequest(`strict decoding error: ${problems.join(', ')}`);
    if (ctx.fieldValidation === 'Warn') for (const p of problems) ctx.warn(p);
  }
  return result.pruned as ApiObject;
}

function validateMeta(def: ResourceDefinition, obj: ApiObject): StatusCause[] {
  const meta = obj.metadata ?? {};
  const causes: StatusCause[] = [];
  if (!meta.name) causes.push({ reason: 'FieldValueRequired', field: 'metadata.name', message: 'Required value: name or generateName is required' });
  else causes.push(...validateName(def, meta.name, 'metadata.name'));
  if (def.namespaced) {
    if (!meta.namespace) causes.push({ reason: 'FieldValueRequired', field: 'metadata.namespace', message: 'Required value' });
    else causes.push(...validateDns1123Label(meta.namespace, 'metadata.namespace'));
  } else if (meta.namespace) {
    causes.push({ reason: 'FieldValueForbidden', field: 'metadata.namespace', message: 'Forbidden: not allowed on this type' });
  }
  causes.push(...validateLabels(meta.labels, 'metadata.labels'));
  causes.push(...validateAnnotations(meta.annotations, 'metadata.annotations'));
  causes.push(...validateFinalizers(meta.finalizers ?? []));
  if (typeof meta.generation === 'number' && meta.generation < 0) {
    causes.push({ reason: 'FieldValueInvalid', field: 'metadata.generation', message: `Invalid value: ${meta.generation}: must be greater than or equal to 0` });
  }
  causes.push(...validateOwnerReferences(meta));
  return causes;
}

/** Finalizers are qualified names (the field is the list's, as the original names it), and orphan excludes foregroundDeletion. */
function validateFinalizers(finalizers: string[]): StatusCause[] {
  const causes = finalizers.flatMap((f) => validateQualifiedName(f, 'metadata.finalizers'));
  if (finalizers.includes('orphan') && finalizers.includes('foregroundDeletion')) {
    causes.push({ reason: 'FieldValueInvalid', field: 'metadata.finalizers', message: `Invalid value: ${JSON.stringify(finalizers)}: finalizer orphan and foregroundDeletion cannot be both set` });
  }
  return causes;
}

/** What an update may not do to metadata whatever the kind (the original server's object-meta update rules). */
function validateMetaUpdate(obj: ApiObject, old: ApiObject): StatusCause[] {
  const meta = obj.metadata ?? {};
  const oldMeta = old.metadata ?? {};
  const causes: StatusCause[] = [];
  const immutable = (field: string, value: unknown): StatusCause => ({ reason: 'FieldValueInvalid', field: `metadata.${field}`, message: `Invalid value: ${JSON.stringify(value ?? null)}: field is immutable` });
  // Only a DELETE marks an object for deletion.
  if (!oldMeta.deletionTimestamp && meta.deletionTimestamp) causes.push(immutable('deletionTimestamp', meta.deletionTimestamp));
  if (meta.deletionGracePeriodSeconds !== oldMeta.deletionGracePeriodSeconds) causes.push(immutable('deletionGracePeriodSeconds', meta.deletionGracePeriodSeconds));
  if (!oldMeta.deletionTimestamp) return causes;
  const before = new Set(oldMeta.finalizers ?? []);
  const added = (meta.finalizers ?? []).filter((f) => !before.has(f));
  if (added.length > 0) {
    causes.push({ reason: 'FieldValueForbidden', field: 'metadata.finalizers', message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers ${JSON.stringify(added)}` });
  }
  return causes;
}

function throwIfInvalid(def: ResourceDefinition, obj: ApiObject, causes: StatusCause[]): void {
  if (causes.length > 0) throw ApiError.invalid({ group: def.group, kind: def.kind }, obj.metadata?.name ?? '', causes);
}

function admissionResource(def: ResourceDefinition) {
  return {
    kind: { group: def.group, version: def.version, kind: def.kind },
    resource: { group: def.group, version: def.version, resource: def.plural },
  };
}

/** The options of the write, as the original server hands them to admission (CreateOptions, UpdateOptions, DeleteOptions). */
function admissionOptions(ctx: WriteContext, operation: 'CREATE' | 'UPDATE' | 'DELETE', deletion: DeleteOptions | undefined): Record<string, unknown> {
  const kind = { CREATE: 'CreateOptions', UPDATE: 'UpdateOptions', DELETE: 'DeleteOptions' }[operation];
  return {
    kind,
    apiVersion: 'meta.k8s.io/v1',
    ...(ctx.dryRun ? { dryRun: ['All'] } : {}),
    ...(operation !== 'DELETE' && ctx.fieldManager !== undefined ? { fieldManager: ctx.fieldManager } : {}),
    ...(deletion?.propagationPolicy ? { propagationPolicy: deletion.propagationPolicy } : {}),
    ...(deletion?.orphanDependents !== undefined ? { orphanDependents: deletion.orphanDependents } : {}),
    ...(deletion?.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: deletion.gracePeriodSeconds } : {}),
    ...(deletion?.preconditions ? { preconditions: deletion.preconditions } : {}),
  };
}

/**
 * What a write's object passes before admission, and again when mutating
 * admission changed it (the original decodes, defaults and validates the
 * object a webhook patched): system fields, the kind's preparation and
 * defaults, validation.
 */
type Preparation = (obj: ApiObject) => void;

/**
 * An object that mutating admission changed (through the admission view
 * when the write has one), made a valid object of the kind again or refused: decoded against the schema (fields the kind does
 * not have are dropped, as the original decodes a patched object), its
 * identity and system fields kept, prepared, defaulted and validated as
 * the client's object was. A refusal names the webhooks that changed it.
 */
function admittedObject(ctx: WriteContext, name: string, onto: (shown: ApiObject) => ApiObject, shown: ApiObject, mutatedBy: string[], prepare: Preparation, updating: boolean): ApiObject {
  try {
    const mutated = onto(shown);
    checkTypeMeta(ctx.def, mutated, ctx.deps.registry);
    const obj = decodeAgainstSchema({ ...ctx, fieldValidation: 'Ignore', duplicateFields: [] }, mutated);
    const causes: StatusCause[] = [];
    const meta = obj.metadata ?? {};
    if (ctx.def.namespaced && (meta.namespace ?? '') !== ctx.namespace) causes.push({ reason: 'FieldValueInvalid', field: 'metadata.namespace', message: `Invalid value: ${JSON.stringify(meta.namespace ?? '')}: field is immutable` });
    if (updating && meta.name !== name) causes.push({ reason: 'FieldValueInvalid', field: 'metadata.name', message: `Invalid value: ${JSON.stringify(meta.name ?? '')}: field is immutable` });
    throwIfInvalid(ctx.def, obj, causes);
    prepare(obj);
    return obj;
  } catch (err) {
    const e = ApiError.from(err);
    if (mutatedBy.length === 0) throw e;
    const by = mutatedBy.map((w) => JSON.stringify(w)).join(', ');
    throw new ApiError(e.code, e.reason, `${e.message} (the object as changed by admission webhook ${by})`, e.details);
  }
}

/** Admission's audit annotations (webhooks' as `<webhook>/<key>`, policies' as `<policy>/<key>`) go to the request's audit event. */
export function annotateAudit(ctx: WriteContext, annotations: Readonly<Record<string, string>>): void {
  if (!ctx.annotate) return;
  for (const [key, value] of Object.entries(annotations)) ctx.annotate(key, value);
}

interface AdmitExtras {
  /** How a changed object is made valid again (creates and updates). */
  prepare?: Preparation;
  /** The options of a delete. */
  deletion?: DeleteOptions;
}

async function admit(ctx: WriteContext, operation: 'CREATE' | 'UPDATE' | 'DELETE', name: string, obj: ApiObject | undefined, old: ApiObject | undefined, extras: AdmitExtras = {}): Promise<ApiObject | undefined> {
  const { prepare, deletion } = extras;
  const view = ctx.admissionView;
  const shown = <T extends ApiObject | undefined>(o: T): T => (o && view ? (view.of(o) as T) : o);
  const resource = admissionResource(ctx.def);
  const base = {
    operation,
    ...resource,
    ...(view ? { kind: view.kind } : {}),
    subresource: ctx.subresource,
    namespace: ctx.def.namespaced ? ctx.namespace : '',
    name,
    userInfo: ctx.user,
    dryRun: ctx.dryRun,
    options: admissionOptions(ctx, operation, deletion),
    ...(old ? { oldObject: shown(old) } : {}),
  };
  // Admission may call webhooks: its deadline is its own.
  const opts = () => callOptionsWithin(ctx, ctx.deps.limits.admissionTimeoutMs);
  // The caller validated `obj`; when mutation leaves it unchanged, admission
  // validates in the same call.
  const mutated = await ctx.deps.admission.admit({ ...base, phase: 'mutating-then-validating', ...(obj ? { object: shown(obj) } : {}) }, opts());
  for (const w of mutated.warnings) ctx.warn(w);
  annotateAudit(ctx, mutated.auditAnnotations);
  const guard = writeGuardOf(ctx.def);
  if (mutated.validated) {
    if (obj && operation !== 'DELETE') await guard?.(ctx, name, obj);
    return obj;
  }
  const final = mutated.object && obj && prepare ? admittedObject(ctx, name, view ? (v) => view.onto(v, obj) : (v) => v, mutated.object, mutated.mutatedBy, prepare, operation === 'UPDATE') : obj;
  const validated = await ctx.deps.admission.admit({ ...base, phase: 'validating', ...(final ? { object: shown(final) } : {}) }, opts());
  for (const w of validated.warnings) ctx.warn(w);
  annotateAudit(ctx, validated.auditAnnotations);
  if (final && operation !== 'DELETE') await guard?.(ctx, name, final);
  return final;
}

/**
 * The one comparison of a body's identity with the request's: the name must
 * be the URL's (a missing name too is a mismatch) when the URL names one,
 * and a namespace, when the body has one, the URL's. Every write passes here
 * with what the client's body amounts to (the body itself, the patched
 * object, the Scale), before any subresource takes its part of it.
 */
export function checkIdentity(def: Pick<ResourceDefinition, 'namespaced'>, obj: ApiObject, urlName: string | undefined, urlNamespace: string): void {
  const name = obj.metadata?.name ?? '';
  if (urlName !== undefined && name !== urlName) {
    throw ApiError.badRequest(`the name of the object (${name}) does not match the name on the URL (${urlName})`);
  }
  const namespace = obj.metadata?.namespace;
  if (def.namespaced && urlNamespace && namespace && namespace !== urlNamespace) {
    throw ApiError.badRequest(`the namespace of the provided object (${namespace}) does not match the namespace sent on the request (${urlNamespace})`);
  }
}

/**
 * Creates an object: from a POST to its collection (`urlName` undefined), or
 * from an update or apply of a missing name (then the body's name must be
 * that name, and the requester must also be allowed to create).
 */
export async function createObject(ctx: WriteContext, input: ApiObject, urlName?: string): Promise<StoredResult> {
  const { def } = ctx;
  checkTypeMeta(def, input, ctx.deps.registry);
  checkIdentity(def, input, urlName, ctx.namespace);
  await ctx.authorizeCreate();
  const obj = decodeAgainstSchema(ctx, input);
  obj.apiVersion = groupVersion(def);
  obj.kind = def.kind;
  const meta = { ...(obj.metadata ?? {}) };
  // A cluster-scoped object has no namespace: one in the body is dropped, as the original server does.
  if (def.namespaced) meta.namespace = ctx.namespace;
  else delete meta.namespace;
  if (meta.resourceVersion) throw ApiError.badRequest('resourceVersion should not be set on objects to be created');
  const generated = !meta.name && !!meta.generateName;
  if (generated) meta.name = generateNameFrom(meta.generateName as string);
  obj.metadata = meta;
  const system = { uid: randomUUID(), creationTimestamp: rfc3339(ctx.now ?? new Date()) };
  const prepare: Preparation = (o) => {
    const m = { ...(o.metadata ?? {}), ...system };
    if (def.namespaced) m.namespace = ctx.namespace;
    else delete m.namespace;
    delete m.resourceVersion;
    delete m.deletionTimestamp;
    delete m.deletionGracePeriodSeconds;
    o.apiVersion = groupVersion(def);
    o.kind = def.kind;
    o.metadata = m;
    def.strategy.prepareForCreate?.(o);
    def.strategy.applyDefaults?.(o);
    throwIfInvalid(def, o, [...validateMeta(def, o), ...(def.strategy.validate?.(o) ?? [])]);
  };
  prepare(obj);
  const admitted = recordManagedFields(ctx, (await admit(ctx, 'CREATE', meta.name ?? '', obj, undefined, { prepare })) as ApiObject, undefined);
  const key = keyOf(def, ctx.namespace, admitted.metadata?.name ?? '');
  // A generated name that collides is retried with a new suffix.
  for (let attempt = 0; ; attempt++) {
    try {
      return await resourceStorage(ctx.deps, def).create(key, admitted, { ...callOptionsOf(ctx), dryRun: ctx.dryRun });
    } catch (err) {
      if (!(generated && err instanceof ApiError && err.reason === 'AlreadyExists' && attempt < 7)) throw err;
      const name = generateNameFrom(meta.generateName as string);
      admitted.metadata = { ...(admitted.metadata ?? {}), name };
      key.name = name;
    }
  }
}

/** The context with each warning reported once: a write retried after a lost race decodes and admits again. */
function warningOnce(ctx: WriteContext): WriteContext {
  const reported = new Set<string>();
  return {
    ...ctx,
    warn: (text) => {
      if (reported.has(text)) return;
      reported.add(text);
      ctx.warn(text);
    },
  };
}

/** Fields a client cannot change through an update. */
function carryImmutableMeta(obj: ApiObject, old: ApiObject): void {
  const meta = { ...(obj.metadata ?? {}) };
  const oldMeta = old.metadata ?? {};
  meta.uid = oldMeta.uid;
  meta.creationTimestamp = oldMeta.creationTimestamp;
  // A client cannot change the generation (a kind that counts spec changes moves it in prepareForUpdate).
  if (oldMeta.generation !== undefined) meta.generation = oldMeta.generation;
  else delete meta.generation;
  // An update never removes or moves a deletionTimestamp, nor drops a grace period; one a client
  // sets or changes otherwise is refused by validateMetaUpdate, as the original refuses it.
  if (oldMeta.deletionTimestamp) meta.deletionTimestamp = oldMeta.deletionTimestamp;
  if (oldMeta.deletionGracePeriodSeconds !== undefined && meta.deletionGracePeriodSeconds === undefined) meta.deletionGracePeriodSeconds = oldMeta.deletionGracePeriodSeconds;
  if (oldMeta.generateName !== undefined && meta.generateName === undefined) meta.generateName = oldMeta.generateName;
  obj.metadata = meta;
}

/**
 * The object as JSON with its keys sorted (the order of a body's keys is no
 * change), without its resourceVersion. managedFields count when the write
 * records ownership: a write that only changes ownership (a co-owner,
 * kubectl's migration of managers) is stored; an unchanged write leaves the
 * entries' times alone, so repeating it stays a no-op.
 */
function withoutVolatile(obj: ApiObject, withManagedFields: boolean): string {
  const { metadata, ...rest } = obj;
  const { resourceVersion: _rv, managedFields, ...others } = metadata ?? {};
  const meta = withManagedFields ? { ...others, managedFields } : others;
  return JSON.stringify({ ...rest, metadata: meta }, (_key, value: unknown) =>
    typeof value === 'object' && value !== null && !Array.isArray(value) ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : value,
  );
}

export interface UpdateOutcome {
  result: StoredResult;
  created: boolean;
}

/**
 * A write computed from the current object (empty when there is none): `sent`
 * is what the client's body amounts to (the patched object, the Scale, the
 * status body), whose identity is checked against the URL; `object` is what
 * is to be stored (the same, unless a subresource maps it onto the object).
 */
export interface ComputedWrite {
  sent: ApiObject;
  object: ApiObject;
}

/**
 * Replaces an object. With `metadata.resourceVersion` the write is
 * compare-and-swap (a stale one is 409); without it the latest state is
 * replaced, retried if it changes underneath. `transform` computes the write
 * from the current object (patches, subresources); without it `input` is
 * the whole new object.
 */
export async function updateObject(request: WriteContext, name: string, input: ApiObject, transform?: (current: ApiObject) => ComputedWrite): Promise<UpdateOutcome> {
  const ctx = warningOnce(request);
  const { def } = ctx;
  const key = keyOf(def, ctx.namespace, name);
  for (let attempt = 0; ; attempt++) {
    let current: StoredResult | undefined;
    try {
      current = await resourceStorage(ctx.deps, def).get(key, {}, callOptionsOf(ctx));
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 404)) throw err;
    }
    const { sent, object: candidate } = transform ? transform(current?.object ?? {}) : { sent: input, object: input };
    checkTypeMeta(def, candidate, ctx.deps.registry);
    checkIdentity(def, sent, name, ctx.namespace);
    if (!current) {
      if (!def.allowCreateOnUpdate || ctx.subresource) throw ApiError.notFound(gr(def), name);
      const created = await createObject(ctx, { ...candidate, metadata: { ...(candidate.metadata ?? {}), resourceVersion: undefined } as ApiObject['metadata'] }, name);
      return { result: created, created: true };
    }
    const obj = decodeAgainstSchema(ctx, candidate);
    obj.apiVersion = groupVersion(def);
    obj.kind = def.kind;
    const sentRv = obj.metadata?.resourceVersion;
    // "0" is no precondition, as an absent one (the original reads both as version 0).
    const requestedRv = sentRv === '0' ? undefined : sentRv;
    if (sentRv === '0' && obj.metadata) delete obj.metadata.resourceVersion;
    if (!requestedRv && !def.allowUnconditionalUpdate && !transform) {
      throw ApiError.invalid({ group: def.group, kind: def.kind }, name, [
        { reason: 'FieldValueInvalid', field: 'metadata.resourceVersion', message: 'Invalid value: 0x0: must be specified for an update' },
      ]);
    }
    if (requestedRv && !/^[0-9]+$/.test(requestedRv)) throw ApiError.badRequest(`invalid resourceVersion ${JSON.stringify(requestedRv)}`);
    if (obj.metadata?.uid && obj.metadata.uid !== current.object.metadata?.uid) {
      throw ApiError.conflict(gr(def), name, `Precondition failed: UID in precondition: ${obj.metadata.uid}, UID in object meta: ${current.object.metadata?.uid ?? ''}`);
    }
    if (requestedRv && Number(requestedRv) !== current.revision) {
      throw ApiError.conflict(gr(def), name, 'the object has been modified; please apply your changes to the latest version and try again');
    }
    const expected = current.revision;
    const old = current.object;
    const prepare: Preparation = (o) => {
      o.apiVersion = groupVersion(def);
      o.kind = def.kind;
      carryImmutableMeta(o, old);
      o.metadata = { ...(o.metadata ?? {}), name, ...(def.namespaced ? { namespace: ctx.namespace } : {}) };
      if (!def.namespaced) delete o.metadata.namespace;
      def.strategy.prepareForUpdate?.(o, old);
      def.strategy.applyDefaults?.(o);
      throwIfInvalid(def, o, [...validateMeta(def, o), ...validateMetaUpdate(o, old), ...(def.strategy.validate?.(o) ?? []), ...(def.strategy.validateUpdate?.(o, old) ?? [])]);
    };
    prepare(obj);
    const admitted = (await admit(ctx, 'UPDATE', name, obj, old, { prepare })) as ApiObject;
    const tracked = recordManagedFields(ctx, admitted, current.object);
    // An update that changes nothing, managedFields included, is not written: same resourceVersion, no event.
    // Unless etcd holds it under another encryption key or provider than the current first: then it is
    // written again, with the current key (how `kubectl replace` of every Secret rotates keys).
    const ownership = tracked.metadata?.managedFields !== undefined;
    if (!current.stale && withoutVolatile(tracked, ownership) === withoutVolatile(current.object, ownership)) return { result: current, created: false };
    try {
      const result = await resourceStorage(ctx.deps, def).update(key, tracked, { revision: expected }, { ...callOptionsOf(ctx), dryRun: ctx.dryRun });
      // Removing the last finalizer of a terminating object removes the object.
      // A gracefully terminating object (a grace period above 0) waits for its period instead.
      if (result.object.metadata?.deletionTimestamp && !result.object.metadata.deletionGracePeriodSeconds && !holdsDeletion(def, result.object) && !ctx.dryRun) {
        const removed = await resourceStorage(ctx.deps, def).delete(key, { revision: result.revision }, callOptionsOf(ctx));
        return { result: removed, created: false };
      }
      return { result, created: false };
    } catch (err) {
      // Lost a race without a client precondition: read again and retry. A
      // patch is applied again to what is then current; a resourceVersion the
      // patch itself carries is checked against that above.
      if ((!requestedRv || transform) && err instanceof ApiError && err.reason === 'Conflict' && attempt < MAX_WRITE_ATTEMPTS) continue;
      throw err;
    }
  }
}

/**
 * How often a write without a client precondition is retried after losing a
 * race (the original server retries until its request deadline). Each try is
 * one read and one compare-and-swap, so the bound is generous: twenty
 * writers on one object must not turn into 409s, yet a request cannot loop.
 */
const MAX_WRITE_ATTEMPTS = 100;

/** Finalizers remain (metadata's, or the kind's own): a delete only marks the object. */
function holdsDeletion(def: ResourceDefinition, obj: ApiObject): boolean {
  return (obj.metadata?.finalizers ?? []).length > 0 || (def.strategy.finalizing?.(obj) ?? false);
}

export interface DeleteOptions {
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: string;
  /** The legacy form of the Orphan policy (true) or of Background (false). */
  orphanDependents?: boolean;
  gracePeriodSeconds?: number;
  /** From the query (`dryRun=All`) or the DeleteOptions body (`dryRun: ["All"]`). */
  dryRun?: boolean;
}

export interface DeleteOutcome {
  /** The object as deleted, or as marked for deletion when finalizers remain. */
  object: ApiObject;
  /** False when finalizers keep the object (it is now terminating). */
  removed: boolean;
}

/**
 * Deletes an object: with finalizers it is only marked (deletionTimestamp)
 * and removed when the last finalizer goes (SPEC section 3).
 */
export async function deleteObject(request: WriteContext, name: string, options: DeleteOptions): Promise<DeleteOutcome> {
  const ctx = warningOnce(request);
  const pre = options.preconditions ?? {};
  const unconditional = !pre.uid && !pre.resourceVersion;
  for (let attempt = 0; ; attempt++) {
    try {
      return await deleteOnce(ctx, name, options);
    } catch (err) {
      // Lost a race with another write and the client set no precondition: read again and retry.
      if (unconditional && err instanceof ApiError && err.reason === 'Conflict' && attempt < MAX_WRITE_ATTEMPTS) continue;
      throw err;
    }
  }
}

/** The deletion marks graceful deletion gives an object. */
interface GracefulMark {
  deletionTimestamp: string;
  deletionGracePeriodSeconds: number;
}

/**
 * What graceful deletion makes of a DELETE (the original's BeforeDelete):
 * undefined when the kind does not delete gracefully (or the object was
 * marked without a grace period, so it goes now); `pending` when the object
 * is already terminating and the request asks for no shorter period (it is
 * left as it is); else the marks, which delete the object at once when the
 * period is 0. A terminating object's period may only be shortened, its
 * deletionTimestamp moved back by the difference.
 */
function gracefulDeletion(def: ResourceDefinition, obj: ApiObject, requested: number | undefined, now: Date): GracefulMark | 'pending' | undefined {
  const period = def.strategy.gracefulDeletePeriod;
  if (!period) return undefined;
  const meta = obj.metadata ?? {};
  if (meta.deletionTimestamp) {
    const pending = meta.deletionGracePeriodSeconds;
    if (pending === undefined) return undefined;
    if (requested === undefined || requested >= pending) return 'pending';
    const started = Date.parse(meta.deletionTimestamp) - pending * 1000;
    return { deletionTimestamp: rfc3339(new Date(started + requested * 1000)), deletionGracePeriodSeconds: requested };
  }
  const seconds = period(obj, requested);
  return { deletionTimestamp: rfc3339(new Date(now.getTime() + seconds * 1000)), deletionGracePeriodSeconds: seconds };
}

async function deleteOnce(ctx: WriteContext, name: string, options: DeleteOptions): Promise<DeleteOutcome> {
  const { def } = ctx;
  const pre = options.preconditions ?? {};
  const key = keyOf(def, ctx.namespace, name);
  let current = await resourceStorage(ctx.deps, def).get(key, {}, callOptionsOf(ctx));
  if (pre.uid && pre.uid !== current.object.metadata?.uid) {
    throw ApiError.conflict(gr(def), name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${current.object.metadata?.uid ?? ''}`);
  }
  if (pre.resourceVersion && pre.resourceVersion !== current.object.metadata?.resourceVersion) {
    throw ApiError.conflict(
      gr(def),
      name,
      `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${current.object.metadata?.resourceVersion ?? ''}`,
    );
  }
  await admit(ctx, 'DELETE', name, undefined, current.object, { deletion: options });
  // The garbage collector's finalizers, as the propagation policy asks; a terminating object has them written at once.
  const withFinalizers = withPropagationFinalizers(current.object, options);
  if (withFinalizers !== current.object) {
    current = withFinalizers.metadata?.deletionTimestamp
      ? await resourceStorage(ctx.deps, def).update(key, withFinalizers, { revision: current.revision }, { ...callOptionsOf(ctx), dryRun: ctx.dryRun })
      : { ...current, object: withFinalizers };
  }
  const grace = gracefulDeletion(def, current.object, options.gracePeriodSeconds, ctx.now ?? new Date());
  if (grace === 'pending') return { object: current.object, removed: false };
  if (holdsDeletion(def, current.object) || (grace !== undefined && grace.deletionGracePeriodSeconds > 0)) {
    if (current.object.metadata?.deletionTimestamp && grace === undefined) return { object: current.object, removed: false };
    const marked: ApiObject = {
      ...current.object,
      metadata: { ...(current.object.metadata ?? {}), ...(grace ?? { deletionTimestamp: rfc3339(ctx.now ?? new Date()), deletionGracePeriodSeconds: 0 }) },
    };
    def.strategy.prepareForDeletion?.(marked);
    const res = await resourceStorage(ctx.deps, def).update(key, marked, { revision: current.revision }, { ...callOptionsOf(ctx), dryRun: ctx.dryRun });
    return { object: res.object, removed: false };
  }
  const res = await resourceStorage(ctx.deps, def).delete(key, { revision: current.revision, uid: current.object.metadata?.uid ?? '' }, { ...callOptionsOf(ctx), dryRun: ctx.dryRun });
  return { object: res.object, removed: true };
}

export interface DeletedCollection {
  /** The revision the collection was read at. */
  revision: number;
  /** What was deleted, or marked for deletion when finalizers remain. */
  items: ApiObject[];
}

/**
 * Deletes every object of the collection the list options select, each as
 * a delete of its own (admission, finalizers, preconditions); one that is
 * gone in the meantime is skipped.
 */
export async function deleteCollection(ctx: WriteContext, listOptions: ListRequestOptions, options: DeleteOptions): Promise<DeletedCollection> {
  const page = await listObjects(ctx, { ...listOptions, limit: 0 });
  const items: ApiObject[] = [];
  for (const item of page.items) {
    try {
      const outcome = await deleteObject({ ...ctx, namespace: item.metadata?.namespace ?? '' }, item.metadata?.name ?? '', options);
      items.push(outcome.object);
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 404)) throw err;
    }
  }
  return { revision: page.revision, items };
}
