import { authz } from '@svc/proto';
import { callUnary, toProtoUser, type CallOptions, channelTo, type InternalTls } from '@svc/service-kit';
import type { Attributes, AuthorizerDecision } from './authorizer';

export type { Attributes, AuthorizerDecision };

/** Typed client of the authorization service. */
export class AuthzClient {
  private readonly client: authz.AuthzClient;

  constructor(address: string, tls: InternalTls) {
    this.client = new authz.AuthzClient(...channelTo(address, 'authz', tls));
  }

  close(): void {
    this.client.close();
  }

  async authorize(attrs: Attributes, opts?: CallOptions): Promise<AuthorizerDecision> {
    const res = await callUnary(
      'authz',
      this.client.authorize.bind(this.client),
      { ...attrs, user: toProtoUser(attrs.user), labelSelector: '', fieldSelector: '' },
      opts,
    );
    const decision = res.decision === authz.Decision.DECISION_ALLOW ? 'allow' : res.decision === authz.Decision.DECISION_DENY ? 'deny' : 'no-opinion';
    return { decision, reason: res.reason };
  }
}
