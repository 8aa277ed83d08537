import type { UserInfo } from '@svc/apimachinery';
import { authz } from '@svc/proto';
import { callUnary, toProtoUser, type CallOptions, channelTo, type InternalTls, boundMethod } from '@svc/service-kit';
import type { Attributes, AuthorizerDecision } from './contract';

export { NO_OPINION_PREFIX, modesReason, type Attributes, type AuthorizerDecision, type Decision } from './contract';

/** An RBAC rule as the review APIs and the escalation check carry it. */
export interface Rule {
  verbs: string[];
  apiGroups: string[];
  resources: string[];
  resourceNames: string[];
  nonResourceURLs: string[];
}

function toProto(r: Rule): authz.PolicyRule {
  return { verbs: r.verbs, apiGroups: r.apiGroups, resources: r.resources, resourceNames: r.resourceNames, nonResourceUrls: r.nonResourceURLs };
}

function fromProto(r: authz.PolicyRule): Rule {
  return { verbs: r.verbs, apiGroups: r.apiGroups, resources: r.resources, resourceNames: r.resourceNames, nonResourceURLs: r.nonResourceUrls };
}

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
      boundMethod(this.client, this.client.authorize),
      { ...attrs, user: toProtoUser(attrs.user), labelSelector: attrs.labelSelector ?? '', fieldSelector: attrs.fieldSelector ?? '' },
      opts,
    );
    const decision = res.decision === authz.Decision.DECISION_ALLOW ? 'allow' : res.decision === authz.Decision.DECISION_DENY ? 'deny' : 'no-opinion';
    return { decision, reason: res.reason };
  }

  /** The rules `user` holds in `namespace` (SelfSubjectRulesReview). */
  async rules(user: UserInfo, namespace: string, opts?: CallOptions): Promise<{ rules: Rule[]; incomplete: boolean }> {
    const res = await callUnary('authz', boundMethod(this.client, this.client.rules), { user: toProtoUser(user), namespace }, opts);
    return { rules: res.rules.map(fromProto), incomplete: res.incomplete };
  }

  /** Whether `user` holds every permission of `rules` in `namespace` ('' = cluster-wide); what it lacks otherwise. */
  async covers(user: UserInfo, namespace: string, rules: Rule[], opts?: CallOptions): Promise<{ covered: boolean; uncovered: Rule[] }> {
    const res = await callUnary('authz', boundMethod(this.client, this.client.covers), { user: toProtoUser(user), namespace, rules: rules.map(toProto) }, opts);
    return { covered: res.covered, uncovered: res.uncovered.map(fromProto) };
  }
}
