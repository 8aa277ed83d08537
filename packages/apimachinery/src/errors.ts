/**
 * API errors. One class carries a Status reason and HTTP code; every failure
 * that reaches a client is an ApiError turned into a Status object by
 * `toStatus`. Constructors below mirror the reasons clients switch on.
 */

export type StatusReason =
  | 'BadRequest'
  | 'Unauthorized'
  | 'Forbidden'
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Gone'
  | 'Expired'
  | 'Invalid'
  | 'ServerTimeout'
  | 'Timeout'
  | 'TooManyRequests'
  | 'MethodNotAllowed'
  | 'NotAcceptable'
  | 'RequestEntityTooLarge'
  | 'UnsupportedMediaType'
  | 'InternalError'
  | 'ServiceUnavailable'
  | '';

export type CauseType =
  | 'FieldValueNotFound'
  | 'FieldValueRequired'
  | 'FieldValueDuplicate'
  | 'FieldValueInvalid'
  | 'FieldValueNotSupported'
  | 'FieldValueForbidden'
  | 'FieldValueTooLong'
  | 'FieldValueTypeInvalid'
  | 'FieldManagerConflict'
  | 'UnexpectedServerResponse'
  | 'ResourceVersionTooLarge';

export interface StatusCause {
  reason?: CauseType | string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Success' | 'Failure';
  message?: string;
  reason?: StatusReason;
  details?: StatusDetails;
  code: number;
}

/** The group and resource an error is about, as in `configmaps "x" not found`. */
export interface GroupResource {
  group: string;
  resource: string;
}

function qualified(gr: GroupResource): string {
  return gr.group ? `${gr.resource}.${gr.group}` : gr.resource;
}

export class ApiError extends Error {
  readonly code: number;
  readonly reason: StatusReason;
  readonly details: StatusDetails | undefined;
  /**
   * Warnings the request earned before it was refused (an admission policy's
   * Warn action, a webhook's warnings): sent as `Warning` headers with the
   * Status, as the original sends them on failed requests too.
   */
  warnings: string[] = [];
  /**
   * Audit annotations the request earned before it was refused (those of
   * the admission webhooks and policies that ran): they go to the request's
   * audit event, as the original records them on refused requests too.
   */
  auditAnnotations: Record<string, string> = {};

  constructor(code: number, reason: StatusReason, message: string, details?: StatusDetails, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ApiError';
    this.code = code;
    this.reason = reason;
    this.details = details;
  }

  /** Seconds a client should wait before retrying, when the error says so. */
  get retryAfterSeconds(): number | undefined {
    return this.details?.retryAfterSeconds;
  }

  toStatus(): Status {
    const status: Status = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      code: this.code,
    };
    if (this.details !== undefined) status.details = this.details;
    return status;
  }

  /** Rebuilds an error from a Status object (as carried across gRPC). */
  static fromStatus(status: Pick<Status, 'code' | 'reason' | 'message' | 'details'>): ApiError {
    return new ApiError(status.code, status.reason ?? '', status.message ?? '', status.details);
  }

  /** Any thrown value as an ApiError; unknown failures become a 500 without internals. */
  static from(err: unknown): ApiError {
    if (err instanceof ApiError) return err;
    return new ApiError(500, 'InternalError', 'Internal error occurred: an unexpected failure was logged on the server', undefined, {
      cause: err,
    });
  }

  static badRequest(message: string, causes?: StatusCause[]): ApiError {
    return new ApiError(400, 'BadRequest', message, causes ? { causes } : undefined);
  }

  static unauthorized(message = 'Unauthorized'): ApiError {
    return new ApiError(401, 'Unauthorized', message);
  }

  static forbidden(gr: GroupResource | undefined, name: string, message: string): ApiError {
    const what = gr ? `${qualified(gr)}${name ? ` "${name}"` : ''} is forbidden: ` : 'forbidden: ';
    const details: StatusDetails = {};
    if (name) details.name = name;
    if (gr) {
      details.group = gr.group;
      details.kind = gr.resource;
    }
    return new ApiError(403, 'Forbidden', `${what}${message}`, details);
  }

  static notFound(gr: GroupResource, name: string): ApiError {
    return new ApiError(404, 'NotFound', `${qualified(gr)} "${name}" not found`, {
      name,
      group: gr.group,
      kind: gr.resource,
    });
  }

  static alreadyExists(gr: GroupResource, name: string): ApiError {
    return new ApiError(409, 'AlreadyExists', `${qualified(gr)} "${name}" already exists`, {
      name,
      group: gr.group,
      kind: gr.resource,
    });
  }

  static conflict(gr: GroupResource, name: string, why: string): ApiError {
    return new ApiError(409, 'Conflict', `Operation cannot be fulfilled on ${qualified(gr)} "${name}": ${why}`, {
      name,
      group: gr.group,
      kind: gr.resource,
    });
  }

  static invalid(kind: { group: string; kind: string }, name: string, causes: StatusCause[]): ApiError {
    const summary = causes.map((c) => (c.field ? `${c.field}: ${c.message ?? ''}` : c.message ?? '')).join(', ');
    const qualifiedKind = kind.group ? `${kind.kind}.${kind.group}` : kind.kind;
    return new ApiError(422, 'Invalid', `${qualifiedKind} "${name}" is invalid: ${summary}`, {
      name,
      group: kind.group,
      kind: kind.kind,
      causes,
    });
  }

  static gone(message: string): ApiError {
    return new ApiError(410, 'Gone', message);
  }

  /** A resourceVersion too old to be served (compacted or outside the watch window). */
  static expired(message: string): ApiError {
    return new ApiError(410, 'Expired', message);
  }

  static methodNotAllowed(message: string): ApiError {
    return new ApiError(405, 'MethodNotAllowed', message);
  }

  static notAcceptable(message: string): ApiError {
    return new ApiError(406, 'NotAcceptable', message);
  }

  static unsupportedMediaType(contentType: string): ApiError {
    return new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.svc.protobuf (got ${JSON.stringify(contentType)})`);
  }

  static requestEntityTooLarge(message: string): ApiError {
    return new ApiError(413, 'RequestEntityTooLarge', message);
  }

  static tooLargeResourceVersion(requested: number, current: number): ApiError {
    return new ApiError(504, 'Timeout', `Too large resource version: ${requested}, current: ${current}`, {
      causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
      retryAfterSeconds: 1,
    });
  }

  static tooManyRequests(message: string, retryAfterSeconds = 1): ApiError {
    return new ApiError(429, 'TooManyRequests', message, { retryAfterSeconds });
  }

  static serviceUnavailable(message: string, retryAfterSeconds = 1): ApiError {
    return new ApiError(503, 'ServiceUnavailable', message, { retryAfterSeconds });
  }

  static timeout(message: string, retryAfterSeconds = 1): ApiError {
    return new ApiError(504, 'Timeout', message, { retryAfterSeconds });
  }

  static internal(message: string, cause?: unknown): ApiError {
    return new ApiError(500, 'InternalError', `Internal error occurred: ${message}`, undefined, { cause });
  }
}

/** A Status reporting success, as returned by DELETE of most kinds. */
export function successStatus(details?: StatusDetails): Omit<Status, 'code'> & { code?: number } {
  const status: Omit<Status, 'code'> & { code?: number } = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success' };
  if (details) status.details = details;
  return status;
}
