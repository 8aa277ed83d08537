import { ApiError, isJsonObject, type ApiObject, type JsonObject, type StatusCause } from '@svc/apimachinery';
import { AUTHENTICATION_GROUP } from '@svc/kinds';
import { requestIdFrom, userFrom } from '../../context';
import { parseDryRun, type ResourceHandler, type ResourceRequest } from '../../handlers/common';
import { getObject } from '../store';
import { readReview, respond, specOf, stringList } from './review-io';

/** TokenRequest (`POST serviceaccounts/<name>/token`): lifetimes, as the original bounds them. */
const MIN_EXPIRATION_SECONDS = 600;
/** The largest lifetime, the original's math.MaxUint32 (its message says "2^32"). */
const MAX_EXPIRATION_SECONDS = 2 ** 32 - 1;
const DEFAULT_EXPIRATION_SECONDS = 3600;

function invalidTokenRequest(name: string, causes: StatusCause[]): ApiError {
  return ApiError.invalid({ group: AUTHENTICATION_GROUP, kind: 'TokenRequest' }, name, causes);
}

/** A core object the request refers to (its account, a bound pod or secret), read through the store. */
async function getOrUndefined(r: ResourceRequest, resource: string, namespace: string, name: string, requestId: string): Promise<ApiObject | undefined> {
  const def = r.deps.registry.lookup('', 'v1', resource);
  if (!def) throw ApiError.internal(`the ${resource} kind is not registered`);
  try {
    return (await getObject({ deps: r.deps, def, namespace, requestId }, name)).object;
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
export const tokenRequest: ResourceHandler = async (req, res, r) => {
  const requestId = requestIdFrom(req);
  const { object, apiVersion } = await readReview(req, r, { group: AUTHENTICATION_GROUP, version: 'v1', kind: 'TokenRequest', schema: r.def.subresources.find((x) => x.name === 'token')?.schema }, AUTHENTICATION_GROUP);
  const name = r.info.name;
  const namespace = r.info.namespace;
  const meta = isJsonObject(object.metadata) ? object.metadata : {};
  // A name or namespace in the body must be the URL's, refused as the original refuses it (422 naming the field).
  if (typeof meta['name'] === 'string' && meta['name'] !== '' && meta['name'] !== name) {
    throw invalidTokenRequest(name, [{ reason: 'FieldValueInvalid', field: 'metadata.name', message: `Invalid value: ${JSON.stringify(meta['name'])}: must match the service account name if specified` }]);
  }
  if (typeof meta['namespace'] === 'string' && meta['namespace'] !== '' && meta['namespace'] !== namespace) {
    throw invalidTokenRequest(name, [{ reason: 'FieldValueInvalid', field: 'metadata.namespace', message: `Invalid value: ${JSON.stringify(meta['namespace'])}: must match the service account namespace if specified` }]);
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
