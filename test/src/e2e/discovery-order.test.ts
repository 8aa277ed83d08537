import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { installCrds, startEnvironment, type Environment } from '@svc/testenv';
import { run } from './helpers';
import { adminRequest } from './http';

/**
 * Discovery lists a custom resource's versions by version priority, as the
 * original server does, not in the order the definition names them: GA
 * before beta before alpha, higher numbers first, other names last. The
 * first is the preferred version, in `/apis/<group>` and in `/apis`, so
 * kubectl uses it for a resource named without a version.
 */
const GROUP = 'x.example.com';
const MIXED = 'y.example.com';

type Doc = Record<string, any>;

function crd(group: string, plural: string, kind: string, versions: string[], storage: string): Doc {
  const schema = { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { size: { type: 'integer' } } } } } };
  return {
    apiVersion: 'apiextensions.svc.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural, singular: kind.toLowerCase(), kind },
      versions: versions.map((name) => ({ name, served: true, storage: name === storage, schema })),
    },
  };
}

describe('discovery order of custom resource versions', () => {
  let env: Environment;
  let dir: string;
  const kubectl = (args: string[]) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args]);
  const raw = async (p: string): Promise<Doc> => {
    const res = await kubectl(['get', '--raw', p]);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    return JSON.parse(res.stdout) as Doc;
  };
  const versionsOf = (group: Doc): string[] => (group['versions'] as Array<{ version: string }>).map((v) => v.version);

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'discovery-order-'));
    // v1 is the storage version and named first; v2 is only served.
    const file = path.join(dir, 'things.json');
    fs.writeFileSync(file, JSON.stringify(crd(GROUP, 'things', 'Thing', ['v1', 'v2'], 'v1')));
    env = await startEnvironment({ crds: [file] });
  }, 120_000);

  afterAll(async () => {
    await env?.stop(true);
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('the group document lists v2 first and prefers it', async () => {
    const group = await raw(`/apis/${GROUP}`);
    expect(group).toMatchObject({ kind: 'APIGroup', name: GROUP });
    expect(versionsOf(group)).toEqual(['v2', 'v1']);
    expect(group['preferredVersion']).toEqual({ groupVersion: `${GROUP}/v2`, version: 'v2' });
  });

  test('/apis lists the group the same way', async () => {
    const list = await raw('/apis');
    const group = (list['groups'] as Doc[]).find((g) => g['name'] === GROUP);
    expect(group).toBeDefined();
    expect(versionsOf(group as Doc)).toEqual(['v2', 'v1']);
    expect((group as Doc)['preferredVersion']).toEqual({ groupVersion: `${GROUP}/v2`, version: 'v2' });
    // Built-in groups keep their order: authentication's v1 before v1beta1.
    const authentication = (list['groups'] as Doc[]).find((g) => g['name'] === 'authentication.svc.io') as Doc;
    expect(versionsOf(authentication)).toEqual(['v1', 'v1beta1']);
    expect(authentication['preferredVersion']['version']).toBe('v1');
  });

  test('kubectl uses the preferred version for a resource named without one, and lists both versions', async () => {
    const created = await adminRequest(env, 'POST', `/apis/${GROUP}/v1/namespaces/default/things`, JSON.stringify({ apiVersion: `${GROUP}/v1`, kind: 'Thing', metadata: { name: 't1' }, spec: { size: 1 } }));
    expect(created.status).toBe(201);
    const got = await kubectl(['get', 'things', '-n', 'default', 't1', '-o', 'jsonpath={.apiVersion}']);
    expect(got.stderr).toBe('');
    expect(got.stdout).toBe(`${GROUP}/v2`);
    const versions = await kubectl(['api-versions']);
    expect(versions.stdout.split('\n')).toEqual(expect.arrayContaining([`${GROUP}/v1`, `${GROUP}/v2`]));
    // OpenAPI v3 serves both group versions.
    const openapi = await raw('/openapi/v3');
    expect(Object.keys(openapi['paths'] as Doc)).toEqual(expect.arrayContaining([`apis/${GROUP}/v1`, `apis/${GROUP}/v2`]));
  });

  test('a definition naming its versions in any order is listed by priority', async () => {
    const mixed = crd(MIXED, 'mixes', 'Mix', ['foo', 'v1alpha1', 'v1beta1', 'v1', 'v1beta2'], 'v1alpha1');
    await installCrds(env.urls, { ca: fs.readFileSync(env.pki.caCert), cert: fs.readFileSync(env.pki.adminCert), key: fs.readFileSync(env.pki.adminKey) }, [mixed]);
    const want = ['v1', 'v1beta2', 'v1beta1', 'v1alpha1', 'foo'];
    const group = await raw(`/apis/${MIXED}`);
    expect(versionsOf(group)).toEqual(want);
    expect(group['preferredVersion']).toEqual({ groupVersion: `${MIXED}/v1`, version: 'v1' });
    const listed = ((await raw('/apis'))['groups'] as Doc[]).find((g) => g['name'] === MIXED) as Doc;
    expect(versionsOf(listed)).toEqual(want);
    expect(listed['preferredVersion']).toEqual({ groupVersion: `${MIXED}/v1`, version: 'v1' });
  });
});
