import * as fs from 'node:fs';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { objectKey } from '@svc/apimachinery';
import { makeTestPki, type TestPki } from '@svc/service-kit/testing/pki';
import { startEnvironment, type Environment } from '@svc/testenv';
import { adminRequest, type HttpResponse } from './http';
import { run } from './helpers';

/**
 * A definition with several versions end to end: objects are stored in the
 * storage version (v1) whatever version they are written through, and read
 * in the version asked for, converted by a webhook this test serves over
 * HTTPS (trusted through the definition's caBundle); a webhook that answers
 * garbage or not at all fails requests with a Status naming it and changes
 * nothing stored; a deprecated version warns kubectl; a stored version
 * cannot leave spec.versions.
 */
const GROUP = 'geometry.example.com';
const shapes = (version: string, name = '') => `/apis/${GROUP}/${version}/namespaces/default/shapes${name ? `/${name}` : ''}`;

type Obj = Record<string, any>;
type Mode = 'convert' | 'garbage' | 'silent';

/** v1 and v1beta1 keep `spec.size`; v2 keeps it under `spec.dimensions`. */
function convertShape(obj: Obj, apiVersion: string): Obj {
  const { size, dimensions, ...rest } = (obj['spec'] ?? {}) as Obj;
  const value = size ?? dimensions?.size;
  const spec = apiVersion.endsWith('/v2') ? { ...rest, dimensions: { size: value } } : { ...rest, size: value };
  return { ...obj, apiVersion, spec };
}

function shapeCrd(webhookUrl: string, caBundle: string): string {
  const v1Spec = { type: 'object', properties: { size: { type: 'integer' }, color: { type: 'string', default: 'red' } } };
  const v2Spec = { type: 'object', properties: { dimensions: { type: 'object', properties: { size: { type: 'integer' } } }, color: { type: 'string', default: 'red' }, shade: { type: 'string', default: 'light' } } };
  const version = (name: string, spec: Obj, extra: Obj = {}) => ({ name, served: true, storage: name === 'v1', ...extra, schema: { openAPIV3Schema: { type: 'object', properties: { spec } } } });
  return JSON.stringify({
    apiVersion: 'apiextensions.svc.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `shapes.${GROUP}` },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: { plural: 'shapes', singular: 'shape', kind: 'Shape' },
      versions: [version('v1', v1Spec), version('v2', v2Spec), version('v1beta1', v1Spec, { deprecated: true })],
      conversion: { strategy: 'Webhook', webhook: { conversionReviewVersions: ['v1'], clientConfig: { url: webhookUrl, caBundle } } },
    },
  });
}

