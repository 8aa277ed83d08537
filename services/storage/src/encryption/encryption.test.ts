import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createLogger, parseFlags, type FileWatchTimers } from '@svc/service-kit';
import { EncryptionConfigError, parseEncryptionConfig } from './config';
import { EncryptionAtRest, encryptionFromFlags, ENCRYPTION_FLAGS } from './at-rest';
import { ConfiguredTransformer, MAX_CACHED_RESOURCES, PLAIN_TRANSFORMER, ValueTransformError } from './transformer';

const key = (bytes = 32): string => randomBytes(bytes).toString('base64');
const KEY = '/registry/secrets/default/s1';
const PLAIN = Buffer.from('{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s1","namespace":"default"},"data":{"a":"Yg=="}}');

function config(providers: unknown[], resources: unknown[] = ['secrets']): string {
  return JSON.stringify({ apiVersion: 'apiserver.config.svc.io/v1', kind: 'EncryptionConfiguration', resources: [{ resources, providers }] });
}

function transformer(providers: unknown[], resources?: unknown[]): ConfiguredTransformer {
  return new ConfiguredTransformer(parseEncryptionConfig(config(providers, resources), 'enc.yaml'));
}

function problemsOf(text: string): string[] {
  try {
    parseEncryptionConfig(text, '/etc/svc/enc.yaml');
  } catch (err) {
    expect(err).toBeInstanceOf(EncryptionConfigError);
    expect((err as Error).message).toContain('/etc/svc/enc.yaml');
    return (err as EncryptionConfigError).problems;
  }
  throw new Error('the configuration was accepted');
}

function readError(t: ConfiguredTransformer, etcdKey: string, stored: Buffer): ValueTransformError {
  try {
    t.fromStorage(etcdKey, stored);
  } catch (err) {
    expect(err).toBeInstanceOf(ValueTransformError);
    return err as ValueTransformError;
  }
  throw new Error(`the value at ${etcdKey} was read`);
}

describe.each(['aesgcm', 'aescbc'] as const)('%s provider', (provider) => {
  test.each([16, 24, 32])('round trip with a %i-byte key, under the svc:enc prefix', (size) => {
    const t = transformer([{ [provider]: { keys: [{ name: 'key1', secret: key(size) }] } }]);
    const stored = t.toStorage('', 'secrets', Buffer.from(KEY), PLAIN);
    expect(stored.subarray(0, `svc:enc:${provider}:v1:key1:`.length).toString()).toBe(`svc:enc:${provider}:v1:key1:`);
    expect(stored.includes(Buffer.from('"data"'))).toBe(false);
    expect(t.fromStorage(KEY, stored)).toEqual(PLAIN);
    // A fresh IV or nonce each write.
    expect(t.toStorage('', 'secrets', Buffer.from(KEY), PLAIN).equals(stored)).toBe(false);
  });

  test('a different key of the same name fails naming the key', () => {
    const writer = transformer([{ [provider]: { keys: [{ name: 'key1', secret: key() }] } }]);
    const reader = transformer([{ [provider]: { keys: [{ name: 'key1', secret: key() }] } }]);
    const stored = writer.toStorage('', 'secrets', Buffer.from(KEY), PLAIN);
    const err = readError(reader, KEY, stored);
    expect(err.message).toContain(`${provider} key "key1"`);
    expect(err.message).toContain(KEY);
  });

  test('a value whose key is not configured fails naming the key', () => {
    const writer = transformer([{ [provider]: { keys: [{ name: 'old', secret: key() }] } }]);
    const reader = transformer([{ [provider]: { keys: [{ name: 'new', secret: key() }] } }]);
    const err = readError(reader, KEY, writer.toStorage('', 'secrets', Buffer.from(KEY), PLAIN));
    expect(err.message).toContain(`encrypted with ${provider} key "old", which the encryption configuration does not hold for secrets`);
    // Without any configuration an encrypted value is not returned as it is stored either.
    expect(readError(PLAIN_TRANSFORMER, KEY, writer.toStorage('', 'secrets', Buffer.from(KEY), PLAIN)).message).toContain('"old"');
  });

  test('every key of the list reads; the first writes', () => {
    const a = { name: 'a', secret: key() };
    const b = { name: 'b', secret: key() };
    const old = transformer([{ [provider]: { keys: [a] } }]);
    const rotated = transformer([{ [provider]: { keys: [b, a] } }]);
    expect(rotated.fromStorage(KEY, old.toStorage('', 'secrets', Buffer.from(KEY), PLAIN))).toEqual(PLAIN);
    expect(rotated.toStorage('', 'secrets', Buffer.from(KEY), PLAIN).toString('latin1')).toMatch(new RegExp(`^svc:enc:${provider}:v1:b:`));
  });
});

