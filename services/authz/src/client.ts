import * as grpc from '@grpc/grpc-js';
import { authz } from '@svc/proto';
import { CLIENT_OPTIONS, callUnary, toProtoUser, type CallOptions } from '@svc/service-kit';
import type { Attributes, AuthorizerDecision } from './authorizer';

export type { Attributes, AuthorizerDecision };

/** Typed client of the authorization service. */
export class AuthzClient {
  private readonly client: authz.AuthzClient;

  constructor(address: string) {
    this.client = new authz.AuthzClient(address, grpc.credentials.createInsecure(), CLIENT_OPTIONS);
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
