import type { Request, Response } from 'express';
import { ApiError, canonicalGroup, checkAgainstSchema, isJsonObject, type ApiObject, type JsonObject, type StatusCause, type UserInfo } from '@svc/apimachinery';
import type { Schema } from '@svc/merge';
import { AUTHENTICATION_GROUP, AUTHORIZATION_GROUP } from '@svc/kinds';
import { modesReason } from '@svc/authz/client';
import { requestIdFrom, userFrom } from '../context';
import { decodeBody, negotiateOutput } from '../negotiation';
import { writeBody } from '../responses';
import { parseDryRun, readBody, type ResourceHandler, type ResourceRequest } from './common';

/**
 * Requests the server answers itself instead of storing an object: the
 * authentication reviews and the TokenRequest at `serviceaccounts/<name>/token`.
 * Each decodes the body the client sent (JSON, YAML or protobuf), fills in
 * `status`, and answers in the apiVersion the client used, so clients built
 * against the upstream type names (`authentication.k8s.io`) decode the answer.
 */

const MIN_EXPIRATION_SECONDS = 600;
const MAX_EXPIRATION_SECONDS = 2 ** 32;
const DEFAULT_EXPIRATION_SECONDS = 3600;

interface Expected {
  group: string;
  version: string;
  kind: string;
  /** The kind's schema: values of the wrong type are a 400 naming the field. */
  schema?: Schema;
}

/**
 * Decodes the body and checks it names the expected kind. Answers with the
 * apiVersion the body named (or the path's, when the body named none).
 */
async function readReview(req: Request, r: ResourceRequest, expected: Expected, pathGroup: string): Promise<{ object: ApiObject; apiVersion: string }> {
  const body = await readBody(req, r.deps.limits.maxBodyBytes);
  const { object } = decodeBody(req.headers['content-type'], body, r.deps.protobuf);
  const expectedVersion = `${expected.group}/${expected.version}`;
  const sent = typeof object.apiVersion === 'string' ? object.apiVersion : '';
  if (sent !== '') {
    const slash = sent.indexOf('/');
    const group = slash < 0 ? '' : sent.slice(0, slash);
    if (canonicalGroup(group) !== expected.group || sent.slice(slash + 1) !== expected.version) {
      throw ApiError.badRequest(`the API version in the data (${sent}) does not match the expected API version (${expectedVersion})`);
    }
  }
  if (object.kind !== undefined && object.kind !== '' && object.kind !== expected.kind) {
    throw ApiError.badRequest(`the kind in the data (${String(object.kind)}) does not match the expected kind (${expected.kind})`);
  }
  const { typeErrors } = checkAgainstSchema(object, expected.schema);
  if (typeErrors.length > 0) {
    throw ApiError.badRequest(`${expected.kind} in version "${expected.version}" cannot be handled as a ${expected.kind}: ${(typeErrors[0] as StatusCause).message ?? ''}`, typeErrors);
  }
  return { object, apiVersion: sent !== '' ? sent : `${pathGroup}/${expected.version}` };
}

function respond(req: Request, res: Response, r: ResourceRequest, code: number, out: ApiObject, kind: string, apiVersion: string): void {
  const protobufOk = r.deps.protobuf?.supports(apiVersion, kind) ?? false;
  writeBody(req, res, code, out, negotiateOutput(req.headers.accept, { table: false, protobuf: protobufOk }), r.deps.protobuf);
}

function userInfoJson(user: UserInfo): JsonObject {
  const out: JsonObject = { username: user.username, groups: [...user.groups] };
  if (user.uid !== '') out['uid'] = user.uid;
  if (Object.keys(user.extra).length > 0) out['extra'] = Object.fromEntries(Object.entries(user.extra).map(([k, v]) => [k, [...v]]));
  return out;
}

function stringList(value: unknown, field: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) throw ApiError.badRequest(`${field} must be a list of strings`);
  return value as string[];
}

function specOf(object: ApiObject): JsonObject {
  const spec = object['spec'];
  if (spec === undefined || spec === null) return {};
  if (!isJsonObject(spec)) throw ApiError.badRequest('spec must be an object');
  return spec;
}

