import { SYSTEM_NAMESPACE } from '@svc/apimachinery';
import {
  BOOTSTRAPPERS_GROUP,
  BOOTSTRAP_TOKEN_SECRET_PREFIX,
  BOOTSTRAP_USER_PREFIX,
  bootstrapSecretMatches,
  bootstrapTokenExpired,
  parseBootstrapToken,
  readBootstrapTokenSecret,
} from '@svc/kinds';
import { NOT_MINE, rejected, type TokenAuthenticator } from './methods';
import type { ObjectLookup } from './service-account';

/**
 * Bootstrap tokens as an authentication method (`--enable-bootstrap-token-auth`):
 * a bearer token `<id>.<secret>` whose Secret `bootstrap-token-<id>` in the
 * system namespace holds the same secret, allows authentication, and has not
 * expired authenticates as `system:bootstrap:<id>`, in `system:bootstrappers`
 * and the Secret's `auth-extra-groups`. Tokens of another format are left to
 * the other methods; errors never contain the token.
 */
export function bootstrapTokenAuthenticator(lookup: ObjectLookup, now: () => Date = () => new Date()): TokenAuthenticator {
  return {
    name: 'bootstrap-token',
    async authenticateToken(token, audiences) {
      const parsed = parseBootstrapToken(token);
      if (!parsed) return NOT_MINE;
      const stored = await lookup('secrets', SYSTEM_NAMESPACE, `${BOOTSTRAP_TOKEN_SECRET_PREFIX}${parsed.id}`);
      if (!stored || stored.metadata?.deletionTimestamp) return rejected(`bootstrap token ${parsed.id}: no secret ${SYSTEM_NAMESPACE}/${BOOTSTRAP_TOKEN_SECRET_PREFIX}${parsed.id}`);
      const read = readBootstrapTokenSecret(stored);
      if ('problem' in read) return rejected(`bootstrap token ${parsed.id}: ${read.problem}`);
      const t = read.token;
      if (!bootstrapSecretMatches(t, parsed.secret)) return rejected(`bootstrap token ${parsed.id}: the secret does not match`);
      if (bootstrapTokenExpired(t, now())) return rejected(`bootstrap token ${parsed.id} has expired`);
      if (!t.usageAuthentication) return rejected(`bootstrap token ${parsed.id} may not be used for authentication (usage-bootstrap-authentication is not "true")`);
      return { status: 'authenticated', user: { username: `${BOOTSTRAP_USER_PREFIX}${t.id}`, uid: '', groups: [BOOTSTRAPPERS_GROUP, ...t.extraGroups], extra: {} }, audiences: [...audiences] };
    },
  };
}
