import { nodeIdentity } from '@svc/apimachinery';
import { authz } from '@svc/proto';
import { createLogger, fromProtoUser, startGrpcServer, unary, type Logger, loadInternalTls, type InternalTlsFiles } from '@svc/service-kit';
import { StorageClient } from '@svc/storage/client';
import { WatchFanoutClient } from '@svc/watch-fanout/client';
import { ObjectFeed } from '@svc/watch-fanout/feed';
import { abacModeFor } from './abac';
import { MASTERS_GROUP, chain, type Decision, type Mode, type ModeAuthorizers } from './authorizer';
import { ConfiguredAuthorizer, loadAuthorizationConfigFile, modesOf } from './configured-authorizer';
import { NodeGraph, NODE_GRAPH_SOURCES } from './node-graph';
import { nodeAuthorizer } from './node-authorizer';
import { RBAC_SOURCES, RbacPolicy, uncoveredRules, type PolicyRule } from './rbac';
import { webhookAuthorizer, type WebhookAuthorizerOptions } from './webhook-authorizer';
import { recordDecision } from './authz-metrics';

/** Who may call this service (the identities of the internal certificates): the gateway, and admission for the authorizer of CEL expressions. */
const ALLOWED_CALLERS = ['gateway', 'admission'];

export interface AuthzConfig {
  listen: string;
  /** host:port of the plaintext grpc.health.v1 port; empty or unset: none. */
  healthBindAddress?: string;
  /** This service's internal certificate and the internal CA (mutual TLS on every gRPC edge). */
  internalTls: InternalTlsFiles;
  /** The `--authorization-mode` list; ignored when `authorizationConfigFile` is given. */
  modes: Mode[];
  /** `--authorization-config`: the authorizers come from this file, which is followed for changes. */
  authorizationConfigFile?: string;
  /** How often the authorization configuration file is polled (60 s by default). */
  authorizationConfigPollMs?: number;
  /** The storage service and watch-fanout, where RBAC reads its policy and the Node mode its pods (required with either). */
  storageAddress?: string;
  watchFanoutAddress?: string;
  /** How often RBAC and the Node mode look for changes. */
  policyPollMs?: number;
  /** The Webhook mode's connection and caches (`--authorization-webhook-*`). */
  webhook?: WebhookAuthorizerOptions;
  /** The ABAC mode's policy file (`--authorization-policy-file`); required with ABAC, refused without it. */
  authorizationPolicyFile?: string;
  logger?: Logger;
}

export interface AuthzHandle {
  address: string;
  port: number;
  /** The plaintext health port's host:port, when --health-bind-address asked for one. */
  healthAddress?: string;
  close(): Promise<void>;
}

/** What `system:masters` holds. */
const EVERYTHING: PolicyRule[] = [
  { verbs: ['*'], apiGroups: ['*'], resources: ['*'], resourceNames: [], nonResourceURLs: [] },
  { verbs: ['*'], apiGroups: [], resources: [], resourceNames: [], nonResourceURLs: ['*'] },
];

function toProtoRule(r: PolicyRule): authz.PolicyRule {
  return { verbs: r.verbs, apiGroups: r.apiGroups, resources: r.resources, resourceNames: r.resourceNames, nonResourceUrls: r.nonResourceURLs };
}

function fromProtoRule(r: authz.PolicyRule): PolicyRule {
  return { verbs: r.verbs, apiGroups: r.apiGroups, resources: r.resources, resourceNames: r.resourceNames, nonResourceURLs: r.nonResourceUrls };
}

const DECISION: Record<Decision, authz.Decision> = {
  allow: authz.Decision.DECISION_ALLOW,
  deny: authz.Decision.DECISION_DENY,
  'no-opinion': authz.Decision.DECISION_NO_OPINION,
};

