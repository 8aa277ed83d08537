import { HEALTH_FLAGS, INTERNAL_TLS_FLAGS, METRICS_FLAGS, listFlag, parseDuration, type FlagSpecs, type ParsedFlags } from '@svc/service-kit';
import * as fs from 'node:fs';
import { ASYMMETRIC_ALGORITHMS, type JwtIssuerSettings } from './jwt-authenticator';
import type { RequestHeaderConfig, ServiceAccountConfig, TokenWebhookConfig } from './server';

export const AUTHN_FLAGS: FlagSpecs = {
  ...INTERNAL_TLS_FLAGS,
  ...HEALTH_FLAGS,
  ...METRICS_FLAGS,
  listen: { description: 'gRPC listen address (host:port)', default: '127.0.0.1:7102' },
  'client-ca-file': { description: 'PEM bundle of CAs whose client certificates authenticate users (CN = user, O = groups)', default: '' },
  'token-auth-file': { description: 'Static token file: CSV of token,user,uid[,"group1,group2"]', default: '' },
  'storage-address': { description: 'gRPC address of the storage service, for methods that read objects (service-account lookup, bootstrap tokens)', default: '' },
  'enable-bootstrap-token-auth': { description: 'Bootstrap tokens (Secrets bootstrap-token-<id> of type bootstrap.svc.io/token in svc-system) authenticate; needs --storage-address', boolean: true, default: 'false' },
  'authentication-token-webhook-config-file': { description: 'Kubeconfig-format file of the token review webhook (clusters[].cluster.server https URL and certificate-authority; users[] this server\'s client certificate)', default: '' },
  'authentication-token-webhook-cache-ttl': { description: 'How long the webhook\'s decisions are cached (Go duration)', default: '2m0s' },
  'authentication-token-webhook-version': { description: 'TokenReview version sent to the webhook: v1 or v1beta1', default: 'v1beta1' },
  'requestheader-client-ca-file': { description: 'PEM CAs of the authenticating proxy\'s client certificate; its headers count only with such a certificate', default: '' },
  'requestheader-allowed-names': { description: 'Common names the proxy certificate may have (comma-separated, repeatable); empty allows every name the CA signs', repeated: true, default: '' },
  'requestheader-username-headers': { description: 'Headers naming the user, in order, the first with a value wins (comma-separated, repeatable; e.g. X-Remote-User); required with --requestheader-client-ca-file', repeated: true, default: '' },
  'requestheader-uid-headers': { description: 'Headers naming the user\'s uid, in order (comma-separated, repeatable)', repeated: true, default: '' },
  'requestheader-group-headers': { description: 'Headers whose every value is a group (comma-separated, repeatable; e.g. X-Remote-Group)', repeated: true, default: '' },
  'requestheader-extra-headers-prefix': { description: 'Header prefixes of extra entries (comma-separated, repeatable; e.g. X-Remote-Extra-); the rest of the name, lower-cased and percent-decoded, is the key', repeated: true, default: '' },
  'oidc-issuer-url': { description: 'HTTPS URL of the OpenID Connect issuer (discovery at <url>/.well-known/openid-configuration); its ID tokens authenticate', default: '' },
  'oidc-client-id': { description: 'The audience every OIDC ID token must be issued for; required with --oidc-issuer-url', default: '' },
  'oidc-username-claim': { description: 'Claim that names the user; claims other than email get the prefix <issuer-url># unless --oidc-username-prefix is set', default: 'sub' },
  'oidc-username-prefix': { description: 'Prefix of OIDC usernames; - for none', default: '' },
  'oidc-groups-claim': { description: 'Claim holding the groups (a string or a list of strings)', default: '' },
  'oidc-groups-prefix': { description: 'Prefix of OIDC group names', default: '' },
  'oidc-required-claim': { description: 'key=value that every OIDC token must carry; repeatable', repeated: true },
  'oidc-ca-file': { description: "PEM CA bundle for the issuer's HTTPS certificate; the system's trust store when unset", default: '' },
  'oidc-signing-algs': { description: 'Comma-separated accepted signing algorithms (asymmetric only)', default: 'RS256' },
  'authentication-config': { description: 'AuthenticationConfiguration file (JWT issuers with CEL claim rules and mappings, anonymous settings); reloaded when it changes; not with --oidc-* flags', default: '' },
  'api-audiences': { description: 'Comma-separated audiences of this API; tokens for none of them are refused. Default: the first --service-account-issuer', default: '' },
  'service-account-issuer': { description: 'Issuer (iss) of service-account tokens; repeat to accept several, the first signs new tokens', repeated: true },
  'service-account-key-file': { description: 'PEM file of public or private keys that verify service-account tokens; repeatable (rotation). Default: the signing key', repeated: true },
  'service-account-signing-key-file': { description: 'PEM private key (RSA or ECDSA) that signs service-account tokens (TokenRequest)', default: '' },
  'service-account-max-token-expiration': { description: 'Longest lifetime of a requested service-account token (Go duration, 0 = no cap); longer requests are shortened to it', default: '0' },
  'service-account-lookup': { description: 'Reject service-account tokens whose account or bound object no longer exists (true|false)', boolean: true, default: 'true' },
  'anonymous-auth': {
    description: 'Treat requests without credentials as system:anonymous (true|false). Unset: on unless --authorization-mode names AlwaysAllow',
    boolean: true,
  },
  'authorization-mode': {
    description:
      'The comma-separated authorization modes authz is given (its --authorization-mode). authn does not authorize; it reads this only to default --anonymous-auth, which is off when the modes include AlwaysAllow',
    default: 'AlwaysDeny',
  },
};

