import { parseObjectKey } from '@svc/apimachinery';
import type { EncryptionConfig } from './config';
import { ENCRYPTED_PREFIX, providerOf, type KeyCipher, type Provider } from './providers';

/**
 * What values look like in etcd under an encryption configuration: the
 * first provider of a resource's list writes, every provider of the list
 * reads. A value without the `svc:enc:` prefix was written in plain text
 * (before encryption was turned on, or by `identity`) and is read as it is,
 * whatever the list holds: the original only reads such values when
 * `identity` is in the list; here turning encryption on never makes
 * existing objects unreadable. A value with the prefix is opened by the
 * list's key of that provider and name; when none holds it, or it does not
 * open, the read fails naming the key (never garbage).
 */
export interface ValueTransformer {
  /** The value to store for `etcdKey` of `resource` (in `group`). */
  toStorage(group: string, resource: string, etcdKey: Buffer, plain: Buffer): Buffer;
  /** The plain value of what etcd holds at `etcdKey`; throws ValueTransformError. */
  fromStorage(etcdKey: Buffer | string, stored: Buffer): Buffer;
  /**
   * Whether a stored value is not as the configuration would write it now
   * (another key or provider wrote it): an unchanged update rewrites it, as
   * the original's storage writes a stale value even when nothing changed.
   */
  stale(group: string, resource: string, stored: Buffer): boolean;
}

/** A stored value that cannot be read: names the etcd key and the encryption key. */
export class ValueTransformError extends Error {
  constructor(
    readonly etcdKey: string,
    readonly reason: string,
  ) {
    super(`unable to transform key ${JSON.stringify(etcdKey)}: ${reason}`);
  }
}

const PREFIX = Buffer.from(ENCRYPTED_PREFIX);

export function isEncrypted(value: Buffer): boolean {
  return value.length >= PREFIX.length && value.compare(PREFIX, 0, PREFIX.length, 0, PREFIX.length) === 0;
}

/** The provider and key a value names in its prefix (`svc:enc:aesgcm:v1:key1:`), for messages. */
function describePrefix(value: Buffer): { provider: string; keyName: string } | undefined {
  const head = value.subarray(0, Math.min(value.length, 128)).toString('latin1');
  const m = /^svc:enc:([a-z0-9]+):v[0-9]+:([^:]*):/.exec(head);
  return m ? { provider: m[1] as string, keyName: m[2] as string } : undefined;
}

interface Chain {
  /** The provider that writes: undefined for identity. */
  writer: KeyCipher | undefined;
  /** Every key of the list, by its prefix (two providers of one type may hold different keys). */
  readers: KeyCipher[];
  resources: string;
}

function matches(pattern: string, group: string, resource: string): boolean {
  const dot = pattern.indexOf('.');
  const [res, grp] = dot < 0 ? [pattern, ''] : [pattern.slice(0, dot), pattern.slice(dot + 1)];
  if (grp === '*') return res === '*' || res === resource;
  if (grp !== group) return false;
  return res === '*' || res === resource;
}

function chainOf(providers: Provider[], resources: string[]): Chain {
  const first = providers[0];
  const readers: KeyCipher[] = [];
  for (const p of providers) if (p.type === 'keyed') readers.push(...p.ciphers);
  return { writer: first?.type === 'keyed' ? first.ciphers[0] : undefined, readers, resources: resources.join(', ') };
}

/** Most group/resource pairs whose provider list is remembered (the API's resources are far fewer). */
export const MAX_CACHED_RESOURCES = 4096;

export class ConfiguredTransformer implements ValueTransformer {
  private readonly entries: { resources: string[]; chain: Chain }[];
  private readonly cache = new Map<string, Chain | null>();

  constructor(config: EncryptionConfig) {
    this.entries = config.resources.map((r) => ({ resources: r.resources, chain: chainOf(r.providers.map(providerOf), r.resources) }));
  }

  /** The first entry naming the resource (exactly or by a wildcard), as the original picks it. */
  private chain(group: string, resource: string): Chain | undefined {
    const id = `${resource}.${group}`;
    let c = this.cache.get(id);
    if (c === undefined) {
      c = this.entries.find((e) => e.resources.some((p) => matches(p, group, resource)))?.chain ?? null;
      if (this.cache.size >= MAX_CACHED_RESOURCES) this.cache.clear();
      this.cache.set(id, c);
    }
    return c ?? undefined;
  }

  /** How many group/resources' provider lists are remembered (at most MAX_CACHED_RESOURCES). */
  get cachedResources(): number {
    return this.cache.size;
  }

  /** Whether values of the resource are written encrypted (its list starts with a keyed provider). */
  encrypts(group: string, resource: string): boolean {
    return this.chain(group, resource)?.writer !== undefined;
  }

  toStorage(group: string, resource: string, etcdKey: Buffer, plain: Buffer): Buffer {
    const writer = this.chain(group, resource)?.writer;
    if (!writer) return plain;
    return Buffer.concat([writer.prefix, writer.encrypt(plain, etcdKey)]);
  }

  stale(group: string, resource: string, stored: Buffer): boolean {
    const writer = this.chain(group, resource)?.writer;
    if (!writer) return isEncrypted(stored);
    return stored.length < writer.prefix.length || stored.compare(writer.prefix, 0, writer.prefix.length, 0, writer.prefix.length) !== 0;
  }

  fromStorage(etcdKey: Buffer | string, stored: Buffer): Buffer {
    if (!isEncrypted(stored)) return stored;
    const keyText = typeof etcdKey === 'string' ? etcdKey : etcdKey.toString('utf8');
    const named = describePrefix(stored);
    if (!named) throw new ValueTransformError(keyText, 'the value carries a malformed encryption prefix');
    const parsed = parseObjectKey(keyText);
    const chain = parsed ? this.chain(parsed.group, parsed.resource) : undefined;
    const context = typeof etcdKey === 'string' ? Buffer.from(etcdKey) : etcdKey;
    const failures: string[] = [];
    for (const cipher of chain?.readers ?? []) {
      if (stored.length < cipher.prefix.length || stored.compare(cipher.prefix, 0, cipher.prefix.length, 0, cipher.prefix.length) !== 0) continue;
      try {
        return cipher.decrypt(stored.subarray(cipher.prefix.length), context);
      } catch (err) {
        failures.push((err as Error).message);
      }
    }
    const key = `${named.provider} key ${JSON.stringify(named.keyName)}`;
    if (failures.length > 0) {
      throw new ValueTransformError(keyText, `${key} cannot decrypt the value (authentication failed: the key differs from the one that wrote it, or the value was altered)`);
    }
    const resource = parsed ? (parsed.group ? `${parsed.resource}.${parsed.group}` : parsed.resource) : 'this key';
    throw new ValueTransformError(keyText, `the value is encrypted with ${key}, which the encryption configuration does not hold for ${resource}`);
  }
}

/** No configuration: values are written in plain text; encrypted ones cannot be read (naming their key). */
export const PLAIN_TRANSFORMER = new ConfiguredTransformer({ resources: [] });
