import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import type { X509Certificate } from '@peculiar/x509';
import type { UserInfo } from '@svc/apimachinery';
import { NOT_MINE, type RequestAuthenticator } from './methods';
import { authenticateCertificate, parseCaBundle } from './x509';

/**
 * The authenticating proxy (SPEC section 5, `--requestheader-*`): a proxy
 * in front of the server authenticates users itself and names them in
 * headers. The headers count only when the request carries a client
 * certificate that verifies against `--requestheader-client-ca-file` (and,
 * when `--requestheader-allowed-names` is set, has one of those common
 * names). Anything else — no certificate, a certificate of another CA, a
 * proxy without a username header — is left to the other methods, so the
 * same headers from anyone else change nothing.
 *
 * A certificate of the request-header CA whose common name is not allowed is
 * "not mine" too, where the original server reports an error: either way the
 * headers do not count, and the client-certificate method then decides
 * (with separate CAs, as they should be, it refuses the certificate: 401).
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

/**
 * How long a chain's verification against the request-header CA is
 * remembered (never past the chain's expiry): a proxy sends every user's
 * requests over the same few certificates, and with the proxy configured
 * every user certificate is tried against its CA first.
 */
export const PROXY_CHAIN_CACHE_MS = 60_000;
const PROXY_CHAIN_CACHE_ENTRIES = 10_000;

/** `--requestheader-client-ca-file`, refused at start when it holds no usable certificate. */
export function loadRequestHeaderCas(file: string): X509Certificate[] {
  let cas: X509Certificate[];
  try {
    cas = parseCaBundle(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`--requestheader-client-ca-file: ${file}: ${(err as Error).message}`);
  }
  if (cas.length === 0) throw new Error(`--requestheader-client-ca-file: ${file}: no PEM certificate found`);
  return cas;
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

/** An extra key as the original reads it: lower-cased, then percent-decoded (kept as is when malformed). */
function decodeKey(raw: string): string {
  const lower = raw.toLowerCase();
  try {
    return decodeURIComponent(lower);
  } catch {
    return lower;
  }
}

export function requestHeaderAuthenticator(opts: RequestHeaderOptions): RequestAuthenticator {
  const now = opts.now ?? (() => new Date());
  /** Chain digest → the proxy's common name, or undefined when the chain is not a proxy's. */
  const verified = new Map<string, { commonName: string | undefined; until: number }>();

  async function proxyName(chain: Uint8Array[]): Promise<string | undefined> {
    const hash = createHash('sha256');
    for (const der of chain) hash.update(der).update('\0');
    const key = hash.digest('base64');
    const at = now();
    const known = verified.get(key);
    if (known && known.until > at.getTime()) return known.commonName;
    const proxy = await authenticateCertificate(chain, opts.clientCas, at);
    // The certificate's common name, which authenticateCertificate reports as the username.
    const commonName = proxy.ok ? proxy.user.username : undefined;
    const until = Math.min(at.getTime() + PROXY_CHAIN_CACHE_MS, proxy.ok ? proxy.notAfter.getTime() : Infinity);
    verified.delete(key);
    if (verified.size >= PROXY_CHAIN_CACHE_ENTRIES) verified.delete(verified.keys().next().value as string);
    verified.set(key, { commonName, until });
    return commonName;
  }

  return {
    name: 'requestheader',
    async authenticateRequest(input, audiences) {
      if (input.clientCertificateChain.length === 0) return NOT_MINE;
      const commonName = await proxyName(input.clientCertificateChain);
      if (commonName === undefined) return NOT_MINE;
      if (opts.allowedNames.length > 0 && !opts.allowedNames.includes(commonName)) return NOT_MINE;
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