/**
 * Whether requests without credentials are anonymous: an explicit
 * `--anonymous-auth` wins; otherwise on unless the authorization modes
 * include AlwaysAllow (SPEC section 5, "Anonymous requests"), where an
 * anonymous request would be allowed everything.
 */
export function anonymousAuthEnabled(flags: ParsedFlags): boolean {
  if (flags.getOptional('anonymous-auth') !== undefined) return flags.getBool('anonymous-auth');
  return !flags
    .get('authorization-mode')
    .split(',')
    .map((m) => m.trim())
    .includes('AlwaysAllow');
}

/** The service-account settings of the flags, or undefined when no issuer is set. */
export function serviceAccountConfig(flags: ParsedFlags): ServiceAccountConfig | undefined {
  const issuers = flags.getAll('service-account-issuer').filter(Boolean);
  if (issuers.length === 0) return undefined;
  const config: ServiceAccountConfig = {
    issuers,
    keyFiles: flags.getAll('service-account-key-file').filter(Boolean),
    maxTokenExpirationSeconds: Math.floor(parseDuration(flags.get('service-account-max-token-expiration'), 'service-account-max-token-expiration') / 1000),
    lookup: flags.getBool('service-account-lookup'),
  };
  if (flags.get('service-account-signing-key-file')) config.signingKeyFile = flags.get('service-account-signing-key-file');
  return config;
}

/** `--api-audiences` as a list. */
export function apiAudiences(flags: ParsedFlags): string[] {
  return flags
    .get('api-audiences')
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
}

function commaList(flags: ParsedFlags, name: string, lower = false): string[] {
  return flags
    .get(name)
    .split(',')
    .map((v) => (lower ? v.trim().toLowerCase() : v.trim()))
    .filter(Boolean);
}

/** The authenticating proxy's settings, or undefined when no request-header CA is set. */
export function requestHeaderConfig(flags: ParsedFlags): RequestHeaderConfig | undefined {
  const caFile = flags.get('requestheader-client-ca-file');
  if (!caFile) return undefined;
  // Header names are case-insensitive; the gateway hands them over lower-cased.
  const headers = (name: string) => listFlag(flags, name).map((h) => h.toLowerCase());
  const usernameHeaders = headers('requestheader-username-headers');
  if (usernameHeaders.length === 0) throw new Error('--requestheader-username-headers is required with --requestheader-client-ca-file');
  return {
    clientCaFile: caFile,
    allowedNames: listFlag(flags, 'requestheader-allowed-names'),
    usernameHeaders,
    uidHeaders: headers('requestheader-uid-headers'),
    groupHeaders: headers('requestheader-group-headers'),
    extraHeaderPrefixes: headers('requestheader-extra-headers-prefix'),
  };
}

