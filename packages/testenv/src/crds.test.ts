import * as fs from 'node:fs';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { crdDocumentsOf, uninstallCrds, type AdminTls } from './crds';
import { ensureServingCertificate } from './pki';

/** Definitions from files and objects, and their removal against a server that answers as the gateway does. */
describe('custom resource definitions', () => {
  let dir: string;
  let server: https.Server;
  let base: string;
  let tls: AdminTls;
  /** What the server holds, by name; `sticky` ones stay after a DELETE (a finalizer that never ends). */
  const held = new Map<string, { sticky: boolean }>();
  const seen: string[] = [];
  let failDelete = false;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'testenv-crds-'));
    const files = await ensureServingCertificate(path.join(dir, 'pki'), ['127.0.0.1']);
    tls = { ca: fs.readFileSync(files.caCert), cert: fs.readFileSync(files.cert), key: fs.readFileSync(files.key) };
    server = https.createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
      const name = decodeURIComponent((req.url ?? '').split('/').pop() ?? '');
      seen.push(`${req.method ?? ''} ${name}`);
      const send = (status: number, body: unknown): void => {
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      };
      const crd = held.get(name);
      if (req.method === 'DELETE' && failDelete) return send(500, { kind: 'Status', code: 500, message: 'etcd is down' });
      if (!crd) return send(404, { kind: 'Status', code: 404, reason: 'NotFound' });
      if (req.method === 'DELETE' && !crd.sticky) held.delete(name);
      return send(200, { kind: 'CustomResourceDefinition', metadata: { name }, status: { conditions: [{ type: 'Terminating', status: 'True' }] } });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  beforeEach(() => {
    held.clear();
    seen.length = 0;
    failDelete = false;
  });

  test('definitions from a file and from objects, in the order given; an object of another kind or without a name is refused', () => {
    const file = path.join(dir, 'a.yaml');
    fs.writeFileSync(file, 'apiVersion: apiextensions.svc.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: as.example.com}\n');
    const object = { apiVersion: 'apiextensions.svc.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'bs.example.com' } };
    expect(crdDocumentsOf([object, file]).map((d) => (d['metadata'] as { name: string }).name)).toEqual(['bs.example.com', 'as.example.com']);
    expect(() => crdDocumentsOf([{ kind: 'ConfigMap', metadata: { name: 'x' } }])).toThrow('crds[0]: expected kind CustomResourceDefinition, found ConfigMap');
    expect(() => crdDocumentsOf([file, { kind: 'CustomResourceDefinition', metadata: {} }])).toThrow('crds[1]: metadata.name is required');
  });

  test('uninstall deletes each definition and waits until it is gone; one already gone is fine', async () => {
    held.set('as.example.com', { sticky: false });
    await uninstallCrds(base, tls, ['as.example.com', 'gone.example.com']);
    expect(held.size).toBe(0);
    expect(seen).toEqual(['DELETE as.example.com', 'DELETE gone.example.com', 'GET as.example.com', 'GET gone.example.com']);
  });

  test('a definition that stays is an error after the timeout, naming it', async () => {
    held.set('stuck.example.com', { sticky: true });
    await expect(uninstallCrds(base, tls, ['stuck.example.com'], 300)).rejects.toThrow(/the definition stuck\.example\.com was not removed in time \(200 .*Terminating/);
  });

  test('a refused delete is an error with the server status', async () => {
    held.set('as.example.com', { sticky: false });
    failDelete = true;
    await expect(uninstallCrds(base, tls, ['as.example.com'])).rejects.toThrow('deleting the definition as.example.com: 500 {"kind":"Status","code":500,"message":"etcd is down"}');
  });
});