describe('aesgcm', () => {
  test('an altered value fails authentication naming the key', () => {
    const t = transformer([{ aesgcm: { keys: [{ name: 'key1', secret: key() }] } }]);
    const stored = t.toStorage('', 'secrets', Buffer.from(KEY), PLAIN);
    const altered = Buffer.from(stored);
    altered[altered.length - 20] = (altered[altered.length - 20] as number) ^ 1;
    expect(readError(t, KEY, altered).message).toMatch(/aesgcm key "key1" cannot decrypt the value \(authentication failed/);
  });

  test('a value moved under another etcd key does not open (the key is authenticated)', () => {
    const t = transformer([{ aesgcm: { keys: [{ name: 'key1', secret: key() }] } }]);
    const stored = t.toStorage('', 'secrets', Buffer.from(KEY), PLAIN);
    expect(readError(t, '/registry/secrets/default/other', stored).message).toContain('authentication failed');
  });
});

describe('reading and writing by resource', () => {
  const t = transformer([{ aesgcm: { keys: [{ name: 'k', secret: key() }] } }, { identity: {} }], ['secrets', '*.apps']);

  test('a value written before encryption was turned on is read as it is', () => {
    expect(t.fromStorage(KEY, PLAIN)).toBe(PLAIN);
  });

  test('only the configured resources are encrypted', () => {
    expect(t.toStorage('', 'configmaps', Buffer.from('/registry/configmaps/ns/c'), PLAIN)).toBe(PLAIN);
    expect(t.toStorage('apps', 'deployments', Buffer.from('/registry/apps/deployments/ns/d'), PLAIN).toString('latin1')).toMatch(/^svc:enc:aesgcm:v1:k:/);
    expect(t.toStorage('batch', 'jobs', Buffer.from('/registry/batch/jobs/ns/j'), PLAIN)).toBe(PLAIN);
  });

  test('identity first writes plain text and still reads the encrypted values', () => {
    const secret = key();
    const on = transformer([{ aesgcm: { keys: [{ name: 'k', secret }] } }]);
    const off = transformer([{ identity: {} }, { aesgcm: { keys: [{ name: 'k', secret }] } }]);
    expect(off.toStorage('', 'secrets', Buffer.from(KEY), PLAIN)).toBe(PLAIN);
    expect(off.fromStorage(KEY, on.toStorage('', 'secrets', Buffer.from(KEY), PLAIN))).toEqual(PLAIN);
  });

  test('the first entry naming a resource wins; *.* matches every group', () => {
    const text = JSON.stringify({
      apiVersion: 'apiserver.config.svc.io/v1',
      kind: 'EncryptionConfiguration',
      resources: [
        { resources: ['configmaps'], providers: [{ identity: {} }] },
        { resources: ['*.*'], providers: [{ aescbc: { keys: [{ name: 'all', secret: key() }] } }] },
      ],
    });
    const all = new ConfiguredTransformer(parseEncryptionConfig(text, 'enc.yaml'));
    expect(all.encrypts('', 'configmaps')).toBe(false);
    expect(all.encrypts('', 'secrets')).toBe(true);
    expect(all.encrypts('apps', 'deployments')).toBe(true);
  });
});

describe('configuration', () => {
  test('reads YAML', () => {
    const yaml = `apiVersion: apiserver.config.svc.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - aescbc:
          keys:
            - name: key1
              secret: ${key()}
      - identity: {}
`;
    const c = parseEncryptionConfig(yaml, 'enc.yaml');
    expect(c.resources[0]?.providers.map((p) => p.type)).toEqual(['aescbc', 'identity']);
  });

  test.each<[string, string, RegExp]>([
    ['a file that does not parse', 'resources: [\n  - {', /cannot be parsed|unexpected|end of the stream|flow collection/i],
    ['the wrong apiVersion', JSON.stringify({ apiVersion: 'v1', kind: 'EncryptionConfiguration', resources: [] }), /^apiVersion: Unsupported value/],
    ['no resources', JSON.stringify({ apiVersion: 'apiserver.config.svc.io/v1', kind: 'EncryptionConfiguration' }), /^resources: Required value/],
    ['no providers', config([]), /^resources\[0\]\.providers: Required value/],
    ['an unknown provider', config([{ aesctr: { keys: [] } }]), /^resources\[0\]\.providers\[0\]\.aesctr: Unsupported value: unknown provider "aesctr"/],
    ['two providers in one element', config([{ identity: {}, aesgcm: { keys: [{ name: 'a', secret: key() }] } }]), /^resources\[0\]\.providers\[0\]: Invalid value: more than one provider/],
    ['a 20-byte aesgcm key', config([{ aesgcm: { keys: [{ name: 'a', secret: key(20) }] } }]), /^resources\[0\]\.providers\[0\]\.aesgcm\.keys\[0\]\.secret: Invalid value: aesgcm keys must be 16, 24 or 32 bytes .* this one is 20/],
    ['a 15-byte aescbc key', config([{ aescbc: { keys: [{ name: 'a', secret: key(15) }] } }]), /^resources\[0\]\.providers\[0\]\.aescbc\.keys\[0\]\.secret: Invalid value: aescbc keys must be/],
    ['a secret that is not base64', config([{ aescbc: { keys: [{ name: 'a', secret: 'not base64!' }] } }]), /keys\[0\]\.secret: Invalid value: the secret must be base64/],
    ['duplicate key names', config([{ aesgcm: { keys: [{ name: 'a', secret: key() }, { name: 'a', secret: key() }] } }]), /^resources\[0\]\.providers\[0\]\.aesgcm\.keys\[1\]\.name: Duplicate value: "a"/],
    ['a key without a name', config([{ aesgcm: { keys: [{ secret: key() }] } }]), /keys\[0\]\.name: Required value/],
    ['a key name with a colon', config([{ aesgcm: { keys: [{ name: 'a:b', secret: key() }] } }]), /keys\[0\]\.name: Invalid value/],
    ['a provider without keys', config([{ aesgcm: { keys: [] } }]), /aesgcm\.keys: Required value/],
    ['kms', config([{ kms: { apiVersion: 'v2', name: 'plugin', endpoint: 'unix:///run/kms.sock' } }]), /^resources\[0\]\.providers\[0\]\.kms: Unsupported value: the kms provider .* is not supported/],
    ['secretbox', config([{ secretbox: { keys: [{ name: 'a', secret: key() }] } }]), /^resources\[0\]\.providers\[0\]\.secretbox: Unsupported value: the secretbox provider/],
    ['an invalid resource', config([{ identity: {} }], ['Secrets']), /^resources\[0\]\.resources\[0\]: Invalid value: "Secrets"/],
    ['a resource named twice', config([{ identity: {} }], ['secrets', 'secrets']), /^resources\[0\]\.resources\[1\]: Duplicate value: "secrets"/],
    ['an unknown field', JSON.stringify({ apiVersion: 'apiserver.config.svc.io/v1', kind: 'EncryptionConfiguration', resources: [{ resources: ['secrets'], providers: [{ identity: {} }], extra: 1 }] }), /^resources\[0\]\.extra: unknown field/],
  ])('refuses %s, naming the file and the field', (_what, text, expected) => {
    const problems = problemsOf(text);
    expect(problems.some((p) => expected.test(p))).toBe(true);
  });

  test('a refusal never repeats key material', () => {
    const secret = key(20);
    const problems = problemsOf(config([{ aesgcm: { keys: [{ name: 'a', secret }] } }]));
    expect(problems.join(' ')).not.toContain(secret);
  });
});

describe('automatic reload', () => {
  test('a changed file replaces the providers; a bad one is logged and the last good one stays', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'enc-'));
    const file = path.join(dir, 'enc.json');
    const first = key();
    const second = key();
    fs.writeFileSync(file, config([{ aesgcm: { keys: [{ name: 'one', secret: first }] } }]));
    const lines: string[] = [];
    let poll: () => void = () => undefined;
    const timers: FileWatchTimers = { setInterval: (fn) => ((poll = fn), 1), clearInterval: () => undefined };
    const enc = new EncryptionAtRest({ file, automaticReload: true, log: createLogger('storage', { write: (l) => lines.push(l) }), timers });
    try {
      const byOne = enc.toStorage('', 'secrets', Buffer.from(KEY), PLAIN);
      fs.writeFileSync(file, config([{ aesgcm: { keys: [{ name: 'two', secret: second }, { name: 'one', secret: first }] } }]));
      poll();
      expect(enc.reloads).toBe(1);
      expect(enc.toStorage('', 'secrets', Buffer.from(KEY), PLAIN).toString('latin1')).toMatch(/^svc:enc:aesgcm:v1:two:/);
      expect(enc.fromStorage(KEY, byOne)).toEqual(PLAIN);
      fs.writeFileSync(file, config([{ aesgcm: { keys: [{ name: 'three', secret: key(7) }] } }]));
      poll();
      expect(enc.reloads).toBe(1);
      expect(enc.toStorage('', 'secrets', Buffer.from(KEY), PLAIN).toString('latin1')).toMatch(/^svc:enc:aesgcm:v1:two:/);
      expect(lines.some((l) => l.includes('encryption configuration refused') && l.includes('keys[0].secret'))).toBe(true);
      const all = lines.join('\n');
      for (const s of [first, second]) expect(all).not.toContain(s);
    } finally {
      enc.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a missing file refuses the start naming it', () => {
    expect(() => new EncryptionAtRest({ file: '/nonexistent/enc.yaml', automaticReload: false, log: createLogger('storage', { write: () => undefined }) })).toThrow(/\/nonexistent\/enc\.yaml: cannot be read/);
  });
});

