import { isIP } from 'node:net';
import { load } from 'js-yaml';
import type { UserInfo } from '@svc/apimachinery';
import type { AuditUser, ObjectReference } from './types';

/**
 * Pieces of an audit event, as the original server fills them: times with
 * microseconds, the source IPs, the user, the objects as JSON.
 */

// Wall-clock time with microseconds: the monotonic clock from an anchor,
// taken again every minute so the two cannot drift apart. Microseconds
// since the epoch fit a double exactly (below 2^53 until the year 2255).
let anchorMs = Date.now();
let anchorMonoMs = performance.now();
const REANCHOR_MS = 60_000;

/** Microseconds since the epoch. */
export function nowMicros(): number {
  const mono = performance.now();
  if (mono - anchorMonoMs > REANCHOR_MS) {
    anchorMs = Date.now();
    anchorMonoMs = mono;
  }
  return Math.floor((anchorMs + (mono - anchorMonoMs)) * 1000);
}

// The text of the last second formatted: events of one second share it.
let formattedSecond = -1;
let formattedPrefix = '';

/** `2026-11-27T07:33:03.123456Z` (metav1.MicroTime's form). */
export function formatMicros(us: number): string {
  const second = Math.floor(us / 1_000_000);
  if (second !== formattedSecond) {
    formattedPrefix = new Date(second * 1000).toISOString().slice(0, 19);
    formattedSecond = second;
  }
  return `${formattedPrefix}.${String(us - second * 1_000_000).padStart(6, '0')}Z`;
}

const MAX_USER_AGENT = 1024;

export function truncatedUserAgent(agent: string | undefined): string | undefined {
  if (!agent) return undefined;
  return agent.length > MAX_USER_AGENT ? `${agent.slice(0, MAX_USER_AGENT)}...TRUNCATED` : agent;
}

function plainIp(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

/**
 * The client's addresses as the original server lists them: those of
 * `X-Forwarded-For` in order, then `X-Real-Ip`, then the connection's peer,
 * each once.
 */
export function sourceIPs(headers: Record<string, string | string[] | undefined>, remoteAddress: string | undefined): string[] {
  const out: string[] = [];
  const add = (raw: string): void => {
    const ip = plainIp(raw.trim());
    if (isIP(ip) && !out.includes(ip)) out.push(ip);
  };
  const forwarded = headers['x-forwarded-for'];
  for (const value of Array.isArray(forwarded) ? forwarded : forwarded ? [forwarded] : []) for (const part of value.split(',')) add(part);
  const real = headers['x-real-ip'];
  if (typeof real === 'string') add(real);
  if (remoteAddress) add(remoteAddress);
  return out;
}

export function auditUser(user: UserInfo | undefined): AuditUser {
  if (!user) return {};
  const out: AuditUser = { username: user.username };
  if (user.uid) out.uid = user.uid;
  if (user.groups.length > 0) out.groups = user.groups;
  if (Object.keys(user.extra).length > 0) out.extra = user.extra;
  return out;
}

export interface RefAttributes {
  resource: string;
  namespace: string;
  name: string;
  apiGroup: string;
  apiVersion: string;
  subresource: string;
}

export function objectRef(a: RefAttributes): ObjectReference {
  const ref: ObjectReference = { resource: a.resource };
  if (a.namespace) ref.namespace = a.namespace;
  if (a.name) ref.name = a.name;
  if (a.apiGroup) ref.apiGroup = a.apiGroup;
  ref.apiVersion = a.apiVersion;
  if (a.subresource) ref.subresource = a.subresource;
  return ref;
}

function withoutManagedFieldsOf(value: unknown): void {
  if (typeof value !== 'object' || value === null) return;
  const obj = value as Record<string, unknown>;
  const meta = obj['metadata'];
  if (typeof meta === 'object' && meta !== null) delete (meta as Record<string, unknown>)['managedFields'];
}

/** Drops `metadata.managedFields` from an object, the items of a list, or the objects of a Table's rows (in place: the value was parsed for the event). */
export function omitManagedFields(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  withoutManagedFieldsOf(value);
  const obj = value as Record<string, unknown>;
  if (Array.isArray(obj['items'])) for (const item of obj['items']) withoutManagedFieldsOf(item);
  if (Array.isArray(obj['rows'])) for (const row of obj['rows'] as Array<Record<string, unknown>>) withoutManagedFieldsOf(row?.['object']);
  return value;
}

/**
 * A body as the event shows it: JSON as sent (YAML read as the same
 * object); undefined for what is neither (protobuf), or what does not
 * parse.
 */
export function bodyObject(body: Buffer, contentType: string | undefined): unknown {
  if (body.length === 0) return undefined;
  const type = (contentType ?? '').toLowerCase();
  try {
    if (type.includes('yaml')) return load(body.toString('utf8'));
    if (type.includes('json') || type === '' || body[0] === 0x7b) return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
  return undefined;
}
