import { spawnSync } from 'node:child_process';
import * as path from 'node:path';

/**
 * The gateway calls the other services through their client entry points
 * only: its process never loads etcd's client, nor any service's server,
 * store or publisher code (a client may load its contract module). The
 * check loads the gateway's real `main` (with
 * `--help`, so it starts nothing) in a fresh node and lists every module
 * that process required.
 */
function modulesLoadedByGatewayMain(): string[] {
  const main = path.join(__dirname, 'main.js');
  const script = [
    "process.argv.push('--', '--help');",
    `require(${JSON.stringify(main)});`,
    "process.stderr.write('\\nMODULES ' + JSON.stringify(Object.keys(require.cache)) + '\\n');",
  ].join('\n');
  const run = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30000 });
  const line = run.stderr.split('\n').find((l) => l.startsWith('MODULES '));
  if (!line) throw new Error(`the gateway main did not load: ${run.stderr}`);
  return JSON.parse(line.slice('MODULES '.length)) as string[];
}

describe('gateway module boundaries', () => {
  const loaded = modulesLoadedByGatewayMain();

  it('loads the gateway itself and the service clients it calls', () => {
    expect(loaded.some((m) => m.endsWith(path.join('gateway', 'dist', 'server.js')))).toBe(true);
    for (const service of ['storage', 'authn', 'authz', 'admission', 'watch-fanout']) {
      expect(loaded.some((m) => m.includes(path.join('services', service, 'dist', 'client.js')))).toBe(true);
    }
  });

  it('never loads etcd3 or another service implementation', () => {
    expect(loaded.filter((m) => m.includes(`${path.sep}etcd3${path.sep}`))).toEqual([]);
    const implementation = /services[\\/](storage|authn|authz|admission|watch-fanout)[\\/]dist[\\/](?!client\.js$|contract\.js$|subscriber\.js$|bus\.js$|nats-options\.js$)/;
    expect(loaded.filter((m) => implementation.test(m))).toEqual([]);
  });
});
