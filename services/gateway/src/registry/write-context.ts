import type { ResourceDefinition, UserInfo } from '@svc/apimachinery';
import type { GatewayDeps } from '../backends';

/** How unknown and duplicate fields of a body are reported: dropped, a warning each, or a 400. */
export type FieldValidation = 'Ignore' | 'Warn' | 'Strict';

export interface WriteContext {
  deps: GatewayDeps;
  def: ResourceDefinition;
  user: UserInfo;
  requestId: string;
  namespace: string;
  subresource: string;
  dryRun: boolean;
  fieldValidation: FieldValidation;
  /**
   * Who the write's changed fields are recorded for in `managedFields` (as an
   * Update); undefined when the write records ownership itself (apply).
   */
  fieldManager?: string;
  /** Keys the request body repeated (reported by fieldValidation like unknown fields). */
  duplicateFields?: string[];
  /**
   * Refuses (403) unless the requester may create: a write that turns out to
   * create is authorized as `create` here, whichever verb reached it.
   */
  authorizeCreate(): Promise<void>;
  warn(text: string): void;
  now?: Date;
}
