import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ProtobufObjectCodec } from '@svc/protobuf-codec';
import { startEnvironment, type Environment } from '@svc/testenv';
import { run } from './helpers';
import { adminRequest, type HttpResponse } from './http';

/**
 * Typed fields of built-in kinds are decoded by their type before anything
 * is stored, as the original server's decoder does: bytes as base64, times
 * as RFC 3339, sized integers within range. A body that does not decode is
 * 400 naming the field (a patch whose result does not decode: 422 for the
 * `patch` field, as the original's patcher), and the stored object stays as
 * it was; valid values (from kubectl's protobuf bodies too) still go through.
 */
describe('typed decoding of built-in kinds', () => {
  let env: Environment;
  const ns = '/api/v1/namespaces/default';
  const PROTOBUF = 'application/vnd.kubernetes.protobuf';
  const codec = new ProtobufObjectCodec();
  const kubectl = (args: string[]) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args]);
  const expectBadRequest = (res: HttpResponse, message: RegExp): void => {
    expect(`${res.status} ${res.body}`).toMatch(/^400 /);
    expect(res.json()).toMatchObject({ kind: 'Status', status: 'Failure', code: 400, reason: 'BadRequest' });
    expect(String(res.json()['message'])).toMatch(message);
  };
  /** A patch whose result does not decode: the original patcher's 422 for the `patch` field, naming the problem. */
  const expectPatchRefused = (res: HttpResponse, problem: RegExp): void => {
    expect(res.json()).toMatchObject({ kind: 'Status', status: 'Failure', code: 422, reason: 'Invalid', details: { causes: [{ field: 'patch' }] } });
    expect(String(res.json()['message'])).toMatch(new RegExp(`^ "" is invalid: patch: Invalid value: ".*": ${problem.source}`));
  };
  const patchTypes: Array<{ name: string; contentType: string; body: (field: string, key: string, value: string) => string }> = [
    { name: 'merge', contentType: 'application/merge-patch+json', body: (field, key, value) => JSON.stringify({ [field]: { [key]: value } }) },
    { name: 'strategic merge', contentType: 'application/strategic-merge-patch+json', body: (field, key, value) => JSON.stringify({ [field]: { [key]: value } }) },
    { name: 'JSON', contentType: 'application/json-patch+json', body: (field, key, value) => JSON.stringify([{ op: 'add', path: `/${field}/${key}`, value }]) },
  ];

  beforeAll(async () => {
    env = await startEnvironment({ crds: [path.join(__dirname, '..', '..', 'fixtures', 'crds')] });
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  /** Every way of writing `value` into `field[key]` of an existing object is refused, and the object is unchanged byte for byte. */
  async function expectEveryWriteRefused(resource: string, kind: string, name: string, field: string, key: string, value: string, message: RegExp): Promise<void> {
    const url = `${ns}/${resource}/${name}`;
    const before = await adminRequest(env, 'GET', url);
    expect(before.status).toBe(200);
    const current = before.json() as Record<string, Record<string, unknown>>;

    const replaced = { ...current, [field]: { ...(current[field] ?? {}), [key]: value } };
    expectBadRequest(await adminRequest(env, 'PUT', url, JSON.stringify(replaced)), message);
    // A patch whose result does not decode is the original patcher's 422 for the `patch` field, naming the same problem.
    const problem = new RegExp(message.source.replace(/^.*cannot be handled as a \w+: /, ''));
    for (const patch of patchTypes) {
      const res = await adminRequest(env, 'PATCH', url, patch.body(field, key, value), { 'content-type': patch.contentType });
      expect([patch.name, res.status]).toEqual([patch.name, 422]);
      expectPatchRefused(res, problem);
    }
    const apply = `{"apiVersion":"v1","kind":"${kind}","metadata":{"name":"${name}"},"${field}":{"${key}":${JSON.stringify(value)}}}`;
    expectBadRequest(await adminRequest(env, 'PATCH', `${url}?fieldManager=typed-test&force=true`, apply, { 'content-type': 'application/apply-patch+yaml' }), message);

    const after = await adminRequest(env, 'GET', url);
    expect(after.body).toBe(before.body);
  }

  test('invalid base64 in ConfigMap binaryData is 400 naming the field, on create and every update', async () => {
    const bad = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bin' }, binaryData: { 'blob.bin': 'abcd$efg' } };
    expectBadRequest(
      await adminRequest(env, 'POST', `${ns}/configmaps`, JSON.stringify(bad)),
      /^ConfigMap in version "v1" cannot be handled as a ConfigMap: binaryData\[blob\.bin\]: illegal base64 data at input byte 4$/,
    );
    expect((await adminRequest(env, 'GET', `${ns}/configmaps/bin`)).status).toBe(404);
    // Padding is required, as in Go.
    expectBadRequest(await adminRequest(env, 'POST', `${ns}/configmaps`, JSON.stringify({ ...bad, binaryData: { x: 'aGk' } })), /binaryData\[x\]: illegal base64 data at input byte 0/);

    const good = { ...bad, binaryData: { 'blob.bin': Buffer.from([0, 1, 2, 255]).toString('base64') }, data: { plain: 'text' } };
    expect((await adminRequest(env, 'POST', `${ns}/configmaps`, JSON.stringify(good))).status).toBe(201);
    await expectEveryWriteRefused('configmaps', 'ConfigMap', 'bin', 'binaryData', 'blob.bin', 'not base64!', /cannot be handled as a ConfigMap: binaryData\[blob\.bin\]: illegal base64 data at input byte 3/);

    // A valid change still goes through, and a protobuf client reads the object.
    const patched = await adminRequest(env, 'PATCH', `${ns}/configmaps/bin`, JSON.stringify({ binaryData: { more: 'aGk=' } }), { 'content-type': 'application/merge-patch+json' });
    expect(patched.status).toBe(200);
    const asProtobuf = await adminRequest(env, 'GET', `${ns}/configmaps/bin`, undefined, { accept: PROTOBUF });
    expect(asProtobuf.status).toBe(200);
    expect(codec.decode(asProtobuf.raw)).toMatchObject({ binaryData: { 'blob.bin': 'AAEC/w==', more: 'aGk=' } });
  });

  test('base64 Go accepts in another spelling (line breaks) is stored re-encoded', async () => {
    const wrapped = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'wrapped' }, binaryData: { x: 'aGVs\nbG8=\n' } };
    const created = await adminRequest(env, 'POST', `${ns}/configmaps`, JSON.stringify(wrapped));
    expect(created.status).toBe(201);
    expect(created.json()['binaryData']).toEqual({ x: 'aGVsbG8=' });
  });

  test('invalid base64 in Secret data is 400 naming the field; stringData still becomes data', async () => {
    const bad = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'creds' }, data: { password: 'hunter2' } };
    expectBadRequest(
      await adminRequest(env, 'POST', `${ns}/secrets`, JSON.stringify(bad)),
      /^Secret in version "v1" cannot be handled as a Secret: data\[password\]: illegal base64 data at input byte 4$/,
    );
    expect((await adminRequest(env, 'GET', `${ns}/secrets/creds`)).status).toBe(404);

    const good = { ...bad, data: { password: Buffer.from('hunter2').toString('base64') }, stringData: { user: 'admin' } };
    const created = await adminRequest(env, 'POST', `${ns}/secrets`, JSON.stringify(good));
    expect(created.status).toBe(201);
    expect(created.json()['data']).toEqual({ password: Buffer.from('hunter2').toString('base64'), user: Buffer.from('admin').toString('base64') });
    expect(created.json()['stringData']).toBeUndefined();
    await expectEveryWriteRefused('secrets', 'Secret', 'creds', 'data', 'password', 'hunter2', /cannot be handled as a Secret: data\[password\]: illegal base64 data at input byte 4/);

    // stringData through a patch is merged into data, not decoded as base64.
    const viaPatch = await adminRequest(env, 'PATCH', `${ns}/secrets/creds`, JSON.stringify({ stringData: { password: 'not base64!' } }), { 'content-type': 'application/merge-patch+json' });
    expect(viaPatch.status).toBe(200);
    expect((viaPatch.json()['data'] as Record<string, string>)['password']).toBe(Buffer.from('not base64!').toString('base64'));
  });

  test('a time that is not RFC 3339 is 400 naming the field (422 from a patch)', async () => {
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'timed' }, data: { k: 'v' } };
    expect((await adminRequest(env, 'POST', `${ns}/configmaps`, JSON.stringify(cm))).status).toBe(201);
    const before = await adminRequest(env, 'GET', `${ns}/configmaps/timed`);
    const garbage = await adminRequest(env, 'PATCH', `${ns}/configmaps/timed`, JSON.stringify({ metadata: { creationTimestamp: 'garbage' } }), { 'content-type': 'application/merge-patch+json' });
    expectPatchRefused(garbage, /metadata\.creationTimestamp: parsing time "garbage" as "2006-01-02T15:04:05Z07:00": cannot parse "garbage" as "2006"$/);
    expectBadRequest(
      await adminRequest(env, 'POST', `${ns}/configmaps`, JSON.stringify({ ...cm, metadata: { name: 'timed2', creationTimestamp: '2024-13-01T00:00:00Z' } })),
      /metadata\.creationTimestamp: parsing time "2024-13-01T00:00:00Z": month out of range/,
    );
    const managedFields = [{ manager: 'm', operation: 'Update', apiVersion: 'v1', time: 'yesterday', fieldsType: 'FieldsV1', fieldsV1: {} }];
    expectPatchRefused(
      await adminRequest(env, 'PATCH', `${ns}/configmaps/timed`, JSON.stringify({ metadata: { managedFields } }), { 'content-type': 'application/merge-patch+json' }),
      /metadata\.managedFields\[0\]\.time: parsing time "yesterday"/,
    );
    expect((await adminRequest(env, 'GET', `${ns}/configmaps/timed`)).body).toBe(before.body);

    // Valid times are accepted; the server keeps its own creationTimestamp.
    for (const time of ['2020-01-02T03:04:05Z', '2020-01-02T03:04:05.123456+02:00']) {
      const ok = await adminRequest(env, 'PATCH', `${ns}/configmaps/timed`, JSON.stringify({ metadata: { creationTimestamp: time } }), { 'content-type': 'application/merge-patch+json' });
      expect(ok.status).toBe(200);
      expect((ok.json()['metadata'] as Record<string, unknown>)['creationTimestamp']).toBe((before.json()['metadata'] as Record<string, unknown>)['creationTimestamp']);
    }
  });

  test("a custom resource's metadata is typed: a garbage time is 400; its own fields are left to schema validation", async () => {
    const widgets = '/apis/example.com/v1/namespaces/default/widgets';
    const widget = (metadata: Record<string, unknown>, spec: Record<string, unknown> = { size: 1 }) => JSON.stringify({ apiVersion: 'example.com/v1', kind: 'Widget', metadata, spec });
    expectBadRequest(
      await adminRequest(env, 'POST', widgets, widget({ name: 'w', creationTimestamp: 'garbage' })),
      /^Widget in version "v1" cannot be handled as a Widget: metadata\.creationTimestamp: parsing time "garbage"/,
    );
    expect((await adminRequest(env, 'POST', widgets, widget({ name: 'w' }))).status).toBe(201);
    const before = await adminRequest(env, 'GET', `${widgets}/w`);
    expectBadRequest(
      await adminRequest(env, 'PATCH', `${widgets}/w`, JSON.stringify({ metadata: { creationTimestamp: 'garbage' } }), { 'content-type': 'application/merge-patch+json' }),
      /metadata\.creationTimestamp: parsing time "garbage"/,
    );
    expect((await adminRequest(env, 'GET', `${widgets}/w`)).body).toBe(before.body);
    // An int-or-string beyond int32 in the custom resource's own fields is not a decoding error.
    expect((await adminRequest(env, 'POST', widgets, widget({ name: 'w2' }, { size: 1, port: 99999999999 }))).status).not.toBe(400);
  });

  test('an int32 out of range is 400 naming the field', async () => {
    const service = (port: number) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'wide' }, spec: { ports: [{ port }] } });
    expectBadRequest(
      await adminRequest(env, 'POST', `${ns}/services`, JSON.stringify(service(99999999999))),
      /^Service in version "v1" cannot be handled as a Service: spec\.ports\[0\]\.port: cannot unmarshal number 99999999999 into a field of type int32$/,
    );
    expectBadRequest(await adminRequest(env, 'POST', `${ns}/services`, JSON.stringify(service(2 ** 31))), /spec\.ports\[0\]\.port: cannot unmarshal number 2147483648/);
    expectBadRequest(await adminRequest(env, 'POST', `${ns}/services`, JSON.stringify(service(80.5))), /spec\.ports\[0\]\.port in body must be of type integer/);
    expect((await adminRequest(env, 'GET', `${ns}/services/wide`)).status).toBe(404);
    // In range it reaches validation: 70000 is an int32 but no port (422).
    expect((await adminRequest(env, 'POST', `${ns}/services`, JSON.stringify(service(70000)))).status).toBe(422);
  });

  test('a quantity that does not parse is 400 naming the field', async () => {
    const pod = (cpu: unknown) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'greedy' }, spec: { containers: [{ name: 'c', image: 'busybox', resources: { limits: { cpu } } }] } });
    expectBadRequest(
      await adminRequest(env, 'POST', `${ns}/pods`, JSON.stringify(pod('lots'))),
      /^Pod in version "v1" cannot be handled as a Pod: spec\.containers\[0\]\.resources\.limits\[cpu\]: quantities must match the regular expression/,
    );
    expectBadRequest(await adminRequest(env, 'POST', `${ns}/pods`, JSON.stringify(pod('1GHz'))), /limits\[cpu\]: quantities must match/);
    expect((await adminRequest(env, 'GET', `${ns}/pods/greedy`)).status).toBe(404);
    expect((await adminRequest(env, 'POST', `${ns}/pods`, JSON.stringify(pod(0.5)))).status).toBe(201);
  });

  test('kubectl create secret --from-literal and configmap --from-file with binary data (protobuf bodies) still work', async () => {
    const secret = await kubectl(['create', 'secret', 'generic', 'literal', '--from-literal=password=hunter2', '--from-literal=empty=']);
    expect(secret.code).toBe(0);
    const storedSecret = JSON.parse((await kubectl(['get', 'secret', 'literal', '-o', 'json'])).stdout) as { data: Record<string, string> };
    expect(Buffer.from(storedSecret.data['password'] ?? '', 'base64').toString()).toBe('hunter2');

    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'typed-decoding-'));
    const binary = Buffer.from(Array.from({ length: 1000 }, (_, i) => (i * 37 + 255) % 256));
    const file = path.join(dir, 'blob.bin');
    fs.writeFileSync(file, binary);
    try {
      const created = await kubectl(['create', 'configmap', 'from-file', `--from-file=${file}`, '-v=8']);
      expect(created.code).toBe(0);
      expect(created.stderr).toMatch(/Content-Type: application\/vnd\.kubernetes\.protobuf/);
      expect(created.stdout).toMatch(/configmap\/from-file created/);
      const stored = JSON.parse((await kubectl(['get', 'configmap', 'from-file', '-o', 'json'])).stdout) as { binaryData: Record<string, string> };
      expect(Buffer.from(stored.binaryData['blob.bin'] ?? '', 'base64')).toEqual(binary);
      const asProtobuf = await adminRequest(env, 'GET', `${ns}/configmaps/from-file`, undefined, { accept: PROTOBUF });
      expect(codec.decode(asProtobuf.raw)).toMatchObject({ binaryData: { 'blob.bin': binary.toString('base64') } });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
