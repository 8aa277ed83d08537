/**
 * Groups named after the vendor in the original API (`rbac.authorization.k8s.io`) are ours under
 * `svc.io` (`rbac.authorization.svc.io`). Clients built against the original use its names in
 * paths, apiVersions and rules; the server reads them as ours and answers in the name the client
 * used. Both directions of the mapping live here.
 */
const UPSTREAM_GROUP_SUFFIX = '.k8s.io';
const GROUP_SUFFIX = '.svc.io';

/** Our name of a group a client may name by its upstream name (`authentication.k8s.io` → `authentication.svc.io`); other names unchanged. */
export function canonicalGroup(group: string): string {
  return group.endsWith(UPSTREAM_GROUP_SUFFIX) ? `${group.slice(0, -UPSTREAM_GROUP_SUFFIX.length)}${GROUP_SUFFIX}` : group;
}

/** The upstream name of one of our groups, or undefined for groups without one. */
export function upstreamGroupName(group: string): string | undefined {
  return group.endsWith(GROUP_SUFFIX) ? `${group.slice(0, -GROUP_SUFFIX.length)}${UPSTREAM_GROUP_SUFFIX}` : undefined;
}
