import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';

/**
 * Finds the etcd and NATS server binaries (Debian's `etcd-server` and
 * `nats-server` packages install them; `scripts/setup` installs the packages
 * when missing). ETCD_BIN and NATS_SERVER_BIN override the search.
 */
function find(name: string, envVar: string, extraDirs: string[]): string {
  const fromEnv = process.env[envVar];
  if (fromEnv) return fromEnv;
  try {
    const out = execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
    if (out) return out;
  } catch {
    // not on PATH
  }
  for (const dir of extraDirs) {
    const candidate = `${dir}/${name}`;
    if (fs.existsSync(candidate)) return candidate;
  }
  throw new Error(`${name} not found: install it (make setup installs Debian's package) or set ${envVar}`);
}

export function etcdBinary(): string {
  return find('etcd', 'ETCD_BIN', ['/usr/bin', '/usr/local/bin', '/usr/sbin']);
}

export function natsBinary(): string {
  return find('nats-server', 'NATS_SERVER_BIN', ['/usr/sbin', '/usr/bin', '/usr/local/bin']);
}
