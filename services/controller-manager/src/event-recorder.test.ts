import { ApiError, type ApiObject } from '@svc/apimachinery';
import { EventRecorder, SERIES_WINDOW_MS, referenceTo, type RecordedEvent } from './event-recorder';
import { FakeClock } from './testing/fake-clock';

interface Call {
  method: string;
  path: string;
  body: ApiObject;
}

/** A client that keeps what it is sent and answers like the server (404 for names it does not hold). */
function fakeClient() {
  const calls: Call[] = [];
  const stored = new Map<string, ApiObject>();
  let fail: ApiError | undefined;
  return {
    calls,
    stored,
    failNext(err: ApiError) {
      fail = err;
    },
    async request<T = ApiObject>(method: string, path: string, body?: unknown): Promise<T> {
      const obj = structuredClone(body) as ApiObject;
      calls.push({ method, path, body: obj });
      if (fail) {
        const err = fail;
        fail = undefined;
        throw err;
      }
      if (method === 'POST') {
        stored.set(`${path}/${obj.metadata?.name ?? ''}`, obj);
      } else if (method === 'PUT') {
        if (!stored.has(path)) throw ApiError.notFound({ group: 'events.svc.io', resource: 'events' }, path);
        stored.set(path, obj);
      }
      return { ...obj, metadata: { ...(obj.metadata ?? {}), resourceVersion: String(calls.length) } } as T;
    },
  };
}

const pod: ApiObject = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web-0', namespace: 'shop', uid: 'u-1' } };
const event: RecordedEvent = { regarding: referenceTo(pod), type: 'Warning', reason: 'OwnerRefInvalidNamespace', action: 'Collect', note: 'the owner is in another namespace' };

describe('EventRecorder', () => {
  it('writes an events.svc.io/v1 event naming the object, its reporter, action, reason and time', async () => {
    const client = fakeClient();
    const clock = new FakeClock(Date.UTC(2026, 0, 2, 3, 4, 5, 678));
    await new EventRecorder(client, { controller: 'svc.io/garbage-collector', instance: 'cm-1', clock }).record(event);
    expect(client.calls).toHaveLength(1);
    const [call] = client.calls;
    expect(call?.method).toBe('POST');
    expect(call?.path).toBe('/apis/events.svc.io/v1/namespaces/shop/events');
    expect(call?.body).toMatchObject({
      apiVersion: 'events.svc.io/v1',
      kind: 'Event',
      metadata: { namespace: 'shop', name: expect.stringMatching(/^web-0\.[0-9a-f]+$/) },
      eventTime: '2026-01-02T03:04:05.678000Z',
      reportingController: 'svc.io/garbage-collector',
      reportingInstance: 'cm-1',
      action: 'Collect',
      reason: 'OwnerRefInvalidNamespace',
      regarding: { apiVersion: 'v1', kind: 'Pod', namespace: 'shop', name: 'web-0', uid: 'u-1' },
      note: 'the owner is in another namespace',
      type: 'Warning',
    });
    expect(call?.body['deprecatedCount']).toBeUndefined();
  });

  it('moves the series of an event reported again within the window, and starts a new event after it', async () => {
    const client = fakeClient();
    const clock = new FakeClock();
    const recorder = new EventRecorder(client, { controller: 'svc.io/garbage-collector', instance: 'cm-1', clock });
    await recorder.record(event);
    await clock.advance(1000);
    await recorder.record(event);
    await recorder.record(event);
    expect(client.calls.map((c) => c.method)).toEqual(['POST', 'PUT', 'PUT']);
    const first = client.calls[0]?.body.metadata?.name;
    expect(client.calls[2]?.path).toBe(`/apis/events.svc.io/v1/namespaces/shop/events/${first}`);
    expect(client.calls[2]?.body['series']).toEqual({ count: 3, lastObservedTime: new Date(clock.now()).toISOString().replace('Z', '000Z') });

    // A different note is a different event.
    await recorder.record({ ...event, note: 'something else' });
    expect(client.calls[3]?.method).toBe('POST');

    await clock.advance(SERIES_WINDOW_MS);
    await recorder.record(event);
    expect(client.calls[4]?.method).toBe('POST');
    expect(client.calls[4]?.body.metadata?.name).not.toBe(first);
  });

  it('writes a new event when the first of its series is gone', async () => {
    const client = fakeClient();
    const recorder = new EventRecorder(client, { controller: 'svc.io/garbage-collector', instance: 'cm-1', clock: new FakeClock() });
    await recorder.record(event);
    client.stored.clear();
    await recorder.record(event);
    expect(client.calls.map((c) => c.method)).toEqual(['POST', 'PUT', 'POST']);
    expect(client.calls[2]?.body['series']).toBeUndefined();
  });

  it('puts events about cluster-scoped objects in default, and never fails its caller', async () => {
    const client = fakeClient();
    const warnings: string[] = [];
    const recorder = new EventRecorder(client, { controller: 'svc.io/garbage-collector', instance: 'cm-1', clock: new FakeClock(), log: { warn: (msg: string) => void warnings.push(msg) } });
    await recorder.record({ ...event, regarding: { apiVersion: 'v1', kind: 'Node', name: 'n1' } });
    expect(client.calls[0]?.path).toBe('/apis/events.svc.io/v1/namespaces/default/events');
    client.failNext(ApiError.forbidden({ group: 'events.svc.io', resource: 'events' }, '', 'no'));
    await expect(recorder.record({ ...event, reason: 'Other' })).resolves.toBeUndefined();
    expect(warnings).toEqual(['event not recorded']);
  });

  it('names events distinctly even within the same millisecond', async () => {
    const client = fakeClient();
    const recorder = new EventRecorder(client, { controller: 'svc.io/garbage-collector', instance: 'cm-1', clock: new FakeClock() });
    await recorder.record(event);
    await recorder.record({ ...event, reason: 'Again' });
    const [a, b] = client.calls.map((c) => c.body.metadata?.name);
    expect(a).not.toBe(b);
  });
});
