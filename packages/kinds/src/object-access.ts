/**
 * Typed reads of decoded objects. Strategies see objects as the client sent
 * them (after the schema check), so every read tolerates a missing or
 * mistyped value instead of trusting a static shape.
 */

export type Fields = Record<string, unknown>;

export function isRecord(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function asRecord(value: unknown): Fields | undefined {
  return isRecord(value) ? value : undefined;
}

export function asList(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

export function asString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export function asNumber(value: unknown): number | undefined {
  return typeof value === 'number' ? value : undefined;
}

/** The struct at `key`, created empty when missing or not a struct. */
export function ensureRecord(parent: Fields, key: string): Fields {
  const existing = parent[key];
  if (isRecord(existing)) return existing;
  const created: Fields = {};
  parent[key] = created;
  return created;
}

/** Sets `key` to `value` when the field is absent (null counts as absent). */
export function setDefault(target: Fields, key: string, value: unknown): void {
  if (target[key] === undefined || target[key] === null) target[key] = value;
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((item, i) => deepEqual(item, b[i]));
  }
  if (isRecord(a) && isRecord(b)) {
    const keysA = Object.keys(a).filter((k) => a[k] !== undefined);
    const keysB = Object.keys(b).filter((k) => b[k] !== undefined);
    return keysA.length === keysB.length && keysA.every((k) => deepEqual(a[k], b[k]));
  }
  return false;
}

/** A deep copy of JSON data. */
export function cloneJson<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}
