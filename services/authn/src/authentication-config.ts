import { X509Certificate } from 'node:crypto';
import { FieldReader, parseConfigDocument } from '@svc/service-kit';
import { compileExpression, CelCompileError, type CelVariable, type CompiledExpression } from './cel';
import { ASYMMETRIC_ALGORITHMS, type ClaimOrExpression, type JwtIssuerSettings } from './jwt-authenticator';

/**
 * The structured authentication configuration (`--authentication-config`,
 * SPEC section 5): `AuthenticationConfiguration` with up to 64 JWT issuers
 * and the anonymous settings. Every problem is an error naming the file and
 * the field (`jwt[0].claimMappings.username.prefix: Required value`), with
 * the rules of the original server's validation; as there, decoding is
 * strict (an unknown field is an error). The extra keys of the vendor's
 * domains (`svc.io`, and `k8s.io` and `kubernetes.io` which clients treat
 * the same way) and their subdomains are reserved.
 */

export const AUTHENTICATION_CONFIG_VERSIONS = ['apiserver.config.svc.io/v1', 'apiserver.config.svc.io/v1beta1', 'apiserver.config.svc.io/v1alpha1'];
export const MAX_JWT_AUTHENTICATORS = 64;
/** Domains whose extra keys belong to the server itself. */
const RESERVED_EXTRA_DOMAINS = ['svc.io', 'k8s.io', 'kubernetes.io'];

export class AuthenticationConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuthenticationConfigError';
  }
}

export interface AnonymousSettings {
  enabled: boolean;
  /** When set, only these paths accept anonymous requests. */
  paths?: string[];
}

export interface AuthenticationConfig {
  jwt: JwtIssuerSettings[];
  anonymous?: AnonymousSettings;
}

class Reader extends FieldReader {
  expression(source: string, field: string, variable: CelVariable = 'claims'): CompiledExpression | undefined {
    try {
      return compileExpression(source, field, variable);
    } catch (err) {
      if (err instanceof CelCompileError) {
        this.problems.push(err.message);
        return undefined;
      }
      throw err;
    }
  }

  /** `claim` + `prefix`, or `expression`; `prefixed` for username and groups (uid has no prefix). */
  claimOrExpression(value: unknown, field: string, prefixed: boolean, required: boolean): ClaimOrExpression | undefined {
    const m = this.object(value, field, prefixed ? ['claim', 'prefix', 'expression'] : ['claim', 'expression']);
    if (!m) return undefined;
    const claim = this.string(m['claim'], `${field}.claim`);
    const expression = this.string(m['expression'], `${field}.expression`);
    const prefix = this.string(m['prefix'], `${field}.prefix`);
    if (claim && expression) {
      this.problem(field, "Invalid value: claim and expression can't both be set");
      return undefined;
    }
    if (expression) {
      if (prefix !== undefined) this.problem(`${field}.prefix`, 'Invalid value: may not be specified when expression is set');
      const compiled = this.expression(expression, `${field}.expression`);
      return compiled ? { expression: compiled } : undefined;
    }
    if (!claim) {
      if (required) this.problem(field, 'Required value: claim or expression is required');
      return undefined;
    }
    if (prefixed && prefix === undefined) this.problem(`${field}.prefix`, 'Required value: prefix is required when claim is set ("" for none)');
    return { claim, prefix: prefix ?? '' };
  }
}

function httpsUrl(r: Reader, value: string | undefined, field: string, required: boolean): string | undefined {
  if (value === undefined || value === '') {
    if (required) r.problem(field, 'Required value');
    return undefined;
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    r.problem(field, `Invalid value: ${JSON.stringify(value)}: not a URL`);
    return undefined;
  }
  if (url.protocol !== 'https:') r.problem(field, `Invalid value: ${JSON.stringify(value)}: URL scheme must be https`);
  if (url.search !== '' || url.hash !== '' || url.username !== '') r.problem(field, `Invalid value: ${JSON.stringify(value)}: may not have a query, fragment or user`);
  return value;
}

