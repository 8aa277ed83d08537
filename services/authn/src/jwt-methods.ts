import * as fs from 'node:fs';
import type { Logger } from '@svc/service-kit';
import { readAuthenticationConfig, type AnonymousSettings, type AuthenticationConfig } from './authentication-config';
import { jwtAuthenticator, type JwtAuthenticator, type JwtIssuerSettings } from './jwt-authenticator';
import { NOT_MINE, type TokenAuthenticator } from './methods';

/**
 * The JWT issuers as one token method whose set can change at run time:
 * the `--oidc-*` issuer, or the `jwt[]` of the authentication configuration
 * file, which is read again when it changes. A new version that does not
 * validate is refused, logged with the file and the field, and the last good
 * one stays in force.
 */
export class JwtMethods implements TokenAuthenticator {
  readonly name = 'jwt';
  private issuers: JwtAuthenticator[] = [];
  private anonymousSettings: AnonymousSettings | undefined;
  private watching: string | undefined;

  constructor(private readonly log: Logger) {}

  setIssuers(settings: JwtIssuerSettings[], name: string): void {
    this.issuers = settings.map((s) => jwtAuthenticator(s, name));
  }

  apply(config: AuthenticationConfig): void {
    this.setIssuers(config.jwt, 'jwt');
    this.anonymousSettings = config.anonymous;
  }

  /** The configuration file's anonymous settings, when it has any. */
  get anonymous(): AnonymousSettings | undefined {
    return this.anonymousSettings;
  }

  /** Whether a request without credentials to `path` is anonymous under the file's settings. */
  anonymousAllowed(path: string | undefined): boolean {
    const a = this.anonymousSettings;
    if (!a?.enabled) return false;
    return a.paths === undefined || (path !== undefined && a.paths.includes(path));
  }

  async authenticateToken(token: string, audiences: readonly string[]) {
    for (const issuer of this.issuers) {
      const outcome = await issuer.authenticateToken(token, audiences);
      if (outcome.status !== 'not-mine') return outcome;
    }
    return NOT_MINE;
  }

  /** Reads `file` again whenever it changes (polled every `intervalMs`). */
  watch(file: string, serviceAccountIssuers: string[], intervalMs = 1000): void {
    this.watching = file;
    fs.watchFile(file, { interval: intervalMs, persistent: false }, (curr, prev) => {
      if (curr.mtimeMs === prev.mtimeMs && curr.size === prev.size && curr.ino === prev.ino) return;
      try {
        const config = readAuthenticationConfig(file, serviceAccountIssuers);
        this.apply(config);
        this.log.info('authentication configuration reloaded', { file, issuers: config.jwt.map((j) => j.url) });
      } catch (err) {
        this.log.error('authentication configuration refused; keeping the last good one', { file, err: (err as Error).message });
      }
    });
  }

  close(): void {
    if (this.watching) fs.unwatchFile(this.watching);
  }
}
