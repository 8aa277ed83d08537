import type { ApiObject } from '@svc/apimachinery';
import { mandatoryFlowSchemas, mandatoryPriorityLevelConfigurations, PRIORITY_LEVEL_CATCH_ALL, PRIORITY_LEVEL_EXEMPT } from '@svc/kinds';

/**
 * The API Priority and Fairness configuration as the gateway reads it:
 * FlowSchemas and PriorityLevelConfigurations (flowcontrol.svc.io/v1) from
 * storage, narrowed to the fields dispatch uses, and digested as the
 * original server digests them: schemas in matching order, every level's
 * concurrency limit as its share of the server's, the mandatory exempt and
 * catch-all objects imagined when they are missing, and schemas naming a
 * missing level left out (dangling).
 */

export { FLOWCONTROL_GROUP } from '@svc/kinds';

export interface Subject {
  kind: 'User' | 'Group' | 'ServiceAccount' | string;
  user?: { name: string };
  group?: { name: string };
  serviceAccount?: { namespace: string; name: string };
}

export interface ResourceRule {
  verbs: string[];
  apiGroups: string[];
  resources: string[];
  clusterScope?: boolean;
  namespaces?: string[];
}

export interface NonResourceRule {
  verbs: string[];
  nonResourceURLs: string[];
}

export interface PolicyRules {
  subjects: Subject[];
  resourceRules?: ResourceRule[];
  nonResourceRules?: NonResourceRule[];
}

export type DistinguisherMethod = 'ByUser' | 'ByNamespace' | undefined;

/** A FlowSchema, the fields classification reads. */
export interface FlowSchema {
  name: string;
  uid: string;
  resourceVersion: string;
  priorityLevel: string;
  matchingPrecedence: number;
  distinguisherMethod: DistinguisherMethod;
  rules: PolicyRules[];
}

export interface QueuingConfiguration {
  queues: number;
  handSize: number;
  queueLengthLimit: number;
}

/** A PriorityLevelConfiguration, the fields dispatch reads. */
export interface PriorityLevel {
  name: string;
  uid: string;
  resourceVersion: string;
  type: 'Exempt' | 'Limited';
  nominalConcurrencyShares: number;
  lendablePercent: number;
  /** Undefined: no limit on borrowing. */
  borrowingLimitPercent: number | undefined;
  /** Undefined: Reject (no queues) when over the limit. */
  queuing: QueuingConfiguration | undefined;
}

const DEFAULT_MATCHING_PRECEDENCE = 1000;
const DEFAULT_SHARES = 30;
const DEFAULT_QUEUING: QueuingConfiguration = { queues: 64, handSize: 8, queueLengthLimit: 50 };

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

function int(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? Math.trunc(value) : fallback;
}

function named(value: unknown): { name: string } | undefined {
  const name = record(value)['name'];
  return typeof name === 'string' ? { name } : undefined;
}

function subjectOf(value: unknown): Subject {
  const s = record(value);
  const out: Subject = { kind: typeof s['kind'] === 'string' ? s['kind'] : '' };
  const user = named(s['user']);
  const group = named(s['group']);
  const sa = record(s['serviceAccount']);
  if (user) out.user = user;
  if (group) out.group = group;
  if (typeof sa['name'] === 'string' && typeof sa['namespace'] === 'string') out.serviceAccount = { namespace: sa['namespace'], name: sa['name'] };
  return out;
}

function rulesOf(value: unknown): PolicyRules {
  const r = record(value);
  const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
  return {
    subjects: list(r['subjects']).map(subjectOf),
    resourceRules: list(r['resourceRules']).map((rr) => {
      const o = record(rr);
      return { verbs: strings(o['verbs']), apiGroups: strings(o['apiGroups']), resources: strings(o['resources']), clusterScope: o['clusterScope'] === true, namespaces: strings(o['namespaces']) };
    }),
    nonResourceRules: list(r['nonResourceRules']).map((nr) => {
      const o = record(nr);
      return { verbs: strings(o['verbs']), nonResourceURLs: strings(o['nonResourceURLs']) };
    }),
  };
}

