import { children, identName, type Expr } from './ast';
import { LIBRARY_RESULT_TYPES } from './library';
import type { CelDeclaredType } from './declared-type';

export type { CelDeclaredType } from './declared-type';

/**
 * Static checks done at compile time: every identifier is a declared
 * variable (or a comprehension's own), selections of declared object fields
 * exist, and the result has the type the caller asks for. The inference is
 * deliberately small: where it cannot know a type it says `dyn`, which is
 * accepted everywhere, so it refuses only what would certainly fail (as the
 * original's type checker does for declared types).
 */

/** Type names CEL allows as identifiers (`type(x) == string`). */
const TYPE_IDENTIFIERS = new Set(['bool', 'int', 'uint', 'double', 'string', 'bytes', 'list', 'map', 'null_type', 'type', 'dyn']);

export function typeName(t: CelDeclaredType): string {
  if (typeof t === 'string') return t === 'null' ? 'null_type' : t;
  if ('list' in t) return `list(${typeName(t.list)})`;
  if ('map' in t) return `map(string, ${typeName(t.map)})`;
  return 'object';
}

/** The identifiers used but not declared (comprehension variables are declared in their loop). */
export function undeclared(e: Expr | undefined, declared: ReadonlySet<string>, out: Set<string>): void {
  if (!e) return;
  const k = e.exprKind;
  if (k.case === 'identExpr') {
    if (!declared.has(k.value.name) && !TYPE_IDENTIFIERS.has(k.value.name)) out.add(k.value.name);
    return;
  }
  if (k.case === 'comprehensionExpr') {
    const c = k.value;
    undeclared(c.iterRange, declared, out);
    undeclared(c.accuInit, declared, out);
    const inner = new Set([...declared, c.iterVar, c.accuVar, ...(c.iterVar2 ? [c.iterVar2] : [])]);
    for (const x of [c.loopCondition, c.loopStep, c.result]) undeclared(x, inner, out);
    return;
  }
  for (const child of children(e)) undeclared(child, declared, out);
}

/** Whether `e` names the variable `name` anywhere outside a comprehension that declares its own. */
export function referencesVariable(e: Expr | undefined, name: string): boolean {
  if (!e) return false;
  const k = e.exprKind;
  if (k.case === 'identExpr') return k.value.name === name;
  if (k.case === 'comprehensionExpr') {
    const c = k.value;
    if (referencesVariable(c.iterRange, name) || referencesVariable(c.accuInit, name)) return true;
    if (c.iterVar === name || c.iterVar2 === name || c.accuVar === name) return false;
    return [c.loopCondition, c.loopStep, c.result].some((x) => referencesVariable(x, name));
  }
  return children(e).some((x) => referencesVariable(x, name));
}

/** Whether `e` selects `<operand>.<field>` anywhere (the original's test, for `claims.email` and `claims.email_verified`). */
export function selectsField(e: Expr | undefined, operand: string, field: string): boolean {
  if (!e) return false;
  const k = e.exprKind;
  if (k.case === 'selectExpr' && identName(k.value.operand) === operand && k.value.field === field) return true;
  if (k.case === 'comprehensionExpr') {
    const c = k.value;
    return [c.iterRange, c.accuInit, c.loopCondition, c.loopStep, c.result].some((x) => selectsField(x, operand, field));
  }
  return children(e).some((x) => selectsField(x, operand, field));
}

/** Functions whose result is a bool whatever their arguments. */
const BOOL_FUNCTIONS = new Set(['_&&_', '_||_', '!_', '_==_', '_!=_', '_<_', '_<=_', '_>_', '_>=_', '@in', 'contains', 'startsWith', 'endsWith', 'matches', 'bool', '@not_strictly_false', 'not_strictly_false']);
const INT_FUNCTIONS = new Set(['size', 'int', 'indexOf', 'lastIndexOf']);
const STRING_FUNCTIONS = new Set(['string', 'lowerAscii', 'upperAscii', 'trim', 'replace', 'substring', 'join', 'format', 'charAt', 'quote']);
/** Arithmetic: the result has the type of the left operand. */
const ARITHMETIC = new Set(['_+_', '_-_', '_*_', '_/_', '_%_', '-_']);

/** A problem the type inference found, with the offending expression's description. */
export class TypeCheckProblem extends Error {}

const ORDERING = new Set(['_<_', '_<=_', '_>_', '_>=_']);
const NUMERIC = new Set(['int', 'uint', 'double']);
/** The types whose operators are checked: where a value certainly has one of these, a mismatch certainly fails. */
const PRIMITIVES = new Set(['bool', 'int', 'uint', 'double', 'string', 'bytes', 'null_type']);

/**
 * Refuses an operator whose operands certainly have types it has no
 * overload for, as the original's checker does (`found no matching
 * overload for '_>_' applied to '(int, string)'`): ordering between
 * different types other than numbers (numbers compare across types),
 * arithmetic between different types or on types without it. Operands of
 * unknown or composite type are not judged.
 */