function readJwt(r: Reader, value: unknown, field: string, serviceAccountIssuers: string[]): JwtIssuerSettings | undefined {
  const j = r.object(value, field, ['issuer', 'claimValidationRules', 'claimMappings', 'userValidationRules']);
  if (!j) {
    r.problem(field, 'Required value');
    return undefined;
  }
  const issuer = r.object(j['issuer'], `${field}.issuer`, ['url', 'discoveryURL', 'certificateAuthority', 'audiences', 'audienceMatchPolicy', 'egressSelectorType']) ?? {};
  if (issuer['egressSelectorType'] !== undefined) r.problem(`${field}.issuer.egressSelectorType`, 'Forbidden: egress selectors are not supported');
  const url = httpsUrl(r, r.string(issuer['url'], `${field}.issuer.url`), `${field}.issuer.url`, true);
  if (url && serviceAccountIssuers.includes(url)) r.problem(`${field}.issuer.url`, `Invalid value: ${JSON.stringify(url)}: may not be the service account issuer`);
  const discoveryUrl = httpsUrl(r, r.string(issuer['discoveryURL'], `${field}.issuer.discoveryURL`), `${field}.issuer.discoveryURL`, false);
  if (discoveryUrl && url && discoveryUrl.replace(/\/+$/, '') === url.replace(/\/+$/, '')) r.problem(`${field}.issuer.discoveryURL`, 'Invalid value: discoveryURL must be different from URL');
  const ca = r.string(issuer['certificateAuthority'], `${field}.issuer.certificateAuthority`);
  if (ca !== undefined && ca !== '') {
    const problem = pemBundleProblem(ca);
    if (problem) r.problem(`${field}.issuer.certificateAuthority`, `Invalid value: "<omitted>": ${problem}`);
  }
  const audiences = r.list(issuer['audiences'], `${field}.issuer.audiences`).map((a, i) => r.string(a, `${field}.issuer.audiences[${i}]`) ?? '');
  if (audiences.length === 0) r.problem(`${field}.issuer.audiences`, 'Required value: at least one audience is required');
  audiences.forEach((a, i) => {
    if (a === '') r.problem(`${field}.issuer.audiences[${i}]`, 'Required value');
    if (audiences.indexOf(a) !== i) r.problem(`${field}.issuer.audiences[${i}]`, `Duplicate value: ${JSON.stringify(a)}`);
  });
  const policy = r.string(issuer['audienceMatchPolicy'], `${field}.issuer.audienceMatchPolicy`);
  if (audiences.length > 1 && policy !== 'MatchAny') r.problem(`${field}.issuer.audienceMatchPolicy`, `Invalid value: ${JSON.stringify(policy ?? '')}: audienceMatchPolicy must be MatchAny for multiple audiences`);
  if (audiences.length <= 1 && policy !== undefined && policy !== '' && policy !== 'MatchAny') r.problem(`${field}.issuer.audienceMatchPolicy`, `Invalid value: ${JSON.stringify(policy)}: audienceMatchPolicy must be empty or MatchAny for single audience`);

  const claimValidationRules: JwtIssuerSettings['claimValidationRules'] = [];
  const ruleClaims = new Set<string>();
  const ruleExpressions = new Set<string>();
  r.list(j['claimValidationRules'], `${field}.claimValidationRules`).forEach((raw, i) => {
    const f = `${field}.claimValidationRules[${i}]`;
    const rule = r.object(raw, f, ['claim', 'requiredValue', 'expression', 'message']) ?? {};
    const claim = r.string(rule['claim'], `${f}.claim`);
    const requiredValue = r.string(rule['requiredValue'], `${f}.requiredValue`);
    const expression = r.string(rule['expression'], `${f}.expression`);
    const message = r.string(rule['message'], `${f}.message`) ?? '';
    if (claim && expression) return r.problem(f, "Invalid value: claim and expression can't both be set");
    if (expression) {
      if (requiredValue) r.problem(`${f}.requiredValue`, 'Invalid value: may not be specified when expression is set');
      if (ruleExpressions.has(expression)) return r.problem(`${f}.expression`, `Duplicate value: ${JSON.stringify(expression)}`);
      ruleExpressions.add(expression);
      const compiled = r.expression(expression, `${f}.expression`);
      if (compiled) claimValidationRules.push({ expression: compiled, message });
      return;
    }
    if (!claim) return r.problem(f, 'Required value: claim or expression is required');
    if (message) r.problem(`${f}.message`, 'Invalid value: may not be specified when claim is set');
    if (ruleClaims.has(claim)) return r.problem(`${f}.claim`, `Duplicate value: ${JSON.stringify(claim)}`);
    ruleClaims.add(claim);
    claimValidationRules.push({ claim, requiredValue: requiredValue ?? '' });
  });

  const mappings = r.object(j['claimMappings'], `${field}.claimMappings`, ['username', 'groups', 'uid', 'extra']);
  if (!mappings) r.problem(`${field}.claimMappings`, 'Required value');
  const m = mappings ?? {};
  if (m['username'] === undefined) r.problem(`${field}.claimMappings.username`, 'Required value');
  const username = m['username'] === undefined ? undefined : r.claimOrExpression(m['username'], `${field}.claimMappings.username`, true, true);
  const groups = m['groups'] === undefined ? undefined : r.claimOrExpression(m['groups'], `${field}.claimMappings.groups`, true, false);
  const uid = m['uid'] === undefined ? undefined : r.claimOrExpression(m['uid'], `${field}.claimMappings.uid`, false, false);
  const extra: JwtIssuerSettings['extra'] = [];
  const keys = new Set<string>();
  r.list(m['extra'], `${field}.claimMappings.extra`).forEach((raw, i) => {
    const f = `${field}.claimMappings.extra[${i}]`;
    const e = r.object(raw, f, ['key', 'valueExpression']) ?? {};
    const key = r.string(e['key'], `${f}.key`) ?? '';
    if (key === '') r.problem(`${f}.key`, 'Required value');
    else if (key !== key.toLowerCase()) r.problem(`${f}.key`, `Invalid value: ${JSON.stringify(key)}: must be lowercase`);
    else if (!/^[a-z0-9.-]+\.[a-z0-9-]+\/\S+$/.test(key)) r.problem(`${f}.key`, `Invalid value: ${JSON.stringify(key)}: must be a domain-prefixed path (such as "acme.io/foo")`);
    else if (RESERVED_EXTRA_DOMAINS.some((d) => key.split('/')[0] === d || (key.split('/')[0] ?? '').endsWith(`.${d}`))) r.problem(`${f}.key`, `Invalid value: ${JSON.stringify(key)}: the domain is reserved`);
    if (keys.has(key)) return r.problem(`${f}.key`, `Duplicate value: ${JSON.stringify(key)}`);
    keys.add(key);
    const source = r.string(e['valueExpression'], `${f}.valueExpression`);
    if (!source) return r.problem(`${f}.valueExpression`, 'Required value');
    const compiled = r.expression(source, `${f}.valueExpression`);
    if (compiled && key) extra.push({ key, valueExpression: compiled });
  });

  // An expression naming claims.email must be paired with claims.email_verified somewhere (the original's rule).
  const usesEmailVerified = [username?.expression, ...extra.map((e) => e.valueExpression), ...claimValidationRules.map((c) => ('expression' in c ? c.expression : undefined))].some((x) => x?.selects('email_verified'));
  if (username?.expression?.selects('email') && !usesEmailVerified) {
    r.problem(
      `${field}.claimMappings.username.expression`,
      `Invalid value: ${JSON.stringify(username.expression.source)}: claims.email_verified must be used in claimMappings.username.expression or claimMappings.extra[*].valueExpression or claimValidationRules[*].expression when claims.email is used in claimMappings.username.expression`,
    );
  }

  const userValidationRules: JwtIssuerSettings['userValidationRules'] = [];
  const userExpressions = new Set<string>();
  r.list(j['userValidationRules'], `${field}.userValidationRules`).forEach((raw, i) => {
    const f = `${field}.userValidationRules[${i}]`;
    const rule = r.object(raw, f, ['expression', 'message']) ?? {};
    const source = r.string(rule['expression'], `${f}.expression`);
    if (!source) return r.problem(`${f}.expression`, 'Required value');
    if (userExpressions.has(source)) return r.problem(`${f}.expression`, `Duplicate value: ${JSON.stringify(source)}`);
    userExpressions.add(source);
    const compiled = r.expression(source, `${f}.expression`, 'user');
    if (compiled) userValidationRules.push({ expression: compiled, message: r.string(rule['message'], `${f}.message`) ?? '' });
  });

  if (!url || !username) return undefined;
  const settings: JwtIssuerSettings = {
    url,
    audiences,
    algorithms: ASYMMETRIC_ALGORITHMS,
    claimValidationRules,
    username,
    requireVerifiedEmail: true,
    extra,
    userValidationRules,
  };
  if (discoveryUrl) settings.discoveryUrl = discoveryUrl;
  if (ca) settings.certificateAuthority = ca;
  if (groups) settings.groups = groups;
  if (uid) settings.uid = uid;
  return settings;
}