/** Reads a stored FlowSchema (fields missing or of the wrong type take the API's defaults). */
export function flowSchemaFrom(obj: ApiObject): FlowSchema {
  const spec = record(obj['spec']);
  const method = record(spec['distinguisherMethod'])['type'];
  return {
    name: obj.metadata?.name ?? '',
    uid: obj.metadata?.uid ?? '',
    resourceVersion: obj.metadata?.resourceVersion ?? '',
    priorityLevel: named(spec['priorityLevelConfiguration'])?.name ?? '',
    matchingPrecedence: int(spec['matchingPrecedence'], DEFAULT_MATCHING_PRECEDENCE),
    distinguisherMethod: method === 'ByUser' || method === 'ByNamespace' ? method : undefined,
    rules: (Array.isArray(spec['rules']) ? spec['rules'] : []).map(rulesOf),
  };
}

/** Reads a stored PriorityLevelConfiguration. */
export function priorityLevelFrom(obj: ApiObject): PriorityLevel {
  const spec = record(obj['spec']);
  const base = { name: obj.metadata?.name ?? '', uid: obj.metadata?.uid ?? '', resourceVersion: obj.metadata?.resourceVersion ?? '' };
  if (spec['type'] === 'Exempt') {
    const exempt = record(spec['exempt']);
    return { ...base, type: 'Exempt', nominalConcurrencyShares: int(exempt['nominalConcurrencyShares'], 0), lendablePercent: int(exempt['lendablePercent'], 0), borrowingLimitPercent: undefined, queuing: undefined };
  }
  const limited = record(spec['limited']);
  const response = record(limited['limitResponse']);
  const q = record(response['queuing']);
  const borrowing = limited['borrowingLimitPercent'];
  return {
    ...base,
    type: 'Limited',
    nominalConcurrencyShares: int(limited['nominalConcurrencyShares'], DEFAULT_SHARES),
    lendablePercent: int(limited['lendablePercent'], 0),
    borrowingLimitPercent: typeof borrowing === 'number' ? borrowing : undefined,
    queuing:
      response['type'] === 'Queue'
        ? {
            queues: Math.max(1, int(q['queues'], DEFAULT_QUEUING.queues)),
            handSize: Math.max(1, int(q['handSize'], DEFAULT_QUEUING.handSize)),
            queueLengthLimit: Math.max(1, int(q['queueLengthLimit'], DEFAULT_QUEUING.queueLengthLimit)),
          }
        : undefined,
  };
}

// The mandatory objects (the kinds' bootstrap configuration), imagined as the original does until the controller manager has created them.
export const EXEMPT = PRIORITY_LEVEL_EXEMPT;
export const CATCH_ALL = PRIORITY_LEVEL_CATCH_ALL;
export const MANDATORY_PRIORITY_LEVELS: readonly PriorityLevel[] = mandatoryPriorityLevelConfigurations().map(priorityLevelFrom);
export const MANDATORY_FLOW_SCHEMAS: readonly FlowSchema[] = mandatoryFlowSchemas().map(flowSchemaFrom);

/** A priority level with the limits derived from the server's total. */
export interface DigestedLevel {
  config: PriorityLevel;
  /** Seats the level may use (its nominal limit adjusted by lending and borrowing); Infinity when exempt. */
  concurrencyLimit: number;
  nominalLimit: number;
  lendableLimit: number;
  /** Most seats the level may borrow from others (Infinity: no limit). */
  borrowingLimit: number;
  /** The most seats one request may take at this level. */
  maxSeats: number;
  /** True when the object is imagined (not stored yet). */
  imagined: boolean;
}

