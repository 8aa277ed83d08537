import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createLogger, type FileWatchTimers } from '@svc/service-kit';
import type { Attributes, Authorizer } from './authorizer';
import { ConfiguredAuthorizer, loadAuthorizationConfigFile } from './configured-authorizer';

const attrs: Attributes = { user: { username: 'u', uid: '', groups: [], extra: {} }, resourceRequest: true, verb: 'get', path: '', apiGroup: '', apiVersion: 'v1', resource: 'pods', subresource: '', namespace: 'ns', name: 'p' };

describe('the authorization configuration file in force, and its reloads', () => {
  let dir = '';
  let file = '';
  let kubeconfig = '';
  let lines: Array<Record<string, unknown>> = [];
  let poll: () => void = () => undefined;
  const timers: FileWatchTimers = { setInterval: (fn) => ((poll = fn), 1), clearInterval: () => undefined };
  const rbac: Authorizer = () => ({ decision: 'allow', reason: 'RBAC allowed' });
  const node: Authorizer = () => ({ decision: 'no-opinion', reason: '' });
  const write = (...entries: string[]) => fs.writeFileSync(file, `apiVersion: apiserver.config.svc.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n${entries.map((e) => `- ${e}\n`).join('')}`);
  const webhook = (name: string) =>
    `{type: Webhook, name: ${name}, webhook: {timeout: 1s, subjectAccessReviewVersion: v1, matchConditionSubjectAccessReviewVersion: v1, failurePolicy: NoOpinion, connectionInfo: {type: KubeConfigFile, kubeConfigFile: ${kubeconfig}}}}`;
  const start = (pollMs?: number): ConfiguredAuthorizer => {
    const c = new ConfiguredAuthorizer(file, loadAuthorizationConfigFile(file), {
      stateful: { RBAC: rbac, Node: node },
      log: createLogger('authz-test', { write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) }),
      ...(pollMs === undefined ? { timers } : { pollMs }),
    });
    c.startWatching();
    return c;
  };

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'authz-reload-'));
    file = path.join(dir, 'authz.yaml');
    kubeconfig = path.join(dir, 'webhook.kubeconfig');
    fs.writeFileSync(kubeconfig, 'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1/authorize"}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n');
    lines = [];
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('a good change is applied at the next poll (reordering RBAC), and logged', async () => {
    write('{type: AlwaysDeny, name: deny}', '{type: RBAC, name: rbac}');
    const c = start();
    expect((await c.authorize(attrs)).decision).toBe('deny');
    write('{type: RBAC, name: rbac}', '{type: AlwaysDeny, name: deny}');
    poll();
    expect(await c.authorize(attrs)).toEqual({ decision: 'allow', reason: 'RBAC allowed' });
    expect(lines).toContainEqual(expect.objectContaining({ level: 'info', msg: 'authorization configuration reloaded', file, authorizers: ['RBAC/rbac', 'AlwaysDeny/deny'] }));
    c.close();
  });

  test('webhook entries may be added, changed and removed', async () => {
    write('{type: RBAC, name: rbac}');
    const c = start();
    write(webhook('a'), webhook('b'), '{type: RBAC, name: rbac}');
    poll();
    expect(c.configuration.authorizers.map((a) => a.name)).toEqual(['a', 'b', 'rbac']);
    // The webhooks cannot be reached and have no opinion; RBAC decides.
    expect((await c.authorize(attrs)).decision).toBe('allow');
    write('{type: RBAC, name: rbac}', webhook('c'));
    poll();
    expect(c.configuration.authorizers.map((a) => a.name)).toEqual(['rbac', 'c']);
    c.close();
  });

  test('a broken change is logged with the file and the field, and the last good configuration stays', async () => {
    write('{type: AlwaysDeny, name: deny}');
    const c = start();
    write('{type: AlwaysAllow, name: Allow_All}');
    poll();
    expect((await c.authorize(attrs)).decision).toBe('deny');
    expect(lines).toContainEqual(expect.objectContaining({ level: 'error', msg: 'authorization configuration refused; keeping the last good one', file, err: expect.stringContaining(`${file}: authorizers[0].name: Invalid value: "Allow_All"`) }));
    // Unchanged content is not read again; a fixed file is applied.
    const refused = lines.length;
    poll();
    expect(lines).toHaveLength(refused);
    write('{type: AlwaysAllow, name: allow}');
    poll();
    expect((await c.authorize(attrs)).decision).toBe('allow');
    c.close();
  });

  test.each([
    ['adding Node', ['{type: RBAC, name: rbac}'], ['{type: RBAC, name: rbac}', '{type: Node, name: node}'], 'added Node'],
    ['removing Node', ['{type: Node, name: node}', '{type: RBAC, name: rbac}'], ['{type: RBAC, name: rbac}'], 'removed Node'],
    ['adding RBAC', ['{type: AlwaysDeny, name: deny}'], ['{type: RBAC, name: rbac}', '{type: AlwaysDeny, name: deny}'], 'added RBAC'],
    ['removing RBAC', ['{type: RBAC, name: rbac}', '{type: AlwaysDeny, name: deny}'], ['{type: AlwaysDeny, name: deny}'], 'removed RBAC'],
  ])('a reload %s is refused like a broken file', async (_name, before, after, message) => {
    write(...before);
    const c = start();
    const decision = await c.authorize(attrs);
    write(...after);
    poll();
    expect(await c.authorize(attrs)).toEqual(decision);
    expect(c.configuration.authorizers.map((a) => a.type)).toEqual(before.map((e) => /type: (\w+)/.exec(e)?.[1]));
    expect(lines).toContainEqual(expect.objectContaining({ level: 'error', file, err: expect.stringContaining(message) }));
    c.close();
  });

  test('a change event applies the new file without waiting for the poll', async () => {
    write('{type: AlwaysDeny, name: deny}');
    const c = start(3_600_000);
    write('{type: AlwaysAllow, name: allow}');
    const deadline = Date.now() + 5000;
    while ((await c.authorize(attrs)).decision !== 'allow' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect((await c.authorize(attrs)).decision).toBe('allow');
    c.close();
  });

  test('a Node entry without a Node authorizer fails at start with a clear message', () => {
    write('{type: Node, name: node}');
    expect(() => new ConfiguredAuthorizer(file, loadAuthorizationConfigFile(file), { stateful: {}, log: createLogger('authz-test', { write: () => undefined }) })).toThrow('authorization mode Node has no authorizer');
  });
});
