import { ApiError } from '@svc/apimachinery';
import type { Handler } from './chain';

/** `Impersonate-User`, `-Group`, `-Uid` and `-Extra-<name>` (SPEC section 5, "Impersonation"). */
const IMPERSONATION_HEADER = /^impersonate-/;

/** Header names as clients spell them, for messages (`impersonate-extra-scopes` → `Impersonate-Extra-Scopes`). */
function canonicalHeaderName(name: string): string {
  return name.replace(/(^|-)([a-z])/g, (_m, sep: string, c: string) => sep + c.toUpperCase());
}

/**
 * Sits between authentication and authorization, where the original server
 * replaces the authenticated identity with the impersonated one. This
 * server does not implement impersonation yet, and a security header that
 * is not implemented must not be ignored (the request would run as the
 * caller while the caller asked for someone else), so any `Impersonate-*`
 * header is refused with 403 naming it.
 */
export function withImpersonation(handler: Handler): Handler {
  return async (req, res) => {
    const refused = Object.keys(req.headers).filter((name) => IMPERSONATION_HEADER.test(name));
    if (refused.length > 0) {
      const names = refused.map((name) => `"${canonicalHeaderName(name)}"`).join(', ');
      throw ApiError.forbidden(undefined, '', `impersonation is not supported by this server: header${refused.length > 1 ? 's' : ''} ${names} refused`);
    }
    await handler(req, res);
  };
}
