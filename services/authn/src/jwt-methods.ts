import * as fs from 'node:fs';
import { watchFileContent, type FileWatch, type Logger } from '@svc/service-kit';
import { AuthenticationConfigError, parseAuthenticationConfig, type AnonymousSettings, type AuthenticationConfig } from './authentication-config';
import { jwtAuthenticator, type JwtAuthenticator, type JwtIssuerSettings } from './jwt-authenticator';
import { NOT_MINE, type TokenAuthenticator } from './methods';

/**
 * The JWT issuers as one token method whose set can change at run time:
 * the `--oidc-*` issuer, or the `jwt[]` of the authentication configuration
 * file, which is read again when it changes. A new version that does not
 * validate is refused, logged with the file and the field, and the last good
 * one stays in force.
 *
 * These tokens are for this server itself: as in the original (an
 * audience-agnostic authenticator), a request for audiences none of which
 * is the server's (`--api-audiences`) is not theirs, and an authenticated
 * token serves the requested audiences that are the server's.
 */
export interface JwtMethodsOptions {
  /** The server's audiences; empty when it has none (then every request's audiences are served). */
  apiAudiences?: string[];
  /** `--service-account-issuer`: no file issuer may use one of these URLs. */
  serviceAccountIssuers?: string[];
  /** Whether `--anonymous-auth` was given: then the file may not set `anonymous`, at start or on reload. */
  anonymousAuthExplicit?: boolean;
}

export class JwtMethods implements TokenAuthenticator {
  readonly name = 'jwt';
  private issuers: JwtAuthenticator[] = [];
  private anonymousSettings: AnonymousSettings | undefined;
  private watching: FileWatch | undefined;
  /** The content `read` last validated: what a change is measured against. */
  private readText = '';

  constructor(
    private readonly log: Logger,
    private readonly options: JwtMethodsOptions = {},
  ) {}

  setIssuers(settings: JwtIssuerSettings[], name: string): void {
    this.issuers = settings.map((s) => jwtAuthenticator(s, name, this.log));
  }

  /** Reads and validates the configuration file; an AuthenticationConfigError names the file and the field. */
  read(file: string): AuthenticationConfig {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      throw new AuthenticationConfigError(`${file}: ${(err as Error).message}`);
    }
    const config = this.parse(text, file);
    this.readText = text;
    return config;
  }

  private parse(text: string, file: string): AuthenticationConfig {
    const config = parseAuthenticationConfig(text, file, this.options.serviceAccountIssuers ?? []);
    if (config.anonymous && this.options.anonymousAuthExplicit) throw new AuthenticationConfigError(`${file}: anonymous: Forbidden: may not be set together with --anonymous-auth`);
    return config;
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
    const api = this.options.apiAudiences ?? [];
    const served = api.length > 0 && audiences.length > 0 ? audiences.filter((a) => api.includes(a)) : [...audiences];
    if (api.length > 0 && audiences.length > 0 && served.length === 0) return NOT_MINE;
    for (const issuer of this.issuers) {
      const outcome = await issuer.authenticateToken(token, served);
      if (outcome.status !== 'not-mine') return outcome;
    }
    return NOT_MINE;
  }

  /** Reads `file` again whenever its content changes (change events, and a poll every `intervalMs`). */
  watch(file: string, intervalMs = 1000): void {
    this.close();
    this.watching = watchFileContent(
      file,
      this.readText,
      (text) => {
        try {
          const config = this.parse(text, file);
          this.apply(config);
          this.log.info('authentication configuration reloaded', { file, issuers: config.jwt.map((j) => j.url) });
        } catch (err) {
          this.log.error('authentication configuration refused; keeping the last good one', { file, err: (err as Error).message });
        }
      },
      { pollMs: intervalMs },
    );
  }

  close(): void {
    this.watching?.close();
    this.watching = undefined;
  }
}
