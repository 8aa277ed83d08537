import type { UserInfo } from './types';

/**
 * The attributes of one authorization question: who asks to do what. The
 * authorization service decides on them; admission expressions build them
 * with their `authorizer` library.
 */
export interface AuthorizationAttributes {
  user: UserInfo;
  resourceRequest: boolean;
  verb: string;
  path: string;
  apiGroup: string;
  apiVersion: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
  /**
   * The request's `labelSelector` and `fieldSelector` as sent (list, watch,
   * deletecollection): modes that allow reads only through a selector (Node)
   * parse them. Absent or empty: no selector.
   */
  labelSelector?: string;
  fieldSelector?: string;
}
