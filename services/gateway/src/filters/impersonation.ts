import type { Request } from 'express';
import { ApiError, type UserInfo } from '@svc/apimachinery';
import type { Attributes } from '@svc/authz/client';
import { requestIdFrom, userFrom, withUser } from '../context';
import { forbiddenFor, type AuthorizeFn } from './authorization';
import type { Handler } from './chain';

/**
 * Impersonation (SPEC section 5): `Impersonate-User`, `-Group` (repeatable),
 * `-Uid` and `-Extra-<key>` (repeatable; the key percent-decoded and
 * lower-cased). The authenticated requester must be allowed the
 * `impersonate` verb on each: `users` (or `serviceaccounts` in the
 * account's namespace for `system:serviceaccount:<ns>:<name>`), `groups`,
 * `userextras/<key>` and `uids` (the last two in `authentication.svc.io`),
 * with the value as the resource name. The request then runs, and is
 * authorized, as the impersonated identity. Sits between authentication
 * and authorization, as in the original server.
 */
const HEADER = /^impersonate-/;
const EXTRA_PREFIX = 'impersonate-extra-';
const SERVICE_ACCOUNT_PREFIX = 'system:serviceaccount:';
const AUTHENTICATION_GROUP = 'authentication.svc.io';

export interface ImpersonationRequest {
  user: string;
  groups: string[];
  uid: string | undefined;
  extra: Record<string, string[]>;
}

/** Header names as clients spell them, for messages (`impersonate-extra-scopes` → `Impersonate-Extra-Scopes`). */
function canonicalHeaderName(name: string): string {
  return name.replace(/(^|-)([a-z])/g, (_m, sep: string, c: string) => sep + c.toUpperCase());
}

/** What the request asks to impersonate, from its headers (each repeated header value kept apart); undefined when nothing. */
export function parseImpersonation(req: Pick<Request, 'headersDistinct'>): ImpersonationRequest | undefined {
  const headers = req.headersDistinct;
  const names = Object.keys(headers).filter((n) => HEADER.test(n));
  if (names.length === 0) return undefined;
  const values = (name: string): string[] => headers[name] ?? [];
  const extra: Record<string, string[]> = {};
  for (const name of names) {
    if (!name.startsWith(EXTRA_PREFIX)) {
      if (!['impersonate-user', 'impersonate-group', 'impersonate-uid'].includes(name)) {
        throw ApiError.badRequest(`unknown impersonation header "${canonicalHeaderName(name)}"`);
      }
      continue;
    }
    let key: string;
    try {
      key = decodeURIComponent(name.slice(EXTRA_PREFIX.length)).toLowerCase();
    } catch {
      throw ApiError.badRequest(`the key of header "${canonicalHeaderName(name)}" is not valid percent-encoding`);
    }
    if (!key) throw ApiError.badRequest('an Impersonate-Extra- header needs a key');
    extra[key] = [...(extra[key] ?? []), ...values(name)];
  }
  const users = values('impersonate-user');
  const uids = values('impersonate-uid');
  if (users.length > 1) throw ApiError.badRequest('only one Impersonate-User may be given');
  if (uids.length > 1) throw ApiError.badRequest('only one Impersonate-Uid may be given');
  const user = users[0] ?? '';
  const groups = values('impersonate-group');
  if (!user) {
    throw ApiError.badRequest('impersonating groups, a uid or extra fields requires Impersonate-User (an empty user cannot be impersonated)');
  }
  return { user, groups, uid: uids[0], extra };
}

/** The `impersonate` checks a request needs, one per impersonated attribute, as the original server makes them. */
export function impersonationChecks(requester: UserInfo, wanted: ImpersonationRequest): Attributes[] {
  const base = { user: requester, resourceRequest: true, verb: 'impersonate', path: '', apiVersion: '', subresource: '', namespace: '' };
  const checks: Attributes[] = [];
  const account = wanted.user.startsWith(SERVICE_ACCOUNT_PREFIX) ? wanted.user.slice(SERVICE_ACCOUNT_PREFIX.length).split(':') : undefined;
  if (account && account.length === 2 && account[0] && account[1]) {
    checks.push({ ...base, apiGroup: '', resource: 'serviceaccounts', namespace: account[0], name: account[1] });
  } else {
    checks.push({ ...base, apiGroup: '', resource: 'users', name: wanted.user });
  }
  for (const group of wanted.groups) checks.push({ ...base, apiGroup: '', resource: 'groups', name: group });
  for (const [key, values] of Object.entries(wanted.extra)) {
    for (const value of values) checks.push({ ...base, apiGroup: AUTHENTICATION_GROUP, resource: 'userextras', subresource: key, name: value });
  }
  if (wanted.uid !== undefined) checks.push({ ...base, apiGroup: AUTHENTICATION_GROUP, resource: 'uids', name: wanted.uid });
  return checks;
}

/** The identity a request runs as once its impersonation is allowed. */
export function impersonatedUser(wanted: ImpersonationRequest): UserInfo {
  const groups = [...wanted.groups];
  const add = (g: string): void => {
    if (!groups.includes(g)) groups.push(g);
  };
  const account = wanted.user.startsWith(SERVICE_ACCOUNT_PREFIX) ? wanted.user.slice(SERVICE_ACCOUNT_PREFIX.length).split(':') : undefined;
  if (account && account.length === 2 && account[0]) {
    add('system:serviceaccounts');
    add(`system:serviceaccounts:${account[0]}`);
  }
  if (wanted.user === 'system:anonymous') add('system:unauthenticated');
  else add('system:authenticated');
  return { username: wanted.user, uid: wanted.uid ?? '', groups, extra: wanted.extra };
}

export function withImpersonation(handler: Handler, authorize: AuthorizeFn): Handler {
  return async (req, res) => {
    const wanted = parseImpersonation(req);
    if (!wanted) {
      await handler(req, res);
      return;
    }
    const requester = userFrom(req);
    for (const check of impersonationChecks(requester, wanted)) {
      const decision = await authorize(check, requestIdFrom(req));
      if (decision.decision !== 'allow') throw forbiddenFor(check, decision);
    }
    withUser(req, impersonatedUser(wanted));
    await handler(req, res);
  };
}

/**
 * Paths served without authentication (health probes) have no requester
 * whose right to impersonate could be checked: impersonation headers there
 * are refused, never ignored.
 */
export function refuseImpersonation(handler: Handler): Handler {
  return async (req, res) => {
    const named = Object.keys(req.headers).filter((n) => HEADER.test(n));
    if (named.length > 0) {
      throw ApiError.forbidden(undefined, '', `impersonation needs an authenticated requester; ${named.map((n) => `"${canonicalHeaderName(n)}"`).join(', ')} refused on this path`);
    }
    await handler(req, res);
  };
}