/** Why `pem` is not a bundle of certificates, or undefined when it is one. */
function pemBundleProblem(pem: string): string | undefined {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) return 'data does not contain any valid RSA or ECDSA certificates';
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch (err) {
      return `a certificate does not parse: ${(err as Error).message}`;
    }
  }
  return undefined;
}

/** Parses and validates a configuration document; `file` names it in errors. */
export function parseAuthenticationConfig(text: string, file: string, serviceAccountIssuers: string[] = []): AuthenticationConfig {
  let doc: unknown;
  try {
    doc = parseConfigDocument(text, file);
  } catch (err) {
    throw new AuthenticationConfigError((err as Error).message);
  }
  const r = new Reader();
  const root = r.object(doc, '<root>', ['apiVersion', 'kind', 'jwt', 'anonymous']);
  if (!root) throw new AuthenticationConfigError(`${file}: not an AuthenticationConfiguration document`);
  r.typeMeta(root, 'AuthenticationConfiguration', AUTHENTICATION_CONFIG_VERSIONS);
  const entries = r.list(root['jwt'], 'jwt');
  if (entries.length > MAX_JWT_AUTHENTICATORS) r.problem('jwt', `Too many: ${entries.length}: must have at most ${MAX_JWT_AUTHENTICATORS} items`);
  const jwt: JwtIssuerSettings[] = [];
  const urls = new Set<string>();
  const discoveryUrls = new Set<string>();
  entries.slice(0, MAX_JWT_AUTHENTICATORS).forEach((raw, i) => {
    const settings = readJwt(r, raw, `jwt[${i}]`, serviceAccountIssuers);
    if (!settings) return;
    if (urls.has(settings.url)) r.problem(`jwt[${i}].issuer.url`, `Duplicate value: ${JSON.stringify(settings.url)}`);
    if (settings.discoveryUrl && discoveryUrls.has(settings.discoveryUrl)) r.problem(`jwt[${i}].issuer.discoveryURL`, `Duplicate value: ${JSON.stringify(settings.discoveryUrl)}`);
    urls.add(settings.url);
    if (settings.discoveryUrl) discoveryUrls.add(settings.discoveryUrl);
    jwt.push(settings);
  });
  const config: AuthenticationConfig = { jwt };
  const anon = r.object(root['anonymous'], 'anonymous', ['enabled', 'conditions']);
  if (anon) {
    if (typeof anon['enabled'] !== 'boolean') r.problem('anonymous.enabled', 'Required value: must be true or false');
    const paths = r.list(anon['conditions'], 'anonymous.conditions').map((c, i) => {
      const p = r.string(r.object(c, `anonymous.conditions[${i}]`, ['path'])?.['path'], `anonymous.conditions[${i}].path`) ?? '';
      if (!p.startsWith('/')) r.problem(`anonymous.conditions[${i}].path`, `Invalid value: ${JSON.stringify(p)}: must be an absolute path`);
      return p;
    });
    if (paths.length > 0 && anon['enabled'] !== true) r.problem('anonymous.conditions', 'Invalid value: enabled should be set to true when conditions are defined');
    config.anonymous = { enabled: anon['enabled'] === true, ...(anon['conditions'] !== undefined ? { paths } : {}) };
  }
  if (r.problems.length > 0) throw new AuthenticationConfigError(`${file}: ${r.problems.join('; ')}`);
  return config;
}

