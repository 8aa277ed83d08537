import type { Request } from 'express';
import { ApiError, groupVersion, type ApiObject, type ResourceDefinition } from '@svc/apimachinery';
import { prepareSubresourceUpdate } from '@svc/kinds';
import type { GatewayDeps } from '../backends';
import { addAuditAnnotation, addWarning, auditRecorderFrom, authorizationFrom, deadlineFrom, queryValues, requestIdFrom, requestInfoFrom, userFrom } from '../context';
import { authorizeAsCreate } from '../filters/authorization';
import { negotiateOutput, type OutputFormat, type ProtobufCodec } from '../negotiation';
import type { RequestInfo } from '../request-info';
import type { FieldValidation, ReadContext, WriteContext } from '../registry/store';
import { firstValue, int64NumberParam, resourceVersionValue } from '../query-params';

/** What every resource handler needs: the kind, the parsed request, the negotiated output. */
export interface ResourceRequest {
  deps: GatewayDeps;
  def: ResourceDefinition;
  info: RequestInfo;
}

export type ResourceHandler = (req: Request, res: import('express').Response, r: ResourceRequest) => Promise<void>;

/**
 * A query parameter's value, as the request-info filter parsed it: the first
 * of a repeated parameter, as the original server reads one (and as the
 * request-info parser reads `watch` and `fieldSelector`, so a request is
 * authorized on the same value it is served with).
 */
export function query(req: Request, name: string): string | undefined {
  return firstValue(queryValues(req, name));
}

/** An int64 query parameter as a number (see query-params.ts); undefined when absent, 400 naming it when invalid. */
export function int64Query(req: Request, name: string): number | undefined {
  return int64NumberParam(queryValues(req, name), name);
}

export function outputFormat(req: Request, r: ResourceRequest, table: boolean): OutputFormat {
  return negotiateOutput(req.headers.accept, { table, protobuf: protobufFor(r) !== undefined });
}

/**
 * The protobuf codec when the kind has a protobuf form; undefined otherwise
 * (custom resources), so a protobuf body is a 415 and a protobuf-only
 * `Accept` a 406.
 */
export function protobufFor(r: ResourceRequest): ProtobufCodec | undefined {
  return r.deps.protobuf?.supports(groupVersion(r.def), r.def.kind) ? r.deps.protobuf : undefined;
}

/** Whether a dry run was asked for: the router refused a value other than `All` (request-options.ts), as DeleteOptions do for deletes. */
export function parseDryRun(req: Request): boolean {
  return queryValues(req, 'dryRun').length > 0;
}

/** The fieldValidation of a write (Warn by default): the router refused any other value for the writes that read it (request-options.ts). */
export function parseFieldValidation(req: Request): FieldValidation {
  const v = query(req, 'fieldValidation');
  return v === 'Ignore' || v === 'Strict' ? v : 'Warn';
}

/** A resourceVersion query parameter as a revision; undefined when unset or empty, 400 naming it when invalid or beyond int64. */
export function parseResourceVersion(raw: string | undefined): number | undefined {
  return resourceVersionValue(raw);
}

export function readContext(req: Request, r: ResourceRequest): ReadContext {
  return { deps: r.deps, def: r.def, namespace: r.info.namespace, requestId: requestIdFrom(req), deadline: deadlineFrom(req)?.deadline };
}

export function writeContext(req: Request, r: ResourceRequest): WriteContext {
  return {
    deps: r.deps,
    def: r.def,
    user: userFrom(req),
    requestId: requestIdFrom(req),
    deadline: deadlineFrom(req)?.deadline,
    namespace: r.info.namespace,
    subresource: r.info.subresource,
    dryRun: parseDryRun(req),
    fieldValidation: parseFieldValidation(req),
    fieldManager: fieldManagerOf(req),
    authorizeCreate: () => authorizeAsCreate(authorizationFrom(req)),
    warn: (text) => addWarning(req, text),
    annotate: (key, value) => addAuditAnnotation(req, key, value),
  };
}

/**
 * The `fieldManager` query parameter, or else the client's name from its
 * User-Agent (the part before the first `/`), as the original server does.
 */
export function fieldManagerOf(req: Request): string {
  // Checked by the router for the writes that take one (request-options.ts); a delete ignores it, as the original does.
  const explicit = query(req, 'fieldManager');
  if (explicit !== undefined && explicit !== '') return explicit;
  const agent = (req.headers['user-agent'] ?? '').split('/')[0]?.trim().slice(0, 128) ?? '';
  return agent === '' ? 'unknown' : agent;
}

/**
 * Reads the body, answering 413 past the limit. Read with the stream's
 * events: an async iterator costs every request its own end-of-stream
 * machinery, a measurable part of a create.
 */
export async function readBody(req: Request, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? '0');
  if (declared > maxBytes) throw ApiError.requestEntityTooLarge(`the request body of ${declared} bytes is larger than the limit of ${maxBytes} bytes`);
  const prematureClose = (): Error => Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
  if (req.readableEnded) return Buffer.alloc(0);
  if (req.destroyed) throw prematureClose();
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (err: unknown, body?: Buffer): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      if (body) resolve(body);
      else reject(err);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBytes) {
        finish(ApiError.requestEntityTooLarge(`the request body is larger than the limit of ${maxBytes} bytes`));
        // The rest is not read: the request is ended, as leaving a for-await loop over it ends it.
        req.destroy();
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      const body = Buffer.concat(chunks);
      auditRecorderFrom(req)?.requestBody(body, req.headers['content-type']);
      finish(undefined, body);
    };
    const onError = (err: Error): void => finish(err);
    const onClose = (): void => finish(prematureClose());
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

export function requestInfo(req: Request): RequestInfo {
  return requestInfoFrom(req);
}

/**
 * The object a write through a subresource leaves: metadata from the stored
 * object (with the request's resourceVersion, for compare-and-swap, and the
 * managedFields the write recorded), the rest as the subresource's rules say
 * (`status` takes only the status, `finalize` only `spec.finalizers`).
 */
export function subresourceWrite(subresource: string, written: ApiObject, current: ApiObject): ApiObject {
  const meta = written.metadata ?? {};
  const next: ApiObject = {
    ...written,
    metadata: {
      ...(current.metadata ?? {}),
      resourceVersion: meta.resourceVersion ?? current.metadata?.resourceVersion,
      ...(meta.managedFields ? { managedFields: meta.managedFields } : {}),
    },
  };
  if (next.metadata?.resourceVersion === undefined) delete next.metadata?.resourceVersion;
  if (!prepareSubresourceUpdate(subresource, next, current)) throw ApiError.methodNotAllowed(`writes through the ${subresource} subresource are not supported`);
  return next;
}

/** The kind as a write through a subresource sees it: the main resource's update rules do not apply. */
export function writeDefinition(def: ResourceDefinition, subresource: string): ResourceDefinition {
  return subresource ? { ...def, strategy: { ...def.strategy, prepareForUpdate: undefined } } : def;
}