/** Starts the authorization service. */
export async function start(config: AuthzConfig): Promise<AuthzHandle> {
  const log = config.logger ?? createLogger('authz');
  const tls = loadInternalTls(config.internalTls);
  let feed: ObjectFeed | undefined;
  let nodeFeed: ObjectFeed | undefined;
  let policy: RbacPolicy | undefined;
  let storage: StorageClient | undefined;
  let fanout: WatchFanoutClient | undefined;
  // With a configuration file its entries say which modes run (reloads may not add or remove RBAC or Node).
  const file = config.authorizationConfigFile ? loadAuthorizationConfigFile(config.authorizationConfigFile) : undefined;
  const modes: Mode[] = file ? modesOf(file.config) : config.modes;
  const stateful: ModeAuthorizers = {};
  const abac = abacModeFor(modes, config.authorizationPolicyFile, log);
  if (abac) stateful.ABAC = abac.authorize;
  const feedPeers = (mode: Mode): { storage: StorageClient; fanout: WatchFanoutClient } => {
    if (!config.storageAddress || !config.watchFanoutAddress) throw new Error(`the ${mode} mode needs --storage-address and --watch-fanout-address`);
    storage ??= new StorageClient(config.storageAddress, tls);
    fanout ??= new WatchFanoutClient(config.watchFanoutAddress, tls);
    return { storage, fanout };
  };
  const pollMs = config.policyPollMs !== undefined ? { pollMs: config.policyPollMs } : {};
  if (!file && modes.includes('Webhook')) {
    if (!config.webhook) throw new Error('the Webhook mode needs --authorization-webhook-config-file');
    stateful.Webhook = webhookAuthorizer(config.webhook);
  }
  if (modes.includes('Node')) {
    const peers = feedPeers('Node');
    const graph = new NodeGraph();
    const graphFeed = new ObjectFeed(graph, peers.storage, peers.fanout, { log, name: 'node graph', ...pollMs }, NODE_GRAPH_SOURCES);
    nodeFeed = graphFeed;
    stateful.Node = nodeAuthorizer({ graph, ready: () => graphFeed.ready });
    graphFeed.start();
  }
  if (modes.includes('RBAC')) {
    const peers = feedPeers('RBAC');
    policy = new RbacPolicy();
    const rbacFeed = new ObjectFeed(policy, peers.storage, peers.fanout, { log, name: 'RBAC policy', ...pollMs }, RBAC_SOURCES);
    feed = rbacFeed;
    const rbac = policy;
    stateful.RBAC = (attrs) => (rbacFeed.ready ? rbac.authorize(attrs) : { decision: 'no-opinion', reason: 'RBAC: the policy is not loaded yet' });
    rbacFeed.start();
  }
  let configured: ConfiguredAuthorizer | undefined;
  if (config.authorizationConfigFile && file) {
    configured = new ConfiguredAuthorizer(config.authorizationConfigFile, file, { stateful, log, ...(config.authorizationConfigPollMs !== undefined ? { pollMs: config.authorizationConfigPollMs } : {}) });
    configured.startWatching();
  }
  const authorize = configured ? configured.authorize : chain(modes, stateful);
  const implementation: authz.AuthzServer = {
    authorize: unary(log, 'Authorize', async (req: authz.AuthorizeRequest): Promise<authz.AuthorizeResponse> => {
      const d = await authorize({
        user: fromProtoUser(req.user),
        resourceRequest: req.resourceRequest,
        verb: req.verb,
        path: req.path,
        apiGroup: req.apiGroup,
        apiVersion: req.apiVersion,
        resource: req.resource,
        subresource: req.subresource,
        namespace: req.namespace,
        name: req.name,
        ...(req.labelSelector ? { labelSelector: req.labelSelector } : {}),
        ...(req.fieldSelector ? { fieldSelector: req.fieldSelector } : {}),
      });
      // Which rule or binding decided, for operators (debug level: one line per uncached decision).
      log.debug('decision', { user: req.user?.username ?? '', verb: req.verb, resource: req.resource, subresource: req.subresource, namespace: req.namespace, name: req.name, path: req.resourceRequest ? '' : req.path, decision: d.decision, reason: d.reason });
      recordDecision(d.decision);
      return { decision: DECISION[d.decision], reason: d.reason, evaluationError: '' };
    }),
    rules: unary(log, 'Rules', async (req: authz.RulesRequest): Promise<authz.RulesResponse> => {
      const user = fromProtoUser(req.user);
      if (user.groups.includes(MASTERS_GROUP)) return { rules: [toProtoRule(EVERYTHING[0] as PolicyRule), toProtoRule(EVERYTHING[1] as PolicyRule)], incomplete: false };
      const rules = [...(abac ? abac.rulesFor(user, req.namespace) : []), ...(policy && feed?.ready ? policy.rulesFor(user, req.namespace) : [])];
      // Modes other than ABAC and RBAC cannot list what they allow; the Node mode allows nothing to users that are not nodes.
      const unlisted = modes.some((m) => m !== 'RBAC' && m !== 'ABAC' && (m !== 'Node' || nodeIdentity(user) !== undefined));
      return { rules: rules.map(toProtoRule), incomplete: unlisted || (feed !== undefined && !feed.ready) };
    }),
    covers: unary(log, 'Covers', async (req: authz.CoversRequest): Promise<authz.CoversResponse> => {
      const user = fromProtoUser(req.user);
      if (user.groups.includes(MASTERS_GROUP)) return { covered: true, uncovered: [] };
      const held = policy && feed?.ready ? policy.rulesFor(user, req.namespace) : [];
      const uncovered = uncoveredRules(held, req.rules.map(fromProtoRule));
      return { covered: uncovered.length === 0, uncovered: uncovered.slice(0, 100).map(toProtoRule) };
    }),
  };
  const server = await startGrpcServer(config.listen, [{ definition: authz.AuthzService, implementation }], { security: { tls, allowedCallers: ALLOWED_CALLERS, log }, health: { ready: () => (feed?.ready ?? true) && (nodeFeed?.ready ?? true), bindAddress: config.healthBindAddress ?? '' } });
  log.info('authz listening', { address: server.address, modes, ...(configured ? { authorizationConfig: configured.file, authorizers: configured.configuration.authorizers.map((a) => `${a.type}/${a.name}`) } : {}) });
  return {
    address: server.address,
    port: server.port,
    ...(server.healthAddress ? { healthAddress: server.healthAddress } : {}),
    close: async () => {
      await server.close();
      configured?.close();
      await feed?.stop();
      await nodeFeed?.stop();
      storage?.close();
      fanout?.close();
    },
  };
}
