import { storage } from '@svc/proto';
import { balancedTarget } from './balancing';
import { CallStream, CallsServer, type CallStreamOptions } from './call-stream';
import { callUnary, channelTo, startGrpcServer, unary, type GrpcServerHandle } from './grpc';
import { boundMethod } from './call-hooks';
import { makeTestPki } from './testing/pki';
import { createLogger, type Logger } from './logger';

const quiet = (): Logger => createLogger('test', { write: () => undefined });

const pki = makeTestPki();
afterAll(() => pki.remove());

describe('balancedTarget', () => {
  it('resolves one entry through DNS, every address of the name', () => {
    // grpc-js's default scheme is dns: both forms resolve every address of the name.
    expect(balancedTarget('storage:7101')).toBe('storage:7101');
    expect(balancedTarget(' dns:///storage.svc-system.svc:7101 ')).toBe('dns:///storage.svc-system.svc:7101');
    expect(balancedTarget('[::1]:7101')).toBe('[::1]:7101');
  });

  it('resolves a list entry by entry', () => {
    expect(balancedTarget('10.0.0.1:7101, storage-1.storage:7101,dns:///storage-2.storage:7101')).toBe('svc-list:///10.0.0.1:7101,storage-1.storage:7101,storage-2.storage:7101');
  });

  it('refuses an empty address and an entry that is not host:port', () => {
    expect(() => balancedTarget(' , ')).toThrow(/an address is needed/);
    expect(() => balancedTarget('storage')).toThrow('"storage" is not host:port or dns:///host:port');
    expect(() => balancedTarget('a:1,https://b:2')).toThrow('"https://b:2" is not host:port or dns:///host:port');
    expect(() => balancedTarget('a:1,unix:///tmp/sock')).toThrow(/unix/);
  });
});

/** A storage-shaped replica that counts the calls it served, by method. */
async function replica(name: string, hold?: Promise<void>): Promise<{ server: GrpcServerHandle; served: string[] }> {
  const log = quiet();
  const served: string[] = [];
  const methods = {
    currentRevision: unary(log, 'CurrentRevision', async () => {
      served.push('CurrentRevision');
      if (hold) await hold;
      return { revision: name === 'a' ? 1 : 2, compactRevision: 0 };
    }),
    list: unary(log, 'List', async () => {
      served.push('List');
      return { items: [], revision: 0, continueToken: '' };
    }),
  };
  const calls = new CallsServer(log, storage.StorageService, methods, ['currentRevision']);
  const server = await startGrpcServer('127.0.0.1:0', [{ definition: storage.StorageService, implementation: { ...methods, calls: calls.handler } }], {
    security: { tls: pki.tlsFor('storage'), allowedCallers: ['gateway'], log },
    drain: () => calls.drain(),
  });
  return { server, served };
}

describe('calls over several replicas', () => {
  let a: Awaited<ReturnType<typeof replica>>;
  let b: Awaited<ReturnType<typeof replica>>;
  let client: storage.StorageClient;

  beforeEach(async () => {
    [a, b] = await Promise.all([replica('a'), replica('b')]);
    client = new storage.StorageClient(...channelTo(`${a.server.address},${b.server.address}`, 'storage', pki.tlsFor('gateway')));
  });

  afterEach(async () => {
    client.close();
    await Promise.all([a.server.close(), b.server.close()]);
  });

  const list = () => callUnary('storage', boundMethod(client, client.list), { key: undefined, at: undefined, limit: 0, continueToken: '', labelSelector: '', fieldSelector: '' });

  it('spreads unary calls round-robin over every address of the list', async () => {
    // The first call waits for the channel; the balancer then takes each ready replica in turn.
    await list();
    await Promise.all(Array.from({ length: 3 }, list));
    a.served.length = 0;
    b.served.length = 0;
    for (let i = 0; i < 10; i++) await list();
    expect([a.served.length, b.served.length]).toEqual([5, 5]);
  });

  it('spreads Calls streams over the replicas, moving streams on as they age', async () => {
    let now = 0;
    const calls = new CallStream('storage', () => client.calls(), { streams: 2, maxStreamAgeMs: 1000, now: () => now });
    try {
      await list();
      for (let round = 0; round < 4; round++) {
        now += 1000;
        for (let i = 0; i < 4; i++) await calls.call(storage.StorageService.currentRevision, {});
      }
      expect(calls.openStreams).toBe(2);
      expect(a.served.filter((m) => m === 'CurrentRevision').length).toBeGreaterThan(0);
      expect(b.served.filter((m) => m === 'CurrentRevision').length).toBeGreaterThan(0);
    } finally {
      calls.close();
    }
  });

  it('keeps no more streams than it was given', async () => {
    const calls = new CallStream('storage', () => client.calls(), { streams: 3 });
    try {
      await Promise.all(Array.from({ length: 20 }, () => calls.call(storage.StorageService.currentRevision, {})));
      expect(calls.openStreams).toBe(3);
    } finally {
      calls.close();
    }
  });
});

/** A CallStream over `client` that counts the streams it opened. */
function countingCallStream(client: storage.StorageClient, options: CallStreamOptions): { calls: CallStream; opened: () => number } {
  let opened = 0;
  const calls = new CallStream(
    'storage',
    () => {
      opened++;
      return client.calls();
    },
    options,
  );
  return { calls, opened: () => opened };
}

describe('a Calls stream replaced while a call is on it', () => {
  it('answers the call on the old stream, then ends it', async () => {
    let release: () => void = () => undefined;
    const r = await replica('a', new Promise<void>((resolve) => (release = resolve)));
    const client = new storage.StorageClient(...channelTo(r.server.address, 'storage', pki.tlsFor('gateway')));
    let now = 0;
    const { calls, opened } = countingCallStream(client, { streams: 1, maxStreamAgeMs: 1000, now: () => now });
    try {
      const slow = calls.call(storage.StorageService.currentRevision, {});
      while (r.served.length === 0) await new Promise((res) => setTimeout(res, 5));
      now += 1000;
      const next = calls.call(storage.StorageService.currentRevision, {});
      release();
      expect((await slow).revision).toBe(1);
      expect((await next).revision).toBe(1);
      expect(opened()).toBe(2);
    } finally {
      calls.close();
      client.close();
      await r.server.close();
    }
  });
});

describe('how long a Calls stream takes calls', () => {
  it('replaces the first streams within seconds, later ones after longer, up to the maximum age', async () => {
    const r = await replica('a');
    const client = new storage.StorageClient(...channelTo(r.server.address, 'storage', pki.tlsFor('gateway')));
    let now = 0;
    const { calls, opened } = countingCallStream(client, { streams: 1, maxStreamAgeMs: 3000, now: () => now });
    const openedAt = async (t: number): Promise<number> => {
      now = t;
      await calls.call(storage.StorageService.currentRevision, {});
      return opened();
    };
    try {
      // Opened at 0: one second. At 1 s: one second. At 2 s: two seconds. At 4 s: three (the maximum).
      expect([await openedAt(0), await openedAt(999), await openedAt(1000), await openedAt(1999), await openedAt(2000)]).toEqual([1, 1, 2, 2, 3]);
      expect([await openedAt(3999), await openedAt(4000), await openedAt(6999), await openedAt(7000)]).toEqual([3, 4, 4, 5]);
    } finally {
      calls.close();
      client.close();
      await r.server.close();
    }
  });
});
