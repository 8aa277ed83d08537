import type { X509Certificate } from '@peculiar/x509';
import type { UserInfo } from '@svc/apimachinery';
import { NOT_MINE, type RequestAuthenticator } from './methods';
import { authenticateCertificate } from './x509';

/**
 * The authenticating proxy (SPEC section 5, `--requestheader-*`): a proxy
 * in front of the server authenticates users itself and names them in
 * headers. The headers count only when the request carries a client
 * certificate that verifies against `--requestheader-client-ca-file` (and,
 * when `--requestheader-allowed-names` is set, has one of those common
 * names). Anything else — no certificate, a certificate of another CA, a
 * proxy without a username header — is left to the other methods, so the
 * same headers from anyone else change nothing.
 */
export interface RequestHeaderOptions {
  clientCas: X509Certificate[];
  allowedNames: string[];
  /** Lower-cased header names, in order: the first with a value names the user. */
  usernameHeaders: string[];
  uidHeaders: string[];
  groupHeaders: string[];
  /** Lower-cased prefixes of the headers that carry `extra`. */
  extraHeaderPrefixes: string[];
  now?: () => Date;
}

/** The common name of a proxy certificate that verified. */
function commonName(user: UserInfo): string {
  return user.username;
}

function firstValue(headers: Record<string, string[]>, names: string[]): string | undefined {
  for (const name of names) {
    const value = headers[name]?.find((v) => v !== '');
    if (value !== undefined) return value;
  }
  return undefined;
}

/** Every non-empty value of the headers (the gateway keeps repeated headers apart). */
function allValues(headers: Record<string, string[]>, names: string[]): string[] {
  return names.flatMap((name) => (headers[name] ?? []).filter((v) => v !== ''));
}

function decodeKey(raw: string): string {
  try {
    return decodeURIComponent(raw).toLowerCase();
  } catch {
    return raw.toLowerCase();
  }
}

export function requestHeaderAuthenticator(opts: RequestHeaderOptions): RequestAuthenticator {
  const now = opts.now ?? (() => new Date());
  return {
    name: 'requestheader',
    async authenticateRequest(input, audiences) {
      if (input.clientCertificateChain.length === 0) return NOT_MINE;
      const proxy = await authenticateCertificate(input.clientCertificateChain, opts.clientCas, now());
      if (!proxy.ok) return NOT_MINE;
      if (opts.allowedNames.length > 0 && !opts.allowedNames.includes(commonName(proxy.user))) return NOT_MINE;
      const username = firstValue(input.headers, opts.usernameHeaders);
      if (username === undefined) return NOT_MINE;
      const extra: Record<string, string[]> = {};
      for (const [name, values] of Object.entries(input.headers)) {
        const prefix = opts.extraHeaderPrefixes.find((p) => name.startsWith(p) && name.length > p.length);
        if (!prefix) continue;
        const key = decodeKey(name.slice(prefix.length));
        (extra[key] ??= []).push(...values);
      }
      const user: UserInfo = { username, uid: firstValue(input.headers, opts.uidHeaders) ?? '', groups: allValues(input.headers, opts.groupHeaders), extra };
      return { status: 'authenticated', user, audiences: [...audiences] };
    },
  };
}
