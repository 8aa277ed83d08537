import { NODE_LEASE_NAMESPACE, NODE_RULES, nodeIdentity, parseFieldSelector, type FieldRequirement } from '@svc/apimachinery';
import type { Attributes, Authorizer, AuthorizerDecision } from './authorizer';
import type { NodeGraph, VertexKind } from './node-graph';
import { ruleAllows } from './rbac';

/**
 * The Node mode (SPEC section 5, "Node mode"), as the original server's node
 * authorizer decides with AuthorizeNodeWithSelectors on: a node reads the
 * secrets, config maps and claims of the pods bound to it (its graph), its
 * own Node, and pods bound to it; for everything else its static rules
 * (NODE_RULES) apply. It never denies: what it does not allow is left to the
 * next mode, with the reason why. Users that are not nodes get no opinion
 * and no reason. Writes it allows broadly are narrowed by NodeRestriction.
 */

const allow: AuthorizerDecision = { decision: 'allow', reason: '' };
const noOpinion = (reason: string): AuthorizerDecision => ({ decision: 'no-opinion', reason: reason ? `Node: ${reason}` : '' });

function noRelationship(node: string): AuthorizerDecision {
  return noOpinion(`no relationship found between node '${node}' and this object`);
}

/** The requirements of the request's field selector; one that does not parse selects nothing, as in the original server. */
function fieldRequirements(attrs: Attributes): FieldRequirement[] {
  try {
    return parseFieldSelector(attrs.fieldSelector).requirements;
  } catch {
    return [];
  }
}

function selects(attrs: Attributes, field: string, value: string): boolean {
  return fieldRequirements(attrs).some((r) => r.field === field && r.operator === '=' && r.value === value);
}

export interface NodeAuthorizerOptions {
  graph: NodeGraph;
  /** Whether the graph has been read once; until then only the static rules apply. */
  ready: () => boolean;
}

