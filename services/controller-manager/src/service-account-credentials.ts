import { ApiError, SYSTEM_NAMESPACE, type ApiObject } from '@svc/apimachinery';
import type { Logger } from '@svc/service-kit';
import type { ApiClient, TokenSource } from './client';

/**
 * `--use-service-account-credentials`: each controller talks to the API as
 * its own service account in the system namespace (as the original
 * controller-manager does), so what it may do is what its
 * `system:controller:<name>` role grants and nothing more. The
 * controller-manager's own identity only creates those accounts and asks for
 * their tokens; a token is renewed when four fifths of its life have passed,
 * or at once when the server refuses it.
 */

/** How long a requested token lives. */
export const TOKEN_LIFETIME_SECONDS = 3600;

/** After which part of its life a token is replaced. */
const RENEW_AT = 0.8;

interface Held {
  token: string;
  renewAt: number;
}

export class ServiceAccountTokenSource implements TokenSource {
  private held: Held | undefined;
  private pending: Promise<Held> | undefined;

  constructor(
    /** The controller-manager's own client (its kubeconfig's identity). */
    private readonly client: Pick<ApiClient, 'request'>,
    readonly account: string,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  async token(): Promise<string> {
    if (this.held && this.now() < this.held.renewAt) return this.held.token;
    // Concurrent callers share one request for a new token.
    this.pending ??= this.fetch().finally(() => {
      this.pending = undefined;
    });
    this.held = await this.pending;
    return this.held.token;
  }

  invalidate(token: string): void {
    if (this.held?.token === token) this.held = undefined;
  }

  private async fetch(): Promise<Held> {
    const base = `/api/v1/namespaces/${SYSTEM_NAMESPACE}/serviceaccounts`;
    await this.ensureAccount(base);
    const requested = this.now();
    const review = await this.client.request<ApiObject>('POST', `${base}/${encodeURIComponent(this.account)}/token`, {
      apiVersion: 'authentication.svc.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: TOKEN_LIFETIME_SECONDS },
    });
    const status = (review['status'] ?? {}) as { token?: string; expirationTimestamp?: string };
    if (!status.token) throw new Error(`the token request for ${SYSTEM_NAMESPACE}/${this.account} answered no token`);
    const expires = status.expirationTimestamp ? Date.parse(status.expirationTimestamp) : requested + TOKEN_LIFETIME_SECONDS * 1000;
    const renewAt = requested + Math.max(0, expires - requested) * RENEW_AT;
    this.log.info('service account token issued', { account: `${SYSTEM_NAMESPACE}/${this.account}`, expires: new Date(expires).toISOString() });
    return { token: status.token, renewAt };
  }

  private async ensureAccount(base: string): Promise<void> {
    try {
      await this.client.request('GET', `${base}/${encodeURIComponent(this.account)}`);
      return;
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 404)) throw err;
    }
    try {
      await this.client.request('POST', base, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: this.account, namespace: SYSTEM_NAMESPACE } });
      this.log.info('service account created', { account: `${SYSTEM_NAMESPACE}/${this.account}` });
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 409)) throw err;
    }
  }
}
