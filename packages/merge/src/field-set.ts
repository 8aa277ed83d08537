/**
 * Sets of field paths, stored as a tree keyed by FieldsV1 path elements, and
 * their lossless FieldsV1 encoding.
 *
 * A node has members (paths that end here) and children (subtrees). In
 * FieldsV1 a member with no children is `"f:x": {}`, a child subtree is
 * `"f:x": {...}`, and a path that is both a member and has children carries
 * `".": {}` in its subtree. A FieldSet never holds an empty child subtree.
 */
import { MergeError } from './errors';
import { isJsonObject, JsonObject, MAX_DEPTH } from './json';
import { compareSerialized, FieldPath, parsePathElement, PathElement, serializePathElement, serializedPathToString } from './path';

export class FieldSet {
  /** Path elements (FieldsV1 key form) that are members at this level. */
  readonly members: ReadonlySet<string>;
  /** Subtrees below path elements (FieldsV1 key form); never empty. */
  readonly children: ReadonlyMap<string, FieldSet>;

  constructor(members: ReadonlySet<string> = new Set(), children: ReadonlyMap<string, FieldSet> = new Map()) {
    this.members = members;
    this.children = children;
  }

  static empty(): FieldSet {
    return new FieldSet();
  }

  /** Builds a set from paths; each path becomes a member. */
  static fromPaths(paths: Iterable<FieldPath>): FieldSet {
    const set = new FieldSet();
    for (const p of paths) insertPath(set, p.map(serializePathElement));
    return set;
  }

  /**
   * Parses a FieldsV1 tree. Unknown element types are dropped (as upstream
   * does); anything else malformed is a BadRequest naming the key.
   */
  static fromFieldsV1(fields: unknown, where = 'fieldsV1'): FieldSet {
    if (!isJsonObject(fields)) {
      throw MergeError.badRequest(`${where} must be an object`, [{ field: where, message: 'must be an object', reason: 'FieldValueInvalid' }]);
    }
    return readNode(fields, where, 0).set;
  }

  /** The FieldsV1 tree of this set, keys in upstream order, `.` last. */
  toFieldsV1(): JsonObject {
    return writeNode(this, false);
  }

  toJSON(): JsonObject {
    return this.toFieldsV1();
  }

  isEmpty(): boolean {
    return this.members.size === 0 && this.children.size === 0;
  }

  /** Number of member paths. */
  get size(): number {
    let n = this.members.size;
    for (const c of this.children.values()) n += c.size;
    return n;
  }

  has(path: FieldPath): boolean {
    return this.hasSerialized(path.map(serializePathElement));
  }

  /** Membership of a path given in FieldsV1 key form. */
  hasSerialized(path: readonly string[]): boolean {
    if (path.length === 0) return false;
    let node: FieldSet | undefined = this;
    for (let i = 0; i < path.length - 1; i++) {
      node = node.children.get(path[i] as string);
      if (node === undefined) return false;
    }
    return node.members.has(path[path.length - 1] as string);
  }

  /** The subtree below a path, or an empty set. */
  at(path: FieldPath): FieldSet {
    let node: FieldSet | undefined = this;
    for (const pe of path) {
      node = node.children.get(serializePathElement(pe));
      if (node === undefined) return FieldSet.empty();
    }
    return node;
  }

  union(other: FieldSet): FieldSet {
    if (other.isEmpty()) return this;
    if (this.isEmpty()) return other;
    const members = new Set(this.members);
    for (const m of other.members) members.add(m);
    const children = new Map(this.children);
    for (const [pe, c] of other.children) {
      const mine = children.get(pe);
      children.set(pe, mine ? mine.union(c) : c);
    }
    return new FieldSet(members, children);
  }

  /** Members of this set not in `other`; a member of `other` does not remove paths below it. */
  difference(other: FieldSet): FieldSet {
    if (other.isEmpty() || this.isEmpty()) return this;
    const members = new Set<string>();
    for (const m of this.members) if (!other.members.has(m)) members.add(m);
    const children = new Map<string, FieldSet>();
    for (const [pe, c] of this.children) {
      const theirs = other.children.get(pe);
      const d = theirs ? c.difference(theirs) : c;
      if (!d.isEmpty()) children.set(pe, d);
    }
    return new FieldSet(members, children);
  }

  /** Like difference, but a member of `other` also removes everything below it. */
  recursiveDifference(other: FieldSet): FieldSet {
    if (other.isEmpty() || this.isEmpty()) return this;
    const members = new Set<string>();
    for (const m of this.members) if (!other.members.has(m)) members.add(m);
    const children = new Map<string, FieldSet>();
    for (const [pe, c] of this.children) {
      if (other.members.has(pe)) continue;
      const theirs = other.children.get(pe);
      const d = theirs ? c.recursiveDifference(theirs) : c;
      if (!d.isEmpty()) children.set(pe, d);
    }
    return new FieldSet(members, children);
  }

  intersection(other: FieldSet): FieldSet {
    if (other.isEmpty() || this.isEmpty()) return FieldSet.empty();
    const members = new Set<string>();
    for (const m of this.members) if (other.members.has(m)) members.add(m);
    const children = new Map<string, FieldSet>();
    for (const [pe, c] of this.children) {
      const theirs = other.children.get(pe);
      if (!theirs) continue;
      const i = c.intersection(theirs);
      if (!i.isEmpty()) children.set(pe, i);
    }
    return new FieldSet(members, children);
  }

