import { createHash } from 'node:crypto';
import * as https from 'node:https';
import * as tls from 'node:tls';

/** Where a webhook is called: its https URL and the CA bundle that verifies it (the system's roots when unset). */
export interface WebhookEndpoint {
  url: string;
  caBundle?: Buffer | string;
}

/**
 * Connections to the webhooks a service calls (conversion webhooks,
 * admission webhooks), kept alive and reused between calls (a TLS handshake
 * per call would otherwise cost more than most answers): one keepAlive
 * https.Agent per webhook URL and CA bundle, with one TLS context, keeping
 * as many idle connections as it may open (a burst of concurrent calls
 * leaves connections the next burst reuses). At most `maxAgents` are kept,
 * the least recently used going first; `retain` drops the agents of
 * endpoints no longer configured, so a webhook that changes its address or
 * CA, or goes, takes its connections with it. Options given to the
 * constructor (a client certificate, say) apply to every agent.
 */
/** How each webhook's connections are kept: alive, at most 16 at once, as many kept idle, closed after a minute unused. */
export const WEBHOOK_AGENT_OPTIONS: Readonly<https.AgentOptions> = { keepAlive: true, maxSockets: 16, maxFreeSockets: 16, timeout: 60_000 };

export class WebhookAgents {
  /** In order of last use, oldest first. */
  private readonly agents = new Map<string, https.Agent>();

  constructor(
    private readonly maxAgents = 64,
    private readonly agentOptions: https.AgentOptions = WEBHOOK_AGENT_OPTIONS,
  ) {}

  get size(): number {
    return this.agents.size;
  }

  private static keyOf(endpoint: WebhookEndpoint): string {
    const ca = endpoint.caBundle ? createHash('sha256').update(endpoint.caBundle).digest('hex') : 'system-roots';
    return `${endpoint.url} ${ca}`;
  }

  agentFor(endpoint: WebhookEndpoint): https.Agent {
    const key = WebhookAgents.keyOf(endpoint);
    let agent = this.agents.get(key);
    if (agent) {
      this.agents.delete(key);
    } else {
      const options: https.AgentOptions = { ...this.agentOptions, ...(endpoint.caBundle ? { ca: endpoint.caBundle } : {}) };
      // One TLS context per endpoint, not one per connection (parsing the CA and the client key each time costs more than the call).
      const { ca, cert, key, passphrase, pfx } = options;
      agent = new https.Agent({ ...options, secureContext: tls.createSecureContext({ ca, cert, key, passphrase, pfx }) });
    }
    this.agents.set(key, agent);
    for (const [oldest, old] of this.agents) {
      if (this.agents.size <= this.maxAgents) break;
      this.drop(oldest, old);
    }
    return agent;
  }

  /** Keeps only the agents of `endpoints` (the webhooks now configured). */
  retain(endpoints: Iterable<WebhookEndpoint>): void {
    const used = new Set<string>();
    for (const endpoint of endpoints) used.add(WebhookAgents.keyOf(endpoint));
    for (const [key, agent] of this.agents) if (!used.has(key)) this.drop(key, agent);
  }

  /** Closes every connection (the service stops). */
  destroy(): void {
    for (const [key, agent] of this.agents) this.drop(key, agent);
  }

  private drop(key: string, agent: https.Agent): void {
    this.agents.delete(key);
    // Calls under way finish; their sockets then close instead of going back to the pool.
    (agent as https.Agent & { keepAlive: boolean }).keepAlive = false;
    for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
  }
}
