import * as fs from 'node:fs';
import { FieldReader, parseConfigDocument } from '@svc/service-kit';

/**
 * The encryption configuration (`EncryptionConfiguration`,
 * `apiserver.config.svc.io/v1`, YAML or JSON), read strictly as the
 * original server reads its own: every problem is reported with the path of
 * its field, and any problem refuses the whole file.
 */
export const ENCRYPTION_CONFIG_API_VERSION = 'apiserver.config.svc.io/v1';
export const ENCRYPTION_CONFIG_KIND = 'EncryptionConfiguration';

export interface EncryptionKey {
  name: string;
  /** The decoded key material. */
  secret: Buffer;
}

export type ProviderConfig =
  | { type: 'aescbc'; keys: EncryptionKey[] }
  | { type: 'aesgcm'; keys: EncryptionKey[] }
  | { type: 'secretbox'; keys: EncryptionKey[] }
  | { type: 'identity' };

export interface ResourceEncryption {
  /** As written: `secrets`, `deployments.apps`, `*.apps`, `*.` (every core resource) or `*.*`. */
  resources: string[];
  providers: ProviderConfig[];
}

export interface EncryptionConfig {
  resources: ResourceEncryption[];
}

export const PROVIDER_TYPES = ['aescbc', 'aesgcm', 'secretbox', 'identity', 'kms'] as const;

/** The key sizes each keyed provider accepts, in bytes. */
const KEY_SIZES: Record<'aescbc' | 'aesgcm' | 'secretbox', readonly number[]> = { aescbc: [16, 24, 32], aesgcm: [16, 24, 32], secretbox: [32] };

/** Names appear in each stored value's prefix, which is split on ':'. */
const KEY_NAME = /^[A-Za-z0-9._-]{1,64}$/;
/** A resource (`secrets`), a group's resource (`deployments.apps`) or a wildcard (`*.apps`, `*.`, `*.*`). */
const RESOURCE = /^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?)?$/;

export class EncryptionConfigError extends Error {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`encryption provider configuration ${file}: ${problems.join('; ')}`);
  }
}

class Reader extends FieldReader {
  keys(type: 'aescbc' | 'aesgcm' | 'secretbox', value: unknown, field: string): EncryptionKey[] {
    const provider = this.object(value, field, ['keys']);
    if (!provider) {
      this.problem(field, 'Required value: the provider needs its keys');
      return [];
    }
    const list = this.list(provider['keys'], `${field}.keys`);
    if (list.length === 0) this.problem(`${field}.keys`, 'Required value: at least one key is required');
    const seen = new Set<string>();
    const keys: EncryptionKey[] = [];
    list.forEach((k, i) => {
      const f = `${field}.keys[${i}]`;
      const entry = this.object(k, f, ['name', 'secret']);
      if (!entry) {
        this.problem(f, 'Required value');
        return;
      }
      const name = this.string(entry['name'], `${f}.name`);
      if (!name) this.problem(`${f}.name`, 'Required value: a key needs a name');
      else if (!KEY_NAME.test(name)) this.problem(`${f}.name`, `Invalid value: ${JSON.stringify(name)}: a key name is 1 to 64 letters, digits, '.', '_' or '-'`);
      else if (seen.has(name)) this.problem(`${f}.name`, `Duplicate value: ${JSON.stringify(name)}: key names must be unique within a provider`);
      else seen.add(name);
      const secretText = this.string(entry['secret'], `${f}.secret`);
      if (!secretText) {
        this.problem(`${f}.secret`, 'Required value: a key needs its secret (base64)');
        return;
      }
      // The secret's value is never repeated in a problem: only its size.
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(secretText.trim()) || secretText.trim().length % 4 !== 0) {
        this.problem(`${f}.secret`, 'Invalid value: the secret must be base64 encoded');
        return;
      }
      const secret = Buffer.from(secretText.trim(), 'base64');
      const sizes = KEY_SIZES[type];
      if (!sizes.includes(secret.length)) {
        this.problem(`${f}.secret`, `Invalid value: ${type} keys must be ${sizes.join(', ').replace(/, (\d+)$/, ' or $1')} bytes (base64 encoded), this one is ${secret.length}`);
        return;
      }
      if (name) keys.push({ name, secret });
    });
    return keys;
  }

  provider(value: unknown, field: string): ProviderConfig | undefined {
    const entry = this.object(value, field);
    if (!entry) {
      this.problem(field, 'Required value');
      return undefined;
    }
    for (const key of Object.keys(entry)) {
      if (!(PROVIDER_TYPES as readonly string[]).includes(key)) this.problem(`${field}.${key}`, `Unsupported value: unknown provider ${JSON.stringify(key)}: supported values: ${PROVIDER_TYPES.join(', ')}`);
    }
    const named = Object.keys(entry).filter((k) => (PROVIDER_TYPES as readonly string[]).includes(k));
    if (named.length === 0) {
      if (Object.keys(entry).length === 0) this.problem(field, `Required value: exactly one of ${PROVIDER_TYPES.join(', ')} must be set`);
      return undefined;
    }
    if (named.length > 1) {
      this.problem(field, `Invalid value: more than one provider specified in a single element (${named.join(', ')}); each element holds exactly one`);
      return undefined;
    }
    const type = named[0] as (typeof PROVIDER_TYPES)[number];
    const f = `${field}.${type}`;
    switch (type) {
      case 'identity':
        this.object(entry['identity'] ?? {}, f, []);
        return { type: 'identity' };
      case 'kms':
        // Read enough to name the field, never accepted and ignored.
        this.object(entry['kms'], f);
        this.problem(f, 'Unsupported value: the kms provider (a KMS v2 plugin on a local socket) is not supported by this server; use aesgcm, aescbc or identity');
        return undefined;
      case 'secretbox':
        this.keys(type, entry[type], f);
        this.problem(f, 'Unsupported value: the secretbox provider (XSalsa20-Poly1305) is not supported by this server yet; use aesgcm or aescbc');
        return undefined;
      default:
        return { type, keys: this.keys(type, entry[type], f) };
    }
  }
}

