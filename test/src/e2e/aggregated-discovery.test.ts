import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startEnvironment, type Environment } from '@svc/testenv';
import { run, until } from './helpers';
import { adminRequest, type HttpResponse } from './http';

/**
 * Aggregated discovery against the running system: `/api` and `/apis` answer
 * one APIGroupDiscoveryList with every group, version and resource when the
 * Accept asks for it (kubectl does, naming the upstream group), with an ETag
 * and 304 Not Modified; a custom resource definition appears in it once
 * served; the legacy Accept still gets the legacy documents; and kubectl,
 * given an empty cache, learns every resource from the two lists alone.
 */
const V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const V2BETA1 = 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList';
const KUBECTL_ACCEPT = `${V2},${V2BETA1},application/json`;
const GROUP = 'fruit.example.net';

type Doc = Record<string, any>;

const berryCrd = {
  apiVersion: 'apiextensions.svc.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `berries.${GROUP}` },
  spec: {
    group: GROUP,
    scope: 'Namespaced',
    names: { plural: 'berries', singular: 'berry', kind: 'Berry', shortNames: ['bry'], categories: ['all'] },
    versions: [
      { name: 'v1beta1', served: true, storage: false, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { sweet: { type: 'boolean' } } } } } } },
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { sweet: { type: 'boolean' } } } } } },
        subresources: { status: {} },
      },
    ],
  },
};