/** The token webhook's settings, or undefined when no configuration file is set. */
export function tokenWebhookConfig(flags: ParsedFlags): TokenWebhookConfig | undefined {
  const configFile = flags.get('authentication-token-webhook-config-file');
  if (!configFile) return undefined;
  const version = flags.get('authentication-token-webhook-version');
  if (version !== 'v1' && version !== 'v1beta1') throw new Error(`--authentication-token-webhook-version: ${JSON.stringify(version)} is not v1 or v1beta1`);
  return { configFile, cacheTtlMs: parseDuration(flags.get('authentication-token-webhook-cache-ttl'), 'authentication-token-webhook-cache-ttl'), version };
}

const OIDC_FLAGS = ['oidc-issuer-url', 'oidc-client-id', 'oidc-username-claim', 'oidc-username-prefix', 'oidc-groups-claim', 'oidc-groups-prefix', 'oidc-required-claim', 'oidc-ca-file', 'oidc-signing-algs'];

/** The OIDC issuer of the `--oidc-*` flags, or undefined when no issuer URL is set. */
export function oidcSettings(flags: ParsedFlags): JwtIssuerSettings | undefined {
  const url = flags.get('oidc-issuer-url');
  const given = OIDC_FLAGS.filter((f) => f !== 'oidc-issuer-url' && flags.given(f));
  if (!url) {
    if (given.length > 0) throw new Error(`--${given[0] ?? ''} needs --oidc-issuer-url`);
    return undefined;
  }
  if (!url.startsWith('https://')) throw new Error(`--oidc-issuer-url: ${JSON.stringify(url)} must be an https URL`);
  const clientId = flags.get('oidc-client-id');
  if (!clientId) throw new Error('--oidc-client-id is required with --oidc-issuer-url');
  const algorithms = commaList(flags, 'oidc-signing-algs');
  for (const alg of algorithms) if (!ASYMMETRIC_ALGORITHMS.includes(alg)) throw new Error(`--oidc-signing-algs: ${JSON.stringify(alg)} is not supported (one of ${ASYMMETRIC_ALGORITHMS.join(', ')})`);
  const claim = flags.get('oidc-username-claim');
  const prefixFlag = flags.given('oidc-username-prefix') ? flags.get('oidc-username-prefix') : undefined;
  const prefix = prefixFlag === '-' ? '' : prefixFlag !== undefined ? prefixFlag : claim === 'email' ? '' : `${url}#`;
  const required = flags.getAll('oidc-required-claim').map((kv) => {
    const eq = kv.indexOf('=');
    if (eq <= 0) throw new Error(`--oidc-required-claim: ${JSON.stringify(kv)} is not key=value`);
    return { claim: kv.slice(0, eq), requiredValue: kv.slice(eq + 1) };
  });
  const settings: JwtIssuerSettings = {
    url,
    audiences: [clientId],
    algorithms,
    claimValidationRules: required,
    username: { claim, prefix },
    requireVerifiedEmail: true,
    extra: [],
    userValidationRules: [],
  };
  if (flags.get('oidc-groups-claim')) settings.groups = { claim: flags.get('oidc-groups-claim'), prefix: flags.get('oidc-groups-prefix') };
  const caFile = flags.get('oidc-ca-file');
  if (caFile) settings.certificateAuthority = fs.readFileSync(caFile, 'utf8');
  return settings;
}

/**
 * The configuration file, refused at start together with the flags it
 * replaces: any `--oidc-*`, or an explicit `--anonymous-auth` when the file
 * sets `anonymous` (checked once the file is read).
 */
export function authenticationConfigFile(flags: ParsedFlags): string | undefined {
  const file = flags.get('authentication-config');
  if (!file) return undefined;
  const oidc = OIDC_FLAGS.find((f) => flags.given(f));
  if (oidc) throw new Error(`--authentication-config and --${oidc} may not be used together`);
  return file;
}
