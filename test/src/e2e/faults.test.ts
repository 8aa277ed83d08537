import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import type { ClientRequest } from 'node:http';
import * as https from 'node:https';
import * as path from 'node:path';
import { startEnvironment, type Environment } from '@svc/testenv';
import { connect } from 'nats';
import { until } from './helpers';
import { adminRequest } from './http';

const fixtures = path.join(__dirname, '..', '..', 'fixtures');

interface Seen {
  type: string;
  name?: string;
  v?: string;
  rv?: string;
}

/**
 * Writers and watchers keep running while each component is killed with
 * SIGKILL and brought back by the supervisor: etcd, NATS, storage, the
 * publishing watch-fanout, authn, authz, admission and the gateway. At the
 * end every acknowledged write is stored, every watcher (a raw HTTP watch
 * that re-lists on 410, a client-node informer, a python3-kubernetes watch
 * loop) saw the changes in order and reached the final state, and no
 * request was answered 500.
 */
describe('faults: every component killed in turn', () => {
  let env: Environment;
  const ns = '/api/v1/namespaces/default';
  const label = 'fault=yes';
  const children: ChildProcess[] = [];
  const statuses = new Map<number, number>();
  const acked: number[] = [];
  const created: string[] = [];

  function call(method: string, urlPath: string, body?: string, contentType = 'application/json'): Promise<{ status: number; text: string }> {
    return new Promise((resolve) => {
      const req = https.request(
        `${env.url}${urlPath}`,
        {
          method,
          agent: false,
          ca: fs.readFileSync(env.pki.caCert),
          cert: fs.readFileSync(env.pki.adminCert),
          key: fs.readFileSync(env.pki.adminKey),
          headers: { 'content-type': contentType, ...(body ? { 'content-length': String(Buffer.byteLength(body)) } : {}) },
          timeout: 15000,
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
          res.on('error', () => resolve({ status: 0, text: '' }));
        },
      );
      req.on('error', () => resolve({ status: 0, text: '' })); // connection refused or reset while the gateway restarts
      req.on('timeout', () => req.destroy());
      req.end(body);
    });
  }

  /** Retries until the server acknowledges; only transient answers are acceptable on the way. */
  async function acknowledged(method: string, urlPath: string, body: string, contentType?: string, accept = [200, 201]): Promise<number> {
    const deadline = Date.now() + 60000;
    for (;;) {
      const res = await call(method, urlPath, body, contentType);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status >= 500 && res.status !== 503 && res.status !== 504) throw new Error(`${method} ${urlPath}: ${res.status} ${res.text}`);
      if (accept.includes(res.status)) return res.status;
      if (Date.now() > deadline) throw new Error(`${method} ${urlPath} not acknowledged: ${res.status} ${res.text}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  let writes = 0;
  async function write(): Promise<void> {
    const i = ++writes;
    // A new object (every acknowledged create must be stored) and the next value of the watched one.
    const name = `w-${i}`;
    await acknowledged('POST', `${ns}/configmaps`, JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { i: String(i) } }), undefined, [201, 409]);
    created.push(name);
    await acknowledged('PATCH', `${ns}/configmaps/subject`, JSON.stringify({ data: { v: String(i) } }), 'application/merge-patch+json');
    acked.push(i);
  }

  /** A raw HTTP reflector: list, watch from the list's version, re-watch from the last one seen, re-list on 410. */
  function rawReflector(): { seen: Seen[]; stop: () => void } {
    const seen: Seen[] = [];
    let stopped = false;
    let current: ReturnType<typeof https.request> | undefined;
    const loop = async (): Promise<void> => {
      let rv = '';
      while (!stopped) {
        if (!rv) {
          const list = await call('GET', `${ns}/configmaps?labelSelector=${encodeURIComponent(label)}`);
          if (list.status !== 200) {
            await new Promise((r) => setTimeout(r, 200));
            continue;
          }
          const parsed = JSON.parse(list.text) as { metadata: { resourceVersion: string }; items: Array<{ metadata: { name: string; resourceVersion: string }; data?: Record<string, string> }> };
          for (const item of parsed.items) seen.push({ type: 'LISTED', name: item.metadata.name, v: item.data?.['v'], rv: item.metadata.resourceVersion });
          rv = parsed.metadata.resourceVersion;
        }
        rv = await new Promise<string>((resolve) => {
          let last = rv;
          let buffer = '';
          const req = https.request(
            `${env.url}${ns}/configmaps?watch=true&labelSelector=${encodeURIComponent(label)}&resourceVersion=${rv}&timeoutSeconds=20`,
            { agent: false, ca: fs.readFileSync(env.pki.caCert), cert: fs.readFileSync(env.pki.adminCert), key: fs.readFileSync(env.pki.adminKey) },
            (res) => {
              if (res.statusCode !== 200) {
                res.resume();
                res.on('end', () => resolve(res.statusCode === 410 ? '' : last));
                return;
              }
              res.on('data', (c: Buffer) => {
                buffer += c.toString();
                let nl: number;
                while ((nl = buffer.indexOf('\n')) >= 0) {
                  const line = buffer.slice(0, nl);
                  buffer = buffer.slice(nl + 1);
                  if (!line.trim()) continue;
                  const event = JSON.parse(line) as { type: string; object: { code?: number; metadata?: { name: string; resourceVersion: string }; data?: Record<string, string> } };
                  if (event.type === 'ERROR') {
                    seen.push({ type: 'ERROR', v: String(event.object.code) });
                    if (event.object.code === 410) last = '';
                    continue;
                  }
                  last = event.object.metadata?.resourceVersion ?? last;
                  seen.push({ type: event.type, name: event.object.metadata?.name, v: event.object.data?.['v'], rv: last });
                }
              });
              res.on('end', () => resolve(last));
              res.on('error', () => resolve(last));
            },
          );
          current = req;
          req.on('error', () => setTimeout(() => resolve(last), 200));
          req.end();
        });
      }
    };
    void loop();
    return {
      seen,
      stop: () => {
        stopped = true;
        current?.destroy();
      },
    };
  }

  function fixture(command: string, args: string[]): { seen: Seen[]; done: Promise<void>; child: ChildProcess } {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    const seen: Seen[] = [];
    let buffer = '';
    let stderr = '';
    child.stdout?.on('data', (c: Buffer) => {
      buffer += c.toString();
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (line.trim()) seen.push(JSON.parse(line) as Seen);
      }
    });
    child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    const done = new Promise<void>((resolve, reject) => child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${args[0]} exited ${code}: ${stderr.slice(-2000)}`)))));
    return { seen, done, child };
  }

  /** Values of the watched object in the order a watcher learned them: increasing, and ending with "done". */
  function checkOrder(who: string, seen: Seen[]): void {
    const values = seen.filter((s) => s.name === 'subject' && s.v !== undefined).map((s) => s.v as string);
    expect(`${who}: ${values[values.length - 1]}`).toBe(`${who}: done`);
    const numbers = values.filter((v) => v !== 'done').map(Number);
    for (let i = 1; i < numbers.length; i++) {
      if ((numbers[i] as number) < (numbers[i - 1] as number)) throw new Error(`${who} saw ${numbers[i - 1]} before ${numbers[i]}: ${values.join(',')}`);
    }
  }

  beforeAll(async () => {
    env = await startEnvironment({ watchFanoutReplicas: 2 });
    await acknowledged('POST', `${ns}/configmaps`, JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'subject', labels: { fault: 'yes' } }, data: { v: '0' } }), undefined, [201]);
  });

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await env?.stop(true);
  });

  test('acknowledged writes survive, watchers see every change in order or re-list, nothing answers 500', async () => {
    const raw = rawReflector();
    const informer = fixture(process.execPath, [path.join(fixtures, 'node-informer.mjs'), env.kubeconfigPath, 'default', label]);
    const python = fixture('/usr/bin/python3', [path.join(fixtures, 'python-watch.py'), env.kubeconfigPath, 'default', label]);
    await until(() => (informer.seen.length > 0 && python.seen.some((s) => s.type === 'LISTED') ? true : undefined), 30000);

    const publisher = async (): Promise<string> => {
      // The replica that leads the election publishes; which one it is shows in its log.
      for (const p of env.processes.filter((x) => x.name.startsWith('watch-fanout'))) {
        const log = fs.readFileSync(p.logFile, 'utf8');
        if (log.lastIndexOf('elected publisher') > log.lastIndexOf('stepped down')) return p.name;
      }
      return 'watch-fanout-0';
    };
    const victims = ['etcd', 'nats', 'storage', await publisher(), 'authn', 'authz', 'admission', 'gateway'];
    const recovery: Record<string, number> = {};
    for (const name of victims) {
      for (let i = 0; i < 3; i++) await write();
      const proc = name === 'etcd' ? env.etcd.process : name === 'nats' ? env.nats.process : env.processes.find((p) => p.name === name);
      if (!proc) throw new Error(`no process ${name}`);
      const restarts = proc.restarts;
      const killedAt = Date.now();
      proc.kill('SIGKILL');
      for (let i = 0; i < 3; i++) await write();
      await until(() => (proc.restarts > restarts ? true : undefined), 30000);
      await until(async () => ((await call('GET', '/readyz')).status === 200 ? true : undefined), 60000);
      recovery[name] = Date.now() - killedAt;
    }
    await acknowledged('PATCH', `${ns}/configmaps/subject`, JSON.stringify({ data: { v: 'done' } }), 'application/merge-patch+json');
    process.stdout.write(`recovery ms after SIGKILL (ready again, writes acknowledged): ${JSON.stringify(recovery)}\n`);

    await Promise.all([informer.done, python.done]);
    await until(() => (raw.seen.some((s) => s.v === 'done') ? true : undefined), 60000);
    raw.stop();

    // Every acknowledged write is stored.
    const list = JSON.parse((await call('GET', `${ns}/configmaps`)).text) as { items: Array<{ metadata: { name: string } }> };
    const stored = new Set(list.items.map((i) => i.metadata.name));
    expect(created.filter((n) => !stored.has(n))).toEqual([]);
    expect(acked.length).toBe(victims.length * 6);
    // Nobody got a 500; transient 503/504 or refused connections are what a restart may cost.
    expect([...statuses.keys()].filter((s) => s >= 500 && s !== 503 && s !== 504)).toEqual([]);
    checkOrder('raw watch', raw.seen);
    checkOrder('client-node informer', informer.seen);
    checkOrder('python watch', python.seen);
    // The raw watcher saw every acknowledged value unless it re-listed in between.
    const rawValues = raw.seen.filter((s) => s.name === 'subject' && s.type === 'MODIFIED').map((s) => Number(s.v));
    const relisted = raw.seen.some((s) => s.type === 'LISTED' && raw.seen.indexOf(s) > 0);
    if (!relisted) expect(acked.filter((v) => !rawValues.includes(v))).toEqual([]);
  }, 600000);
});

