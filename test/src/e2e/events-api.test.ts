import { startEnvironment, type Environment } from '@svc/testenv';
import { run, until } from './helpers';
import { adminRequest } from './http';

/**
 * The Events API (`events.svc.io/v1`) shares its storage with core v1
 * events: an event written through either is read, listed and watched
 * through both, field by field as the original server converts them.
 */
describe('events.svc.io/v1 end to end', () => {
  let env: Environment;
  const ns = 'events-e2e';
  const v1Base = `/apis/events.svc.io/v1/namespaces/${ns}/events`;
  const coreBase = `/api/v1/namespaces/${ns}/events`;
  const kubectl = (args: string[], input?: string) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args], input !== undefined ? { input } : {});

  const newEvent = (name: string, overrides: Record<string, unknown> = {}) => ({
    apiVersion: 'events.svc.io/v1',
    kind: 'Event',
    metadata: { name, namespace: ns },
    eventTime: '2026-01-02T03:04:05.123456Z',
    reportingController: 'example.com/shop-operator',
    reportingInstance: 'operator-0',
    action: 'Reconcile',
    reason: 'ConfigRolledOut',
    regarding: { apiVersion: 'v1', kind: 'Pod', namespace: ns, name: 'web-0', uid: 'pod-uid-1' },
    note: 'rolled out the new configuration',
    type: 'Normal',
    ...overrides,
  });

  beforeAll(async () => {
    env = await startEnvironment();
    expect((await kubectl(['create', 'namespace', ns])).code).toBe(0);
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test('discovery offers the group, and an event created through it is a core event with the core field names', async () => {
    const group = (await adminRequest(env, 'GET', '/apis/events.svc.io')).json();
    expect(group['preferredVersion']).toEqual({ groupVersion: 'events.svc.io/v1', version: 'v1' });

    const created = await adminRequest(env, 'POST', v1Base, JSON.stringify(newEvent('rollout.1')));
    expect(created.status).toBe(201);
    expect(created.json()).toMatchObject({ apiVersion: 'events.svc.io/v1', regarding: { name: 'web-0' }, note: 'rolled out the new configuration' });

    const core = (await adminRequest(env, 'GET', `${coreBase}/rollout.1`)).json();
    expect(core).toMatchObject({
      apiVersion: 'v1',
      kind: 'Event',
      involvedObject: { kind: 'Pod', name: 'web-0', uid: 'pod-uid-1' },
      message: 'rolled out the new configuration',
      reportingComponent: 'example.com/shop-operator',
      reportingInstance: 'operator-0',
      action: 'Reconcile',
      reason: 'ConfigRolledOut',
      type: 'Normal',
    });
    expect(core['regarding']).toBeUndefined();
    expect(core['note']).toBeUndefined();
    // One object: the same uid and resourceVersion through both.
    const v1 = (await adminRequest(env, 'GET', `${v1Base}/rollout.1`)).json() as { metadata: { uid: string; resourceVersion: string } };
    expect((core['metadata'] as { uid: string }).uid).toBe(v1.metadata.uid);
    expect((core['metadata'] as { resourceVersion: string }).resourceVersion).toBe(v1.metadata.resourceVersion);
  });

  test('an old-style core event is listed through events.svc.io/v1 with its old fields renamed deprecated*', async () => {
    const legacy = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'pulled.1', namespace: ns },
      involvedObject: { kind: 'Pod', namespace: ns, name: 'web-0' },
      reason: 'Pulled',
      message: 'pulled the image',
      source: { component: 'node-agent', host: 'node-1' },
      firstTimestamp: '2026-01-02T03:00:00Z',
      lastTimestamp: '2026-01-02T03:01:00Z',
      count: 3,
      type: 'Normal',
    };
    expect((await adminRequest(env, 'POST', coreBase, JSON.stringify(legacy))).status).toBe(201);
    const list = (await adminRequest(env, 'GET', v1Base)).json() as { apiVersion: string; items: Array<Record<string, unknown>> };
    expect(list.apiVersion).toBe('events.svc.io/v1');
    const item = list.items.find((i) => (i['metadata'] as { name: string }).name === 'pulled.1');
    expect(item).toMatchObject({
      regarding: { kind: 'Pod', name: 'web-0' },
      note: 'pulled the image',
      deprecatedSource: { component: 'node-agent', host: 'node-1' },
      deprecatedFirstTimestamp: '2026-01-02T03:00:00Z',
      deprecatedLastTimestamp: '2026-01-02T03:01:00Z',
      deprecatedCount: 3,
    });
    expect(item?.['involvedObject']).toBeUndefined();
    expect(list.items.map((i) => (i['metadata'] as { name: string }).name)).toEqual(expect.arrayContaining(['rollout.1', 'pulled.1']));
  });

  test('a watch of events.svc.io/v1 sees events written through core v1, converted and selected by their core fields', async () => {
    const rv = ((await adminRequest(env, 'GET', v1Base)).json()['metadata'] as { resourceVersion: string }).resourceVersion;
    const mine = { ...newEvent('watched.1'), apiVersion: 'v1', regarding: undefined, note: undefined, reportingController: undefined };
    const core = {
      ...mine,
      involvedObject: { apiVersion: 'v1', kind: 'Pod', namespace: ns, name: 'watched-pod' },
      message: 'seen by the watch',
      reportingComponent: 'example.com/shop-operator',
    };
    const other = { ...core, metadata: { name: 'unwatched.1', namespace: ns }, involvedObject: { kind: 'Pod', namespace: ns, name: 'another-pod' } };
    expect((await adminRequest(env, 'POST', coreBase, JSON.stringify(other))).status).toBe(201);
    expect((await adminRequest(env, 'POST', coreBase, JSON.stringify(core))).status).toBe(201);
    const watched = await adminRequest(env, 'GET', `${v1Base}?watch=true&timeoutSeconds=2&resourceVersion=${rv}&fieldSelector=involvedObject.name%3Dwatched-pod`);
    expect(watched.status).toBe(200);
    const events = watched.body
      .split('\n')
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l) as { type: string; object: Record<string, unknown> });
    expect(events.map((e) => [e.type, (e.object['metadata'] as { name: string }).name])).toEqual([['ADDED', 'watched.1']]);
    expect(events[0]?.object).toMatchObject({ apiVersion: 'events.svc.io/v1', regarding: { name: 'watched-pod' }, note: 'seen by the watch', reportingController: 'example.com/shop-operator' });
  });

  test('validation: the new-style fields are required on create, type is Normal or Warning, the deprecated fields are refused', async () => {
    const missing = await adminRequest(
      env,
      'POST',
      v1Base,
      JSON.stringify(newEvent('bad.1', { reportingController: undefined, reportingInstance: undefined, action: undefined, reason: undefined, type: 'Info' })),
    );
    expect(missing.status).toBe(422);
    const causes = ((missing.json()['details'] as { causes: Array<{ field: string }> }).causes ?? []).map((c) => c.field);
    expect(causes).toEqual(expect.arrayContaining(['reportingController', 'reportingInstance', 'action', 'reason', 'type']));

    const noTime = await adminRequest(env, 'POST', v1Base, JSON.stringify(newEvent('bad.2', { eventTime: undefined })));
    expect(noTime.status).toBe(422);
    expect(noTime.body).toContain('eventTime');

    const deprecated = await adminRequest(env, 'POST', v1Base, JSON.stringify(newEvent('bad.3', { deprecatedCount: 2, deprecatedSource: { component: 'x' } })));
    expect(deprecated.status).toBe(422);
    expect(deprecated.body).toContain('deprecatedCount');
    expect(deprecated.body).toContain('needs to be unset');

    // An update may move the series on, not rewrite the note.
    const current = (await adminRequest(env, 'GET', `${v1Base}/rollout.1`)).json();
    const series = { ...current, series: { count: 2, lastObservedTime: '2026-01-02T03:09:00.000000Z' } };
    const updated = await adminRequest(env, 'PUT', `${v1Base}/rollout.1`, JSON.stringify(series));
    expect(updated.status).toBe(200);
    expect((await adminRequest(env, 'GET', `${coreBase}/rollout.1`)).json()['series']).toEqual({ count: 2, lastObservedTime: '2026-01-02T03:09:00.000000Z' });
    const rewritten = await adminRequest(env, 'PUT', `${v1Base}/rollout.1`, JSON.stringify({ ...updated.json(), note: 'something else' }));
    expect(rewritten.status).toBe(422);
    expect(rewritten.body).toContain('note');
  });

  test('the controller-manager records its events through events.svc.io/v1: the leader reports LeaderElection on its Lease', async () => {
    const event = await until(async () => {
      const list = (await adminRequest(env, 'GET', '/apis/events.svc.io/v1/namespaces/svc-system/events?fieldSelector=reason%3DLeaderElection')).json() as { items?: Array<Record<string, unknown>> };
      return list.items?.[0];
    }, 15000);
    expect(event).toMatchObject({
      apiVersion: 'events.svc.io/v1',
      type: 'Normal',
      action: 'Acquire',
      reportingController: 'svc-controller-manager',
      regarding: { apiVersion: 'coordination.svc.io/v1', kind: 'Lease', namespace: 'svc-system', name: 'svc-controller-manager' },
      note: expect.stringMatching(/ became leader$/),
    });
    expect(event['eventTime']).toEqual(expect.any(String));
  });

  test('kubectl events and kubectl get show events written through either version', async () => {
    const events = await kubectl(['events', '-n', ns]);
    expect(events.code).toBe(0);
    expect(events.stdout).toContain('ConfigRolledOut');
    expect(events.stdout).toContain('rolled out the new configuration');
    expect(events.stdout).toContain('pulled the image');

    const forPod = await kubectl(['events', '-n', ns, '--for', 'pod/watched-pod']);
    expect(forPod.code).toBe(0);
    expect(forPod.stdout).toContain('seen by the watch');
    expect(forPod.stdout).not.toContain('rolled out the new configuration');

    const table = await kubectl(['get', 'events.v1.events.svc.io', '-n', ns]);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain('pod/web-0');
    expect(table.stdout).toContain('pulled the image');

    const yaml = await kubectl(['get', 'events.events.svc.io', 'pulled.1', '-n', ns, '-o', 'jsonpath={.deprecatedCount}/{.regarding.name}']);
    expect(yaml.stdout).toBe('3/web-0');

    // The upstream name of the group is served as ours; explain reads the schema from OpenAPI.
    const upstream = await kubectl(['get', 'events.v1.events.k8s.io', '-n', ns, '-o', 'name']);
    expect(upstream.code).toBe(0);
    expect(upstream.stdout).toContain('/rollout.1');
    const explain = await kubectl(['explain', 'events.deprecatedCount', '--api-version=events.svc.io/v1']);
    expect(explain.stderr).toBe('');
    expect(explain.stdout).toContain('FIELD: deprecatedCount <integer>');
    expect(explain.stdout).toContain('for compatibility; may not be set in new');
    // Protobuf, as typed clients ask for it.
    const proto = await adminRequest(env, 'GET', `${v1Base}/rollout.1`, undefined, { accept: 'application/vnd.kubernetes.protobuf' });
    expect(proto.status).toBe(200);
    expect(proto.headers['content-type']).toBe('application/vnd.kubernetes.protobuf');
    expect(proto.raw.includes(Buffer.from('rolled out the new configuration'))).toBe(true);

    // A manifest of upstream's events.k8s.io/v1 applies (server-side) as ours and reads back through core v1.
    const manifest = [
      'apiVersion: events.k8s.io/v1',
      'kind: Event',
      'metadata:',
      '  name: applied.1',
      `  namespace: ${ns}`,
      'eventTime: "2026-01-02T03:04:05.000001Z"',
      'reportingController: example.com/shop-operator',
      'reportingInstance: operator-0',
      'action: Apply',
      'reason: Applied',
      'type: Warning',
      'note: applied from a manifest',
      'regarding:',
      '  kind: Pod',
      `  namespace: ${ns}`,
      '  name: web-0',
      '',
    ].join('\n');
    const applied = await kubectl(['apply', '--server-side', '-f', '-'], manifest);
    expect(applied.stderr).toBe('');
    expect((await adminRequest(env, 'GET', `${coreBase}/applied.1`)).json()).toMatchObject({ message: 'applied from a manifest', type: 'Warning', reportingComponent: 'example.com/shop-operator' });

    // Deleting through one version deletes the one object.
    expect((await kubectl(['delete', 'events.events.svc.io', 'pulled.1', '-n', ns])).code).toBe(0);
    expect((await adminRequest(env, 'GET', `${coreBase}/pulled.1`)).status).toBe(404);
  });
});
