import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import { makeTestPki, type TestPki } from './testing/pki';
import { postJson } from './webhook';
import { WebhookAgents, type WebhookEndpoint } from './webhook-agents';

/** Kept-alive connections to a webhook over loopback HTTPS that counts the TCP connections made to it. */
describe('webhook agents', () => {
  let pki: TestPki;
  let server: https.Server;
  let connections = 0;
  let endpoint: WebhookEndpoint;

  beforeAll(async () => {
    pki = makeTestPki('webhook-agents-ca');
    server = https.createServer(pki.tlsFor('webhook'), (req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = { url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, caBundle: pki.tlsFor('webhook').ca };
  });

  afterAll(() => {
    server?.closeAllConnections();
    server?.close();
    pki?.remove();
  });

  beforeEach(() => (connections = 0));

  const call = async (agents: WebhookAgents, to: WebhookEndpoint): Promise<void> => {
    const reply = await postJson({ server: to.url, ...(to.caBundle ? { ca: Buffer.from(to.caBundle) } : {}) }, '{}', 5000, 1024, agents.agentFor(to));
    expect(reply.status).toBe(200);
  };

  it('makes two calls over one connection, and a new one after its endpoint is no longer retained', async () => {
    const agents = new WebhookAgents();
    await call(agents, endpoint);
    await call(agents, endpoint);
    expect([connections, agents.size]).toEqual([1, 1]);
    agents.retain([endpoint]);
    expect(agents.size).toBe(1);
    // The webhook's CA bundle changed: the agent of the old one goes.
    agents.retain([{ ...endpoint, caBundle: Buffer.from('other') }]);
    expect(agents.size).toBe(0);
    await call(agents, endpoint);
    expect(connections).toBe(2);
    agents.destroy();
  });

  it('keeps at most its bound of agents, the least recently used going first', () => {
    const agents = new WebhookAgents(2);
    const a = agents.agentFor({ ...endpoint, url: 'https://a.example/' });
    agents.agentFor({ ...endpoint, url: 'https://b.example/' });
    expect(agents.agentFor({ ...endpoint, url: 'https://a.example/' })).toBe(a);
    agents.agentFor({ ...endpoint, url: 'https://c.example/' });
    expect(agents.size).toBe(2);
    // b was the least recently used; a is still the same agent.
    expect(agents.agentFor({ ...endpoint, url: 'https://a.example/' })).toBe(a);
    agents.destroy();
  });
});
