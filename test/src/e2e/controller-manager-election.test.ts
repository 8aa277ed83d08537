import * as http from 'node:http';
import { startEnvironment, tailLog, type Environment, type ManagedProcess } from '@svc/testenv';
import { until } from './helpers';
import { adminRequest } from './http';

/**
 * Two controller-manager replicas elect a leader through the
 * `coordination.svc.io/v1` Lease `svc-system/svc-controller-manager`:
 * exactly one holds it and runs the controllers; when its process dies the
 * other takes the Lease over once it has not been renewed for the lease
 * duration, and the controllers work again.
 */
const LEASE_SECONDS = 6;
const RETRY_SECONDS = 1;
const LEASE = '/apis/coordination.svc.io/v1/namespaces/svc-system/leases/svc-controller-manager';

interface LeaderState {
  identity: string;
  leading: boolean;
  leader?: string;
}

function leaderState(address: string): Promise<LeaderState | undefined> {
  return new Promise((resolve) => {
    const req = http.get(`http://${address}/healthz/leader-election`, { timeout: 2000 }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        try {
          resolve(JSON.parse(body) as LeaderState);
        } catch {
          resolve(undefined);
        }
      });
    });
    req.on('error', () => resolve(undefined));
    req.on('timeout', () => req.destroy());
  });
}

describe('controller-manager leader election', () => {
  let env: Environment;
  const names = ['controller-manager', 'controller-manager-1'];

  beforeAll(async () => {
    // Unsupervised, so a killed replica stays dead and the other is the one to take over.
    env = await startEnvironment({
      controllerManagers: 2,
      supervise: false,
      serviceArgs: {
        'controller-manager': [`--leader-elect-lease-duration=${LEASE_SECONDS}s`, '--leader-elect-renew-deadline=4s', `--leader-elect-retry-period=${RETRY_SECONDS}s`],
      },
    });
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  const lease = async (): Promise<{ holderIdentity?: string; leaseTransitions?: number; leaseDurationSeconds?: number; renewTime?: string } | undefined> => {
    const res = await adminRequest(env, 'GET', LEASE);
    return res.status === 200 ? (res.json() as { spec: Record<string, never> }).spec : undefined;
  };

  test('exactly one replica holds the Lease; a controller-manager that dies is replaced within the lease duration', async () => {
    const holder = await until(async () => (await lease())?.holderIdentity || undefined, 30000);
    const states = await until(async () => {
      const all = await Promise.all(names.map((n) => leaderState(env.addresses[n] as string)));
      return all.every((s) => s !== undefined) ? (all as LeaderState[]) : undefined;
    }, 10000);
    // One leads, the other stands by and knows who leads.
    expect(states.filter((s) => s.leading)).toHaveLength(1);
    const leaderIndex = states.findIndex((s) => s.leading);
    const standbyIndex = 1 - leaderIndex;
    expect(states[leaderIndex]?.identity).toBe(holder);
    expect(states[standbyIndex]?.identity).not.toBe(holder);
    await until(async () => ((await leaderState(env.addresses[names[standbyIndex] as string] as string))?.leader === holder ? true : undefined), 10000);
    const spec = await lease();
    expect(spec?.leaseDurationSeconds).toBe(LEASE_SECONDS);
    // The standby is healthy and ready while it waits.
    const readyz = (n: string): Promise<string> =>
      new Promise((resolve) => {
        http
          .get(`http://${env.addresses[n]}/readyz`, (res) => {
            let body = '';
            res.on('data', (c: Buffer) => (body += c.toString()));
            res.on('end', () => resolve(`${res.statusCode ?? 0} ${body}`));
          })
          .on('error', (err) => resolve(`0 ${err.message}`));
      });
    for (const n of names) {
      const ready = await until(async () => {
        const answer = await readyz(n);
        return answer.startsWith('200 ') ? answer : undefined;
      }, 20000).catch(async () => `${await readyz(n)}\n${tailLog(env.processes.find((p) => p.name === n)?.logFile ?? '', 15)}`);
      expect(`${n}: ${ready}`).toMatch(new RegExp(`^${n}: 200 ok \\((leading|standby; leader: ${holder})\\)$`));
    }
    // A controller works under the first leader.
    expect((await adminRequest(env, 'POST', '/api/v1/namespaces', JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'before-failover' } }))).status).toBe(201);
    await until(async () => ((await adminRequest(env, 'GET', '/api/v1/namespaces/before-failover/serviceaccounts/default')).status === 200 ? true : undefined), 20000);

    // The leader's process dies (SIGKILL to its pid: no release of the Lease).
    const leader = env.processes.find((p) => p.name === names[leaderIndex]) as ManagedProcess;
    const transitions = spec?.leaseTransitions ?? 0;
    const lastRenewal = Date.parse((await lease())?.renewTime ?? '');
    leader.kill('SIGKILL');
    const killedAt = Date.now();
    await until(() => (leader.alive() ? undefined : true), 5000);
    const newHolder = await until(async () => {
      const h = (await lease())?.holderIdentity;
      return h && h !== holder ? h : undefined;
    }, (LEASE_SECONDS + 4 * RETRY_SECONDS) * 1000 + 5000);
    const tookOverAfter = Date.now() - killedAt;
    expect(newHolder).toBe(states[standbyIndex]?.identity);
    // Within the lease duration and a retry period of the last renewal the standby saw (itself at most a retry period
    // before the kill and seen at most a retry period later), plus jitter and the time to notice here.
    expect(tookOverAfter).toBeLessThanOrEqual((LEASE_SECONDS + 2 * RETRY_SECONDS) * 1000 + 2000);
    expect(Date.now() - lastRenewal).toBeGreaterThanOrEqual(LEASE_SECONDS * 1000 - 1000);
    expect((await lease())?.leaseTransitions).toBe(transitions + 1);
    const after = await leaderState(env.addresses[names[standbyIndex] as string] as string);
    expect(after?.leading).toBe(true);

    // The controllers run again: a new namespace gets its default ServiceAccount.
    expect((await adminRequest(env, 'POST', '/api/v1/namespaces', JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'after-failover' } }))).status).toBe(201);
    await until(async () => ((await adminRequest(env, 'GET', '/api/v1/namespaces/after-failover/serviceaccounts/default')).status === 200 ? true : undefined), 20000);
  }, 120000);
});
