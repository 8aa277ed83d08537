import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Encryption at rest in an environment: on by default, Secrets encrypted
 * with aesgcm under a key generated once per environment directory (kept
 * there with 0600 permissions, reused by later starts of the same
 * directory, as `make up` restarts). aesgcm rather than aescbc: it is
 * authenticated (an altered value or a wrong key is an error naming the
 * key, never garbage), binds each value to its etcd key, and has no padding
 * oracle; the original's documentation advises against aescbc. Its limit
 * (a key should be rotated well before 2^32 writes under random nonces) is
 * far beyond the writes of Secrets in a cluster's life.
 */
export interface EncryptionEnvironmentOptions {
  /** An EncryptionConfiguration to use as it is, instead of the generated one. */
  configFile?: string;
  /** --encryption-provider-config-automatic-reload (default true). */
  automaticReload?: boolean;
}

export const ENCRYPTION_CONFIG_FILE = 'encryption-config.yaml';

/** The configuration the environment generates: Secrets with aesgcm under `key1`. */
export function encryptionConfigText(keys: { name: string; secret: string }[]): string {
  const lines = ['apiVersion: apiserver.config.svc.io/v1', 'kind: EncryptionConfiguration', 'resources:', '  - resources:', '      - secrets', '    providers:', '      - aesgcm:', '          keys:'];
  for (const k of keys) lines.push(`            - name: ${k.name}`, `              secret: ${k.secret}`);
  lines.push('      - identity: {}', '');
  return lines.join('\n');
}

/** A fresh 32-byte key, base64 encoded, as a configuration's `secret`. */
export function newEncryptionKey(): string {
  return randomBytes(32).toString('base64');
}

/** Writes the configuration with 0600 permissions (replacing it in one rename, so a reader never sees half a file). */
export function writeEncryptionConfig(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text, { mode: 0o600 });
  fs.renameSync(tmp, file);
}

/** The environment's configuration file: generated on first start in `dir`, kept after. */
export function ensureEncryptionConfig(dir: string): string {
  const file = path.join(dir, ENCRYPTION_CONFIG_FILE);
  if (!fs.existsSync(file)) writeEncryptionConfig(file, encryptionConfigText([{ name: 'key1', secret: newEncryptionKey() }]));
  return file;
}

/** The flags of storage and watch-fanout; none when encryption is turned off (`false`). */
export function encryptionArgs(dir: string, option: EncryptionEnvironmentOptions | false | undefined): { file: string | undefined; args: string[] } {
  if (option === false) return { file: undefined, args: [] };
  const file = option?.configFile ?? ensureEncryptionConfig(dir);
  return { file, args: [`--encryption-provider-config=${file}`, ...(option?.automaticReload === false ? [] : ['--encryption-provider-config-automatic-reload'])] };
}
