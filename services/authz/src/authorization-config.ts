import * as fs from 'node:fs';
import * as path from 'node:path';
import { compile, CelCompileError, type CelDeclaredType, type CompiledExpression } from '@svc/cel';
import { FieldReader, parseConfigDocument, parseDuration } from '@svc/service-kit';

/**
 * The structured authorization configuration (`--authorization-config`,
 * SPEC section 5): an ordered list of named authorizers, with the rules of
 * the original server's validation. Every problem is an error naming the
 * file and the field (`authorizers[1].webhook.timeout: Invalid value: "45s":
 * must be no more than 30s`); decoding is strict (an unknown field is an
 * error). YAML or JSON.
 */

export const AUTHORIZATION_CONFIG_VERSIONS = ['apiserver.config.svc.io/v1', 'apiserver.config.svc.io/v1beta1', 'apiserver.config.svc.io/v1alpha1'];
export const AUTHORIZER_TYPES = ['Webhook', 'Node', 'RBAC', 'AlwaysAllow', 'AlwaysDeny'] as const;
export type AuthorizerType = (typeof AUTHORIZER_TYPES)[number];
export const MAX_MATCH_CONDITIONS = 64;
export const MAX_WEBHOOK_TIMEOUT_MS = 30_000;
export const DEFAULT_AUTHORIZED_TTL_MS = 5 * 60_000;
export const DEFAULT_UNAUTHORIZED_TTL_MS = 30_000;

export class AuthorizationConfigFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuthorizationConfigFileError';
  }
}

export type FailurePolicy = 'NoOpinion' | 'Deny';

export type ConnectionInfo = { type: 'KubeConfigFile'; kubeConfigFile: string } | { type: 'InClusterConfig' };

export interface MatchCondition {
  expression: CompiledExpression;
}

export interface WebhookSettings {
  authorizedTtlMs: number;
  unauthorizedTtlMs: number;
  timeoutMs: number;
  subjectAccessReviewVersion: 'v1' | 'v1beta1';
  failurePolicy: FailurePolicy;
  connectionInfo: ConnectionInfo;
  matchConditions: MatchCondition[];
}

export interface AuthorizerEntry {
  type: AuthorizerType;
  name: string;
  /** Only for `Webhook`. */
  webhook?: WebhookSettings;
}

export interface AuthorizationConfig {
  authorizers: AuthorizerEntry[];
}

const STRING_LIST: CelDeclaredType = { list: 'string' };

/** `request` in a match condition: the SubjectAccessReview v1 spec (absent fields are absent, as the original's unstructured form has them). */
export const MATCH_CONDITION_REQUEST: CelDeclaredType = {
  object: {
    resourceAttributes: {
      object: {
        namespace: 'string',
        verb: 'string',
        group: 'string',
        version: 'string',
        resource: 'string',
        subresource: 'string',
        name: 'string',
        fieldSelector: 'dyn',
        labelSelector: 'dyn',
      },
    },
    nonResourceAttributes: { object: { path: 'string', verb: 'string' } },
    user: 'string',
    groups: STRING_LIST,
    extra: { map: STRING_LIST },
    uid: 'string',
  },
};

/** A DNS-1123 subdomain: lowercase alphanumerics, '-' and '.', starting and ending alphanumeric, at most 253 characters. */
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function dns1123SubdomainProblem(name: string): string | undefined {
  if (name.length > 253) return 'must be no more than 253 characters';
  if (!DNS1123_SUBDOMAIN.test(name)) {
    return "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
  }
  return undefined;
}

class Reader extends FieldReader {
  /** A Go duration (`5m`, `30s`, `1m30s`); undefined when absent or invalid (then a problem is recorded). */
  duration(value: unknown, field: string): number | undefined {
    const text = this.string(value, field);
    if (text === undefined) return undefined;
    try {
      return parseDuration(text, field);
    } catch {
      this.problem(field, `Invalid value: ${JSON.stringify(text)}: not a duration (examples: 30s, 5m, 1m30s)`);
      return undefined;
    }
  }

  /** A required string among `values`. */
  oneOf<T extends string>(value: unknown, field: string, values: readonly T[]): T | undefined {
    const text = this.string(value, field);
    if (text === undefined || text === '') {
      this.problem(field, 'Required value');
      return undefined;
    }
    if (!(values as readonly string[]).includes(text)) {
      this.problem(field, `Unsupported value: ${JSON.stringify(text)}: supported values: ${values.map((v) => JSON.stringify(v)).join(', ')}`);
      return undefined;
    }
    return text as T;
  }

