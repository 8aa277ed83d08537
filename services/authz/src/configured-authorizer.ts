import * as fs from 'node:fs';
import { watchFileContent, type Credentials, type FileWatch, type FileWatchTimers, type Logger } from '@svc/service-kit';
import { chainOf, modeAuthorizer, type Authorizer, type ModeAuthorizers } from './authorizer';
import { AuthorizationConfigFileError, parseAuthorizationConfig, readConfigText, reloadProblem, type AuthorizationConfig, type AuthorizerEntry } from './authorization-config';
import { webhookAuthorizer } from './webhook-authorizer';

/**
 * The authorizers of an authorization configuration file (SPEC section 5),
 * kept current with the file: it is read again when it changes (a change
 * event, or the poll every 60 s) and a version that validates replaces the
 * chain; one that does not, or that adds or removes a Node or RBAC entry,
 * is logged with the file and the field, and the last good one stays.
 * Webhook entries are built anew on every reload, so their caches start
 * empty; Node and RBAC keep their state.
 */
export interface ConfiguredAuthorizerOptions {
  /** The authorizers with state (RBAC, Node), built once by the server. */
  stateful: ModeAuthorizers;
  log: Logger;
  /** How an `InClusterConfig` webhook connects (the server's own in-cluster credentials). */
  inClusterCredentials?: () => Credentials;
  pollMs?: number;
  timers?: FileWatchTimers;
}

/** The entries' modes (`RBAC`, `Node`, ...), once each: which stateful authorizers the server must build. */
export function modesOf(config: AuthorizationConfig): AuthorizerEntry['type'][] {
  return [...new Set(config.authorizers.map((a) => a.type))];
}

function build(config: AuthorizationConfig, options: ConfiguredAuthorizerOptions): Authorizer {
  return chainOf(
    config.authorizers.map((entry) => {
      const w = entry.webhook;
      if (entry.type !== 'Webhook' || !w) return { name: entry.name, authorize: modeAuthorizer(entry.type, options.stateful) };
      const connection =
        w.connectionInfo.type === 'KubeConfigFile'
          ? { configFile: w.connectionInfo.kubeConfigFile }
          : { credentials: (options.inClusterCredentials ?? inClusterCredentials)() };
      return {
        name: entry.name,
        authorize: webhookAuthorizer({
          ...connection,
          name: entry.name,
          version: w.subjectAccessReviewVersion,
          authorizedTtlMs: w.authorizedTtlMs,
          unauthorizedTtlMs: w.unauthorizedTtlMs,
          timeoutMs: w.timeoutMs,
          failurePolicy: w.failurePolicy,
          matchConditions: w.matchConditions.map((m) => m.expression),
        }),
      };
    }),
  );
}

/** Where a pod finds the API server and its service account (the original's in-cluster configuration, under this project's names). */
const IN_CLUSTER_DIR = '/var/run/secrets/svc.io/serviceaccount';

export function inClusterCredentials(): Credentials {
  const host = process.env['SVC_SERVICE_HOST'];
  const port = process.env['SVC_SERVICE_PORT'];
  if (!host || !port) throw new AuthorizationConfigFileError('connectionInfo: InClusterConfig: not running in a cluster (SVC_SERVICE_HOST and SVC_SERVICE_PORT are not set)');
  try {
    return { server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`, token: fs.readFileSync(`${IN_CLUSTER_DIR}/token`, 'utf8').trim(), ca: fs.readFileSync(`${IN_CLUSTER_DIR}/ca.crt`) };
  } catch (err) {
    throw new AuthorizationConfigFileError(`connectionInfo: InClusterConfig: ${(err as Error).message}`);
  }
}

export interface LoadedAuthorizationConfig {
  text: string;
  config: AuthorizationConfig;
}

/** Reads and validates the file; a problem throws an AuthorizationConfigFileError naming the file and the field. */
export function loadAuthorizationConfigFile(file: string): LoadedAuthorizationConfig {
  const text = readConfigText(file);
  return { text, config: parseAuthorizationConfig(text, file) };
}

export class ConfiguredAuthorizer {
  private current: Authorizer;
  private watch: FileWatch | undefined;

  private config: AuthorizationConfig;
  private readonly appliedText: string;

  /** Builds the chain of the file's content as `loadAuthorizationConfigFile` read it; an entry that cannot be built throws (a start failure). */
  constructor(
    readonly file: string,
    loaded: LoadedAuthorizationConfig,
    private readonly options: ConfiguredAuthorizerOptions,
  ) {
    this.config = loaded.config;
    this.appliedText = loaded.text;
    this.current = build(loaded.config, options);
  }

  readonly authorize: Authorizer = (attrs) => this.current(attrs);

  /** The configuration in force. */
  get configuration(): AuthorizationConfig {
    return this.config;
  }

  /** Applies `text` as the file's new content, or keeps the configuration in force and says why. */
  reload(text: string): { applied: true } | { applied: false; error: string } {
    try {
      const next = parseAuthorizationConfig(text, this.file);
      const problem = reloadProblem(this.config, next);
      if (problem) throw new AuthorizationConfigFileError(`${this.file}: ${problem}`);
      const authorize = build(next, this.options);
      this.config = next;
      this.current = authorize;
      this.options.log.info('authorization configuration reloaded', { file: this.file, authorizers: next.authorizers.map((a) => `${a.type}/${a.name}`) });
      return { applied: true };
    } catch (err) {
      const error = (err as Error).message;
      this.options.log.error('authorization configuration refused; keeping the last good one', { file: this.file, err: error });
      return { applied: false, error };
    }
  }

  /** Follows the file (change events and the poll). */
  startWatching(): FileWatch {
    this.watch = watchFileContent(this.file, this.appliedText, (text) => this.reload(text), {
      ...(this.options.pollMs !== undefined ? { pollMs: this.options.pollMs } : {}),
      ...(this.options.timers ? { timers: this.options.timers } : {}),
      onReadError: (err) => this.options.log.error('authorization configuration unreadable; keeping the last good one', { file: this.file, err: err.message }),
    });
    return this.watch;
  }

  close(): void {
    this.watch?.close();
  }
}