/**
 * Someone deletes the change stream from NATS: the publishing watch-fanout
 * creates it again, writes keep working, and every watcher either keeps
 * going or is ended with a 410 and re-lists to the current state.
 */
describe('faults: the change stream deleted', () => {
  let env: Environment;
  const ns = '/api/v1/namespaces/default';

  beforeAll(async () => {
    env = await startEnvironment();
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test('the stream comes back and watchers re-list instead of missing changes', async () => {
    const create = await adminRequest(env, 'POST', `${ns}/configmaps`, JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'streamed' }, data: { v: '0' } }));
    expect(create.status).toBe(201);
    const rv = (create.json()['metadata'] as { resourceVersion: string }).resourceVersion;
    let body = '';
    let ended = false;
    const req = https.request(`${env.url}${ns}/configmaps?watch=1&resourceVersion=${rv}&fieldSelector=metadata.name%3Dstreamed`, { ca: fs.readFileSync(env.pki.caCert), cert: fs.readFileSync(env.pki.adminCert), key: fs.readFileSync(env.pki.adminKey), agent: false }, (res) => {
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => (ended = true));
    });
    req.end();
    await new Promise((r) => setTimeout(r, 300));
    const fanout = env.internalPki.identities['watch-fanout'];
    const nc = await connect({ servers: env.nats.url, tls: { caFile: env.internalPki.caCert, certFile: fanout.cert, keyFile: fanout.key } });
    expect(await (await nc.jetstreamManager()).streams.delete('SVC_CHANGES')).toBe(true);
    await nc.close();
    for (let i = 1; i <= 5; i++) {
      const res = await adminRequest(env, 'PATCH', `${ns}/configmaps/streamed`, JSON.stringify({ data: { v: String(i) } }), { 'content-type': 'application/merge-patch+json' });
      expect(res.status).toBe(200);
      await new Promise((r) => setTimeout(r, 200));
    }
    // Either the watch saw the last change, or it was ended (410 or closed) so its client re-lists.
    await until(() => (body.includes('"v":"5"') || body.includes('"code":410') || ended ? true : undefined), 30000);
    await until(async () => ((await adminRequest(env, 'GET', '/readyz')).status === 200 ? true : undefined), 30000);
    // A fresh watch after the stream came back sees new changes. Its resourceVersion may predate
    // the history the new publisher started (it began at etcd's head when it came back, which can
    // be after the last patch): then the watch is answered 410, and a client lists and watches again.
    const latest = await adminRequest(env, 'GET', `${ns}/configmaps/streamed`);
    expect((latest.json()['data'] as Record<string, string>)['v']).toBe('5');
    let fresh = '';
    let freshEnded = false;
    let req2: ClientRequest | undefined;
    const watchFrom = (rv: string): void => {
      fresh = '';
      freshEnded = false;
      req2 = https.request(`${env.url}${ns}/configmaps?watch=1&resourceVersion=${rv}&fieldSelector=metadata.name%3Dstreamed`, { ca: fs.readFileSync(env.pki.caCert), cert: fs.readFileSync(env.pki.adminCert), key: fs.readFileSync(env.pki.adminKey), agent: false }, (res) => {
        res.on('data', (c: Buffer) => (fresh += c.toString()));
        res.on('end', () => (freshEnded = true));
      });
      req2.end();
    };
    watchFrom((latest.json()['metadata'] as { resourceVersion: string }).resourceVersion);
    await new Promise((r) => setTimeout(r, 300));
    let relists = 0;
    let attempt = 0;
    await until(async () => {
      if (fresh.includes('"code":410') || freshEnded) {
        relists++;
        req2?.destroy();
        const listed = await adminRequest(env, 'GET', `${ns}/configmaps?fieldSelector=metadata.name%3Dstreamed`);
        watchFrom((listed.json()['metadata'] as { resourceVersion: string }).resourceVersion);
        await new Promise((r) => setTimeout(r, 300));
      }
      // A new value each time: a patch that changes nothing sends no event (the object may already hold the last one).
      attempt++;
      await adminRequest(env, 'PATCH', `${ns}/configmaps/streamed`, JSON.stringify({ data: { v: `after-${attempt}` } }), { 'content-type': 'application/merge-patch+json' });
      return fresh.includes('"v":"after-') ? true : undefined;
    }, 30000);
    // Once the new history covers it, a watch is not ended again.
    expect(relists).toBeLessThanOrEqual(3);
    req.destroy();
    req2?.destroy();
  });
});