function checkOperands(fn: string, operands: readonly CelDeclaredType[]): void {
  if (operands.length !== 2 || !(ORDERING.has(fn) || ARITHMETIC.has(fn))) return;
  const [a, b] = operands.map(typeName) as [string, string];
  if (!PRIMITIVES.has(a) || !PRIMITIVES.has(b)) return;
  let ok: boolean;
  if (ORDERING.has(fn)) ok = (NUMERIC.has(a) && NUMERIC.has(b)) || (a === b && a !== 'null_type');
  else if (fn === '_+_') ok = a === b && (NUMERIC.has(a) || a === 'string' || a === 'bytes');
  else if (fn === '_%_') ok = a === b && (a === 'int' || a === 'uint');
  else ok = a === b && NUMERIC.has(a);
  if (!ok) throw new TypeCheckProblem(`found no matching overload for '${fn}' applied to '(${a}, ${b})'`);
}

function sameType(a: CelDeclaredType, b: CelDeclaredType): boolean {
  return typeName(a) === typeName(b);
}

/** Infers the type of `e`; throws TypeCheckProblem for a selection of a field an object does not declare. */
export function inferType(e: Expr | undefined, scope: ReadonlyMap<string, CelDeclaredType>): CelDeclaredType {
  if (!e) return 'dyn';
  const k = e.exprKind;
  switch (k.case) {
    case 'constExpr': {
      const c = k.value.constantKind.case;
      if (c === 'boolValue') return 'bool';
      if (c === 'int64Value') return 'int';
      if (c === 'uint64Value') return 'uint';
      if (c === 'doubleValue') return 'double';
      if (c === 'stringValue') return 'string';
      if (c === 'bytesValue') return 'bytes';
      if (c === 'nullValue') return 'null';
      return 'dyn';
    }
    case 'identExpr':
      return scope.get(k.value.name) ?? (TYPE_IDENTIFIERS.has(k.value.name) ? 'type' : 'dyn');
    case 'selectExpr': {
      const operand = inferType(k.value.operand, scope);
      if (typeof operand === 'object' && 'object' in operand) {
        const field = operand.object[k.value.field];
        if (field === undefined) throw new TypeCheckProblem(`undefined field '${k.value.field}'`);
        return k.value.testOnly ? 'bool' : field;
      }
      if (k.value.testOnly) return 'bool';
      if (typeof operand === 'object' && 'map' in operand) return operand.map;
      return 'dyn';
    }
    case 'listExpr': {
      const items = k.value.elements.map((x) => inferType(x, scope));
      const first = items[0];
      return { list: first !== undefined && items.every((i) => sameType(i, first)) ? first : 'dyn' };
    }
    case 'structExpr':
      for (const entry of k.value.entries) {
        if (entry.keyKind.case === 'mapKey') inferType(entry.keyKind.value, scope);
        inferType(entry.value, scope);
      }
      return { map: 'dyn' };
    case 'comprehensionExpr': {
      const c = k.value;
      const range = inferType(c.iterRange, scope);
      const inner = new Map(scope);
      const elem = typeof range === 'object' && 'list' in range ? range.list : typeof range === 'object' && 'map' in range ? 'string' : 'dyn';
      inner.set(c.iterVar, elem);
      if (c.iterVar2) inner.set(c.iterVar2, typeof range === 'object' && 'map' in range ? range.map : 'dyn');
      inner.set(c.accuVar, inferType(c.accuInit, scope));
      inferType(c.loopCondition, inner);
      const step = inferType(c.loopStep, inner);
      // The accumulator's type is what the step makes of it (`[]` grows into a list of the mapped items).
      inner.set(c.accuVar, step);
      return inferType(c.result, inner);
    }
    case 'callExpr': {
      const target = k.value.target ? inferType(k.value.target, scope) : undefined;
      const args = k.value.args.map((a) => inferType(a, scope));
      const all = target !== undefined ? [target, ...args] : args;
      const fn = k.value.function;
      if (target === undefined) checkOperands(fn, args);
      if (BOOL_FUNCTIONS.has(fn)) return 'bool';
      if (INT_FUNCTIONS.has(fn)) return 'int';
      if (STRING_FUNCTIONS.has(fn)) return 'string';
      if (fn === 'double') return 'double';
      if (fn === 'uint') return 'uint';
      if (fn === 'type') return 'type';
      if (fn === 'split' || fn === 'findAll') return { list: 'string' };
      const library = LIBRARY_RESULT_TYPES[fn];
      if (library) return library;
      // A list's sum, min and max have the type of its items.
      if ((fn === 'sum' || fn === 'min' || fn === 'max') && typeof target === 'object' && 'list' in target) return target.list;
      if (ARITHMETIC.has(fn)) return all[0] ?? 'dyn';
      if (fn === '_?_:_') {
        const [, a, b] = all;
        return a !== undefined && b !== undefined && sameType(a, b) ? a : 'dyn';
      }
      if (fn === '_[_]') {
        const container = all[0];
        if (typeof container === 'object' && 'list' in container) return container.list;
        if (typeof container === 'object' && 'map' in container) return container.map;
        return 'dyn';
      }
      return 'dyn';
    }
    default:
      return 'dyn';
  }
}