/** POST tokenreviews: whether a token authenticates, and as whom. */
const tokenReview: ResourceHandler = async (req, res, r) => {
  const pathGroup = r.info.requestedGroup ?? r.info.apiGroup;
  const { object, apiVersion } = await readReview(req, r, { group: AUTHENTICATION_GROUP, version: r.info.apiVersion, kind: 'TokenReview', schema: r.def.schema }, pathGroup);
  const spec = specOf(object);
  const token = spec['token'];
  if (typeof token !== 'string' || token === '') throw ApiError.badRequest('token is required for TokenReview in authentication (spec.token)');
  const audiences = stringList(spec['audiences'], 'spec.audiences');
  const outcome = await r.deps.authn.reviewToken(token, audiences, { requestId: requestIdFrom(req), timeoutMs: r.deps.limits.backendTimeoutMs });
  const status: JsonObject = outcome.authenticated
    ? { authenticated: true, user: userInfoJson(outcome.user), audiences: outcome.audiences }
    : { authenticated: false, user: {}, error: outcome.error === '' ? 'invalid bearer token' : outcome.error };
  const out: ApiObject = { kind: 'TokenReview', apiVersion, metadata: {}, spec: { ...spec, token, audiences }, status };
  respond(req, res, r, 201, out, 'TokenReview', apiVersion);
};