export function nodeAuthorizer(opts: NodeAuthorizerOptions): Authorizer {
  const { graph } = opts;

  const related = (node: string, kind: VertexKind, attrs: Attributes): AuthorizerDecision => {
    if (attrs.name === '') return noOpinion('No Object name found');
    if (!opts.ready()) return noOpinion('the graph of the nodes is not loaded yet');
    return graph.hasPath(node, kind, attrs.namespace, attrs.name) ? allow : noRelationship(node);
  };

  const getOnly = (node: string, kind: VertexKind, attrs: Attributes): AuthorizerDecision => {
    if (attrs.verb !== 'get') return noOpinion('can only get individual resources of this type');
    if (attrs.subresource !== '') return noOpinion('cannot get subresource');
    return related(node, kind, attrs);
  };

  const readNamespaced = (node: string, kind: VertexKind, attrs: Attributes): AuthorizerDecision => {
    if (!['get', 'list', 'watch'].includes(attrs.verb)) return noOpinion('can only read resources of this type');
    if (attrs.subresource !== '') return noOpinion('cannot read subresource');
    if (attrs.namespace === '') return noOpinion('can only read namespaced object of this type');
    // A list or watch counts as a read of one object only when its field selector names it (metadata.name).
    return related(node, kind, attrs);
  };

  const claimStatus = (node: string, attrs: Attributes): AuthorizerDecision => {
    if (attrs.verb !== 'update' && attrs.verb !== 'patch') return noOpinion('can only get/update/patch this type');
    return related(node, 'persistentvolumeclaim', attrs);
  };

  const serviceAccountToken = (node: string, attrs: Attributes): AuthorizerDecision => {
    if (attrs.verb !== 'create' || attrs.name === '') return noOpinion('can only create tokens for individual service accounts');
    if (attrs.subresource !== 'token') return noOpinion('can only create token subresource of serviceaccount');
    return related(node, 'serviceaccount', attrs);
  };

  const lease = (node: string, attrs: Attributes): AuthorizerDecision => {
    if (!['get', 'create', 'update', 'patch', 'delete'].includes(attrs.verb)) return noOpinion('can only get, create, update, patch, or delete a node lease');
    if (attrs.namespace !== NODE_LEASE_NAMESPACE) return noOpinion(`can only access leases in the "${NODE_LEASE_NAMESPACE}" system namespace`);
    // A create's name is in its body: NodeRestriction checks it.
    if (attrs.verb !== 'create' && attrs.name !== node) return noOpinion('can only access node lease with the same name as the requesting node');
    return allow;
  };

  const csiNode = (node: string, attrs: Attributes): AuthorizerDecision => {
    if (!['get', 'create', 'update', 'patch', 'delete'].includes(attrs.verb)) return noOpinion('can only get, create, update, patch, or delete a CSINode');
    if (attrs.subresource !== '') return noOpinion('cannot authorize CSINode subresources');
    if (attrs.verb !== 'create' && attrs.name !== node) return noOpinion('can only access CSINode with the same name as the requesting node');
    return allow;
  };

  const nodeObject = (node: string, attrs: Attributes): AuthorizerDecision => {
    if (attrs.subresource === '') {
      if (['create', 'update', 'patch'].includes(attrs.verb)) return allow;
      if (['get', 'list', 'watch'].includes(attrs.verb)) {
        // By name, not by the graph: a node reads its Node before registering it.
        if (attrs.name === node) return allow;
        if (attrs.name === '') return noOpinion(`node '${node}' cannot read all nodes, only its own Node object`);
        return noOpinion(`node '${node}' cannot read '${attrs.name}', only its own Node object`);
      }
    } else if (attrs.subresource === 'status' && (attrs.verb === 'update' || attrs.verb === 'patch')) {
      return allow;
    }
    return noOpinion(`node '${node}' cannot ${attrs.verb} nodes${attrs.subresource ? `/${attrs.subresource}` : ''}`);
  };

  const pod = (node: string, attrs: Attributes): AuthorizerDecision => {
    switch (attrs.subresource) {
      case '':
        if (attrs.verb === 'get') return getOnly(node, 'pod', attrs);
        if (attrs.verb === 'list' || attrs.verb === 'watch') {
          if (selects(attrs, 'spec.nodeName', node)) return allow;
          if (attrs.name !== '') return related(node, 'pod', attrs);
          return noOpinion('can only list/watch pods with spec.nodeName field selector');
        }
        // Mirror pods; NodeRestriction limits them to pods bound to the node.
        if (attrs.verb === 'create' || attrs.verb === 'delete') return allow;
        break;
      case 'status':
        if (attrs.verb === 'update' || attrs.verb === 'patch') return allow;
        break;
      case 'eviction':
        if (attrs.verb === 'create') return allow;
        break;
    }
    return noOpinion(`node '${node}' cannot ${attrs.verb} pods${attrs.subresource ? `/${attrs.subresource}` : ''}`);
  };

  return (attrs) => {
    const identity = nodeIdentity(attrs.user);
    if (!identity) return noOpinion('');
    const node = identity.nodeName;
    if (node === '') return noOpinion(`unknown node for user "${attrs.user.username}"`);
    if (attrs.resourceRequest) {
      const group = attrs.apiGroup;
      const resource = attrs.resource;
      if (group === '') {
        switch (resource) {
          case 'secrets':
            return readNamespaced(node, 'secret', attrs);
          case 'configmaps':
            return readNamespaced(node, 'configmap', attrs);
          case 'persistentvolumeclaims':
            return attrs.subresource === 'status' ? claimStatus(node, attrs) : getOnly(node, 'persistentvolumeclaim', attrs);
          case 'persistentvolumes':
            // No stored kind binds a claim to a volume here, so no volume is related to a node.
            return attrs.verb !== 'get' ? noOpinion('can only get individual resources of this type') : noRelationship(node);
          case 'serviceaccounts':
            return serviceAccountToken(node, attrs);
          case 'nodes':
            return nodeObject(node, attrs);
          case 'pods':
            return pod(node, attrs);
        }
      } else if (group === 'resource.svc.io' && resource === 'resourceclaims') {
        return getOnly(node, 'resourceclaim', attrs);
      } else if (group === 'coordination.svc.io' && resource === 'leases') {
        return lease(node, attrs);
      } else if (group === 'storage.svc.io' && resource === 'csinodes') {
        return csiNode(node, attrs);
      } else if (group === 'storage.svc.io' && resource === 'volumeattachments') {
        // No stored kind attaches a volume to a node here.
        return attrs.verb !== 'get' ? noOpinion('can only get individual resources of this type') : noRelationship(node);
      }
    }
    if (NODE_RULES.some((rule) => ruleAllows({ ...rule, resourceNames: [], nonResourceURLs: [] }, attrs))) return allow;
    return noOpinion('');
  };
}
