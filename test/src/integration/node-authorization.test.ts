import type { UserInfo } from '@svc/apimachinery';
import { AuthzClient, type Attributes } from '@svc/authz/client';
import { loadInternalTls } from '@svc/service-kit';
import { startEnvironment, type Environment } from '@svc/testenv';
import { adminRequest } from '../e2e/http';

/**
 * The Node mode of the real authz service over gRPC (with the gateway's
 * certificate): pods written through the API reach its graph through the
 * change stream, and a node may then read what they use; moving or deleting
 * a pod takes that away again. Selectors travel in the request.
 */

const node = (name: string): UserInfo => ({ username: `system:node:${name}`, uid: '', groups: ['system:nodes', 'system:authenticated'], extra: {} });
const n1 = node('n1');
const n2 = node('n2');

function attrs(user: UserInfo, verb: string, resource: string, namespace: string, name: string, more: Partial<Attributes> = {}): Attributes {
  return { user, resourceRequest: true, verb, path: '', apiGroup: '', apiVersion: 'v1', resource, subresource: '', namespace, name, ...more };
}

function pod(name: string, nodeName: string, secret: string): Record<string, unknown> {
  return {
    metadata: { name },
    spec: {
      nodeName,
      serviceAccountName: 'default',
      containers: [{ name: 'c', image: 'busybox', envFrom: [{ configMapRef: { name: `${name}-env` } }] }],
      volumes: [{ name: 'tls', secret: { secretName: secret } }],
    },
  };
}

describe('the Node mode of the authz service', () => {
  let env: Environment;
  let authz: AuthzClient;

  const write = async (method: string, path: string, body?: unknown, expected = [200, 201]) => {
    const res = await adminRequest(env, method, path, body === undefined ? undefined : JSON.stringify(body));
    if (!expected.includes(res.status)) throw new Error(`${method} ${path}: ${res.status} ${res.body}`);
  };

  /** Waits until authz's answer to `a` is `decision` (the graph follows the change stream). */
  const until = async (a: Attributes, decision: 'allow' | 'no-opinion'): Promise<number> => {
    const started = Date.now();
    while ((await authz.authorize(a)).decision !== decision) {
      if (Date.now() - started > 20000) throw new Error(`authz did not answer ${decision} in time`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return Date.now() - started;
  };

  beforeAll(async () => {
    env = await startEnvironment({ authorizationMode: 'Node,RBAC' });
    const identity = env.internalPki.identities.gateway;
    authz = new AuthzClient(env.addresses['authz'] as string, loadInternalTls({ caFile: env.internalPki.caCert, certFile: identity.cert, keyFile: identity.key }));
    await write('POST', '/api/v1/namespaces', { metadata: { name: 'apps' } });
    await write('POST', '/api/v1/namespaces/apps/pods', pod('web', 'n1', 'web-tls'));
    await write('POST', '/api/v1/namespaces/apps/pods', pod('db', 'n2', 'db-password'));
    await until(attrs(n2, 'get', 'secrets', 'apps', 'db-password'), 'allow');
  });

  afterAll(async () => {
    authz?.close();
    await env?.stop(true);
  });

  const CASES: Array<[string, () => Attributes, 'allow' | 'no-opinion']> = [
    ['n1 gets the secret its pod mounts', () => attrs(n1, 'get', 'secrets', 'apps', 'web-tls'), 'allow'],
    ['n1 gets the config map its pod reads', () => attrs(n1, 'get', 'configmaps', 'apps', 'web-env'), 'allow'],
    ['n1 gets its pod', () => attrs(n1, 'get', 'pods', 'apps', 'web'), 'allow'],
    ['n1 creates a token for its pod\'s account', () => attrs(n1, 'create', 'serviceaccounts', 'apps', 'default', { subresource: 'token' }), 'allow'],
    ['n1 gets n2\'s secret', () => attrs(n1, 'get', 'secrets', 'apps', 'db-password'), 'no-opinion'],
    ['n1 gets n2\'s pod', () => attrs(n1, 'get', 'pods', 'apps', 'db'), 'no-opinion'],
    ['n1 lists pods on itself', () => attrs(n1, 'list', 'pods', '', '', { fieldSelector: 'spec.nodeName=n1' }), 'allow'],
    ['n1 lists pods on n2', () => attrs(n1, 'list', 'pods', '', '', { fieldSelector: 'spec.nodeName=n2' }), 'no-opinion'],
    ['n1 lists pods with a label selector only', () => attrs(n1, 'list', 'pods', '', '', { labelSelector: 'app=web' }), 'no-opinion'],
    ['n1 lists secrets', () => attrs(n1, 'list', 'secrets', 'apps', ''), 'no-opinion'],
    ['n1 gets its node', () => attrs(n1, 'get', 'nodes', '', 'n1'), 'allow'],
    ['n1 gets n2', () => attrs(n1, 'get', 'nodes', '', 'n2'), 'no-opinion'],
    ['n1 creates an event', () => attrs(n1, 'create', 'events', 'apps', ''), 'allow'],
    ['alice (not a node) gets the secret', () => attrs({ username: 'alice', uid: '', groups: ['system:authenticated'], extra: {} }, 'get', 'secrets', 'apps', 'web-tls'), 'no-opinion'],
  ];

  test.each(CASES.map(([what, a, d]) => [`${what}: ${d}`, a, d] as const))('%s', async (_what, a, decision) => {
    expect((await authz.authorize(a())).decision).toBe(decision);
  });

  test('a refusal says there is no relationship', async () => {
    const d = await authz.authorize(attrs(n1, 'get', 'secrets', 'apps', 'db-password'));
    expect(d.reason).toContain("no relationship found between node 'n1' and this object");
  });

  test('rule listings are complete for users that are not nodes, and not for nodes', async () => {
    expect((await authz.rules({ username: 'alice', uid: '', groups: ['system:authenticated'], extra: {} }, 'apps')).incomplete).toBe(false);
    expect((await authz.rules(n1, 'apps')).incomplete).toBe(true);
  });

  test('a pod moved to another node takes its secret along; deleted, it takes it away', async () => {
    // Deleted with grace 0, as its node would finish the deletion of a bound pod.
    await write('DELETE', '/api/v1/namespaces/apps/pods/web?gracePeriodSeconds=0');
    await write('POST', '/api/v1/namespaces/apps/pods', pod('web', 'n2', 'web-tls'));
    await until(attrs(n2, 'get', 'secrets', 'apps', 'web-tls'), 'allow');
    expect((await authz.authorize(attrs(n1, 'get', 'secrets', 'apps', 'web-tls'))).decision).toBe('no-opinion');
    expect((await authz.authorize(attrs(n1, 'get', 'pods', 'apps', 'web'))).decision).toBe('no-opinion');
    await write('DELETE', '/api/v1/namespaces/apps/pods/web?gracePeriodSeconds=0');
    await until(attrs(n2, 'get', 'secrets', 'apps', 'web-tls'), 'no-opinion');
    // The other pod's edges stay.
    expect((await authz.authorize(attrs(n2, 'get', 'secrets', 'apps', 'db-password'))).decision).toBe('allow');
  });

  test('a new pod on a node relates its secret to the node within about a second', async () => {
    await write('POST', '/api/v1/namespaces/apps/pods', pod('late', 'n1', 'late-tls'));
    const took = await until(attrs(n1, 'get', 'secrets', 'apps', 'late-tls'), 'allow');
    expect(took).toBeLessThan(1500);
  });
});