describe('aggregated discovery', () => {
  let env: Environment;
  let dir: string;
  const get = (url: string, p: string, headers: Record<string, string> = {}): Promise<HttpResponse> => adminRequest({ ...env, url }, 'GET', p, undefined, headers);
  const aggregated = async (url: string, p: '/api' | '/apis', accept = KUBECTL_ACCEPT): Promise<{ res: HttpResponse; doc: Doc }> => {
    const res = await get(url, p, { accept });
    expect(res.status).toBe(200);
    return { res, doc: res.json() };
  };
  const groupNames = (doc: Doc): string[] => (doc['items'] as Doc[]).map((g) => g['metadata']['name'] as string);

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'aggregated-discovery-'));
    env = await startEnvironment({ gateways: 2 });
  }, 120_000);

  afterAll(async () => {
    await env?.stop(true);
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('/apis: one list under the name asked for, with the groups and versions of the legacy /apis in its order and the resources of each group version', async () => {
    const { res, doc } = await aggregated(env.url, '/apis');
    expect(res.headers['content-type']).toBe(V2);
    expect(res.headers['vary']).toBe('Accept');
    expect(doc['kind']).toBe('APIGroupDiscoveryList');
    expect(doc['apiVersion']).toBe('apidiscovery.k8s.io/v2');

    const legacy = await get(env.url, '/apis', { accept: 'application/json' });
    expect(legacy.headers['content-type']).toBe('application/json');
    expect(legacy.headers['etag']).toBeUndefined();
    const legacyGroups = legacy.json()['groups'] as Doc[];
    expect(legacy.json()['kind']).toBe('APIGroupList');
    expect(groupNames(doc)).toEqual(legacyGroups.map((g) => g['name']));
    expect(groupNames(doc)).toEqual(expect.arrayContaining(['coordination.svc.io', 'rbac.authorization.svc.io', 'apiextensions.svc.io', 'rbac.authorization.k8s.io']));

    for (const [i, group] of (doc['items'] as Doc[]).entries()) {
      const versions = group['versions'] as Doc[];
      expect(versions.map((v) => v['version'])).toEqual((legacyGroups[i]?.['versions'] as Doc[]).map((v) => v['version']));
      for (const version of versions) {
        expect(version['freshness']).toBe('Current');
        const list = await get(env.url, `/apis/${group['metadata']['name']}/${version['version']}`, { accept: 'application/json' });
        const legacyNames = (list.json()['resources'] as Doc[]).map((r) => r['name'] as string);
        const names = (version['resources'] as Doc[]).flatMap((r) => [r['resource'], ...((r['subresources'] as Doc[] | undefined) ?? []).map((s) => `${r['resource']}/${s['subresource']}`)]);
        expect(names).toEqual(legacyNames);
      }
    }
    const leases = ((doc['items'] as Doc[]).find((g) => g['metadata']['name'] === 'coordination.svc.io')?.['versions'][0]['resources'] as Doc[]).find((r) => r['resource'] === 'leases');
    expect(leases).toEqual({
      resource: 'leases',
      responseKind: { group: '', version: '', kind: 'Lease' },
      scope: 'Namespaced',
      singularResource: 'lease',
      verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
    });
  });

  test('/api: the core group, with subresources nested under their resources; the legacy Accept gets APIVersions', async () => {
    const { res, doc } = await aggregated(env.url, '/api');
    expect(res.headers['content-type']).toBe(V2);
    const items = doc['items'] as Doc[];
    expect(items).toHaveLength(1);
    expect(items[0]?.['metadata']['name']).toBeUndefined();
    expect((items[0]?.['versions'] as Doc[]).map((v) => v['version'])).toEqual(['v1']);
    const resources = items[0]?.['versions'][0]['resources'] as Doc[];
    expect(resources.find((r) => r['resource'] === 'configmaps')).toMatchObject({ scope: 'Namespaced', singularResource: 'configmap', shortNames: ['cm'], responseKind: { kind: 'ConfigMap' } });
    expect(resources.find((r) => r['resource'] === 'namespaces')).toMatchObject({ scope: 'Cluster', subresources: expect.arrayContaining([expect.objectContaining({ subresource: 'status', verbs: ['get', 'patch', 'update'] })]) });
    expect(resources.find((r) => r['resource'] === 'serviceaccounts')?.['subresources']).toEqual([
      { subresource: 'token', responseKind: { group: 'authentication.svc.io', version: 'v1', kind: 'TokenRequest' }, verbs: ['create'] },
    ]);

    const legacy = await get(env.url, '/api', { accept: 'application/json, */*' });
    expect(legacy.json()['kind']).toBe('APIVersions');
    // No Accept at all is the legacy document too.
    expect((await get(env.url, '/api')).json()['kind']).toBe('APIVersions');
  });

  test('the list under our group name, as v2beta1, and in protobuf', async () => {
    const ours = await aggregated(env.url, '/apis', 'application/json;g=apidiscovery.svc.io;v=v2;as=APIGroupDiscoveryList');
    expect(ours.res.headers['content-type']).toBe('application/json;g=apidiscovery.svc.io;v=v2;as=APIGroupDiscoveryList');
    expect(ours.doc['apiVersion']).toBe('apidiscovery.svc.io/v2');
    const beta = await aggregated(env.url, '/apis', `${V2BETA1},application/json`);
    expect(beta.res.headers['content-type']).toBe(V2BETA1);
    expect(beta.doc['apiVersion']).toBe('apidiscovery.k8s.io/v2beta1');
    expect(beta.doc['items']).toEqual(ours.doc['items']);

    const pb = await get(env.url, '/apis', { accept: 'application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json' });
    expect(pb.status).toBe(200);
    expect(pb.headers['content-type']).toBe('application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
    expect([...pb.raw.subarray(0, 4)]).toEqual([0x6b, 0x38, 0x73, 0x00]);
    expect(pb.raw.includes(Buffer.from('APIGroupDiscoveryList'))).toBe(true);
    // One ETag for every form of the same groups (caches vary by Accept).
    expect(new Set([ours.res.headers['etag'], beta.res.headers['etag'], pb.headers['etag']]).size).toBe(1);
  });

  test('ETag and 304 Not Modified', async () => {
    const first = await get(env.url, '/apis', { accept: V2 });
    const etag = first.headers['etag'] as string;
    expect(etag).toMatch(/^"[0-9A-F]{128}"$/);
    const again = await get(env.url, '/apis', { accept: V2, 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.body).toBe('');
    expect(again.headers['etag']).toBe(etag);
    expect((await get(env.url, '/apis', { accept: V2, 'if-none-match': '"0000"' })).status).toBe(200);
    // Every gateway has the same kinds, so the same document and ETag.
    expect((await get(env.urls[1] as string, '/apis', { accept: V2, 'if-none-match': etag })).status).toBe(304);
    const core = await get(env.url, '/api', { accept: V2 });
    expect(core.headers['etag']).not.toBe(etag);
    expect((await get(env.url, '/api', { accept: V2, 'if-none-match': core.headers['etag'] as string })).status).toBe(304);
  });

  test('a custom resource definition appears in the list of every gateway once served, and the ETag changes', async () => {
    const before = await get(env.url, '/apis', { accept: V2 });
    const oldETag = before.headers['etag'] as string;
    expect(groupNames(before.json())).not.toContain(GROUP);

    const created = await adminRequest(env, 'POST', '/apis/apiextensions.svc.io/v1/customresourcedefinitions', JSON.stringify(berryCrd));
    expect(created.status).toBe(201);
    for (const url of env.urls) {
      const doc = await until(async () => {
        const { doc } = await aggregated(url, '/apis');
        return groupNames(doc).includes(GROUP) ? doc : undefined;
      }, 20_000);
      const group = (doc['items'] as Doc[]).find((g) => g['metadata']['name'] === GROUP) as Doc;
      // GA before beta, as the legacy group document orders them.
      expect((group['versions'] as Doc[]).map((v) => v['version'])).toEqual(['v1', 'v1beta1']);
      expect(group['versions'][0]['resources']).toEqual([
        {
          resource: 'berries',
          responseKind: { group: '', version: '', kind: 'Berry' },
          scope: 'Namespaced',
          singularResource: 'berry',
          verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
          shortNames: ['bry'],
          categories: ['all'],
          subresources: [{ subresource: 'status', responseKind: { group: '', version: '', kind: 'Berry' }, verbs: ['get', 'patch', 'update'] }],
        },
      ]);
      expect(groupNames(doc)).toEqual(((await get(url, '/apis', { accept: 'application/json' })).json()['groups'] as Doc[]).map((g) => g['name']));
      // The ETag a client kept no longer matches: it gets the new list.
      const stale = await get(url, '/apis', { accept: V2, 'if-none-match': oldETag });
      expect(stale.status).toBe(200);
      expect(stale.headers['etag']).not.toBe(oldETag);
    }
  });

  test('kubectl takes the aggregated answer: with an empty cache, api-resources asks for the two lists and no group version', async () => {
    // The definition of the previous test is served on every gateway by now.
    const cacheDir = path.join(dir, 'kubectl-cache');
    const res = await run('kubectl', ['--kubeconfig', env.kubeconfigPath, '--cache-dir', cacheDir, 'api-resources', '--no-headers', '-v=8']);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^configmaps\s+cm\s+v1\s+true\s+ConfigMap$/m);
    expect(res.stdout).toMatch(/^leases\s+coordination\.svc\.io\/v1\s+true\s+Lease$/m);
    expect(res.stdout).toMatch(new RegExp(`^berries\\s+bry\\s+${GROUP.replace(/\./g, '\\.')}/v1\\s+true\\s+Berry$`, 'm'));

    const log = res.stderr;
    const gets = [...log.matchAll(/\] GET (https:\/\/\S+)/g)].map((m) => new URL(m[1] as string).pathname);
    expect(gets).toEqual(expect.arrayContaining(['/api', '/apis']));
    // No per-group-version discovery: not /api/v1, not /apis/<group>/<version>.
    expect(gets.filter((p) => p === '/api/v1' || /^\/apis\/[^/]+\/[^/]+$/.test(p))).toEqual([]);
    expect(log).toContain(`Accept: ${KUBECTL_ACCEPT}`);
    expect(log).toContain(`Content-Type: ${V2}`);
  });
});
