import { ApiError, type UserInfo } from '@svc/apimachinery';
import { Auditor } from './auditor';
import { compilePolicy, type Policy } from './policy';
import { RequestAudit, type AuditedRequest } from './request-audit';
import { auditEventsGenerated } from './drops';
import { formatMicros, sourceIPs } from './event';
import type { AuditBackend, AuditEvent } from './types';

const alice: UserInfo = { username: 'alice', uid: 'u-1', groups: ['dev', 'system:authenticated'], extra: { scopes: ['a'] } };
const bob: UserInfo = { username: 'bob', uid: '', groups: ['system:authenticated'], extra: {} };

class MemoryBackend implements AuditBackend {
  readonly name = 'memory';
  readonly events: AuditEvent[] = [];
  write(eventJson: string): boolean {
    this.events.push(JSON.parse(eventJson) as AuditEvent);
    return true;
  }
  async close(): Promise<void> {}
}

interface Setup {
  policy?: Policy;
  request?: Partial<AuditedRequest>;
  attributes?: Partial<AuditedRequest['attributes']>;
}

function setup({ policy = { rules: [{ level: 'RequestResponse' }] }, request = {}, attributes = {} }: Setup = {}) {
  const backend = new MemoryBackend();
  const auditor = new Auditor(compilePolicy(policy), [backend]);
  let current: UserInfo | undefined;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const res = { statusCode: 200, getHeader: (name: string) => headers[name] };
  const req: AuditedRequest = {
    auditID: 'audit-1',
    requestURI: '/api/v1/namespaces/default/configmaps?fieldManager=x',
    headers: { 'user-agent': 'kubectl/v1.31', 'x-forwarded-for': '10.0.0.1, 10.0.0.2' },
    remoteAddress: '::ffff:127.0.0.1',
    attributes: { verb: 'create', isResourceRequest: true, path: '/api/v1/namespaces/default/configmaps', apiGroup: '', apiVersion: 'v1', resource: 'configmaps', subresource: '', namespace: 'default', name: '', ...attributes },
    currentUser: () => current,
    authMethods: () => 'Authentication failed, attempted: bearer',
    ...request,
  };
  const audit = new RequestAudit(auditor, req, res);
  return {
    audit,
    res,
    events: backend.events,
    authenticate(user: UserInfo) {
      current = user;
      audit.begin(user);
    },
    impersonate(user: UserInfo) {
      current = user;
    },
  };
}

const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

