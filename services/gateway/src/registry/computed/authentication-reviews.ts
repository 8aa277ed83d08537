import { ApiError, type ApiObject, type JsonObject } from '@svc/apimachinery';
import { AUTHENTICATION_GROUP } from '@svc/kinds';
import { requestIdFrom, userFrom } from '../../context';
import type { ResourceHandler } from '../../handlers/common';
import { readReview, respond, specOf, stringList, userInfoJson } from './review-io';

/** POST tokenreviews: whether a token authenticates, and as whom. */
export const tokenReview: ResourceHandler = async (req, res, r) => {
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
export const selfSubjectReview: ResourceHandler = async (req, res, r) => {
  const pathGroup = r.info.requestedGroup ?? r.info.apiGroup;
  const { apiVersion } = await readReview(req, r, { group: AUTHENTICATION_GROUP, version: r.info.apiVersion, kind: 'SelfSubjectReview', schema: r.def.schema }, pathGroup);
  const out: ApiObject = { kind: 'SelfSubjectReview', apiVersion, metadata: { creationTimestamp: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') }, status: { userInfo: userInfoJson(userFrom(req)) } };
  respond(req, res, r, 201, out, 'SelfSubjectReview', apiVersion);
};
