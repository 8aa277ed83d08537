import type { AdmissionAttributes } from '../plugins';

/** The attributes of a request for tests: alice creating ConfigMap `cm` in `team-a`, with `over` applied. */
export function requestAttributes(over: Partial<AdmissionAttributes> = {}): AdmissionAttributes {
  return {
    operation: 'CREATE',
    kind: { group: '', version: 'v1', kind: 'ConfigMap' },
    resource: { group: '', version: 'v1', resource: 'configmaps' },
    subresource: '',
    namespace: 'team-a',
    name: 'cm',
    userInfo: { username: 'alice', uid: 'u1', groups: ['devs'], extra: {} },
    object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'team-a' } },
    oldObject: undefined,
    dryRun: false,
    ...over,
  };
}
