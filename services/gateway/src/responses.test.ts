import { ApiError } from '@svc/apimachinery';
import { statusAsRequested } from './responses';

const OURS = 'rbac.authorization.svc.io';
const THEIRS = 'rbac.authorization.k8s.io';

describe('statusAsRequested: a Status names the group as the client did', () => {
  it('renames the group of details and of the qualified names in the message', () => {
    const notFound = ApiError.notFound({ group: OURS, resource: 'rolebindings' }, 'rb1').toStatus();
    expect(statusAsRequested(notFound, OURS, THEIRS)).toMatchObject({
      message: `rolebindings.${THEIRS} "rb1" not found`,
      reason: 'NotFound',
      code: 404,
      details: { name: 'rb1', group: THEIRS, kind: 'rolebindings' },
    });
  });

  it("renames a forbidden message's resource and API group, and an invalid one's Kind.group", () => {
    const forbidden = ApiError.forbidden({ group: OURS, resource: 'roles' }, '', `User "u" cannot list resource "roles" in API group "${OURS}" in the namespace "team"`).toStatus();
    expect(statusAsRequested(forbidden, OURS, THEIRS).message).toBe(`roles.${THEIRS} is forbidden: User "u" cannot list resource "roles" in API group "${THEIRS}" in the namespace "team"`);
    const invalid = ApiError.badRequest(`RoleBinding.${OURS} "rb" is invalid: roleRef: Invalid value: {"apiGroup":"${OURS}","kind":"Role","name":"b"}: cannot change roleRef`).toStatus();
    // The roleRef quoted as sent keeps its spelling.
    expect(statusAsRequested(invalid, OURS, THEIRS).message).toBe(`RoleBinding.${THEIRS} "rb" is invalid: roleRef: Invalid value: {"apiGroup":"${OURS}","kind":"Role","name":"b"}: cannot change roleRef`);
  });

  it('leaves other groups, and requests under our own name, alone', () => {
    const other = ApiError.notFound({ group: 'example.com', resource: 'widgets' }, 'w').toStatus();
    expect(statusAsRequested(other, OURS, THEIRS)).toEqual(other);
    const ours = ApiError.notFound({ group: OURS, resource: 'roles' }, 'r').toStatus();
    expect(statusAsRequested(ours, OURS, OURS)).toBe(ours);
    // A group that merely ends like ours is another group.
    const longer = ApiError.notFound({ group: `x${OURS}`, resource: 'things' }, 't').toStatus();
    expect(statusAsRequested(longer, OURS, THEIRS).message).toBe(`things.x${OURS} "t" not found`);
  });
});
