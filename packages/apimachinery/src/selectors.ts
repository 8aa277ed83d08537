import { ApiError } from './errors';

/**
 * Label and field selectors in their string forms, as clients send them in
 * `labelSelector` and `fieldSelector`.
 */

export type LabelOperator = 'in' | 'notin' | 'exists' | '!' | '=' | '!=' | 'gt' | 'lt';

export interface LabelRequirement {
  key: string;
  operator: LabelOperator;
  values: string[];
}

export interface LabelSelector {
  requirements: LabelRequirement[];
  matches(labels: Record<string, string> | undefined): boolean;
  readonly empty: boolean;
}

function matchRequirement(r: LabelRequirement, labels: Record<string, string>): boolean {
  const has = Object.prototype.hasOwnProperty.call(labels, r.key);
  const value = has ? labels[r.key] : undefined;
  switch (r.operator) {
    case '=':
    case 'in':
      return has && r.values.includes(value as string);
    case '!=':
    case 'notin':
      return !has || !r.values.includes(value as string);
    case 'exists':
      return has;
    case '!':
      return !has;
    case 'gt':
    case 'lt': {
      if (!has) return false;
      const n = Number(value);
      const bound = Number(r.values[0]);
      if (!Number.isInteger(n)) return false;
      return r.operator === 'gt' ? n > bound : n < bound;
    }
  }
}

function selector(requirements: LabelRequirement[]): LabelSelector {
  return {
    requirements,
    empty: requirements.length === 0,
    matches: (labels) => requirements.every((r) => matchRequirement(r, labels ?? {})),
  };
}

/** Splits on commas that are not inside parentheses. */
function splitTopLevel(input: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of input) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else current += ch;
  }
  parts.push(current);
  return parts.map((p) => p.trim()).filter((p) => p.length > 0);
}

const KEY = String.raw`[A-Za-z0-9][-A-Za-z0-9_./]*`;
const SET_EXPR = new RegExp(String.raw`^(${KEY})\s+(in|notin)\s+\(([^)]*)\)$`);
const EQ_EXPR = new RegExp(String.raw`^(${KEY})\s*(==|=|!=)\s*([-A-Za-z0-9_.]*)$`);
const CMP_EXPR = new RegExp(String.raw`^(${KEY})\s*(>|<)\s*(-?[0-9]+)$`);
const EXISTS_EXPR = new RegExp(String.raw`^(!?)\s*(${KEY})$`);

export function parseLabelSelector(input: string | undefined): LabelSelector {
  const text = (input ?? '').trim();
  if (text === '') return selector([]);
  const requirements: LabelRequirement[] = [];
  for (const part of splitTopLevel(text)) {
    let m: RegExpExecArray | null;
    if ((m = SET_EXPR.exec(part))) {
      const values = (m[3] ?? '').split(',').map((v) => v.trim()).filter((v) => v !== '');
      requirements.push({ key: m[1] as string, operator: m[2] as 'in' | 'notin', values });
    } else if ((m = EQ_EXPR.exec(part))) {
      requirements.push({ key: m[1] as string, operator: m[2] === '!=' ? '!=' : '=', values: [m[3] as string] });
    } else if ((m = CMP_EXPR.exec(part))) {
      requirements.push({ key: m[1] as string, operator: m[2] === '>' ? 'gt' : 'lt', values: [m[3] as string] });
    } else if ((m = EXISTS_EXPR.exec(part))) {
      requirements.push({ key: m[2] as string, operator: m[1] === '!' ? '!' : 'exists', values: [] });
    } else {
      throw ApiError.badRequest(`unable to parse requirement: found '${part}', expected: a valid label selector`);
    }
  }
  return selector(requirements);
}

/** A label selector as API objects carry it (`matchLabels`, `matchExpressions`). */
export interface LabelSelectorObject {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
}

const SELECTOR_OPERATORS: Record<string, LabelOperator> = { In: 'in', NotIn: 'notin', Exists: 'exists', DoesNotExist: '!' };

/**
 * The selector an object's `LabelSelector` stands for (every term must hold;
 * an empty or missing one matches everything), with the original's checks:
 * an unknown operator, `In`/`NotIn` without values, or `Exists`/`DoesNotExist`
 * with values is a BadRequest naming the problem.
 */
export function labelSelectorFromObject(sel: LabelSelectorObject | null | undefined): LabelSelector {
  const requirements: LabelRequirement[] = [];
  for (const [key, value] of Object.entries(sel?.matchLabels ?? {})) requirements.push({ key, operator: '=', values: [value] });
  for (const e of sel?.matchExpressions ?? []) {
    const operator = SELECTOR_OPERATORS[e.operator];
    if (!operator) throw ApiError.badRequest(`${JSON.stringify(e.operator)} is not a valid label selector operator`);
    const values = e.values ?? [];
    if ((operator === 'in' || operator === 'notin') && values.length === 0) throw ApiError.badRequest("for 'in', 'notin' operators, values set can't be empty");
    if ((operator === 'exists' || operator === '!') && values.length > 0) throw ApiError.badRequest("values set must be empty for exists and does not exist");
    requirements.push({ key: e.key, operator, values });
  }
  return selector(requirements);
}

export interface FieldRequirement {
  field: string;
  operator: '=' | '!=';
  value: string;
}

export interface FieldSelector {
  requirements: FieldRequirement[];
  readonly empty: boolean;
  /** True when every requirement holds; `fields` maps a field path to its value. */
  matches(fields: Record<string, string | undefined>): boolean;
}

export function parseFieldSelector(input: string | undefined): FieldSelector {
  const text = (input ?? '').trim();
  const requirements: FieldRequirement[] = [];
  if (text !== '') {
    for (const part of splitTopLevel(text)) {
      const m = /^([A-Za-z0-9_.\-]+)\s*(==|=|!=)\s*(.*)$/.exec(part);
      if (!m) throw ApiError.badRequest(`invalid selector: '${part}'; can't understand '${part}'`);
      requirements.push({ field: m[1] as string, operator: m[2] === '!=' ? '!=' : '=', value: (m[3] as string).trim() });
    }
  }
  return {
    requirements,
    empty: requirements.length === 0,
    matches: (fields) =>
      requirements.every((r) => {
        const v = fields[r.field] ?? '';
        return r.operator === '=' ? v === r.value : v !== r.value;
      }),
  };
}

/**
 * The value a field selector compares for `path` (`spec.nodeName`,
 * `metadata.name`): a scalar as its text, an object or list as its JSON,
 * a missing or null field as undefined (which an `=` of "" matches).
 */
export function fieldSelectorValue(obj: unknown, path: string): string | undefined {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  if (cur === undefined || cur === null) return undefined;
  return typeof cur === 'object' ? JSON.stringify(cur) : String(cur);
}

/**
 * The one matcher of label and field selectors: lists (in storage) and
 * watches (in the gateway) select objects with it, so both agree on every
 * value.
 */
export function matchesSelectors(obj: { metadata?: { labels?: Record<string, string> } }, labels: LabelSelector, fields: FieldSelector): boolean {
  if (!labels.matches(obj.metadata?.labels)) return false;
  if (fields.empty) return true;
  const values: Record<string, string | undefined> = {};
  for (const r of fields.requirements) values[r.field] = fieldSelectorValue(obj, r.field);
  return fields.matches(values);
}
