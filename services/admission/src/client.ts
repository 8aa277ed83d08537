import type { ApiObject, UserInfo } from '@svc/apimachinery';
import { admission } from '@svc/proto';
import { CallStream, toProtoUser, type CallOptions, channelTo, type InternalTls } from '@svc/service-kit';
import type { AdmissionOperation } from './plugins';

export type { AdmissionOperation };

/**
 * `mutating-then-validating` runs both phases in one call when mutation
 * leaves the object unchanged (`validated` in the output says so).
 */
export type AdmitPhase = 'mutating' | 'validating' | 'mutating-then-validating';

const PHASE: Record<AdmitPhase, admission.Phase> = {
  mutating: admission.Phase.PHASE_MUTATING,
  validating: admission.Phase.PHASE_VALIDATING,
  'mutating-then-validating': admission.Phase.PHASE_MUTATING_THEN_VALIDATING,
};

export interface AdmitInput {
  phase: AdmitPhase;
  operation: AdmissionOperation;
  kind: { group: string; version: string; kind: string };
  resource: { group: string; version: string; resource: string };
  subresource: string;
  namespace: string;
  name: string;
  userInfo: UserInfo;
  object?: ApiObject;
  oldObject?: ApiObject;
  options?: Record<string, unknown>;
  dryRun: boolean;
}

export interface AdmitOutput {
  /** The mutated object, when a mutating plugin changed it. */
  object?: ApiObject;
  warnings: string[];
  /** Validating admission ran and accepted the object. */
  validated: boolean;
  /** Annotations for the request's audit event, keyed `<plugin or webhook>/<key>`. */
  auditAnnotations: Record<string, string>;
  /** The admission webhooks whose patches changed the object, in order. */
  mutatedBy: string[];
}

const OPERATION: Record<AdmissionOperation, admission.Operation> = {
  CREATE: admission.Operation.OPERATION_CREATE,
  UPDATE: admission.Operation.OPERATION_UPDATE,
  DELETE: admission.Operation.OPERATION_DELETE,
  CONNECT: admission.Operation.OPERATION_CONNECT,
};

const json = (v: unknown): Buffer => (v === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(v)));

/** Typed client of the admission service; calls travel on its Calls stream. */
export class AdmissionClient {
  private readonly client: admission.AdmissionClient;
  private readonly calls: CallStream;

  constructor(address: string, tls: InternalTls) {
    this.client = new admission.AdmissionClient(...channelTo(address, 'admission', tls));
    this.calls = new CallStream('admission', () => this.client.calls(), { channel: () => this.client.getChannel() });
  }

  close(): void {
    this.calls.close();
    this.client.close();
  }

  async admit(input: AdmitInput, opts?: CallOptions): Promise<AdmitOutput> {
    const res = await this.calls.call(
      admission.AdmissionService.admit,
      {
        uid: opts?.requestId ?? '',
        phase: PHASE[input.phase],
        operation: OPERATION[input.operation],
        kind: input.kind,
        resource: input.resource,
        subresource: input.subresource,
        namespace: input.namespace,
        name: input.name,
        userInfo: toProtoUser(input.userInfo),
        object: json(input.object),
        oldObject: json(input.oldObject),
        options: json(input.options),
        dryRun: input.dryRun,
      },
      opts,
    );
    const out: AdmitOutput = { warnings: res.warnings, validated: res.validated, auditAnnotations: res.auditAnnotations, mutatedBy: res.mutatedBy };
    if (res.object.length > 0) out.object = JSON.parse(Buffer.from(res.object).toString('utf8')) as ApiObject;
    return out;
  }
}
