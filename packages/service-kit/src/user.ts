import type { UserInfo } from '@svc/apimachinery';
import type { common } from '@svc/proto';

/** UserInfo between its API form and its gRPC message. */
export function toProtoUser(user: UserInfo): common.UserInfo {
  const extra: Record<string, common.StringList> = {};
  for (const [k, v] of Object.entries(user.extra)) extra[k] = { values: v };
  return { username: user.username, uid: user.uid, groups: user.groups, extra };
}

export function fromProtoUser(user: common.UserInfo | undefined): UserInfo {
  const extra: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(user?.extra ?? {})) extra[k] = v.values;
  return { username: user?.username ?? '', uid: user?.uid ?? '', groups: user?.groups ?? [], extra };
}
