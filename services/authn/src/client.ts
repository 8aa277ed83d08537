import type { UserInfo } from '@svc/apimachinery';
import { authn } from '@svc/proto';
import { callUnary, fromProtoUser, type CallOptions, channelTo, type InternalTls } from '@svc/service-kit';

export interface AuthenticateInput {
  clientCertificateChain: Uint8Array[];
  headers: Record<string, string[]>;
  method: string;
  path: string;
  remoteAddress: string;
}

export type AuthenticateOutcome = { authenticated: true; user: UserInfo; method: string } | { authenticated: false; error: string };

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
      this.client.authenticate.bind(this.client),
      { clientCertificateChain: input.clientCertificateChain.map((c) => Buffer.from(c)), headers, method: input.method, path: input.path, remoteAddress: input.remoteAddress, audiences: [] },
      opts,
    );
    if (!res.authenticated) return { authenticated: false, error: res.error };
    return { authenticated: true, user: fromProtoUser(res.user), method: res.method };
  }
}
