import { createHash } from 'node:crypto';
import * as https from 'node:https';
import type { ConversionWebhookConfig, ResourceDefinition } from '@svc/apimachinery';

/**
 * Connections to conversion webhooks, kept alive and reused between
 * ConversionReviews (a TLS handshake per review would otherwise cost more
 * than most conversions): one keepAlive https.Agent per webhook URL and CA
 * bundle. At most `maxAgents` are kept, the least recently used going
 * first; `retain` drops the agents no served definition uses any more, so a
 * definition that changes its webhook or goes takes its connections with it.
 */
export class WebhookAgents {
  /** In order of last use, oldest first. */
  private readonly agents = new Map<string, https.Agent>();

  constructor(
    private readonly maxAgents = 64,
    private readonly agentOptions: https.AgentOptions = { keepAlive: true, maxSockets: 16, maxFreeSockets: 4, timeout: 60_000 },
  ) {}

  get size(): number {
    return this.agents.size;
  }

  private static keyOf(webhook: ConversionWebhookConfig): string {
    const ca = webhook.caBundle ? createHash('sha256').update(webhook.caBundle).digest('hex') : 'system-roots';
    return `${webhook.url} ${ca}`;
  }

  agentFor(webhook: ConversionWebhookConfig): https.Agent {
    const key = WebhookAgents.keyOf(webhook);
    let agent = this.agents.get(key);
    if (agent) {
      this.agents.delete(key);
    } else {
      agent = new https.Agent({ ...this.agentOptions, ...(webhook.caBundle ? { ca: webhook.caBundle } : {}) });
    }
    this.agents.set(key, agent);
    for (const [oldest, old] of this.agents) {
      if (this.agents.size <= this.maxAgents) break;
      this.drop(oldest, old);
    }
    return agent;
  }

  /** Keeps only the agents of the webhooks of `defs` (the definitions now served). */
  retain(defs: Iterable<ResourceDefinition>): void {
    const used = new Set<string>();
    for (const def of defs) {
      const conversion = def.storageVersioning?.conversion;
      if (conversion?.strategy === 'Webhook') used.add(WebhookAgents.keyOf(conversion.webhook));
    }
    for (const [key, agent] of this.agents) if (!used.has(key)) this.drop(key, agent);
  }

  /** Closes every connection (the gateway stops). */
  destroy(): void {
    for (const [key, agent] of this.agents) this.drop(key, agent);
  }

  private drop(key: string, agent: https.Agent): void {
    this.agents.delete(key);
    // Reviews under way finish; their sockets then close instead of going back to the pool.
    (agent as https.Agent & { keepAlive: boolean }).keepAlive = false;
    for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
  }
}