describe('stale values', () => {
  test('a value not written by the first key of its resource is stale, so an unchanged update rewrites it', () => {
    const a = { name: 'a', secret: key() };
    const b = { name: 'b', secret: key() };
    const old = transformer([{ aesgcm: { keys: [a] } }]);
    const rotated = transformer([{ aesgcm: { keys: [b, a] } }, { identity: {} }]);
    const byA = old.toStorage('', 'secrets', Buffer.from(KEY), PLAIN);
    expect(old.stale('', 'secrets', byA)).toBe(false);
    expect(rotated.stale('', 'secrets', byA)).toBe(true);
    expect(rotated.stale('', 'secrets', rotated.toStorage('', 'secrets', Buffer.from(KEY), PLAIN))).toBe(false);
    // Plain text where the configuration encrypts, and encrypted where it no longer does.
    expect(rotated.stale('', 'secrets', PLAIN)).toBe(true);
    expect(rotated.stale('', 'configmaps', PLAIN)).toBe(false);
    expect(PLAIN_TRANSFORMER.stale('', 'secrets', byA)).toBe(true);
  });
});

describe('the memory of resources', () => {
  test('is bounded: past MAX_CACHED_RESOURCES it starts again, and answers stay right', () => {
    const t = transformer([{ aesgcm: { keys: [{ name: 'k', secret: key() }] } }], ['secrets', '*.apps']);
    for (let i = 0; i < MAX_CACHED_RESOURCES + 10; i++) expect(t.encrypts('', `kind${i}`)).toBe(false);
    expect(t.cachedResources).toBeLessThanOrEqual(MAX_CACHED_RESOURCES);
    expect(t.encrypts('', 'secrets')).toBe(true);
    expect(t.encrypts('apps', 'deployments')).toBe(true);
    expect(t.cachedResources).toBeLessThanOrEqual(MAX_CACHED_RESOURCES);
  });
});

describe('flags', () => {
  const log = createLogger('storage', { write: () => undefined });

  test('no configuration: values stay plain; a reload of no file is refused', () => {
    expect(encryptionFromFlags(parseFlags([], ENCRYPTION_FLAGS), log)).toBeUndefined();
    expect(() => encryptionFromFlags(parseFlags(['--encryption-provider-config-automatic-reload'], ENCRYPTION_FLAGS), log)).toThrow(/--encryption-provider-config-automatic-reload must be set with --encryption-provider-config/);
  });

  test('a configuration that does not read refuses the start naming the file and field', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'enc-'));
    const file = path.join(dir, 'enc.yaml');
    fs.writeFileSync(file, config([{ aesgcm: { keys: [{ name: 'a', secret: key(10) }] } }]));
    try {
      expect(() => encryptionFromFlags(parseFlags([`--encryption-provider-config=${file}`], ENCRYPTION_FLAGS), log)).toThrow(new RegExp(`${file}: resources\\[0\\]\\.providers\\[0\\]\\.aesgcm\\.keys\\[0\\]\\.secret`));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
