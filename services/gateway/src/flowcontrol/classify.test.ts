import type { ApiObject, UserInfo } from '@svc/apimachinery';
import { parseRequestInfo, parseRequestPath } from '../request-info';
import { classify, flowDistinguisher, flowSchemaMatches } from './classify';
import { digestConfig, flowSchemaFrom, priorityLevelFrom, type FlowSchema } from './config';
import { FlowControl } from './controller';
import { estimateSeats } from './work-estimate';

function info(method: string, target: string) {
  const [p, q = ''] = target.split('?') as [string, string?];
  return parseRequestInfo(method, parseRequestPath(p), new URLSearchParams(q));
}

const user = (username: string, ...groups: string[]): UserInfo => ({ username, uid: '', groups: [...groups, 'system:authenticated'], extra: {} });

function schema(name: string, precedence: number, level: string, rules: unknown[], distinguisher?: string): ApiObject {
  return {
    apiVersion: 'flowcontrol.svc.io/v1',
    kind: 'FlowSchema',
    metadata: { name, uid: `uid-fs-${name}`, resourceVersion: '1' },
    spec: { matchingPrecedence: precedence, priorityLevelConfiguration: { name: level }, rules, ...(distinguisher ? { distinguisherMethod: { type: distinguisher } } : {}) },
  };
}

function limited(name: string, shares: number, queuing?: { queues: number; handSize: number; queueLengthLimit: number }): ApiObject {
  return {
    apiVersion: 'flowcontrol.svc.io/v1',
    kind: 'PriorityLevelConfiguration',
    metadata: { name, uid: `uid-pl-${name}`, resourceVersion: '1' },
    spec: { type: 'Limited', limited: { nominalConcurrencyShares: shares, limitResponse: queuing ? { type: 'Queue', queuing } : { type: 'Reject' } } },
  };
}

const fs = (obj: ApiObject): FlowSchema => flowSchemaFrom(obj);

