import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ApiError, type ApiObject } from '@svc/apimachinery';
import { startEtcd, type EtcdInstance } from '@svc/testenv';
import { start as startStorage, StorageClient, type StorageHandle } from '@svc/storage';
import { EncryptionAtRest } from '@svc/storage/encryption';
import { createNamespaces, quietLogger, testPki, type TestPki } from './helpers';

/**
 * The storage service with encryption at rest, against a real etcd: what
 * etcd holds is encrypted (namespaces too here, so the namespace guard of
 * creates reads encrypted values), and every answer (get, list, create,
 * update, delete) carries the resourceVersion spliced into the decrypted
 * value, as without encryption.
 */
describe('storage with encryption at rest', () => {
  let dir: string;
  let etcd: EtcdInstance;
  let storage: StorageHandle;
  let client: StorageClient;
  let pki: TestPki;
  const secret = (name: string): ApiObject => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'ns1', uid: `uid-${name}` }, data: { k: Buffer.from(name).toString('base64') } });
  const key = (name: string) => ({ group: '', resource: 'secrets', namespace: 'ns1', name });
  const raw = async (k: string): Promise<Buffer> => {
    const value = await storage.store.client.get(k).buffer();
    if (!value) throw new Error(`${k} is not in etcd`);
    return value;
  };

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-storage-enc-'));
    pki = await testPki(dir);
    const file = path.join(dir, 'encryption.yaml');
    fs.writeFileSync(
      file,
      JSON.stringify({
        apiVersion: 'apiserver.config.svc.io/v1',
        kind: 'EncryptionConfiguration',
        resources: [{ resources: ['secrets', 'namespaces'], providers: [{ aesgcm: { keys: [{ name: 'k1', secret: randomBytes(32).toString('base64') }] } }] }],
      }),
      { mode: 0o600 },
    );
    etcd = await startEtcd({ dataDir: path.join(dir, 'etcd'), logDir: dir, tls: pki.files('etcd') });
    const encryption = new EncryptionAtRest({ file, automaticReload: false, log: quietLogger() });
    storage = await startStorage({ listen: '127.0.0.1:0', internalTls: pki.files('storage'), etcdEndpoints: [etcd.endpoint], etcdTls: pki.files('storage'), logger: quietLogger(), encryption });
    client = new StorageClient(storage.address, pki.tls('gateway'));
    await createNamespaces(client, ['ns1']);
  }, 120_000);

  afterAll(async () => {
    client?.close();
    await storage?.close();
    await etcd?.process.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('values are encrypted in etcd; every answer carries the resourceVersion', async () => {
    expect((await raw('/registry/namespaces/ns1')).toString('latin1')).toMatch(/^svc:enc:aesgcm:v1:k1:/);
    const created = await client.create(key('a'), secret('a'));
    expect(created.object.metadata?.resourceVersion).toBe(String(created.revision));
    const stored = await raw('/registry/secrets/ns1/a');
    expect(stored.toString('latin1')).toMatch(/^svc:enc:aesgcm:v1:k1:/);
    expect(stored.includes(Buffer.from(Buffer.from('a').toString('base64')))).toBe(false);

    const read = await client.get(key('a'));
    expect(read.revision).toBe(created.revision);
    expect(read.object.metadata?.resourceVersion).toBe(String(created.revision));
    expect(read.object.data).toEqual({ k: Buffer.from('a').toString('base64') });
    expect(read.stale).toBeUndefined();

    await client.create(key('b'), secret('b'));
    const page = await client.list({ group: '', resource: 'secrets', namespace: 'ns1' }, { limit: 1 });
    expect(page.items).toHaveLength(1);
    expect(page.items[0]?.metadata?.name).toBe('a');
    expect(page.items[0]?.metadata?.resourceVersion).toBe(String(created.revision));
    const rest = await client.list({ group: '', resource: 'secrets', namespace: 'ns1' }, { continueToken: page.continueToken });
    expect(rest.items.map((i) => i.metadata?.name)).toEqual(['b']);

    const updated = await client.update(key('a'), { ...secret('a'), data: { k: 'bmV3' } }, { revision: created.revision });
    expect(updated.object.metadata?.resourceVersion).toBe(String(updated.revision));
    expect((await client.get(key('a'))).object.data).toEqual({ k: 'bmV3' });
    expect((await raw('/registry/secrets/ns1/a')).toString('latin1')).toMatch(/^svc:enc:aesgcm:v1:k1:/);

    const deleted = await client.delete(key('a'), { uid: 'uid-a' });
    expect(deleted.object.data).toEqual({ k: 'bmV3' });
  });

  test('a plain value (written before encryption) reads, and is stale; an undecryptable one is a 500 naming the key', async () => {
    await storage.store.client.put('/registry/secrets/ns1/plain').value(JSON.stringify(secret('plain')));
    const plain = await client.get(key('plain'));
    expect(plain.object.data).toEqual({ k: Buffer.from('plain').toString('base64') });
    expect(plain.stale).toBe(true);

    await storage.store.client.put('/registry/secrets/ns1/bad').value(Buffer.concat([Buffer.from('svc:enc:aesgcm:v1:k1:'), randomBytes(48)]));
    const err = await client.get(key('bad')).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe(500);
    expect((err as ApiError).message).toContain('aesgcm key "k1" cannot decrypt the value');
    expect((err as ApiError).message).toContain('/registry/secrets/ns1/bad');
    // Another object of the same resource still reads.
    expect((await client.get(key('b'))).object.metadata?.name).toBe('b');
  });
});
