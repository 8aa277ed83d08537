import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Etcd3 } from 'etcd3';
import { ENCRYPTION_CONFIG_FILE, encryptionConfigText, newEncryptionKey, writeEncryptionConfig, type Environment } from '@svc/testenv';
import { cpuPerOp, runConcurrent, type Client } from './harness';

/**
 * The cost of encrypting Secrets at rest: Secret creates through the
 * gateway with the environment's configuration (aesgcm first) and with
 * `identity` first (plain text, the aesgcm key still reading), in the same
 * environment, in alternating rounds (each mode first in turn) so drift in
 * the machine's load hits both.
 * The configuration is switched by storage's automatic reload, and each
 * round checks etcd holds its values in the form it measures.
 */
export interface SecretEncryptionFigures {
  concurrency: number;
  createsPerRound: number;
  createsPerSecond: { aesgcm: number[]; identity: number[] };
  /** CPU of storage per create, ms (the process that encrypts), per round. */
  storageCpuMsPerCreate: { aesgcm: number[]; identity: number[] };
}

/** Rounds of each mode (`BENCH_SECRET_ROUNDS`, default 3): the machine's drift shows in their spread. */
const ROUNDS = Number(process.env['BENCH_SECRET_ROUNDS'] ?? '3');

function reloadsOf(env: Environment): number {
  const file = path.join(env.dir, 'logs', 'storage.log');
  return fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.includes('encryption configuration reloaded')).length;
}

async function switchTo(env: Environment, identityFirst: boolean, key: string): Promise<void> {
  const file = path.join(env.dir, ENCRYPTION_CONFIG_FILE);
  if (!fs.existsSync(file)) throw new Error('the environment runs without encryption at rest');
  const before = reloadsOf(env);
  const plain = encryptionConfigText([{ name: 'key1', secret: key }]);
  // identity first writes plain text; the aesgcm key still reads what it wrote.
  const text = identityFirst ? plain.replace(/(    providers:\n)([\s\S]*?)(      - identity: \{\}\n)/, '$1$3$2') : plain;
  // The same content is no change: storage has nothing to reload.
  if (fs.readFileSync(file, 'utf8') === text) return;
  writeEncryptionConfig(file, text);
  const deadline = Date.now() + 120_000;
  while (reloadsOf(env) <= before) {
    if (Date.now() > deadline) throw new Error('storage did not reload the encryption configuration');
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function benchSecretEncryption(env: Environment, client: Client, etcd: Etcd3, creates: number, concurrency: number): Promise<SecretEncryptionFigures> {
  const file = path.join(env.dir, ENCRYPTION_CONFIG_FILE);
  if (!fs.existsSync(file)) throw new Error('the environment runs without encryption at rest');
  const key = /secret: (\S+)/.exec(fs.readFileSync(file, 'utf8'))?.[1] ?? newEncryptionKey();
  const figures: SecretEncryptionFigures = { concurrency, createsPerRound: creates, createsPerSecond: { aesgcm: [], identity: [] }, storageCpuMsPerCreate: { aesgcm: [], identity: [] } };
  const data = { value: Buffer.alloc(512, 's').toString('base64') };
  for (let i = 0; i < 50; i++) await client.request('POST', '/api/v1/namespaces/default/secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name: `warm-secret-${i}` }, data });
  for (let round = 0; round < ROUNDS; round++) {
    // Which mode goes first alternates too, so neither always follows the other.
    for (const mode of round % 2 === 0 ? (['aesgcm', 'identity'] as const) : (['identity', 'aesgcm'] as const)) {
      await switchTo(env, mode === 'identity', key);
      const prefix = `sec-${mode}-${round}`;
      let rate = 0;
      const cpu = await cpuPerOp(env, creates, async () => {
        rate = await runConcurrent(creates, concurrency, async (i) => {
          const res = await client.request('POST', '/api/v1/namespaces/default/secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name: `${prefix}-${i}` }, data });
          if (res.status !== 201) throw new Error(`secret create answered ${res.status}: ${res.body}`);
        });
      });
      const stored = (await etcd.get(`/registry/secrets/default/${prefix}-0`).buffer())?.toString('latin1') ?? '';
      if (stored.startsWith('svc:enc:aesgcm:v1:key1:') !== (mode === 'aesgcm')) throw new Error(`round ${mode}: etcd holds ${stored.slice(0, 24)}`);
      figures.createsPerSecond[mode].push(Math.round(rate));
      figures.storageCpuMsPerCreate[mode].push(cpu['storage'] ?? 0);
    }
  }
  // Leave the environment as it started.
  await switchTo(env, false, key);
  return figures;
}

export function formatSecretEncryption(f: SecretEncryptionFigures): string[] {
  const avg = (xs: number[]): number => Math.round((xs.reduce((a, b) => a + b, 0) / Math.max(xs.length, 1)) * 100) / 100;
  const row = (label: string, a: string, b: string): string => `  ${label.padEnd(36)}${a.padEnd(22)}${b}`;
  return [
    `Secret creates at concurrency ${f.concurrency}, ${f.createsPerRound} per round, alternating rounds`,
    row('', 'aesgcm', 'identity (plain)'),
    row('creates/s, each round', f.createsPerSecond.aesgcm.join(', '), f.createsPerSecond.identity.join(', ')),
    row('creates/s, mean', String(avg(f.createsPerSecond.aesgcm)), String(avg(f.createsPerSecond.identity))),
    row('storage CPU per create, ms, mean', String(avg(f.storageCpuMsPerCreate.aesgcm)), String(avg(f.storageCpuMsPerCreate.identity))),
  ];
}
