import { AUTHENTICATION_GROUP, AUTHORIZATION_GROUP } from '@svc/kinds';
import type { ResourceHandler, ResourceRequest } from '../../handlers/common';
import { selfSubjectAccessReview, selfSubjectRulesReview, subjectAccessReview } from './access-reviews';
import { selfSubjectReview, tokenReview } from './authentication-reviews';
import { eviction } from './eviction';
import { tokenRequest } from './token-request';

/**
 * The kinds the server computes instead of storing, one module each: the
 * authentication reviews, the TokenRequest at `serviceaccounts/<name>/token`
 * the Eviction at `pods/<name>/eviction` and the access reviews (the Scale of a custom resource is scale.ts).
 */
/** Handlers of requests answered without storing: by `<group>/<resource>[/<subresource>]`. */
const HANDLERS: Record<string, ResourceHandler> = {
  [`${AUTHENTICATION_GROUP}/tokenreviews`]: tokenReview,
  [`${AUTHENTICATION_GROUP}/selfsubjectreviews`]: selfSubjectReview,
  '/serviceaccounts/token': tokenRequest,
  '/pods/eviction': eviction,
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