/** Parses a configuration's text; throws EncryptionConfigError naming `file` and every field at fault. */
export function parseEncryptionConfig(text: string, file: string): EncryptionConfig {
  let doc: unknown;
  try {
    doc = parseConfigDocument(text, file);
  } catch (err) {
    throw new EncryptionConfigError(file, [(err as Error).message.slice(file.length + 2)]);
  }
  const r = new Reader();
  const root = r.object(doc, '<root>', ['apiVersion', 'kind', 'resources']);
  if (!root) throw new EncryptionConfigError(file, ['<root>: Invalid value: the file must hold an EncryptionConfiguration object']);
  r.typeMeta(root, ENCRYPTION_CONFIG_KIND, [ENCRYPTION_CONFIG_API_VERSION]);
  const list = r.list(root['resources'], 'resources');
  if (list.length === 0) r.problem('resources', 'Required value: at least one resources entry is required');
  const seen = new Map<string, string>();
  const resources: ResourceEncryption[] = [];
  list.forEach((value, i) => {
    const field = `resources[${i}]`;
    const entry = r.object(value, field, ['resources', 'providers']);
    if (!entry) {
      r.problem(field, 'Required value');
      return;
    }
    const names: string[] = [];
    const resourceList = r.list(entry['resources'], `${field}.resources`);
    if (resourceList.length === 0) r.problem(`${field}.resources`, 'Required value: at least one resource is required');
    resourceList.forEach((res, j) => {
      const rf = `${field}.resources[${j}]`;
      const name = r.string(res, rf);
      if (name === undefined) return;
      if (!RESOURCE.test(name) || name === '*') {
        r.problem(rf, `Invalid value: ${JSON.stringify(name)}: a resource is lowercase, as 'secrets', 'deployments.apps', '*.apps', '*.' (every core resource) or '*.*'`);
        return;
      }
      const earlier = seen.get(name);
      if (earlier) {
        r.problem(rf, `Duplicate value: ${JSON.stringify(name)} is already configured at ${earlier}`);
        return;
      }
      seen.set(name, rf);
      names.push(name);
    });
    const providerList = r.list(entry['providers'], `${field}.providers`);
    if (providerList.length === 0) r.problem(`${field}.providers`, 'Required value: at least one provider is required');
    const providers: ProviderConfig[] = [];
    providerList.forEach((p, j) => {
      const provider = r.provider(p, `${field}.providers[${j}]`);
      if (provider) providers.push(provider);
    });
    resources.push({ resources: names, providers });
  });
  if (r.problems.length > 0) throw new EncryptionConfigError(file, r.problems);
  return { resources };
}

/** Reads and parses the file; a missing or unreadable file is refused naming it. */
export function readEncryptionConfig(file: string): { text: string; config: EncryptionConfig } {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new EncryptionConfigError(file, [`cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`]);
  }
  return { text, config: parseEncryptionConfig(text, file) };
}
