import type { Request, Response } from 'express';
import { ApiError, canonicalGroup, checkAgainstSchema, isJsonObject, type ApiObject, type JsonObject, type Schema, type StatusCause, type UserInfo } from '@svc/apimachinery';
import { decodeBody, negotiateOutput } from '../../negotiation';
import { writeBody } from '../../responses';
import { readBody, type ResourceRequest } from '../../handlers/common';
import { checkTypeMetaStrings, typeMetaRefusal } from '../store';

/**
 * Reading and answering requests the server computes instead of storing an
 * object (the reviews and the TokenRequest): each decodes the body the
 * client sent (JSON, YAML or protobuf), fills in `status`, and answers in the
 * apiVersion the client used, so clients built against the upstream type
 * names (`authentication.k8s.io`) decode the answer.
 */

export interface Expected {
  group: string;
  version: string;
  kind: string;
  /** The kind's schema: values of the wrong type are a 400 naming the field. */
  schema?: Schema;
  /** Versions accepted besides `version` (an Eviction still sent as policy/v1beta1). */
  versions?: string[];
}

/**
 * Decodes the body and checks it names the expected kind. Answers with the
 * apiVersion the body named (or the path's, when the body named none).
 */
export async function readReview(req: Request, r: ResourceRequest, expected: Expected, pathGroup: string): Promise<{ object: ApiObject; apiVersion: string }> {
  const body = await readBody(req, r.deps.limits.maxBodyBytes);
  const { object } = decodeBody(req.headers['content-type'], body, r.deps.protobuf);
  const expectedVersion = `${expected.group}/${expected.version}`;
  checkTypeMetaStrings(expected, object);
  const sent = typeof object.apiVersion === 'string' ? object.apiVersion : '';
  const kind = typeof object.kind === 'string' && object.kind !== '' ? object.kind : expected.kind;
  const slash = sent.indexOf('/');
  const group = slash < 0 ? '' : sent.slice(0, slash);
  const version = sent.slice(slash + 1);
  const accepted = sent === '' || (canonicalGroup(group) === expected.group && (version === expected.version || (expected.versions ?? []).includes(version)));
  // Refused in the original decoder's words, as any other body of the wrong kind or version.
  if (!accepted || kind !== expected.kind) throw typeMetaRefusal(expected, sent === '' ? expectedVersion : sent, kind, r.deps.registry);
  const { typeErrors } = checkAgainstSchema(object, expected.schema);
  if (typeErrors.length > 0) {
    throw ApiError.badRequest(`${expected.kind} in version "${expected.version}" cannot be handled as a ${expected.kind}: ${(typeErrors[0] as StatusCause).message ?? ''}`, typeErrors);
  }
  return { object, apiVersion: sent !== '' ? sent : `${pathGroup}/${expected.version}` };
}

export function respond(req: Request, res: Response, r: ResourceRequest, code: number, out: ApiObject, kind: string, apiVersion: string): void {
  const protobufOk = r.deps.protobuf?.supports(apiVersion, kind) ?? false;
  writeBody(req, res, code, out, negotiateOutput(req.headers.accept, { table: false, protobuf: protobufOk }), r.deps.protobuf);
}

export function userInfoJson(user: UserInfo): JsonObject {
  const out: JsonObject = { username: user.username, groups: [...user.groups] };
  if (user.uid !== '') out['uid'] = user.uid;
  if (Object.keys(user.extra).length > 0) out['extra'] = Object.fromEntries(Object.entries(user.extra).map(([k, v]) => [k, [...v]]));
  return out;
}

export function stringList(value: unknown, field: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) throw ApiError.badRequest(`${field} must be a list of strings`);
  return value as string[];
}

export function specOf(object: ApiObject): JsonObject {
  const spec = object['spec'];
  if (spec === undefined || spec === null) return {};
  if (!isJsonObject(spec)) throw ApiError.badRequest('spec must be an object');
  return spec;
}