  ttl(value: unknown, field: string, fallback: number): number {
    const ms = this.duration(value, field);
    if (ms === undefined || ms === 0) return fallback;
    if (ms < 0) this.problem(field, `Invalid value: ${JSON.stringify(value)}: must be > 0s`);
    return ms;
  }

  connectionInfo(value: unknown, field: string): ConnectionInfo | undefined {
    const c = this.object(value, field, ['type', 'kubeConfigFile']);
    if (!c) {
      this.problem(field, 'Required value');
      return undefined;
    }
    const type = this.oneOf(c['type'], `${field}.type`, ['KubeConfigFile', 'InClusterConfig'] as const);
    const file = this.string(c['kubeConfigFile'], `${field}.kubeConfigFile`);
    if (type === 'InClusterConfig') {
      if (file !== undefined && file !== '') this.problem(`${field}.kubeConfigFile`, `Invalid value: ${JSON.stringify(file)}: may only be specified when type=KubeConfigFile`);
      return { type };
    }
    if (type !== 'KubeConfigFile') return undefined;
    if (file === undefined || file === '') {
      this.problem(`${field}.kubeConfigFile`, 'Required value');
      return undefined;
    }
    if (!path.isAbsolute(file)) {
      this.problem(`${field}.kubeConfigFile`, `Invalid value: ${JSON.stringify(file)}: must be an absolute path`);
      return undefined;
    }
    try {
      if (!fs.statSync(file).isFile()) this.problem(`${field}.kubeConfigFile`, `Invalid value: ${JSON.stringify(file)}: must be a file`);
    } catch (err) {
      this.problem(`${field}.kubeConfigFile`, `Invalid value: ${JSON.stringify(file)}: error loading file: ${(err as Error).message}`);
    }
    return { type, kubeConfigFile: file };
  }

  matchConditions(value: unknown, field: string): MatchCondition[] {
    const raw = this.list(value, field);
    if (raw.length > MAX_MATCH_CONDITIONS) this.problem(field, `Too many: ${raw.length}: must have at most ${MAX_MATCH_CONDITIONS} items`);
    const seen = new Set<string>();
    const out: MatchCondition[] = [];
    raw.slice(0, MAX_MATCH_CONDITIONS).forEach((item, i) => {
      const f = `${field}[${i}].expression`;
      const source = this.string(this.object(item, `${field}[${i}]`, ['expression'])?.['expression'], f) ?? '';
      if (source.trim() === '') return this.problem(f, 'Required value');
      if (seen.has(source)) return this.problem(f, `Duplicate value: ${JSON.stringify(source)}`);
      seen.add(source);
      try {
        out.push({ expression: compile(source, { field: f, variables: { request: MATCH_CONDITION_REQUEST }, resultType: 'bool' }) });
      } catch (err) {
        if (!(err instanceof CelCompileError)) throw err;
        this.problems.push(err.message);
      }
    });
    return out;
  }

  webhook(value: unknown, field: string): WebhookSettings | undefined {
    const w = this.object(value, field, ['authorizedTTL', 'unauthorizedTTL', 'timeout', 'subjectAccessReviewVersion', 'matchConditionSubjectAccessReviewVersion', 'failurePolicy', 'connectionInfo', 'matchConditions']);
    if (!w) {
      this.problem(field, 'Required value: required when type=Webhook');
      return undefined;
    }
    const authorizedTtlMs = this.ttl(w['authorizedTTL'], `${field}.authorizedTTL`, DEFAULT_AUTHORIZED_TTL_MS);
    const unauthorizedTtlMs = this.ttl(w['unauthorizedTTL'], `${field}.unauthorizedTTL`, DEFAULT_UNAUTHORIZED_TTL_MS);
    const timeoutMs = this.duration(w['timeout'], `${field}.timeout`);
    if (timeoutMs === undefined || timeoutMs === 0) {
      if (w['timeout'] === undefined || timeoutMs === 0) this.problem(`${field}.timeout`, 'Required value');
    } else if (timeoutMs < 0) {
      this.problem(`${field}.timeout`, `Invalid value: ${JSON.stringify(w['timeout'])}: must be > 0s`);
    } else if (timeoutMs > MAX_WEBHOOK_TIMEOUT_MS) {
      this.problem(`${field}.timeout`, `Invalid value: ${JSON.stringify(w['timeout'])}: must be no more than 30s`);
    }
    const subjectAccessReviewVersion = this.oneOf(w['subjectAccessReviewVersion'], `${field}.subjectAccessReviewVersion`, ['v1', 'v1beta1'] as const);
    this.oneOf(w['matchConditionSubjectAccessReviewVersion'], `${field}.matchConditionSubjectAccessReviewVersion`, ['v1'] as const);
    const failurePolicy = this.oneOf(w['failurePolicy'], `${field}.failurePolicy`, ['NoOpinion', 'Deny'] as const);
    const connectionInfo = this.connectionInfo(w['connectionInfo'], `${field}.connectionInfo`);
    const matchConditions = this.matchConditions(w['matchConditions'], `${field}.matchConditions`);
    if (!subjectAccessReviewVersion || !failurePolicy || !connectionInfo || timeoutMs === undefined) return undefined;
    return { authorizedTtlMs, unauthorizedTtlMs, timeoutMs, subjectAccessReviewVersion, failurePolicy, connectionInfo, matchConditions };
  }

