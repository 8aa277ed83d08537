import type { Request } from 'express';
import { ApiError, canonicalGroup, isJsonObject, type JsonObject, type StatusCause, type UserInfo } from '@svc/apimachinery';
import { AUTHORIZATION_GROUP } from '@svc/kinds';
import { modesReason } from '@svc/authz/client';
import { requestIdFrom, userFrom } from '../../context';
import type { ResourceHandler, ResourceRequest } from '../../handlers/common';
import { readReview, respond, specOf, stringList } from './review-io';

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
export function subjectAccessReview(kind: 'SubjectAccessReview' | 'LocalSubjectAccessReview'): ResourceHandler {
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
export const selfSubjectAccessReview: ResourceHandler = async (req, res, r) => {
  const pathGroup = r.info.requestedGroup ?? r.info.apiGroup;
  const { object, apiVersion } = await readReview(req, r, { group: AUTHORIZATION_GROUP, version: 'v1', kind: 'SelfSubjectAccessReview', schema: r.def.schema }, pathGroup);
  const spec = specOf(object);
  const status = await decideAccess(req, r, { user: userFrom(req), spec, kind: 'SelfSubjectAccessReview' });
  respond(req, res, r, 201, { kind: 'SelfSubjectAccessReview', apiVersion, metadata: {}, spec, status }, 'SelfSubjectAccessReview', apiVersion);
};

/** POST selfsubjectrulesreviews: what may I do in this namespace? (`kubectl auth can-i --list`) */
export const selfSubjectRulesReview: ResourceHandler = async (req, res, r) => {
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
