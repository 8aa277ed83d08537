import type { ResourceDefinition } from '@svc/apimachinery';
import type { Schema } from '@svc/merge';
import { objectSchema } from './object-meta';
import { reviewDefinition } from './review';
import { atomicList, bool, int64, mapOf, str, struct, time } from './schema-builders';

/**
 * The authentication group's kinds (authentication.svc.io): reviews, which
 * the server answers and never stores, and the TokenRequest served at
 * `serviceaccounts/<name>/token`.
 */
export const AUTHENTICATION_GROUP = 'authentication.svc.io';

function userInfoSchema(description: string): Schema {
  return struct(
    {
      username: str('Name that uniquely identifies this user among all active users.'),
      uid: str('Unique value that identifies this user across time.'),
      groups: atomicList(str(), 'Names of groups this user is a part of.'),
      extra: mapOf(atomicList(str()), 'Additional information provided by the authenticator.'),
    },
    { description },
  );
}

export const TOKEN_REVIEW_SCHEMA = objectSchema('TokenReview attempts to authenticate a token to a known user.', {
  spec: struct(
    {
      token: str('The opaque bearer token.'),
      audiences: atomicList(str(), 'Identifiers the token must be valid for; the server’s own audiences when empty.'),
    },
    { description: 'The token and the audiences it is reviewed for.' },
  ),
  status: struct(
    {
      authenticated: bool('Whether the token is associated with a known user.'),
      user: userInfoSchema('The user the token is associated with.'),
      audiences: atomicList(str(), 'The requested audiences the token is valid for.'),
      error: str('Why the token could not be checked.'),
    },
    { description: 'Filled in by the server: whether the token authenticates.' },
  ),
});

export const SELF_SUBJECT_REVIEW_SCHEMA = objectSchema('SelfSubjectReview returns the user information the server holds about the requester.', {
  status: struct({ userInfo: userInfoSchema('The requester, after authentication and impersonation.') }, { description: 'Filled in by the server.' }),
});

export const TOKEN_REQUEST_SCHEMA = objectSchema('TokenRequest requests a token for a given service account.', {
  spec: struct(
    {
      audiences: atomicList(str(), 'Intended audiences of the token; the server’s own when empty.'),
      expirationSeconds: int64('Requested lifetime of the token in seconds (at least 600).'),
      boundObjectRef: struct(
        {
          kind: str('Kind of the referent: Pod or Secret.'),
          apiVersion: str('API version of the referent.'),
          name: str('Name of the referent.'),
          uid: str('UID of the referent.'),
        },
        { description: 'An object the token is bound to: the token stops working when it is deleted.' },
      ),
    },
    { description: 'Parameters of the requested token.' },
  ),
  status: struct(
    {
      token: str('The opaque bearer token.'),
      expirationTimestamp: time('When the token expires.'),
    },
    { description: 'Filled in by the server: the issued token.' },
  ),
});

/** TokenReview and SelfSubjectReview, v1 first (the preferred version), then v1beta1. */
export function authenticationDefinitions(): ResourceDefinition[] {
  return ['v1', 'v1beta1'].flatMap((version) => [
    reviewDefinition(AUTHENTICATION_GROUP, version, 'TokenReview', 'tokenreviews', false, TOKEN_REVIEW_SCHEMA),
    reviewDefinition(AUTHENTICATION_GROUP, version, 'SelfSubjectReview', 'selfsubjectreviews', false, SELF_SUBJECT_REVIEW_SCHEMA),
  ]);
}