describe('audit events of a request', () => {
  test('RequestReceived then ResponseComplete, with the request’s identity, objects and status', () => {
    const s = setup();
    s.authenticate(alice);
    const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', managedFields: [{ manager: 'x' }] }, data: { k: 'v' } };
    s.audit.requestBody(Buffer.from(JSON.stringify(body)), 'application/json');
    s.audit.requestObjectMeta('cm', undefined);
    s.audit.annotate('authorization.svc.io/decision', 'allow');
    s.audit.annotate('authorization.svc.io/decision', 'forbid');
    s.res.statusCode = 201;
    s.audit.responseChunk(Buffer.from(JSON.stringify({ ...body, metadata: { ...body.metadata, uid: 'x1' } })));
    const generated = auditEventsGenerated();
    s.audit.complete();
    s.audit.complete();
    expect(auditEventsGenerated() - generated).toBe(1);
    expect(s.events.map((e) => e.stage)).toEqual(['RequestReceived', 'ResponseComplete']);
    const [received, complete] = s.events as [AuditEvent, AuditEvent];
    expect(received.requestReceivedTimestamp).toMatch(MICRO_TIME);
    expect(received.stageTimestamp).toBe(received.requestReceivedTimestamp);
    expect(received.requestObject).toBeUndefined();
    expect(complete).toMatchObject({
      kind: 'Event',
      apiVersion: 'audit.svc.io/v1',
      level: 'RequestResponse',
      auditID: 'audit-1',
      stage: 'ResponseComplete',
      requestURI: '/api/v1/namespaces/default/configmaps?fieldManager=x',
      verb: 'create',
      user: { username: 'alice', uid: 'u-1', groups: ['dev', 'system:authenticated'], extra: { scopes: ['a'] } },
      sourceIPs: ['10.0.0.1', '10.0.0.2', '127.0.0.1'],
      userAgent: 'kubectl/v1.31',
      objectRef: { resource: 'configmaps', namespace: 'default', name: 'cm', apiVersion: 'v1' },
      responseStatus: { metadata: {}, code: 201 },
      requestObject: body,
      responseObject: { metadata: { name: 'cm', uid: 'x1' } },
      annotations: { 'authorization.svc.io/decision': 'allow' },
    });
    expect(complete.stageTimestamp).toMatch(MICRO_TIME);
    expect(complete.impersonatedUser).toBeUndefined();
    expect(complete.objectRef).not.toHaveProperty('apiGroup');
  });

  test('omitManagedFields drops managedFields from the objects logged; Metadata logs none', () => {
    const withObjects = setup({ policy: { omitManagedFields: true, rules: [{ level: 'RequestResponse' }] } });
    withObjects.authenticate(alice);
    const body = { metadata: { name: 'cm', managedFields: [{ manager: 'x' }] } };
    withObjects.audit.requestBody(Buffer.from(JSON.stringify(body)), 'application/json');
    withObjects.audit.responseChunk(JSON.stringify({ items: [body] }));
    withObjects.audit.complete();
    const event = withObjects.events.at(-1) as AuditEvent;
    expect(event.requestObject).toEqual({ metadata: { name: 'cm' } });
    expect(event.responseObject).toEqual({ items: [{ metadata: { name: 'cm' } }] });

    const metadata = setup({ policy: { rules: [{ level: 'Metadata' }] } });
    metadata.authenticate(alice);
    metadata.audit.requestBody(Buffer.from('{"data":{"password":"hunter2"}}'), 'application/json');
    metadata.audit.responseChunk('{"data":{"password":"hunter2"}}');
    metadata.audit.complete();
    expect(JSON.stringify(metadata.events)).not.toContain('hunter2');
  });

  test('the Request level logs the request’s object, not the response’s; YAML is logged as JSON', () => {
    const s = setup({ policy: { rules: [{ level: 'Request' }] } });
    s.authenticate(alice);
    s.audit.requestBody(Buffer.from('metadata:\n  name: y\n'), 'application/yaml');
    s.audit.responseChunk('{"metadata":{"name":"y"}}');
    s.audit.complete();
    const event = s.events.at(-1) as AuditEvent;
    expect(event.requestObject).toEqual({ metadata: { name: 'y' } });
    expect(event).not.toHaveProperty('responseObject');
  });

  test('an impersonated request names both users', () => {
    const s = setup({ policy: { rules: [{ level: 'Metadata' }] } });
    s.authenticate(alice);
    s.impersonate(bob);
    s.audit.complete();
    expect(s.events.at(-1)).toMatchObject({ user: { username: 'alice' }, impersonatedUser: { username: 'bob', groups: ['system:authenticated'] } });
  });

  test('a refused request: the Status’s reason, message and code', () => {
    const s = setup({ policy: { rules: [{ level: 'Metadata' }] } });
    s.authenticate(bob);
    const err = ApiError.forbidden({ group: '', resource: 'configmaps' }, '', 'User "bob" cannot create resource "configmaps"');
    s.audit.annotate('authorization.svc.io/decision', 'forbid');
    s.audit.failed(err);
    s.res.statusCode = 403;
    s.audit.complete();
    expect(s.events.at(-1)).toMatchObject({
      stage: 'ResponseComplete',
      annotations: { 'authorization.svc.io/decision': 'forbid' },
      responseStatus: { metadata: {}, status: 'Failure', reason: 'Forbidden', code: 403, message: expect.stringContaining('cannot create') },
    });
  });

  test('an unexpected failure is a Panic event instead of ResponseComplete', () => {
    const s = setup({ policy: { rules: [{ level: 'Metadata' }] } });
    s.authenticate(alice);
    s.audit.failed(new TypeError('boom'));
    s.res.statusCode = 500;
    s.audit.complete();
    expect(s.events.map((e) => e.stage)).toEqual(['RequestReceived', 'Panic']);
    expect(s.events.at(-1)?.responseStatus).toEqual({ metadata: {}, status: 'Failure', reason: 'InternalError', message: "APIServer panic'd: boom", code: 500 });
  });

  test('a long-running response: ResponseStarted when it starts, then ResponseComplete', () => {
    const s = setup({ policy: { rules: [{ level: 'Metadata' }] }, attributes: { verb: 'watch' } });
    s.authenticate(alice);
    s.audit.responseStarted(200);
    s.audit.complete();
    expect(s.events.map((e) => [e.stage, e.responseStatus?.code])).toEqual([
      ['RequestReceived', undefined],
      ['ResponseStarted', 200],
      ['ResponseComplete', 200],
    ]);
  });

  test('omitted stages are not written; a request at level None writes nothing', () => {
    const s = setup({ policy: { omitStages: ['RequestReceived'], rules: [{ level: 'None', verbs: ['get'] }, { level: 'Metadata' }] } });
    s.authenticate(alice);
    s.audit.complete();
    expect(s.events.map((e) => e.stage)).toEqual(['ResponseComplete']);
    const none = setup({ policy: { rules: [{ level: 'None', verbs: ['get'] }, { level: 'Metadata' }] }, attributes: { verb: 'get' } });
    none.authenticate(alice);
    none.audit.annotate('k', 'v');
    none.audit.complete();
    expect(none.events).toEqual([]);
  });

  test('a request refused with 401 is decided without a user and written as the original’s failed authentication', () => {
    const s = setup({ policy: { rules: [{ level: 'None', users: ['alice'] }, { level: 'Metadata' }] } });
    s.audit.failed(ApiError.unauthorized());
    s.res.statusCode = 401;
    s.audit.complete();
    expect(s.events).toHaveLength(1);
    expect(s.events[0]).toMatchObject({ stage: 'ResponseStarted', user: {}, responseStatus: { metadata: {}, code: 401, message: 'Authentication failed, attempted: bearer' } });
  });

  test('source IPs: forwarded ones first, then X-Real-Ip, then the peer, each once', () => {
    expect(sourceIPs({ 'x-forwarded-for': ' 1.2.3.4 , bogus, 5.6.7.8', 'x-real-ip': '1.2.3.4' }, '::1')).toEqual(['1.2.3.4', '5.6.7.8', '::1']);
    expect(sourceIPs({ 'x-real-ip': '9.9.9.9' }, '::ffff:10.1.1.1')).toEqual(['9.9.9.9', '10.1.1.1']);
  });

  test('times have microseconds', () => {
    expect(formatMicros(1_764_228_783_123_456)).toBe('2025-11-27T07:33:03.123456Z');
    expect(formatMicros(1_764_228_783_000_007)).toBe('2025-11-27T07:33:03.000007Z');
    expect(formatMicros(1_764_228_784_999_999)).toBe('2025-11-27T07:33:04.999999Z');
  });
});