export interface DigestedConfig {
  /** In matching order: matchingPrecedence, then name. */
  flowSchemas: FlowSchema[];
  levels: Map<string, DigestedLevel>;
  /** Schemas naming a level that does not exist, by name, with that level's name. */
  dangling: Map<string, string>;
  /** Every imagined mandatory object's name, `kind/name`. */
  imagined: string[];
  serverConcurrencyLimit: number;
}

/** The share of the server's limit a level of these shares gets (at least 1 seat when it has shares, as the original rounds up). */
function nominalLimit(shares: number, totalShares: number, serverLimit: number): number {
  if (totalShares <= 0) return 0;
  return Math.ceil((serverLimit * shares) / totalShares);
}

/** The most seats a list may take at a level (the original: 15 % of its limit, at most its limit over its hand size). */
function maxSeatsOf(limit: number, queuing: QueuingConfiguration | undefined): number {
  const byShare = Math.ceil(limit * 0.15);
  const byHand = queuing ? Math.floor(limit / queuing.handSize) : byShare;
  return Math.max(1, Math.min(byShare, byHand));
}

/**
 * Digests stored objects into the configuration dispatch uses.
 * `serverConcurrencyLimit` is `--max-requests-inflight` +
 * `--max-mutating-requests-inflight`.
 */
export function digestConfig(schemaObjects: readonly FlowSchema[], levelObjects: readonly PriorityLevel[], serverConcurrencyLimit: number): DigestedConfig {
  const imagined: string[] = [];
  const levelConfigs = new Map<string, { config: PriorityLevel; imagined: boolean }>();
  for (const l of levelObjects) if (l.name) levelConfigs.set(l.name, { config: l, imagined: false });
  for (const l of MANDATORY_PRIORITY_LEVELS) {
    if (levelConfigs.has(l.name)) continue;
    levelConfigs.set(l.name, { config: l, imagined: true });
    imagined.push(`prioritylevelconfigurations/${l.name}`);
  }
  const schemas = new Map<string, FlowSchema>();
  for (const s of schemaObjects) if (s.name) schemas.set(s.name, s);
  for (const s of MANDATORY_FLOW_SCHEMAS) {
    if (schemas.has(s.name)) continue;
    schemas.set(s.name, s);
    imagined.push(`flowschemas/${s.name}`);
  }
  const dangling = new Map<string, string>();
  const flowSchemas: FlowSchema[] = [];
  for (const s of schemas.values()) {
    if (levelConfigs.has(s.priorityLevel)) flowSchemas.push(s);
    else dangling.set(s.name, s.priorityLevel);
  }
  flowSchemas.sort((a, b) => a.matchingPrecedence - b.matchingPrecedence || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

  // Every level's shares count towards the total, the exempt level's too (its nominal limit is then lent, as in the original).
  let totalShares = 0;
  for (const { config } of levelConfigs.values()) totalShares += Math.max(0, config.nominalConcurrencyShares);
  const levels = new Map<string, DigestedLevel>();
  for (const [name, { config, imagined: isImagined }] of levelConfigs) {
    const nominal = nominalLimit(Math.max(0, config.nominalConcurrencyShares), totalShares, serverConcurrencyLimit);
    const lendable = Math.round((nominal * Math.min(100, Math.max(0, config.lendablePercent))) / 100);
    const borrowing = config.borrowingLimitPercent === undefined ? Infinity : Math.round((nominal * Math.max(0, config.borrowingLimitPercent)) / 100);
    const exempt = config.type === 'Exempt';
    const limit = exempt ? Infinity : Math.max(1, nominal);
    levels.set(name, {
      config,
      concurrencyLimit: limit,
      nominalLimit: nominal,
      lendableLimit: lendable,
      borrowingLimit: borrowing,
      maxSeats: exempt ? 1 : maxSeatsOf(limit, config.queuing),
      imagined: isImagined,
    });
  }
  return { flowSchemas, levels, dangling, imagined, serverConcurrencyLimit };
}