describe('flow schema matching', () => {
  const rules = (subjects: unknown[], extra: Record<string, unknown> = {}) => [{ subjects, ...extra }];
  const all = { resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'] }], nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }] };
  const get = info('GET', '/api/v1/namespaces/ns1/configmaps/a');

  test('subjects: users, groups, service accounts (by name or any in a namespace) and *', () => {
    const matches = (subject: unknown, u: UserInfo) => flowSchemaMatches(fs(schema('s', 1, 'l', rules([subject], all))), u, get);
    expect(matches({ kind: 'User', user: { name: 'alice' } }, user('alice'))).toBe(true);
    expect(matches({ kind: 'User', user: { name: 'alice' } }, user('bob'))).toBe(false);
    expect(matches({ kind: 'User', user: { name: '*' } }, user('bob'))).toBe(true);
    expect(matches({ kind: 'Group', group: { name: 'ops' } }, user('bob', 'ops'))).toBe(true);
    expect(matches({ kind: 'Group', group: { name: 'ops' } }, user('bob', 'dev'))).toBe(false);
    expect(matches({ kind: 'Group', group: { name: '*' } }, user('bob'))).toBe(true);
    const sa = user('system:serviceaccount:ns1:robot', 'system:serviceaccounts');
    expect(matches({ kind: 'ServiceAccount', serviceAccount: { namespace: 'ns1', name: 'robot' } }, sa)).toBe(true);
    expect(matches({ kind: 'ServiceAccount', serviceAccount: { namespace: 'ns1', name: '*' } }, sa)).toBe(true);
    expect(matches({ kind: 'ServiceAccount', serviceAccount: { namespace: 'ns2', name: '*' } }, sa)).toBe(false);
    expect(matches({ kind: 'ServiceAccount', serviceAccount: { namespace: 'ns1', name: 'other' } }, sa)).toBe(false);
    expect(matches({ kind: 'ServiceAccount', serviceAccount: { namespace: 'ns1', name: 'robot' } }, user('robot'))).toBe(false);
  });

  test('resource rules: verbs, groups, resources and subresources, cluster scope and namespaces', () => {
    const rr = (rule: Record<string, unknown>) => fs(schema('s', 1, 'l', rules([{ kind: 'Group', group: { name: '*' } }], { resourceRules: [rule] })));
    const u = user('alice');
    const base = { verbs: ['get', 'list'], apiGroups: [''], resources: ['configmaps'], namespaces: ['ns1'] };
    expect(flowSchemaMatches(rr(base), u, get)).toBe(true);
    expect(flowSchemaMatches(rr(base), u, info('GET', '/api/v1/namespaces/ns1/configmaps'))).toBe(true);
    expect(flowSchemaMatches(rr(base), u, info('DELETE', '/api/v1/namespaces/ns1/configmaps/a'))).toBe(false);
    expect(flowSchemaMatches(rr(base), u, info('GET', '/api/v1/namespaces/ns2/configmaps/a'))).toBe(false);
    expect(flowSchemaMatches(rr(base), u, info('GET', '/apis/apps/v1/namespaces/ns1/deployments/a'))).toBe(false);
    // Cluster-scoped requests (and lists across namespaces) need clusterScope.
    expect(flowSchemaMatches(rr(base), u, info('GET', '/api/v1/configmaps'))).toBe(false);
    expect(flowSchemaMatches(rr({ ...base, clusterScope: true }), u, info('GET', '/api/v1/configmaps'))).toBe(true);
    expect(flowSchemaMatches(rr({ ...base, namespaces: ['*'] }), u, info('GET', '/api/v1/namespaces/ns2/configmaps/a'))).toBe(true);
    // A subresource is named as resource/subresource.
    const status = info('GET', '/api/v1/namespaces/ns1/pods/p/status');
    expect(flowSchemaMatches(rr({ ...base, resources: ['pods'] }), u, status)).toBe(false);
    expect(flowSchemaMatches(rr({ ...base, resources: ['pods/status'] }), u, status)).toBe(true);
    expect(flowSchemaMatches(rr({ ...base, apiGroups: ['*'], resources: ['*'] }), u, status)).toBe(true);
  });

  test('non-resource rules: exact paths and prefixes ending in *; a resource rule never matches a non-resource request', () => {
    const nr = (urls: string[], verbs = ['get']) =>
      fs(schema('s', 1, 'l', rules([{ kind: 'Group', group: { name: '*' } }], { nonResourceRules: [{ verbs, nonResourceURLs: urls }], resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'] }] })));
    const u = user('alice');
    expect(flowSchemaMatches(nr(['/healthz']), u, info('GET', '/healthz'))).toBe(true);
    expect(flowSchemaMatches(nr(['/healthz']), u, info('GET', '/healthz/etcd'))).toBe(false);
    expect(flowSchemaMatches(nr(['/healthz/*']), u, info('GET', '/healthz/etcd'))).toBe(true);
    expect(flowSchemaMatches(nr(['/apis/*']), u, info('GET', '/apis'))).toBe(false);
    expect(flowSchemaMatches(nr(['*']), u, info('GET', '/version'))).toBe(true);
    expect(flowSchemaMatches(nr(['/version']), u, info('POST', '/version'))).toBe(false);
    expect(flowSchemaMatches(nr(['/version'], ['*']), u, info('POST', '/version'))).toBe(true);
    expect(flowSchemaMatches(fs(schema('s', 1, 'l', rules([{ kind: 'Group', group: { name: '*' } }], { resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'] }] }))), u, info('GET', '/version'))).toBe(false);
  });

  test('the first schema by matching precedence, then name, wins; the distinguisher is the user or the namespace', () => {
    const everyone = rules([{ kind: 'Group', group: { name: 'system:authenticated' } }], all);
    const schemas = [schema('b', 500, 'l', everyone, 'ByNamespace'), schema('a', 500, 'l', everyone, 'ByUser'), schema('z', 100, 'l', rules([{ kind: 'User', user: { name: 'carol' } }], all))];
    const digested = digestConfig(schemas.map(fs), [priorityLevelFrom(limited('l', 10))], 600);
    expect(digested.flowSchemas.map((s) => s.name)).toEqual(['exempt', 'z', 'a', 'b', 'catch-all']);
    const alice = classify(digested.flowSchemas, user('alice'), get) as FlowSchema;
    expect(alice.name).toBe('a');
    expect(flowDistinguisher(alice, user('alice'), get)).toBe('alice');
    expect(classify(digested.flowSchemas, user('carol'), get)?.name).toBe('z');
    expect(classify(digested.flowSchemas, user('root', 'system:masters'), get)?.name).toBe('exempt');
    const b = fs(schemas[0] as ApiObject);
    expect(flowDistinguisher(b, user('alice'), get)).toBe('ns1');
    expect(flowDistinguisher(fs(schemas[2] as ApiObject), user('carol'), get)).toBe('');
  });
});

describe('configuration digest', () => {
  test('the mandatory objects are imagined when missing, and stored ones replace them', () => {
    const empty = digestConfig([], [], 600);
    expect([...empty.levels.keys()].sort()).toEqual(['catch-all', 'exempt']);
    expect(empty.flowSchemas.map((s) => s.name)).toEqual(['exempt', 'catch-all']);
    expect(empty.imagined).toHaveLength(4);
    // The catch-all level alone holds every share: the whole server.
    expect(empty.levels.get('catch-all')).toMatchObject({ concurrencyLimit: 600, imagined: true });
    expect(empty.levels.get('exempt')?.concurrencyLimit).toBe(Infinity);
    const stored = digestConfig([fs(schema('catch-all', 10000, 'catch-all', []))], [priorityLevelFrom(limited('catch-all', 5))], 600);
    expect(stored.flowSchemas.find((s) => s.name === 'catch-all')?.uid).toBe('uid-fs-catch-all');
    expect(stored.levels.get('catch-all')).toMatchObject({ imagined: false });
    expect(stored.levels.get('catch-all')?.config.uid).toBe('uid-pl-catch-all');
  });

  test('a schema naming a missing level is left out (dangling); limits are shares of the server, rounded up', () => {
    const d = digestConfig(
      [fs(schema('orphan', 50, 'nowhere', [])), fs(schema('work', 60, 'workload', []))],
      [priorityLevelFrom(limited('workload', 100, { queues: 64, handSize: 6, queueLengthLimit: 50 })), priorityLevelFrom(limited('catch-all', 5))],
      600,
    );
    expect(d.flowSchemas.map((s) => s.name)).not.toContain('orphan');
    expect(d.dangling.get('orphan')).toBe('nowhere');
    expect(d.levels.get('workload')?.nominalLimit).toBe(Math.ceil((600 * 100) / 105));
    expect(d.levels.get('catch-all')?.nominalLimit).toBe(Math.ceil((600 * 5) / 105));
    // A list takes at most 15 % of its level's limit, and at most the limit over the hand size.
    expect(d.levels.get('workload')?.maxSeats).toBe(Math.min(Math.ceil(572 * 0.15), Math.floor(572 / 6)));
    expect(d.levels.get('workload')?.config.queuing).toEqual({ queues: 64, handSize: 6, queueLengthLimit: 50 });
  });

  test('the controller admits a request with the seats its level allows', async () => {
    const fc = new FlowControl(undefined, { serverConcurrencyLimit: 6 });
    fc.apply([fs(schema('everyone', 500, 'small', rules2()))], [priorityLevelFrom(limited('small', 30, { queues: 4, handSize: 2, queueLengthLimit: 5 })), priorityLevelFrom(limited('catch-all', 5))]);
    const c = fc.classify(user('alice'), get());
    expect(c.schema.name).toBe('everyone');
    expect(c.level.config.name).toBe('small');
    const ticket = fc.admit(c, 10);
    expect(await ticket.decision).toBe('execute');
    // 10 seats asked; the level of 6 × 30/35 = 6 seats lets one request take max(1, min(ceil(0.9), 3)) = 1.
    expect(fc.levelStates().find((l) => l.name === 'small')?.queues.executingSeats).toBe(1);
    ticket.finish();
    function rules2() {
      return [{ subjects: [{ kind: 'Group', group: { name: 'system:authenticated' } }], resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*'] }] }];
    }
    function get() {
      return info('GET', '/api/v1/namespaces/ns1/configmaps');
    }
  });
});

describe('work estimate', () => {
  const counts = (n: number | undefined) => () => n;
  test('a list takes a seat per hundred objects of its resource, at most ten; everything else one', () => {
    expect(estimateSeats(info('GET', '/api/v1/namespaces/ns1/configmaps'), counts(2000))).toBe(10);
    expect(estimateSeats(info('GET', '/api/v1/namespaces/ns1/configmaps'), counts(250))).toBe(3);
    expect(estimateSeats(info('GET', '/api/v1/namespaces/ns1/configmaps'), counts(0))).toBe(1);
    expect(estimateSeats(info('GET', '/api/v1/namespaces/ns1/configmaps'), counts(undefined))).toBe(1);
    expect(estimateSeats(info('GET', '/api/v1/namespaces/ns1/configmaps/a'), counts(2000))).toBe(1);
    expect(estimateSeats(info('POST', '/api/v1/namespaces/ns1/configmaps'), counts(2000))).toBe(1);
    expect(estimateSeats(info('DELETE', '/api/v1/namespaces/ns1/configmaps'), counts(2000))).toBe(1);
  });
});

describe('the Dangling condition', () => {
  test('is True while the named level is missing, False once it exists, and written only when it changes', async () => {
    const orphan = schema('orphan', 50, 'nowhere', []);
    const found = schema('work', 60, 'workload', []);
    const level = limited('workload', 10);
    const written: ApiObject[] = [];
    let stored = { flowSchemas: [orphan, found], priorityLevels: [level] };
    const fc = new FlowControl(async () => stored, { serverConcurrencyLimit: 10, writeStatus: async (o) => void written.push(o) });
    await fc.refresh();
    const conditionOf = (o: ApiObject | undefined) => ((o?.['status'] as { conditions: Array<Record<string, unknown>> }).conditions ?? []).find((c) => c['type'] === 'Dangling');
    expect(written.map((o) => o.metadata?.name)).toEqual(['orphan', 'work']);
    expect(conditionOf(written[0])).toMatchObject({ status: 'True', reason: 'NotFound' });
    expect(String(conditionOf(written[0])?.['message'])).toContain('"nowhere" but there is no such object');
    expect(conditionOf(written[1])).toMatchObject({ status: 'False', reason: 'Found' });
    // The same objects again: nothing changed, nothing written.
    await fc.refresh();
    expect(written).toHaveLength(2);
    // Stored with their conditions (a new resourceVersion): the conditions already say so.
    stored = { flowSchemas: written.map((o) => ({ ...o, metadata: { ...o.metadata, resourceVersion: '2' } })), priorityLevels: [level] };
    await fc.refresh();
    expect(written).toHaveLength(2);
  });
});
