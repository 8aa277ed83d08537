import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { ApiObject, ConversionWebhookConfig, ResourceDefinition } from '@svc/apimachinery';
import { WebhookAgents } from '@svc/service-kit';
import { makeTestPki, type TestPki } from '@svc/service-kit/testing/pki';
import { DEFAULT_WEBHOOK_CONVERTER_OPTIONS, WebhookConverter, conversionWebhooks } from './converter';

/** A conversion webhook over loopback HTTPS that counts the TCP connections made to it. */
describe('kept-alive connections to conversion webhooks', () => {
  let pki: TestPki;
  let server: https.Server;
  let connections = 0;
  let webhook: ConversionWebhookConfig;
  const object: ApiObject = { apiVersion: 'example.com/v1', kind: 'Thing', metadata: { name: 't', uid: 'u' }, spec: {} };

  beforeAll(async () => {
    pki = makeTestPki('conversion-agents-ca');
    server = https.createServer(pki.tlsFor('webhook'), (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const review = JSON.parse(Buffer.concat(chunks).toString()) as { apiVersion: string; request: { uid: string; desiredAPIVersion: string; objects: ApiObject[] } };
        const convertedObjects = review.request.objects.map((o) => ({ ...o, apiVersion: review.request.desiredAPIVersion }));
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ apiVersion: review.apiVersion, kind: 'ConversionReview', response: { uid: review.request.uid, result: { status: 'Success' }, convertedObjects } }));
      });
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    webhook = { url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/convert`, caBundle: pki.tlsFor('webhook').ca, conversionReviewVersions: ['v1'] };
  });

  afterAll(() => {
    server?.closeAllConnections();
    server?.close();
    pki?.remove();
  });

  beforeEach(() => (connections = 0));

  const review = async (converter: WebhookConverter): Promise<void> => {
    const [converted] = await converter.convert([object], 'example.com/v2');
    expect(converted?.apiVersion).toBe('example.com/v2');
  };

  it('sends two reviews over one connection', async () => {
    const agents = new WebhookAgents();
    const converter = new WebhookConverter(webhook, { ...DEFAULT_WEBHOOK_CONVERTER_OPTIONS, agents });
    await review(converter);
    await review(converter);
    expect(connections).toBe(1);
    expect(agents.size).toBe(1);
    agents.destroy();
  });

  it('opens a connection per review without agents', async () => {
    const converter = new WebhookConverter(webhook);
    await review(converter);
    await review(converter);
    expect(connections).toBe(2);
  });

  it('drops the connections of a webhook no served definition uses, and keeps those still used', async () => {
    const agents = new WebhookAgents();
    const converter = new WebhookConverter(webhook, { ...DEFAULT_WEBHOOK_CONVERTER_OPTIONS, agents });
    await review(converter);
    const using = { storageVersioning: { conversion: { strategy: 'Webhook', webhook } } } as unknown as ResourceDefinition;
    agents.retain(conversionWebhooks([using]));
    await review(converter);
    expect([connections, agents.size]).toEqual([1, 1]);
    // The definition changed its CA bundle (or went): its old agent goes.
    agents.retain(conversionWebhooks([{ storageVersioning: { conversion: { strategy: 'Webhook', webhook: { ...webhook, caBundle: Buffer.from('other') } } } } as unknown as ResourceDefinition]));
    expect(agents.size).toBe(0);
    await review(converter);
    expect(connections).toBe(2);
    agents.destroy();
  });
});
