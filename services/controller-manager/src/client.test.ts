import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadKubeconfig } from './client';

describe('loadKubeconfig', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-kubeconfig-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('reads the current context with embedded certificates', () => {
    const file = path.join(dir, 'embedded');
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    fs.writeFileSync(
      file,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        '- name: other',
        '  cluster: {server: "https://wrong:1"}',
        '- name: svc',
        `  cluster: {server: "https://127.0.0.1:6443/", certificate-authority-data: ${b64('CA')}}`,
        'users:',
        `- name: cm`,
        `  user: {client-certificate-data: ${b64('CERT')}, client-key-data: ${b64('KEY')}}`,
        'contexts:',
        '- name: first',
        '  context: {cluster: other, user: cm}',
        '- name: mine',
        '  context: {cluster: svc, user: cm}',
        'current-context: mine',
      ].join('\n'),
    );
    const creds = loadKubeconfig(file);
    expect(creds.server).toBe('https://127.0.0.1:6443');
    expect(creds.ca?.toString()).toBe('CA');
    expect(creds.cert?.toString()).toBe('CERT');
    expect(creds.key?.toString()).toBe('KEY');
  });

  it('reads files named relative to the kubeconfig, and tokens', () => {
    fs.writeFileSync(path.join(dir, 'ca.crt'), 'FILE-CA');
    const file = path.join(dir, 'files');
    fs.writeFileSync(
      file,
      'clusters:\n- name: c\n  cluster: {server: "https://gw:6443", certificate-authority: ca.crt}\nusers:\n- name: u\n  user: {token: abc}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n',
    );
    expect(loadKubeconfig(file)).toEqual({ server: 'https://gw:6443', ca: Buffer.from('FILE-CA'), token: 'abc' });
  });

  it('names the file when it has no server', () => {
    const file = path.join(dir, 'empty');
    fs.writeFileSync(file, 'kind: Config\n');
    expect(() => loadKubeconfig(file)).toThrow(`${file}: clusters[].cluster.server: no cluster server in the current context`);
  });
});
