import { X509Certificate } from 'node:crypto';
import * as fs from 'node:fs';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { prepareWebhooks, readWebhookDocuments } from './webhooks';

describe('webhook install options', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'testenv-webhooks-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const manifest = `
apiVersion: v1
kind: Service
metadata: {name: webhook-service, namespace: system}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: mutating}
webhooks:
- {name: mpod.example.com, sideEffects: None, admissionReviewVersions: [v1], clientConfig: {service: {name: webhook-service, namespace: system, path: /mutate-v1-pod}}}
- {name: nopath.example.com, sideEffects: None, admissionReviewVersions: [v1], clientConfig: {service: {name: webhook-service, namespace: system}}}
---
apiVersion: admissionregistration.svc.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: validating}
webhooks:
- {name: vpod.example.com, sideEffects: None, admissionReviewVersions: [v1], clientConfig: {url: "https://elsewhere.example.com:9443/validate"}}
`;

  it('reads configurations of either group name from a directory, skipping other kinds', () => {
    fs.writeFileSync(path.join(dir, 'manifests.yaml'), manifest);
    fs.writeFileSync(path.join(dir, 'notes.txt'), 'not a manifest');
    const docs = readWebhookDocuments([dir]);
    expect(docs.mutating.map((d) => d.metadata.name)).toEqual(['mutating']);
    expect(docs.validating.map((d) => d.metadata.name)).toEqual(['validating']);
  });

  it('refuses a version other than v1, and a missing path unless told to skip it', () => {
    const file = path.join(dir, 'old.yaml');
    fs.writeFileSync(file, 'apiVersion: admissionregistration.k8s.io/v1beta1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: old}\n');
    expect(() => readWebhookDocuments([file])).toThrow(/only v1 is supported for ValidatingWebhookConfiguration \(name: old/);
    expect(() => readWebhookDocuments([path.join(dir, 'missing')])).toThrow(/ENOENT/);
    expect(readWebhookDocuments([path.join(dir, 'missing')], true)).toEqual({ mutating: [], validating: [] });
  });

  it('points service references at the local address with the CA, and serves with a certificate the CA trusts', async () => {
    fs.writeFileSync(path.join(dir, 'manifests.yaml'), manifest);
    const serving = await prepareWebhooks(
      { paths: [dir], validatingWebhooks: [{ metadata: { name: 'from-object' }, webhooks: [{ name: 'obj.example.com', clientConfig: { service: { namespace: 'ns', name: 'svc', path: 'relative' } } }] }] },
      path.join(dir, 'certs'),
    );
    expect(serving.localServingHost).toBe('127.0.0.1');
    expect(serving.localServingPort).toBeGreaterThan(0);
    const base = `https://127.0.0.1:${serving.localServingPort}`;
    const caBundle = serving.localServingCaData.toString('base64');
    const [mutating] = serving.mutatingWebhooks;
    expect(mutating?.apiVersion).toBe('admissionregistration.svc.io/v1');
    expect(mutating?.kind).toBe('MutatingWebhookConfiguration');
    expect(mutating?.webhooks?.map((w) => w.clientConfig)).toEqual([
      { url: `${base}/mutate-v1-pod`, caBundle },
      { url: `${base}/`, caBundle },
    ]);
    expect(serving.validatingWebhooks.map((c) => c.webhooks?.[0]?.clientConfig)).toEqual([
      { url: 'https://elsewhere.example.com:9443/validate', caBundle },
      { url: `${base}/relative`, caBundle },
    ]);
    expect(serving.url('/x')).toBe(`${base}/x`);
    for (const f of ['ca.crt', 'tls.crt', 'tls.key']) expect(fs.existsSync(path.join(serving.localServingCertDir, f))).toBe(true);

    const server = https.createServer(serving.tls, (_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => server.listen(serving.localServingPort, serving.localServingHost, resolve));
    try {
      const get = (url: string, servername?: string) =>
        new Promise<string>((resolve, reject) => {
          https
            .get(url, { ca: serving.localServingCaData, ...(servername ? { servername } : {}) }, (res) => {
              let body = '';
              res.on('data', (c: Buffer) => (body += c.toString()));
              res.on('end', () => resolve(body));
            })
            .on('error', reject);
        });
      expect(await get(serving.url('/'))).toBe('ok');
      expect(await get(`https://localhost:${(server.address() as AddressInfo).port}/`)).toBe('ok');
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('takes a given port and an external name for the URLs and the certificate', async () => {
    const serving = await prepareWebhooks(
      { localServingPort: 18443, localServingHostExternalName: 'webhooks.test', mutatingWebhooks: [{ metadata: { name: 'm' }, webhooks: [{ name: 'm.example.com', clientConfig: { service: { namespace: 'a', name: 'b', path: '/m' } } }] }] },
      path.join(dir, 'certs'),
    );
    expect(serving.localServingPort).toBe(18443);
    expect(serving.mutatingWebhooks[0]?.webhooks?.[0]?.clientConfig.url).toBe('https://webhooks.test:18443/m');
    const cert = new X509Certificate(fs.readFileSync(serving.certFile));
    expect(cert.subjectAltName).toContain('DNS:webhooks.test');
    expect(cert.subjectAltName).toContain('IP Address:127.0.0.1');
    expect(cert.verify(new X509Certificate(serving.localServingCaData).publicKey)).toBe(true);
  });
});