  authorizer(value: unknown, field: string): AuthorizerEntry | undefined {
    const a = this.object(value, field, ['type', 'name', 'webhook']);
    if (!a) {
      this.problem(field, 'Required value');
      return undefined;
    }
    const type = this.oneOf(a['type'], `${field}.type`, AUTHORIZER_TYPES);
    const name = this.string(a['name'], `${field}.name`) ?? '';
    if (name === '') this.problem(`${field}.name`, 'Required value');
    else {
      const problem = dns1123SubdomainProblem(name);
      if (problem) this.problem(`${field}.name`, `Invalid value: ${JSON.stringify(name)}: ${problem}`);
    }
    if (type !== 'Webhook') {
      if (a['webhook'] !== undefined && a['webhook'] !== null) this.problem(`${field}.webhook`, 'Invalid value: "non-null": may only be specified when type=Webhook');
      return type ? { type, name } : undefined;
    }
    const webhook = this.webhook(a['webhook'], `${field}.webhook`);
    return webhook ? { type, name, webhook } : undefined;
  }
}

/** Validates a configuration document's text; `file` prefixes every message. */
export function parseAuthorizationConfig(text: string, file: string): AuthorizationConfig {
  let doc: unknown;
  try {
    doc = parseConfigDocument(text, file);
  } catch (err) {
    throw new AuthorizationConfigFileError((err as Error).message);
  }
  const r = new Reader();
  const root = r.object(doc, '<root>', ['apiVersion', 'kind', 'authorizers']);
  if (!root) throw new AuthorizationConfigFileError(`${file}: not an AuthorizationConfiguration document`);
  r.typeMeta(root, 'AuthorizationConfiguration', AUTHORIZATION_CONFIG_VERSIONS);
  const raw = r.list(root['authorizers'], 'authorizers');
  if (raw.length === 0) r.problem('authorizers', 'Required value: at least one authorization mode must be defined');
  const authorizers: AuthorizerEntry[] = [];
  const names = new Set<string>();
  const types = new Set<AuthorizerType>();
  raw.forEach((item, i) => {
    const entry = r.authorizer(item, `authorizers[${i}]`);
    if (!entry) return;
    // Only webhooks may appear more than once.
    if (entry.type !== 'Webhook' && types.has(entry.type)) r.problem(`authorizers[${i}].type`, `Duplicate value: ${JSON.stringify(entry.type)}`);
    if (names.has(entry.name)) r.problem(`authorizers[${i}].name`, `Duplicate value: ${JSON.stringify(entry.name)}`);
    types.add(entry.type);
    names.add(entry.name);
    authorizers.push(entry);
  });
  if (r.problems.length > 0) throw new AuthorizationConfigFileError(`${file}: ${r.problems.join('; ')}`);
  return { authorizers };
}

export function readConfigText(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new AuthorizationConfigFileError(`${file}: ${(err as Error).message}`);
  }
}

export function readAuthorizationConfig(file: string): AuthorizationConfig {
  return parseAuthorizationConfig(readConfigText(file), file);
}

/**
 * Whether `next` may replace `current` on reload: the Node and RBAC entries
 * must stay the same set (they may move); webhooks may change. Returns the
 * problem, or undefined.
 */
export function reloadProblem(current: AuthorizationConfig, next: AuthorizationConfig): string | undefined {
  const fixed = (c: AuthorizationConfig) =>
    c.authorizers
      .filter((a) => a.type === 'Node' || a.type === 'RBAC')
      .map((a) => a.type)
      .sort();
  const before = fixed(current);
  const after = fixed(next);
  const added = after.filter((x) => !before.includes(x));
  const removed = before.filter((x) => !after.includes(x));
  if (added.length === 0 && removed.length === 0) return undefined;
  return `authorizers: Forbidden: a reload may not add or remove Node or RBAC authorizers (${[...added.map((x) => `added ${x}`), ...removed.map((x) => `removed ${x}`)].join(', ')}); restart the server to change them`;
}
