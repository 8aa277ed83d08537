import { ApiError } from '@svc/apimachinery';

/**
 * The one error type of this package: an ApiError whose reason is one of
 * three (400 BadRequest, 422 Invalid, 409 Conflict), with causes that name
 * the field, so it reaches the client as a Status without translation.
 */

export type MergeErrorReason = 'BadRequest' | 'Invalid' | 'Conflict';

export interface MergeErrorCause {
  /** Where the problem is, as a JSON-ish path: `.spec.ports[port=80,protocol="TCP"]`, `spec.containers[0]`. */
  field: string;
  message: string;
  /** A Status cause type: `FieldManagerConflict`, `FieldValueInvalid`, `FieldValueDuplicate`, ... */
  reason: string;
}

/** One field of an apply conflict, with the manager that owns it. */
export interface FieldConflict {
  /** Readable path, as in the cause. */
  field: string;
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  subresource?: string;
}

const CODES: Record<MergeErrorReason, 400 | 422 | 409> = {
  BadRequest: 400,
  Invalid: 422,
  Conflict: 409,
};

export class MergeError extends ApiError {
  override readonly reason: MergeErrorReason;
  override readonly code: 400 | 422 | 409;
  readonly causes: MergeErrorCause[];
  /** For apply conflicts: who owns each conflicting field and through which operation. */
  readonly conflicts: FieldConflict[];

  constructor(reason: MergeErrorReason, message: string, causes: MergeErrorCause[] = [], options?: { cause?: unknown; conflicts?: FieldConflict[] }) {
    super(CODES[reason], reason, message, causes.length > 0 ? { causes } : undefined, options);
    this.name = 'MergeError';
    this.reason = reason;
    this.code = CODES[reason];
    this.causes = causes;
    this.conflicts = options?.conflicts ?? [];
  }

  static override badRequest(message: string, causes: MergeErrorCause[] = []): MergeError {
    return new MergeError('BadRequest', message, causes);
  }

  static invalidDocument(message: string, causes: MergeErrorCause[] = []): MergeError {
    return new MergeError('Invalid', message, causes);
  }

  static applyConflict(message: string, causes: MergeErrorCause[], conflicts: FieldConflict[] = []): MergeError {
    return new MergeError('Conflict', message, causes, { conflicts });
  }

  /** An error about values found in a document, with one cause per problem. */
  static fromCauses(reason: MergeErrorReason, prefix: string, causes: MergeErrorCause[]): MergeError {
    const summary = causes.map((c) => `${c.field}: ${c.message}`).join(', ');
    return new MergeError(reason, `${prefix}: ${summary}`, causes);
  }
}