describe('custom resource versions and conversion end to end', () => {
  let env: Environment;
  let pki: TestPki;
  let webhook: https.Server;
  let mode: Mode = 'convert';
  const desired: string[] = [];
  let connections = 0;
  const http = (method: string, p: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResponse> =>
    adminRequest(env, method, p, body === undefined ? undefined : JSON.stringify(body), headers);
  const kubectl = (args: string[]) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args]);

  /** The object as etcd holds it, read with storage's certificate through etcd's JSON gateway. */
  const etcdValue = (name: string): Promise<Obj | undefined> =>
    new Promise((resolve, reject) => {
      const tls = env.internalPki.identities.storage;
      const key = Buffer.from(objectKey({ group: GROUP, resource: 'shapes', namespace: 'default', name })).toString('base64');
      const req = https.request(`${env.etcd.endpoint}/v3/kv/range`, { method: 'POST', ca: fs.readFileSync(env.internalPki.caCert), cert: fs.readFileSync(tls.cert), key: fs.readFileSync(tls.key), agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const kvs = (JSON.parse(Buffer.concat(chunks).toString()) as { kvs?: Array<{ value: string }> }).kvs ?? [];
          resolve(kvs[0] ? (JSON.parse(Buffer.from(kvs[0].value, 'base64').toString()) as Obj) : undefined);
        });
      });
      req.on('error', reject);
      req.end(JSON.stringify({ key }));
    });

  beforeAll(async () => {
    pki = makeTestPki('conversion-webhook-ca');
    webhook = https.createServer(pki.tlsFor('webhook'), (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (mode === 'silent') return; // never answers: the gateway's deadline ends the call
        if (mode === 'garbage') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"not": "a review"');
        const review = JSON.parse(Buffer.concat(chunks).toString()) as { apiVersion: string; request: { uid: string; desiredAPIVersion: string; objects: Obj[] } };
        desired.push(review.request.desiredAPIVersion);
        const convertedObjects = review.request.objects.map((o) => convertShape(o, review.request.desiredAPIVersion));
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ apiVersion: review.apiVersion, kind: 'ConversionReview', response: { uid: review.request.uid, result: { status: 'Success' }, convertedObjects } }));
      });
    });
    webhook.on('connection', () => connections++);
    await new Promise<void>((resolve) => webhook.listen(0, '127.0.0.1', resolve));
    const crdFile = path.join(pki.dir, 'shapes.json');
    const caBundle = fs.readFileSync(path.join(pki.dir, 'ca.crt')).toString('base64');
    fs.writeFileSync(crdFile, shapeCrd(`https://127.0.0.1:${(webhook.address() as AddressInfo).port}/convert`, caBundle));
    env = await startEnvironment({ crds: [crdFile], serviceArgs: { gateway: ['--conversion-webhook-timeout-seconds=1'] } });
  }, 120_000);

  afterAll(async () => {
    await env?.stop(true);
    webhook?.closeAllConnections();
    webhook?.close();
    pki?.remove();
  });

  test('an object created through v2 is stored in v1 and read converted through both', async () => {
    const created = await http('POST', shapes('v2'), { apiVersion: `${GROUP}/v2`, kind: 'Shape', metadata: { name: 'square' }, spec: { dimensions: { size: 3 } } });
    expect(created.status).toBe(201);
    expect(created.json()).toMatchObject({ apiVersion: `${GROUP}/v2`, spec: { dimensions: { size: 3 }, color: 'red', shade: 'light' } });
    expect(desired).toEqual(expect.arrayContaining([`${GROUP}/v1`, `${GROUP}/v2`]));

    const stored = await etcdValue('square');
    expect(stored).toMatchObject({ apiVersion: `${GROUP}/v1`, kind: 'Shape', spec: { size: 3, color: 'red' } });
    expect(stored?.['spec'].dimensions).toBeUndefined();

    const v1 = (await http('GET', shapes('v1', 'square'))).json();
    expect(v1).toMatchObject({ apiVersion: `${GROUP}/v1`, spec: { size: 3, color: 'red' } });
    // What v1 does not know (v2's shade) is not shown through it.
    expect(v1['spec']).toEqual({ size: 3, color: 'red' });
    const v2 = (await http('GET', shapes('v2', 'square'))).json();
    expect(v2).toMatchObject({ apiVersion: `${GROUP}/v2`, spec: { dimensions: { size: 3 }, color: 'red' } });
    // Every review so far went over one kept-alive connection.
    expect(desired.length).toBeGreaterThanOrEqual(3);
    expect(connections).toBe(1);
  });

  test('reads are defaulted by the version asked for: a default stored nowhere is shown through v2', async () => {
    const created = await http('POST', shapes('v1'), { apiVersion: `${GROUP}/v1`, kind: 'Shape', metadata: { name: 'plain' }, spec: { size: 1 } });
    expect(created.status).toBe(201);
    expect((await etcdValue('plain'))?.['spec']).toEqual({ size: 1, color: 'red' });
    expect((await http('GET', shapes('v2', 'plain'))).json()['spec']).toEqual({ dimensions: { size: 1 }, color: 'red', shade: 'light' });
  });

  test('list and watch through another version than the objects were written through', async () => {
    const listed = (await http('GET', shapes('v2'))).json() as { apiVersion: string; kind: string; metadata: { resourceVersion: string }; items: Obj[] };
    expect([listed.apiVersion, listed.kind]).toEqual([`${GROUP}/v2`, 'ShapeList']);
    expect(listed.items.map((i) => [i['apiVersion'], i['metadata'].name, i['spec'].dimensions.size])).toEqual([
      [`${GROUP}/v2`, 'plain', 1],
      [`${GROUP}/v2`, 'square', 3],
    ]);
    const throughV1 = (await http('GET', shapes('v1'))).json() as { items: Obj[] };
    expect(throughV1.items.map((i) => [i['apiVersion'], i['spec'].size])).toEqual([[`${GROUP}/v1`, 1], [`${GROUP}/v1`, 3]]);

    const watching = http('GET', `${shapes('v2')}?watch=true&resourceVersion=${listed.metadata.resourceVersion}&timeoutSeconds=3`);
    await new Promise((r) => setTimeout(r, 500));
    expect((await http('POST', shapes('v1'), { apiVersion: `${GROUP}/v1`, kind: 'Shape', metadata: { name: 'circle' }, spec: { size: 7 } })).status).toBe(201);
    expect((await http('PATCH', shapes('v1', 'circle'), { spec: { size: 8 } }, { 'content-type': 'application/merge-patch+json' })).status).toBe(200);
    const events = (await watching).body.trim().split('\n').map((line) => JSON.parse(line) as { type: string; object: Obj });
    expect(events.map((e) => [e.type, e.object['apiVersion'], e.object['metadata'].name, e.object['spec'].dimensions?.size])).toEqual([
      ['ADDED', `${GROUP}/v2`, 'circle', 7],
      ['MODIFIED', `${GROUP}/v2`, 'circle', 8],
    ]);
  });

  test('two watchers of the converted version share its conversion: one webhook call per change', async () => {
    const rv = ((await http('GET', shapes('v1'))).json() as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    const watchers = [1, 2].map(() => http('GET', `${shapes('v2')}?watch=true&resourceVersion=${rv}&timeoutSeconds=3`));
    await new Promise((r) => setTimeout(r, 500));
    const callsBefore = desired.length;
    // Written through the storage version: the webhook is called only on the way to the watchers.
    expect((await http('POST', shapes('v1'), { apiVersion: `${GROUP}/v1`, kind: 'Shape', metadata: { name: 'oval' }, spec: { size: 2 } })).status).toBe(201);
    expect((await http('PATCH', shapes('v1', 'oval'), { spec: { size: 4 } }, { 'content-type': 'application/merge-patch+json' })).status).toBe(200);
    for (const watching of watchers) {
      const events = (await watching).body.trim().split('\n').map((line) => JSON.parse(line) as { type: string; object: Obj });
      expect(events.map((e) => [e.type, e.object['apiVersion'], e.object['metadata'].name, e.object['spec'].dimensions?.size])).toEqual([
        ['ADDED', `${GROUP}/v2`, 'oval', 2],
        ['MODIFIED', `${GROUP}/v2`, 'oval', 4],
      ]);
    }
    expect(desired.slice(callsBefore)).toEqual([`${GROUP}/v2`, `${GROUP}/v2`]);
  });

  test('patch and apply work in the request version and store in the storage version', async () => {
    const patched = await http('PATCH', shapes('v2', 'square'), { spec: { dimensions: { size: 5 } } }, { 'content-type': 'application/merge-patch+json' });
    expect(patched.status).toBe(200);
    expect(patched.json()['spec']).toMatchObject({ dimensions: { size: 5 } });
    expect((await etcdValue('square'))?.['spec']).toMatchObject({ size: 5 });

    const applied = await http('PATCH', `${shapes('v2', 'hexagon')}?fieldManager=e2e`, { apiVersion: `${GROUP}/v2`, kind: 'Shape', metadata: { name: 'hexagon' }, spec: { dimensions: { size: 6 } } }, { 'content-type': 'application/apply-patch+yaml' });
    expect(applied.status).toBe(201);
    expect(applied.json()).toMatchObject({ apiVersion: `${GROUP}/v2`, spec: { dimensions: { size: 6 } } });
    expect(await etcdValue('hexagon')).toMatchObject({ apiVersion: `${GROUP}/v1`, spec: { size: 6 } });
  });

  test.each<[Mode, RegExp]>([
    ['garbage', /not a JSON ConversionReview/],
    ['silent', /did not answer within 1000 ms/],
  ])('a webhook answering %s fails requests with a Status naming it, and nothing stored changes', async (failing, why) => {
    const before = await etcdValue('square');
    mode = failing;
    try {
      const naming = new RegExp(`conversion webhook for ${GROUP}/v1, Kind=Shape failed: `);
      const read = await http('GET', shapes('v2', 'square'));
      expect(read.status).toBe(500);
      expect(read.json()).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'InternalError', code: 500 });
      expect(read.json()['message']).toMatch(naming);
      expect(read.json()['message']).toMatch(why);
      const patched = await http('PATCH', shapes('v2', 'square'), { spec: { dimensions: { size: 9 } } }, { 'content-type': 'application/merge-patch+json' });
      expect([patched.status, patched.json()['reason']]).toEqual([500, 'InternalError']);
      expect(patched.json()['message']).toMatch(naming);
      const created = await http('POST', shapes('v2'), { apiVersion: `${GROUP}/v2`, kind: 'Shape', metadata: { name: 'never' }, spec: { dimensions: { size: 1 } } });
      expect(created.status).toBe(500);
      expect(created.json()['message']).toMatch(/conversion webhook for geometry.example.com\/v2, Kind=Shape failed: /);
      // The storage version is read without the webhook.
      expect((await http('GET', shapes('v1', 'square'))).status).toBe(200);
    } finally {
      mode = 'convert';
    }
    expect(await etcdValue('square')).toEqual(before);
    expect(await etcdValue('never')).toBeUndefined();
  }, 30_000);

  test('a watch whose change cannot be converted ends with the Status as an ERROR event', async () => {
    const rv = ((await http('GET', shapes('v2'))).json() as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    mode = 'garbage';
    try {
      // Two watchers share the failed conversion: both end with its Status.
      const watchers = [1, 2].map(() => http('GET', `${shapes('v2')}?watch=true&resourceVersion=${rv}&timeoutSeconds=5`));
      await new Promise((r) => setTimeout(r, 500));
      // Written in the storage version: no conversion on the write, only on the way to the watcher.
      expect((await http('POST', shapes('v1'), { apiVersion: `${GROUP}/v1`, kind: 'Shape', metadata: { name: 'triangle' }, spec: { size: 3 } })).status).toBe(201);
      for (const watching of watchers) {
        const events = (await watching).body.trim().split('\n').map((line) => JSON.parse(line) as { type: string; object: Obj });
        expect(events.map((e) => e.type)).toEqual(['ERROR']);
        expect(events[0]?.object).toMatchObject({ kind: 'Status', code: 500, reason: 'InternalError', message: expect.stringMatching(new RegExp(`conversion webhook for ${GROUP}/v1, Kind=Shape failed`)) });
      }
    } finally {
      mode = 'convert';
    }
  });

  test('kubectl through a deprecated version prints its warning', async () => {
    const res = await kubectl(['get', `shapes.v1beta1.${GROUP}`, '-n', 'default', '-o', 'name']);
    expect(res.code).toBe(0);
    expect(res.stderr).toContain(`Warning: ${GROUP}/v1beta1 Shape is deprecated`);
    expect(res.stdout).toContain(`shape.${GROUP}/square`);
    const plain = await kubectl(['get', `shapes.v1.${GROUP}`, '-n', 'default', '-o', 'name']);
    expect(plain.stderr).not.toContain('deprecated');
  });

  test('a version still in status.storedVersions cannot be removed from spec.versions', async () => {
    const crdPath = `/apis/apiextensions.svc.io/v1/customresourcedefinitions/shapes.${GROUP}`;
    const crd = (await http('GET', crdPath)).json() as { spec: { versions: Obj[] }; status: { storedVersions: string[] } };
    expect(crd.status.storedVersions).toEqual(['v1']);
    crd.spec.versions = crd.spec.versions.filter((v) => v['name'] !== 'v1').map((v) => ({ ...v, storage: v['name'] === 'v2' }));
    const refused = await http('PUT', crdPath, crd);
    expect(refused.status).toBe(422);
    expect(refused.json()['message']).toMatch(/status.storedVersions\[0\]: Invalid value: "v1": must appear in spec.versions/);
  });
});