/** POST selfsubjectreviews: who the server takes the requester for, after impersonation. */
const selfSubjectReview: ResourceHandler = async (req, res, r) => {
  const pathGroup = r.info.requestedGroup ?? r.info.apiGroup;
  const { apiVersion } = await readReview(req, r, { group: AUTHENTICATION_GROUP, version: r.info.apiVersion, kind: 'SelfSubjectReview', schema: r.def.schema }, pathGroup);
  const out: ApiObject = { kind: 'SelfSubjectReview', apiVersion, metadata: { creationTimestamp: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') }, status: { userInfo: userInfoJson(userFrom(req)) } };
  respond(req, res, r, 201, out, 'SelfSubjectReview', apiVersion);
};

function invalidTokenRequest(name: string, causes: StatusCause[]): ApiError {
  return ApiError.invalid({ group: AUTHENTICATION_GROUP, kind: 'TokenRequest' }, name, causes);
}

async function getOrUndefined(r: ResourceRequest, resource: string, namespace: string, name: string, requestId: string): Promise<ApiObject | undefined> {
  try {
    return (await r.deps.storage.get({ group: '', resource, namespace, name }, {}, { requestId, timeoutMs: r.deps.limits.backendTimeoutMs })).object;
  } catch (err) {
    if (err instanceof ApiError && err.code === 404) return undefined;
    throw err;
  }
}

/** The bound object of a TokenRequest, checked as the original server does. */
async function boundObjectOf(r: ResourceRequest, spec: JsonObject, account: ApiObject, requestId: string): Promise<{ kind: string; apiVersion: string; name: string; uid: string } | undefined> {
  const ref = spec['boundObjectRef'];
  if (ref === undefined || ref === null) return undefined;
  if (!isJsonObject(ref)) throw ApiError.badRequest('spec.boundObjectRef must be an object');
  const kind = typeof ref['kind'] === 'string' ? ref['kind'] : '';
  const apiVersion = typeof ref['apiVersion'] === 'string' ? ref['apiVersion'] : '';
  const name = typeof ref['name'] === 'string' ? ref['name'] : '';
  const uid = typeof ref['uid'] === 'string' ? ref['uid'] : '';
  const resource = apiVersion === 'v1' && kind === 'Pod' ? 'pods' : apiVersion === 'v1' && kind === 'Secret' ? 'secrets' : undefined;
  if (!resource) throw ApiError.badRequest(`cannot bind token for object of type ${apiVersion || '<no apiVersion>'}, Kind=${kind || '<no kind>'} (spec.boundObjectRef: supported are v1 Pod and v1 Secret)`);
  if (name === '') throw invalidTokenRequest(account.metadata?.name ?? '', [{ reason: 'FieldValueRequired', field: 'spec.boundObjectRef.name', message: 'Required value' }]);
  const namespace = account.metadata?.namespace ?? '';
  const target = await getOrUndefined(r, resource, namespace, name, requestId);
  if (!target || target.metadata?.deletionTimestamp) throw ApiError.notFound({ group: '', resource }, name);
  if (uid !== '' && target.metadata?.uid !== uid) {
    throw ApiError.conflict({ group: '', resource }, name, `the UID in the bound object reference (${uid}) does not match the UID in record. The object might have been deleted and then recreated`);
  }
  if (kind === 'Pod') {
    const podAccount = (target['spec'] as { serviceAccountName?: unknown } | undefined)?.serviceAccountName ?? 'default';
    if (podAccount !== account.metadata?.name) {
      throw ApiError.badRequest(`cannot bind token for serviceaccount ${JSON.stringify(account.metadata?.name ?? '')} to pod running with different serviceaccount name.`);
    }
  }
  return { kind, apiVersion, name, uid: target.metadata?.uid ?? '' };
}

/** POST serviceaccounts/<name>/token: a signed token for the account (`kubectl create token`). */
const tokenRequest: ResourceHandler = async (req, res, r) => {
  const requestId = requestIdFrom(req);
  const { object, apiVersion } = await readReview(req, r, { group: AUTHENTICATION_GROUP, version: 'v1', kind: 'TokenRequest', schema: r.def.subresources.find((x) => x.name === 'token')?.schema }, AUTHENTICATION_GROUP);
  const name = r.info.name;
  const namespace = r.info.namespace;
  const meta = isJsonObject(object.metadata) ? object.metadata : {};
  if (typeof meta['name'] === 'string' && meta['name'] !== '' && meta['name'] !== name) throw ApiError.badRequest(`the name of the TokenRequest (${meta['name']}) does not match the service account name (${name})`);
  if (typeof meta['namespace'] === 'string' && meta['namespace'] !== '' && meta['namespace'] !== namespace) {
    throw ApiError.badRequest(`the namespace of the TokenRequest (${meta['namespace']}) does not match the namespace of the request (${namespace})`);
  }
  const spec = specOf(object);
  const audiences = stringList(spec['audiences'], 'spec.audiences');
  const requested = spec['expirationSeconds'];
  const expirationSeconds = requested === undefined || requested === null ? DEFAULT_EXPIRATION_SECONDS : requested;
  if (typeof expirationSeconds !== 'number' || !Number.isInteger(expirationSeconds)) {
    throw invalidTokenRequest(name, [{ reason: 'FieldValueInvalid', field: 'spec.expirationSeconds', message: `Invalid value: ${JSON.stringify(expirationSeconds)}: must be an integer` }]);
  }
  if (expirationSeconds < MIN_EXPIRATION_SECONDS) {
    throw invalidTokenRequest(name, [{ reason: 'FieldValueInvalid', field: 'spec.expirationSeconds', message: `Invalid value: ${expirationSeconds}: may not specify a duration less than 10 minutes` }]);
  }
  if (expirationSeconds > MAX_EXPIRATION_SECONDS) {
    throw invalidTokenRequest(name, [{ reason: 'FieldValueInvalid', field: 'spec.expirationSeconds', message: `Invalid value: ${expirationSeconds}: may not specify a duration larger than 2^32 seconds` }]);
  }
  const account = await getOrUndefined(r, 'serviceaccounts', namespace, name, requestId);
  if (!account || account.metadata?.deletionTimestamp) throw ApiError.notFound({ group: '', resource: 'serviceaccounts' }, name);
  const boundObject = await boundObjectOf(r, spec, account, requestId);
  const outSpec: JsonObject = { audiences, expirationSeconds };
  if (isJsonObject(spec['boundObjectRef'])) outSpec['boundObjectRef'] = spec['boundObjectRef'];
  // Validating admission sees the request (NodeRestriction: a node's tokens must be bound to a pod on it).
  await r.deps.admission.admit(
    {
      phase: 'validating',
      operation: 'CREATE',
      kind: { group: AUTHENTICATION_GROUP, version: 'v1', kind: 'TokenRequest' },
      resource: { group: '', version: 'v1', resource: 'serviceaccounts' },
      subresource: 'token',
      namespace,
      name,
      userInfo: userFrom(req),
      object: { apiVersion: `${AUTHENTICATION_GROUP}/v1`, kind: 'TokenRequest', metadata: { name, namespace }, spec: outSpec },
      dryRun: parseDryRun(req),
    },
    { requestId, timeoutMs: r.deps.limits.backendTimeoutMs },
  );
  const out: ApiObject = { kind: 'TokenRequest', apiVersion, metadata: { name, namespace }, spec: outSpec, status: { token: '', expirationTimestamp: null } };
  if (!parseDryRun(req)) {
    const issued = await r.deps.authn.issueServiceAccountToken(
      { namespace, serviceAccountName: name, serviceAccountUid: account.metadata?.uid ?? '', audiences, expirationSeconds, ...(boundObject ? { boundObject } : {}) },
      { requestId, timeoutMs: r.deps.limits.backendTimeoutMs },
    );
    out.metadata = { name, namespace, creationTimestamp: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') };
    out['status'] = { token: issued.token, expirationTimestamp: issued.expires.toISOString().replace(/\.\d{3}Z$/, 'Z') };
  }
  respond(req, res, r, 201, out, 'TokenRequest', apiVersion);
};

interface AccessQuestion {
  user: UserInfo;
  spec: JsonObject;
  /** The namespace a LocalSubjectAccessReview is limited to. */
  localNamespace?: string;
  kind: string;
}

function accessCauses(q: AccessQuestion): StatusCause[] {
  const causes: StatusCause[] = [];
  const resource = q.spec['resourceAttributes'];
  const nonResource = q.spec['nonResourceAttributes'];
  const hasResource = isJsonObject(resource);
  const hasNonResource = isJsonObject(nonResource);
  if (hasResource === hasNonResource) causes.push({ reason: 'FieldValueInvalid', field: 'spec.resourceAttributes', message: 'Invalid value: exactly one of nonResourceAttributes or resourceAttributes must be specified' });
  if (q.localNamespace !== undefined) {
    if (hasNonResource) causes.push({ reason: 'FieldValueInvalid', field: 'spec.nonResourceAttributes', message: 'Invalid value: disallowed on this kind of request' });
    if (hasResource && (resource['namespace'] ?? '') !== q.localNamespace) {
      causes.push({ reason: 'FieldValueInvalid', field: 'spec.resourceAttributes.namespace', message: `Invalid value: ${JSON.stringify(resource['namespace'] ?? '')}: must match metadata.namespace` });
    }
  }
  if (q.user.username === '' && q.user.groups.length === 0) causes.push({ reason: 'FieldValueRequired', field: 'spec.user', message: 'Required value: at least one of user or group must be specified' });
  return causes;
}

function attr(obj: JsonObject, key: string): string {
  return typeof obj[key] === 'string' ? (obj[key] as string) : '';
}

/** The `rawSelector` of a review's `fieldSelector` and `labelSelector` (the Node mode reads them). */
function rawSelectors(resource: JsonObject): { fieldSelector?: string; labelSelector?: string } {
  const raw = (key: string): string => {
    const selector = resource[key];
    return isJsonObject(selector) ? attr(selector, 'rawSelector') : '';
  };
  const fieldSelector = raw('fieldSelector');
  const labelSelector = raw('labelSelector');
  return { ...(fieldSelector ? { fieldSelector } : {}), ...(labelSelector ? { labelSelector } : {}) };
}

/** Asks authz the question of an access review; the status the review answers with. */
async function decideAccess(req: Request, r: ResourceRequest, q: AccessQuestion): Promise<JsonObject> {
  const causes = accessCauses(q);
  if (causes.length > 0) throw ApiError.invalid({ group: AUTHORIZATION_GROUP, kind: q.kind }, '', causes);
  const resource = q.spec['resourceAttributes'];
  const attrs = isJsonObject(resource)
    ? {
        user: q.user,
        resourceRequest: true,
        verb: attr(resource, 'verb'),
        path: '',
        apiGroup: canonicalGroup(attr(resource, 'group')),
        apiVersion: attr(resource, 'version'),
        resource: attr(resource, 'resource'),
        subresource: attr(resource, 'subresource'),
        namespace: attr(resource, 'namespace'),
        name: attr(resource, 'name'),
        ...rawSelectors(resource),
      }
    : (() => {
        const n = q.spec['nonResourceAttributes'] as JsonObject;
        return { user: q.user, resourceRequest: false, verb: attr(n, 'verb'), path: attr(n, 'path'), apiGroup: '', apiVersion: '', resource: '', subresource: '', namespace: '', name: '' };
      })();
  const d = await r.deps.authz.authorize(attrs, { requestId: requestIdFrom(req), timeoutMs: r.deps.limits.backendTimeoutMs });
  const status: JsonObject = { allowed: d.decision === 'allow' };
  if (d.decision === 'deny') status['denied'] = true;
  const reason = modesReason(d);
  if (reason) status['reason'] = reason;
  return status;
}

function extraOf(value: unknown): Record<string, string[]> {
  if (!isJsonObject(value)) return {};
  const out: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(value)) if (Array.isArray(v)) out[k] = v.filter((x): x is string => typeof x === 'string');
  return out;
}

/** POST subjectaccessreviews and localsubjectaccessreviews: may this subject do this? */
function subjectAccessReview(kind: 'SubjectAccessReview' | 'LocalSubjectAccessReview'): ResourceHandler {
  return async (req, res, r) => {
    const pathGroup = r.info.requestedGroup ?? r.info.apiGroup;
    const { object, apiVersion } = await readReview(req, r, { group: AUTHORIZATION_GROUP, version: 'v1', kind, schema: r.def.schema }, pathGroup);
    const spec = specOf(object);
    const user: UserInfo = { username: attr(spec, 'user'), uid: attr(spec, 'uid'), groups: stringList(spec['groups'], 'spec.groups'), extra: extraOf(spec['extra']) };
    const q: AccessQuestion = { user, spec, kind, ...(kind === 'LocalSubjectAccessReview' ? { localNamespace: r.info.namespace } : {}) };
    const status = await decideAccess(req, r, q);
    const metadata = kind === 'LocalSubjectAccessReview' ? { namespace: r.info.namespace } : {};
    respond(req, res, r, 201, { kind, apiVersion, metadata, spec, status }, kind, apiVersion);
  };
}

/** POST selfsubjectaccessreviews: may I do this? (`kubectl auth can-i`) */
const selfSubjectAccessReview: ResourceHandler = async (req, res, r) => {
  const pathGroup = r.info.requestedGroup ?? r.info.apiGroup;
  const { object, apiVersion } = await readReview(req, r, { group: AUTHORIZATION_GROUP, version: 'v1', kind: 'SelfSubjectAccessReview', schema: r.def.schema }, pathGroup);
  const spec = specOf(object);
  const status = await decideAccess(req, r, { user: userFrom(req), spec, kind: 'SelfSubjectAccessReview' });
  respond(req, res, r, 201, { kind: 'SelfSubjectAccessReview', apiVersion, metadata: {}, spec, status }, 'SelfSubjectAccessReview', apiVersion);
};

/** POST selfsubjectrulesreviews: what may I do in this namespace? (`kubectl auth can-i --list`) */
const selfSubjectRulesReview: ResourceHandler = async (req, res, r) => {
  const pathGroup = r.info.requestedGroup ?? r.info.apiGroup;
  const { object, apiVersion } = await readReview(req, r, { group: AUTHORIZATION_GROUP, version: 'v1', kind: 'SelfSubjectRulesReview', schema: r.def.schema }, pathGroup);
  const spec = specOf(object);
  const namespace = attr(spec, 'namespace');
  if (namespace === '') throw ApiError.invalid({ group: AUTHORIZATION_GROUP, kind: 'SelfSubjectRulesReview' }, '', [{ reason: 'FieldValueRequired', field: 'spec.namespace', message: 'Required value' }]);
  const { rules, incomplete } = await r.deps.authz.rules(userFrom(req), namespace, { requestId: requestIdFrom(req), timeoutMs: r.deps.limits.backendTimeoutMs });
  const status: JsonObject = {
    resourceRules: rules.filter((x) => x.nonResourceURLs.length === 0).map((x) => ({ verbs: x.verbs, apiGroups: x.apiGroups, resources: x.resources, ...(x.resourceNames.length > 0 ? { resourceNames: x.resourceNames } : {}) })),
    nonResourceRules: rules.filter((x) => x.nonResourceURLs.length > 0).map((x) => ({ verbs: x.verbs, nonResourceURLs: x.nonResourceURLs })),
    incomplete,
  };
  respond(req, res, r, 201, { kind: 'SelfSubjectRulesReview', apiVersion, metadata: {}, spec, status }, 'SelfSubjectRulesReview', apiVersion);
};

/** Handlers of requests answered without storing: by `<group>/<resource>[/<subresource>]`. */
const HANDLERS: Record<string, ResourceHandler> = {
  [`${AUTHENTICATION_GROUP}/tokenreviews`]: tokenReview,
  [`${AUTHENTICATION_GROUP}/selfsubjectreviews`]: selfSubjectReview,
  '/serviceaccounts/token': tokenRequest,
  [`${AUTHORIZATION_GROUP}/subjectaccessreviews`]: subjectAccessReview('SubjectAccessReview'),
  [`${AUTHORIZATION_GROUP}/localsubjectaccessreviews`]: subjectAccessReview('LocalSubjectAccessReview'),
  [`${AUTHORIZATION_GROUP}/selfsubjectaccessreviews`]: selfSubjectAccessReview,
  [`${AUTHORIZATION_GROUP}/selfsubjectrulesreviews`]: selfSubjectRulesReview,
};

/** The handler of a review or a computed subresource, if this request is one. */
export function computedHandler(r: ResourceRequest): ResourceHandler | undefined {
  if (r.info.verb !== 'create') return undefined;
  const key = `${r.def.group}/${r.def.plural}${r.info.subresource ? `/${r.info.subresource}` : ''}`;
  return HANDLERS[key];
}
