import type { Request, Response } from 'express';
import { ApiError, isJsonObject, type ApiObject, type JsonObject, type StatusCause, type UserInfo } from '@svc/apimachinery';
import { AUTHENTICATION_GROUP } from '@svc/kinds';
import { requestIdFrom, userFrom } from '../context';
import { decodeBody, negotiateOutput } from '../negotiation';
import { canonicalGroup } from '../request-info';
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
  const { object, apiVersion } = await readReview(req, r, { group: AUTHENTICATION_GROUP, version: r.info.apiVersion, kind: 'TokenReview' }, pathGroup);
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
  const { apiVersion } = await readReview(req, r, { group: AUTHENTICATION_GROUP, version: r.info.apiVersion, kind: 'SelfSubjectReview' }, pathGroup);
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
  const { object, apiVersion } = await readReview(req, r, { group: AUTHENTICATION_GROUP, version: 'v1', kind: 'TokenRequest' }, AUTHENTICATION_GROUP);
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

/** Handlers of requests answered without storing: by `<group>/<resource>[/<subresource>]`. */
const HANDLERS: Record<string, ResourceHandler> = {
  [`${AUTHENTICATION_GROUP}/tokenreviews`]: tokenReview,
  [`${AUTHENTICATION_GROUP}/selfsubjectreviews`]: selfSubjectReview,
  '/serviceaccounts/token': tokenRequest,
};

/** The handler of a review or a computed subresource, if this request is one. */
export function computedHandler(r: ResourceRequest): ResourceHandler | undefined {
  if (r.info.verb !== 'create') return undefined;
  const key = `${r.def.group}/${r.def.plural}${r.info.subresource ? `/${r.info.subresource}` : ''}`;
  return HANDLERS[key];
}
