import { ApiError, type ApiObject, type ResourceDefinition } from '@svc/apimachinery';

/**
 * Server-side tables (`Accept: application/json;as=Table;...`): a name
 * column, the kind's printer columns and an age, or for kinds without columns
 * the default `Name` and `Created At` (SPEC section 2).
 */
export interface TableColumn {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

export interface Table {
  kind: 'Table';
  apiVersion: string;
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  columnDefinitions: TableColumn[];
  rows: Array<{ cells: unknown[]; object?: unknown }>;
}

export type IncludeObject = 'None' | 'Metadata' | 'Object';

const INCLUDE_OBJECT: readonly string[] = ['None', 'Metadata', 'Object'];

/**
 * The `includeObject` parameter of a Table request: Metadata when absent or
 * empty; a value the server does not know is 400, as the original refuses
 * it, never read as the default.
 */
export function includeObjectParam(raw: string | undefined): IncludeObject {
  if (raw === undefined || raw === '') return 'Metadata';
  if (INCLUDE_OBJECT.includes(raw)) return raw as IncludeObject;
  throw ApiError.badRequest(`Unable to convert to Table as requested: includeObject: Invalid value: ${JSON.stringify(raw)}: must be 'Metadata', 'Object', 'None', or empty`);
}

/** Human-readable age as kubectl shows it: 45s, 5m10s, 3h, 12d. */
export function humanDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (d < 8) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  if (d < 365 * 2) return `${d}d`;
  return `${Math.floor(d / 365)}y`;
}

function valueAt(obj: ApiObject, jsonPath: string): unknown {
  let cur: unknown = obj;
  for (const part of jsonPath.replace(/^\./, '').split('.')) {
    if (part === '') continue;
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

export function toTable(def: ResourceDefinition, objects: ApiObject[], group: string, version: string, include: IncludeObject, now: Date = new Date()): Table {
  const custom = def.printerColumns.length > 0;
  // A kind that places Age itself (a date column named Age) gets no trailing one.
  const ownAge = def.printerColumns.some((c) => c.name === 'Age' && c.type === 'date');
  const columns: TableColumn[] = [{ name: 'Name', type: 'string', format: 'name', description: 'Name must be unique within a namespace.', priority: 0 }];
  for (const c of def.printerColumns) {
    columns.push({ name: c.name, type: c.type === 'date' ? 'string' : c.type, format: c.format ?? '', description: c.description ?? '', priority: c.priority ?? 0 });
  }
  if (!ownAge) {
    columns.push(
      custom
        ? { name: 'Age', type: 'string', format: '', description: 'CreationTimestamp is the time the object was created.', priority: 0 }
        : { name: 'Created At', type: 'date', format: '', description: 'CreationTimestamp is the time the object was created.', priority: 0 },
    );
  }
  const rows = objects.map((obj) => {
    const created = obj.metadata?.creationTimestamp;
    const cells: unknown[] = [obj.metadata?.name ?? ''];
    for (const c of def.printerColumns) {
      const v = c.compute ? c.compute(obj) : valueAt(obj, c.jsonPath);
      cells.push(c.type === 'date' && typeof v === 'string' ? humanDuration(now.getTime() - Date.parse(v)) : v ?? '<none>');
    }
    if (!ownAge) cells.push(custom ? (created ? humanDuration(now.getTime() - Date.parse(created)) : '<unknown>') : created ?? '');
    const row: { cells: unknown[]; object?: unknown } = { cells };
    if (include === 'Object') row.object = obj;
    else if (include === 'Metadata') row.object = { kind: 'PartialObjectMetadata', apiVersion: `${group}/${version}`, metadata: obj.metadata ?? {} };
    return row;
  });
  return { kind: 'Table', apiVersion: `${group}/${version}`, metadata: {}, columnDefinitions: columns, rows };
}
