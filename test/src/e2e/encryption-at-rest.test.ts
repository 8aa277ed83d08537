import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Etcd3 } from 'etcd3';
import { ENCRYPTION_CONFIG_FILE, encryptionConfigText, newEncryptionKey, startEnvironment, writeEncryptionConfig, type Environment } from '@svc/testenv';
import { run, until } from './helpers';
import { adminRequest } from './http';

/**
 * Secrets are encrypted in etcd by default (the environment generates a
 * key, as `make up`, compose and the manifests do): etcd holds
 * `svc:enc:aesgcm:v1:<key>:` and ciphertext, the API answers the Secret as
 * written, ConfigMaps stay plain, watches deliver decrypted objects, a value
 * no key opens is a 500 naming its key, and the documented key rotation
 * runs end to end with kubectl.
 */
describe('encryption at rest', () => {
  let env: Environment;
  let etcd: Etcd3;
  let key1: string;
  const canary = `canary-${randomBytes(8).toString('hex')}`;
  const canaryB64 = Buffer.from(canary).toString('base64');
  /** Where the environment generated its configuration (its data directory). */
  const configPath = (): string => path.join(env.dir, ENCRYPTION_CONFIG_FILE);
  const kubectl = (args: string[], input?: string) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args], input !== undefined ? { input } : {});

  const createSecret = async (name: string): Promise<Record<string, unknown>> => {
    const res = await adminRequest(env, 'POST', '/api/v1/namespaces/default/secrets', JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name }, data: { token: canaryB64 } }));
    expect(res.status).toBe(201);
    return res.json();
  };
  const stored = async (key: string): Promise<Buffer> => {
    const value = await etcd.get(key).buffer();
    if (!value) throw new Error(`${key} is not in etcd`);
    return value;
  };
  /** Lines of a service's log that record a reload of the configuration. */
  const reloads = (log: string): number => {
    const file = path.join(env.dir, 'logs', log);
    return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.includes('encryption configuration reloaded')).length : 0;
  };
  /** Writes the configuration and waits until storage and watch-fanout have both applied it. */
  const reconfigure = async (keys: { name: string; secret: string }[]): Promise<void> => {
    const before = [reloads('storage.log'), reloads('watch-fanout-0.log')];
    writeEncryptionConfig(configPath(), encryptionConfigText(keys));
    await until(() => (reloads('storage.log') > (before[0] as number) && reloads('watch-fanout-0.log') > (before[1] as number) ? true : undefined), 90_000);
  };
  /** The ADDED event of `name` on a watch of secrets from `rv`. */
  const watchedSecret = async (rv: string, name: string): Promise<Record<string, unknown>> => {
    const res = await adminRequest(env, 'GET', `/api/v1/namespaces/default/secrets?watch=1&resourceVersion=${rv}&timeoutSeconds=2`);
    expect(res.status).toBe(200);
    const events = res.body.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { type: string; object: { metadata: { name: string } } & Record<string, unknown> });
    const added = events.find((e) => e.type === 'ADDED' && e.object.metadata.name === name);
    if (!added) throw new Error(`no ADDED event of ${name} in ${res.body.slice(0, 500)}`);
    return added.object;
  };
  const listRv = async (): Promise<string> => ((await adminRequest(env, 'GET', '/api/v1/namespaces/default/secrets')).json()['metadata'] as { resourceVersion: string }).resourceVersion;

  beforeAll(async () => {
    env = await startEnvironment();
    const own = env.internalPki.identities.storage;
    etcd = new Etcd3({
      hosts: env.etcd.endpoint,
      credentials: { rootCertificate: fs.readFileSync(env.internalPki.caCert), certChain: fs.readFileSync(own.cert), privateKey: fs.readFileSync(own.key) },
    });
    const text = fs.readFileSync(configPath(), 'utf8');
    key1 = /secret: (\S+)/.exec(text)?.[1] as string;
  }, 240_000);

  afterAll(async () => {
    etcd?.close();
    await env?.stop(true);
  }, 60_000);

  test('the generated configuration is private to its owner and the key never reaches a log', () => {
    expect(fs.statSync(configPath()).mode & 0o777).toBe(0o600);
    expect(key1).toBeTruthy();
    for (const log of fs.readdirSync(path.join(env.dir, 'logs'))) expect(fs.readFileSync(path.join(env.dir, 'logs', log), 'utf8')).not.toContain(key1);
  });

  test('a Secret is encrypted in etcd and answered unchanged; a ConfigMap stays plain; a watch delivers it decrypted', async () => {
    const rv = await listRv();
    await createSecret('s1');
    const value = await stored('/registry/secrets/default/s1');
    expect(value.subarray(0, 'svc:enc:aesgcm:v1:key1:'.length).toString()).toBe('svc:enc:aesgcm:v1:key1:');
    expect(value.includes(Buffer.from(canaryB64))).toBe(false);
    expect(value.includes(Buffer.from('"name":"s1"'))).toBe(false);

    const got = await adminRequest(env, 'GET', '/api/v1/namespaces/default/secrets/s1');
    expect(got.status).toBe(200);
    expect(got.json()['data']).toEqual({ token: canaryB64 });
    // The resourceVersion is spliced into the decrypted value: the key's modification revision.
    const modRevision = (await etcd.get('/registry/secrets/default/s1').exec()).kvs[0]?.mod_revision;
    expect((got.json()['metadata'] as { resourceVersion: string }).resourceVersion).toBe(String(modRevision));
    const listed = (await adminRequest(env, 'GET', '/api/v1/namespaces/default/secrets')).json()['items'] as { metadata: { name: string }; data: unknown }[];
    expect(listed.find((s) => s.metadata.name === 's1')?.data).toEqual({ token: canaryB64 });

    const cm = await adminRequest(env, 'POST', '/api/v1/namespaces/default/configmaps', JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'plain' }, data: { k: canary } }));
    expect(cm.status).toBe(201);
    const cmValue = (await stored('/registry/configmaps/default/plain')).toString('utf8');
    expect(cmValue.startsWith('{')).toBe(true);
    expect(cmValue).toContain(canary);

    const watched = await watchedSecret(rv, 's1');
    expect(watched['data']).toEqual({ token: canaryB64 });
  });

  test('a value written before encryption was on is read as it is', async () => {
    const legacy = { kind: 'Secret', apiVersion: 'v1', metadata: { name: 'legacy', namespace: 'default', uid: '0b6a9b8e-1a7e-4d2c-9a55-5d1b1f4e2a11', creationTimestamp: '2026-01-01T00:00:00Z' }, data: { old: canaryB64 }, type: 'Opaque' };
    await etcd.put('/registry/secrets/default/legacy').value(JSON.stringify(legacy));
    const got = await adminRequest(env, 'GET', '/api/v1/namespaces/default/secrets/legacy');
    expect(got.status).toBe(200);
    expect(got.json()['data']).toEqual({ old: canaryB64 });
  });

  test('a value no configured key opens is a 500 naming the key; other objects stay readable', async () => {
    const sealed = Buffer.concat([Buffer.from('svc:enc:aesgcm:v1:gone:'), randomBytes(64)]);
    const put = await etcd.put('/registry/secrets/default/broken').value(sealed).exec();
    try {
      const got = await adminRequest(env, 'GET', '/api/v1/namespaces/default/secrets/broken');
      expect(got.status).toBe(500);
      expect(got.json()['reason']).toBe('InternalError');
      expect(String(got.json()['message'])).toContain('aesgcm key "gone"');
      expect(String(got.json()['message'])).toContain('/registry/secrets/default/broken');
      expect(got.body).not.toContain(sealed.subarray(30).toString('base64'));
      // A list read from storage holding it fails naming the key, as the original's list from etcd does.
      const list = await adminRequest(env, 'GET', `/api/v1/namespaces/default/secrets?resourceVersion=${put.header.revision}&resourceVersionMatch=Exact`);
      expect(list.status).toBe(500);
      expect(String(list.json()['message'])).toContain('aesgcm key "gone"');
      // The change was never published (watch-fanout cannot open it either), so the watch cache, which answers
      // consistent lists, does not hold it: such a list leaves it out rather than failing.
      const cached = await adminRequest(env, 'GET', '/api/v1/namespaces/default/secrets');
      expect(cached.status).toBe(200);
      expect((cached.json()['items'] as { metadata: { name: string } }[]).map((i) => i.metadata.name)).not.toContain('broken');
      await until(() => (fs.readFileSync(path.join(env.dir, 'logs', 'watch-fanout-0.log'), 'utf8').includes('/registry/secrets/default/broken') ? true : undefined));
      expect((await adminRequest(env, 'GET', '/api/v1/namespaces/default/secrets/s1')).status).toBe(200);
      expect((await adminRequest(env, 'GET', '/api/v1/namespaces/default/configmaps')).status).toBe(200);
      expect((await adminRequest(env, 'GET', '/api/v1/namespaces/kube-system/secrets')).status).toBe(200);
    } finally {
      await etcd.delete().key('/registry/secrets/default/broken');
    }
  });

  test('key rotation: add a key, make it first, rewrite every Secret, remove the old key', async () => {
    const key2 = newEncryptionKey();
    // 1. The new key is added as a second key: every reader can open its values before anything writes them.
    await reconfigure([
      { name: 'key1', secret: key1 },
      { name: 'key2', secret: key2 },
    ]);
    // 2. The new key writes.
    await reconfigure([
      { name: 'key2', secret: key2 },
      { name: 'key1', secret: key1 },
    ]);
    await createSecret('s2');
    expect((await stored('/registry/secrets/default/s2')).toString('latin1')).toMatch(/^svc:enc:aesgcm:v1:key2:/);
    expect((await stored('/registry/secrets/default/s1')).toString('latin1')).toMatch(/^svc:enc:aesgcm:v1:key1:/);
    // 3. Every Secret is written again, with the new key.
    const rewrite = await run('sh', ['-c', 'kubectl get secrets -A -o json | kubectl replace -f -'], { env: { KUBECONFIG: env.kubeconfigPath } });
    expect(rewrite.stderr).toBe('');
    expect(rewrite.code).toBe(0);
    const all = await etcd.getAll().prefix('/registry/secrets/').buffers();
    expect(Object.keys(all).length).toBeGreaterThanOrEqual(3);
    for (const [key, value] of Object.entries(all)) expect([key, value.toString('latin1').slice(0, 23)]).toEqual([key, 'svc:enc:aesgcm:v1:key2:']);
    // 4. The old key goes; everything still reads.
    await reconfigure([{ name: 'key2', secret: key2 }]);
    const rv = await listRv();
    const s1 = await kubectl(['get', 'secret', 's1', '-n', 'default', '-o', 'json']);
    expect(s1.code).toBe(0);
    expect((JSON.parse(s1.stdout) as { data: unknown }).data).toEqual({ token: canaryB64 });
    expect((await kubectl(['get', 'secrets', '-A'])).code).toBe(0);
    // Watches still deliver decrypted objects under the new key.
    await createSecret('s3');
    expect((await watchedSecret(rv, 's3'))['data']).toEqual({ token: canaryB64 });
    for (const log of fs.readdirSync(path.join(env.dir, 'logs'))) {
      const text = fs.readFileSync(path.join(env.dir, 'logs', log), 'utf8');
      expect(text).not.toContain(key2);
      expect(text).not.toContain(canaryB64);
    }
  }, 480_000);
});