  equals(other: FieldSet): boolean {
    if (this === other) return true;
    if (this.members.size !== other.members.size || this.children.size !== other.children.size) return false;
    for (const m of this.members) if (!other.members.has(m)) return false;
    for (const [pe, c] of this.children) {
      const theirs = other.children.get(pe);
      if (!theirs || !c.equals(theirs)) return false;
    }
    return true;
  }

  /** Member paths in FieldsV1 key form, in upstream order (a path before the paths below it). */
  *serializedPaths(prefix: readonly string[] = []): Generator<string[]> {
    for (const pe of sortedElements(this)) {
      if (this.members.has(pe)) yield [...prefix, pe];
      const child = this.children.get(pe);
      if (child) yield* child.serializedPaths([...prefix, pe]);
    }
  }

  /** Member paths, in upstream order. Unknown element types never occur (they are dropped on parse). */
  *paths(): Generator<PathElement[]> {
    for (const p of this.serializedPaths()) yield p.map((s) => parsePathElement(s) as PathElement);
  }

  /** Member paths in readable form (`.spec.replicas`). */
  toStrings(): string[] {
    return [...this.serializedPaths()].map(serializedPathToString);
  }
}

function sortedElements(set: FieldSet): string[] {
  const all = new Set<string>(set.members);
  for (const pe of set.children.keys()) all.add(pe);
  return [...all].sort(compareSerialized);
}

/** Adds a member path to a set that is still being built (sets are otherwise treated as immutable). */
export function insertPath(set: FieldSet, path: readonly string[]): void {
  if (path.length === 0) return;
  let node = set;
  for (let i = 0; i < path.length - 1; i++) {
    const pe = path[i] as string;
    let next = node.children.get(pe);
    if (next === undefined) {
      next = new FieldSet();
      (node.children as Map<string, FieldSet>).set(pe, next);
    }
    node = next;
  }
  (node.members as Set<string>).add(path[path.length - 1] as string);
}

/** Adds a copy of `sub` below `path` in a set that is still being built. */
export function insertSubtree(set: FieldSet, path: readonly string[], sub: FieldSet): void {
  if (sub.isEmpty()) return;
  if (path.length === 0) {
    for (const m of sub.members) (set.members as Set<string>).add(m);
    for (const [pe, c] of sub.children) {
      let mine = set.children.get(pe);
      if (mine === undefined) {
        mine = new FieldSet();
        (set.children as Map<string, FieldSet>).set(pe, mine);
      }
      // Copied, not shared: the set being built may still grow below here.
      insertSubtree(mine, [], c);
    }
    return;
  }
  let node = set;
  for (const pe of path) {
    let next = node.children.get(pe);
    if (next === undefined) {
      next = new FieldSet();
      (node.children as Map<string, FieldSet>).set(pe, next);
    }
    node = next;
  }
  insertSubtree(node, [], sub);
}

function readNode(obj: JsonObject, where: string, depth: number): { set: FieldSet; self: boolean } {
  if (depth > MAX_DEPTH) {
    throw MergeError.badRequest(`${where} is nested too deeply`, [{ field: where, message: `nesting deeper than ${MAX_DEPTH} levels`, reason: 'FieldValueInvalid' }]);
  }
  const members = new Set<string>();
  const children = new Map<string, FieldSet>();
  let self = false;
  for (const key of Object.keys(obj)) {
    const value = obj[key];
    if (key === '.') {
      self = true;
      continue;
    }
    const canonical = canonicalElement(key);
    if (canonical === undefined) continue;
    if (!isJsonObject(value)) {
      const field = `${where}[${JSON.stringify(key)}]`;
      throw MergeError.badRequest(`${field} must be an object`, [{ field, message: 'must be an object', reason: 'FieldValueInvalid' }]);
    }
    // The path text is only built for nodes that have children to report on.
    const sub = isEmptyObject(value) ? EMPTY_NODE : readNode(value, `${where}[${JSON.stringify(key)}]`, depth + 1);
    // A subtree with nothing but "." (or nothing at all) is a plain member.
    if (sub.self || sub.set.isEmpty()) members.add(canonical);
    if (!sub.set.isEmpty()) {
      const existing = children.get(canonical);
      children.set(canonical, existing ? existing.union(sub.set) : sub.set);
    }
  }
  return { set: new FieldSet(members, children), self };
}

const EMPTY_NODE = { set: new FieldSet(), self: false };

function isEmptyObject(o: JsonObject): boolean {
  for (const _ in o) return false;
  return true;
}

// Key and value elements are re-encoded to their canonical form once, then remembered.
const canonicalCache = new Map<string, string | null>();
const CANONICAL_CACHE_LIMIT = 20000;

/** The canonical FieldsV1 form of a key, or undefined for an element type this version does not know. */
function canonicalElement(key: string): string | undefined {
  if (key.startsWith('f:')) return key;
  let c = canonicalCache.get(key);
  if (c === undefined) {
    const pe = parsePathElement(key);
    c = pe === undefined ? null : serializePathElement(pe);
    if (canonicalCache.size >= CANONICAL_CACHE_LIMIT) canonicalCache.clear();
    canonicalCache.set(key, c);
  }
  return c ?? undefined;
}

function writeNode(set: FieldSet, includeSelf: boolean): JsonObject {
  const out: JsonObject = {};
  for (const pe of sortedElements(set)) {
    const child = set.children.get(pe);
    out[pe] = child ? writeNode(child, set.members.has(pe)) : {};
  }
  if (includeSelf) out['.'] = {};
  return out;
}
