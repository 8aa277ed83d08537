import * as fs from 'node:fs';
import * as https from 'node:https';
import { startEnvironment, type Environment } from '@svc/testenv';
import { until } from './helpers';

/**
 * API Priority and Fairness through the whole system: one service account
 * floods a priority level with lists of a namespace of 2,000 ConfigMaps
 * while another identity of the same level issues single gets. The
 * flooder's queues fill and it is refused (429, Retry-After, a
 * TooManyRequests Status); the other flow's gets all succeed; responses
 * name the flow schema's and priority level's UIDs; the debug dumps answer
 * the admin and refuse others.
 */
describe('priority and fairness', () => {
  let env: Environment;
  let ca: Buffer;
  const agent = new https.Agent({ keepAlive: true, maxSockets: 64 });
  const NS = 'apf-e2e';
  const COUNT = 2000;
  const tokens: Record<string, string> = {};

  interface Answer {
    status: number;
    headers: Record<string, string | string[] | undefined>;
    body: string;
  }

  function send(method: string, path: string, as: 'admin' | string, body?: unknown): Promise<Answer> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const credentials = as === 'admin' ? { cert: fs.readFileSync(env.pki.adminCert), key: fs.readFileSync(env.pki.adminKey) } : {};
    const auth = as === 'admin' ? {} : { authorization: `Bearer ${tokens[as] ?? ''}` };
    return new Promise((resolve, reject) => {
      const req = https.request(
        `${env.url}${path}`,
        { method, agent, ca, ...credentials, headers: { 'content-type': 'application/json', ...auth, ...(payload ? { 'content-length': String(Buffer.byteLength(payload)) } : {}) }, timeout: 60_000 },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        },
      );
      req.on('error', reject);
      req.on('timeout', () => req.destroy(new Error('request timed out')));
      req.end(payload);
    });
  }

  async function created(path: string, body: unknown): Promise<Record<string, unknown>> {
    const res = await send('POST', path, 'admin', body);
    if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${res.body}`);
    return JSON.parse(res.body) as Record<string, unknown>;
  }

  const uidOf = (obj: Record<string, unknown>): string => String((obj['metadata'] as Record<string, unknown>)['uid']);
  let schemaUid = '';
  let levelUid = '';

  beforeAll(async () => {
    // 40 seats in all, so a list of 2,000 objects takes 6 (15 % of the level's limit) and six of them fill the level.
    env = await startEnvironment({ serviceArgs: { gateway: ['--max-requests-inflight=30', '--max-mutating-requests-inflight=10'] } });
    ca = fs.readFileSync(env.pki.caCert);
    await created('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    for (const name of ['flooder', 'reader']) {
      await created(`/api/v1/namespaces/${NS}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name } });
      const token = await created(`/api/v1/namespaces/${NS}/serviceaccounts/${name}/token`, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {} });
      tokens[name] = String((token['status'] as Record<string, unknown>)['token']);
    }
    await created(`/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/roles`, { kind: 'Role', metadata: { name: 'read' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }] });
    await created(`/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/rolebindings`, {
      kind: 'RoleBinding',
      metadata: { name: 'read' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read' },
      subjects: ['flooder', 'reader'].map((name) => ({ kind: 'ServiceAccount', name, namespace: NS })),
    });
    // One level with queues for both flows (by user), ahead of every bootstrap schema but the exempt one.
    const level = await created('/apis/flowcontrol.svc.io/v1/prioritylevelconfigurations', {
      apiVersion: 'flowcontrol.svc.io/v1',
      kind: 'PriorityLevelConfiguration',
      metadata: { name: 'apf-e2e' },
      spec: { type: 'Limited', limited: { nominalConcurrencyShares: 5000, limitResponse: { type: 'Queue', queuing: { queues: 64, handSize: 4, queueLengthLimit: 2 } } } },
    });
    const schema = await created('/apis/flowcontrol.svc.io/v1/flowschemas', {
      apiVersion: 'flowcontrol.svc.io/v1',
      kind: 'FlowSchema',
      metadata: { name: 'apf-e2e' },
      spec: {
        priorityLevelConfiguration: { name: 'apf-e2e' },
        matchingPrecedence: 50,
        distinguisherMethod: { type: 'ByUser' },
        rules: [
          {
            subjects: [{ kind: 'ServiceAccount', serviceAccount: { namespace: NS, name: '*' } }],
            resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: [NS] }],
            nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
          },
        ],
      },
    });
    levelUid = uidOf(level);
    schemaUid = uidOf(schema);
    const value = 'v'.repeat(256);
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let i = next++; i < COUNT; i = next++) await created(`/api/v1/namespaces/${NS}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}` }, data: { value } });
    };
    await Promise.all(Array.from({ length: 12 }, worker));
    // The gateway reads the configuration every second, and counts the objects once its cache holds them.
    await until(async () => ((await send('GET', `/api/v1/namespaces/${NS}/configmaps/cm-1`, 'reader')).headers['x-svc-pf-flowschema-uid'] === schemaUid ? true : undefined));
    // A list starts the watch cache of ConfigMaps, whose object count the work estimate reads.
    expect((await send('GET', `/api/v1/namespaces/${NS}/configmaps?limit=1`, 'admin')).status).toBe(200);
    const stored = async (): Promise<number> => Number((await send('GET', '/metrics', 'admin')).body.match(/^apiserver_storage_objects\{resource="configmaps"\} (\d+)/m)?.[1] ?? 0);
    await until(async () => ((await stored()) >= COUNT ? true : undefined));
  }, 180_000);

  afterAll(async () => {
    agent.destroy();
    await env?.stop(true);
  });

  test('a flooding flow is refused with 429 and Retry-After while another flow of its level is served', async () => {
    // Bursts of 60 lists (more than the level runs and queues for one flow) while the other identity reads, until one is refused.
    const lists: Answer[] = [];
    const reads: Answer[] = [];
    for (let burst = 0; burst < 5 && !lists.some((r) => r.status === 429); burst++) {
      const flood = Array.from({ length: 60 }, () => send('GET', `/api/v1/namespaces/${NS}/configmaps`, 'flooder'));
      for (let i = 0; i < 10; i++) reads.push(await send('GET', `/api/v1/namespaces/${NS}/configmaps/cm-${i}`, 'reader'));
      lists.push(...(await Promise.all(flood)));
    }

    expect(reads.map((r) => r.status)).toEqual(reads.map(() => 200));
    const refused = lists.filter((r) => r.status === 429);
    const served = lists.filter((r) => r.status === 200);
    expect(refused.length).toBeGreaterThan(0);
    expect(served.length).toBeGreaterThan(0);
    expect(lists.every((r) => r.status === 200 || r.status === 429)).toBe(true);
    const first = refused[0] as Answer;
    expect(first.headers['retry-after']).toBe('1');
    expect(JSON.parse(first.body)).toMatchObject({ kind: 'Status', code: 429, reason: 'TooManyRequests', details: { retryAfterSeconds: 1 } });
    for (const r of [...refused, ...served, ...reads]) {
      expect(r.headers['x-svc-pf-flowschema-uid']).toBe(schemaUid);
      expect(r.headers['x-svc-pf-prioritylevel-uid']).toBe(levelUid);
    }
    expect((JSON.parse((served[0] as Answer).body) as { items: unknown[] }).items).toHaveLength(COUNT);

    // The refusals are counted by schema, level and reason.
    const metrics = (await send('GET', '/metrics', 'admin')).body;
    expect(metrics).toMatch(/^apiserver_flowcontrol_rejected_requests_total\{flow_schema="apf-e2e",priority_level="apf-e2e",reason="queue-full"\} [1-9]/m);
    expect(metrics).toMatch(/^apiserver_flowcontrol_dispatched_requests_total\{priority_level="apf-e2e",flow_schema="apf-e2e"\} [1-9]/m);
    expect(metrics).toMatch(/^apiserver_flowcontrol_nominal_limit_seats\{priority_level="apf-e2e"\} \d+/m);
  });

  test('a flow schema naming a missing priority level is marked Dangling', async () => {
    await created('/apis/flowcontrol.svc.io/v1/flowschemas', {
      apiVersion: 'flowcontrol.svc.io/v1',
      kind: 'FlowSchema',
      metadata: { name: 'apf-e2e-dangling' },
      spec: { priorityLevelConfiguration: { name: 'no-such-level' }, matchingPrecedence: 60, rules: [{ subjects: [{ kind: 'User', user: { name: 'nobody' } }], nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }] }] },
    });
    const condition = await until(async () => {
      const fs = JSON.parse((await send('GET', '/apis/flowcontrol.svc.io/v1/flowschemas/apf-e2e-dangling', 'admin')).body) as { status?: { conditions?: Array<Record<string, string>> } };
      return fs.status?.conditions?.find((c) => c['type'] === 'Dangling');
    });
    expect(condition).toMatchObject({ status: 'True', reason: 'NotFound' });
    const ours = JSON.parse((await send('GET', '/apis/flowcontrol.svc.io/v1/flowschemas/apf-e2e', 'admin')).body) as { status?: { conditions?: Array<Record<string, string>> } };
    expect(ours.status?.conditions?.find((c) => c['type'] === 'Dangling')).toMatchObject({ status: 'False', reason: 'Found' });
  });

  test('the debug dumps answer the admin and refuse others', async () => {
    for (const dump of ['dump_priority_levels', 'dump_queues', 'dump_requests']) {
      const admin = await send('GET', `/debug/api_priority_and_fairness/${dump}`, 'admin');
      expect(admin.status).toBe(200);
      expect(admin.body).toMatch(/^PriorityLevelName,/);
      expect((await send('GET', `/debug/api_priority_and_fairness/${dump}`, 'reader')).status).toBe(403);
    }
    const levels = (await send('GET', '/debug/api_priority_and_fairness/dump_priority_levels', 'admin')).body;
    expect(levels).toMatch(/^apf-e2e, /m);
    expect(levels).toMatch(/^exempt, /m);
  });
});
