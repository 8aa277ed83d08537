import type { UserInfo } from '@svc/apimachinery';
import { authn } from '@svc/proto';
import { callUnary, fromProtoUser, type CallOptions, channelTo, type InternalTls, boundMethod } from '@svc/service-kit';

export interface AuthenticateInput {
  clientCertificateChain: Uint8Array[];
  headers: Record<string, string[]>;
  method: string;
  path: string;
  remoteAddress: string;
}

export type AuthenticateOutcome = { authenticated: true; user: UserInfo; method: string; audiences: string[] } | { authenticated: false; error: string };

export interface IssueTokenInput {
  namespace: string;
  serviceAccountName: string;
  serviceAccountUid: string;
  /** Empty: the server's own audiences. */
  audiences: string[];
  expirationSeconds: number;
  boundObject?: { kind: string; apiVersion: string; name: string; uid: string };
}

function outcome(res: authn.AuthenticateResponse): AuthenticateOutcome {
  if (!res.authenticated) return { authenticated: false, error: res.error };
  return { authenticated: true, user: fromProtoUser(res.user), method: res.method, audiences: res.audiences };
}

/** Typed client of the authentication service. */
export class AuthnClient {
  private readonly client: authn.AuthnClient;

  constructor(address: string, tls: InternalTls) {
    this.client = new authn.AuthnClient(...channelTo(address, 'authn', tls));
  }

  close(): void {
    this.client.close();
  }

  async authenticate(input: AuthenticateInput, opts?: CallOptions): Promise<AuthenticateOutcome> {
    const headers: Record<string, { values: string[] }> = {};
    for (const [k, v] of Object.entries(input.headers)) headers[k] = { values: v };
    const res = await callUnary(
      'authn',
      boundMethod(this.client, this.client.authenticate),
      { clientCertificateChain: input.clientCertificateChain.map((c) => Buffer.from(c)), headers, method: input.method, path: input.path, remoteAddress: input.remoteAddress, audiences: [] },
      opts,
    );
    return outcome(res);
  }

  /** A TokenReview: whether `token` authenticates, by the token methods only. */
  async reviewToken(token: string, audiences: string[], opts?: CallOptions): Promise<AuthenticateOutcome> {
    return outcome(await callUnary('authn', boundMethod(this.client, this.client.reviewToken), { token, audiences }, opts));
  }

  /** Signs a service-account token; the caller has checked the account and the bound object. */
  async issueServiceAccountToken(input: IssueTokenInput, opts?: CallOptions): Promise<{ token: string; expires: Date }> {
    const res = await callUnary('authn', boundMethod(this.client, this.client.issueServiceAccountToken), { ...input, boundObject: input.boundObject }, opts);
    return { token: res.token, expires: new Date(res.expirationUnix * 1000) };
  }
}
