import type { ApiObject, ResourceDefinition, UserInfo } from '@svc/apimachinery';
import type { GatewayDeps } from '../backends';

/** How unknown and duplicate fields of a body are reported: dropped, a warning each, or a 400. */
export type FieldValidation = 'Ignore' | 'Warn' | 'Strict';

/**
 * What admission is shown when a subresource writes an object as another
 * kind (the autoscaling/v1 Scale of a `scale` subresource), as the original
 * admits the subresource's own object: the view of the object, and how a
 * view a mutating webhook changed goes back onto the object.
 */
export interface AdmissionView {
  kind: { group: string; version: string; kind: string };
  of(obj: ApiObject): ApiObject;
  onto(view: ApiObject, obj: ApiObject): ApiObject;
}

export interface WriteContext {
  deps: GatewayDeps;
  /** When the request must be answered by (epoch milliseconds); the calls made for it are bounded by what is left. Unset: no deadline. */
  deadline?: number;
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
  /** Adds an annotation to the request's audit event (admission's); absent for writes no request made. */
  annotate?(key: string, value: string): void;
  /** Admission sees the object as this view (a subresource of another kind); absent: as the object itself. */
  admissionView?: AdmissionView;
  now?: Date;
}
