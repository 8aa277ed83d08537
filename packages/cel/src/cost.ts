import { identName, type Expr } from './ast';

/**
 * The deterministic cost bound (SPEC section 8). The library keeps no cost
 * account, so every evaluation is preceded by a bound of its cost computed
 * from the expression and the sizes of the actual inputs, and an evaluation
 * whose bound exceeds the budget is refused instead of run. The bound
 * follows the original's model where it is documented: comparing or
 * visiting one element or character costs 1, a list or map literal costs
 * 40, `matches` costs length(pattern) × length(input), and a comprehension
 * (`map`, `filter`, `all`, `exists`, `exists_one`) costs its body once per
 * element of its range. Sizes of values the expression builds
 * (concatenations, `split`, `replace`, mapped lists) are tracked through the
 * expression, so the bound is an upper bound of the work done, never below
 * it.
 */

/** The base cost of a list or map literal. */
const LITERAL_COST = 40;
/** An authorization check (the admission `authorizer` library): fixed, so that an expression can make two. */
export const AUTHORIZATION_CHECK_COST = 350_000;
/** The authorizer library's builders and accessors: nominal. */
const AUTHORIZER_BUILDERS = new Set(['serviceAccount', 'path', 'group', 'resource', 'subresource', 'namespace', 'name', 'allowed', 'reason', 'error', 'errored']);
/** Beyond this nesting, the shape of input data is summarised. */
const MAX_SHAPE_DEPTH = 12;
/** Numbers above this are all "too costly"; keeps the arithmetic finite. */
const COST_CAP = 1e15;

// ---- shapes: how large a value is, and its parts ----

/** The size of a value (characters of a string, items of a list or map) and the largest shapes of its parts. */
export interface Shape {
  size: number;
  /** List items or map values. */
  elem?: Shape;
  /** Map keys. */
  key?: Shape;
  /** The values of known map keys. */
  fields?: Map<string, Shape>;
}

const SCALAR: Shape = { size: 1 };

/** A value about which only a size bound is known: every part is as large as the whole. */
export function unknownShape(size: number): Shape {
  const shape: Shape = { size };
  shape.elem = shape;
  shape.key = shape;
  return shape;
}

function add(...values: number[]): number {
  return Math.min(values.reduce((a, b) => a + b, 0), COST_CAP);
}

function mul(a: number, b: number): number {
  return a === 0 || b === 0 ? 0 : Math.min(a * b, COST_CAP);
}

function merge(a: Shape | undefined, b: Shape | undefined, depth = 0): Shape | undefined {
  if (!a) return b;
  if (!b || a === b) return a;
  if (depth > MAX_SHAPE_DEPTH) return unknownShape(Math.max(a.size, b.size));
  const out: Shape = { size: Math.max(a.size, b.size) };
  const elem = merge(a.elem, b.elem, depth + 1);
  const key = merge(a.key, b.key, depth + 1);
  if (elem) out.elem = elem;
  if (key) out.key = key;
  return out;
}

/** The shape of a JSON value; deeper than MAX_SHAPE_DEPTH it is summarised by the largest size below. */
export function shapeOf(value: unknown, depth = 0): Shape {
  if (typeof value === 'string') return { size: value.length };
  if (value === null || typeof value !== 'object') return SCALAR;
  if (depth > MAX_SHAPE_DEPTH) return unknownShape(largestSize(value));
  if (Array.isArray(value)) {
    let elem: Shape | undefined;
    for (const v of value) elem = merge(elem, shapeOf(v, depth + 1));
    return elem ? { size: value.length, elem } : { size: value.length };
  }
  const entries = Object.entries(value as Record<string, unknown>);
  const fields = new Map<string, Shape>();
  let elem: Shape | undefined;
  let key: Shape | undefined;
  for (const [k, v] of entries) {
    const s = shapeOf(v, depth + 1);
    fields.set(k, s);
    elem = merge(elem, s);
    key = merge(key, { size: k.length });
  }
  const shape: Shape = { size: entries.length, fields };
  if (elem) shape.elem = elem;
  if (key) shape.key = key;
  return shape;
}

export function largestSize(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (value === null || typeof value !== 'object') return 1;
  const parts = Array.isArray(value) ? value : Object.entries(value as Record<string, unknown>).flat();
  let largest = parts.length;
  const stack: unknown[] = [...parts];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') largest = Math.max(largest, v.length);
    else if (v !== null && typeof v === 'object') {
      const inner = Array.isArray(v) ? v : Object.entries(v as Record<string, unknown>).flat();
      largest = Math.max(largest, inner.length);
      stack.push(...inner);
    }
  }
  return largest;
}

// ---- the cost bound ----

interface Estimate {
  cost: number;
  shape: Shape;
}

/** Functions that visit their receiver and argument once and return a scalar. */
const SCAN_FUNCTIONS = new Set(['isSorted', 'sum', 'isURL', 'quantity', 'isQuantity', 'isInteger', 'asInteger', 'asApproximateFloat', 'sign', 'isGreaterThan', 'isLessThan', 'compareTo', 'add', 'sub', 'contains', 'startsWith', 'endsWith', 'indexOf', 'lastIndexOf', '_==_', '_!=_', '_<_', '_<=_', '_>_', '_>=_']);
/** Functions that visit their receiver once and return something as large. */
const COPY_FUNCTIONS = new Set(['url', 'getScheme', 'getHost', 'getHostname', 'getPort', 'getEscapedPath', 'lowerAscii', 'upperAscii', 'trim', 'reverse', 'string', 'bytes', 'substring', 'charAt', 'quote', 'dyn']);

export class CostEstimator {
  /** The accumulators of the comprehensions being estimated. */
  private readonly accumulators = new Set<string>();

  constructor(private readonly unknown: Shape) {}

  estimate(e: Expr | undefined, scope: Map<string, Shape>): Estimate {
    if (!e) return { cost: 0, shape: SCALAR };
    const k = e.exprKind;
    switch (k.case) {
      case 'constExpr': {
        const c = k.value.constantKind;
        if (c.case === 'stringValue') return { cost: 0, shape: { size: c.value.length } };
        if (c.case === 'bytesValue') return { cost: 0, shape: { size: c.value.length } };
        return { cost: 0, shape: SCALAR };
      }
      case 'identExpr':
        return { cost: 1, shape: scope.get(k.value.name) ?? this.unknown };
      case 'selectExpr': {
        const operand = this.estimate(k.value.operand, scope);
        if (k.value.testOnly) return { cost: add(operand.cost, 1), shape: SCALAR };
        return { cost: add(operand.cost, 1), shape: operand.shape.fields?.get(k.value.field) ?? operand.shape.elem ?? this.unknown };
      }
      case 'listExpr': {
        const items = k.value.elements.map((x) => this.estimate(x, scope));
        let elem: Shape | undefined;
        for (const i of items) elem = merge(elem, i.shape);
        return { cost: add(LITERAL_COST, ...items.map((i) => i.cost)), shape: elem ? { size: items.length, elem } : { size: items.length } };
      }
      case 'structExpr': {
        let cost = LITERAL_COST;
        const fields = new Map<string, Shape>();
        let elem: Shape | undefined;
        let key: Shape | undefined;
        for (const entry of k.value.entries) {
          const value = this.estimate(entry.value, scope);
          cost = add(cost, value.cost);
          elem = merge(elem, value.shape);
          if (entry.keyKind.case === 'mapKey') {
            const keyEstimate = this.estimate(entry.keyKind.value, scope);
            cost = add(cost, keyEstimate.cost);
            key = merge(key, keyEstimate.shape);
            const c = entry.keyKind.value.exprKind;
            if (c.case === 'constExpr' && c.value.constantKind.case === 'stringValue') fields.set(c.value.constantKind.value, value.shape);
          } else {
            fields.set(entry.keyKind.value ?? '', value.shape);
          }
        }
        const shape: Shape = { size: k.value.entries.length, fields };
        if (elem) shape.elem = elem;
        if (key) shape.key = key;
        return { cost, shape };
      }
      case 'comprehensionExpr':
        return this.comprehension(k.value, scope);
      case 'callExpr':
        return this.call(k.value, scope);
      default:
        return { cost: 1, shape: this.unknown };
    }
  }

  private comprehension(c: Extract<Expr['exprKind'], { case: 'comprehensionExpr' }>['value'], scope: Map<string, Shape>): Estimate {
    const range = this.estimate(c.iterRange, scope);
    const init = this.estimate(c.accuInit, scope);
    const n = range.shape.size;
    const inner = new Map(scope);
    this.accumulators.add(c.accuVar);
    // A list's loop variable is an item; a map's is a key (and the value with two variables).
    inner.set(c.iterVar, (range.shape.key ? merge(range.shape.key, range.shape.elem) : range.shape.elem) ?? this.unknown);
    if (c.iterVar2) inner.set(c.iterVar2, range.shape.elem ?? this.unknown);
    // First pass: how much one step adds to the accumulator; second: the cost with the largest accumulator.
    inner.set(c.accuVar, init.shape);
    const firstStep = this.estimate(c.loopStep, inner).shape;
    const growth = Math.max(0, firstStep.size - init.shape.size);
    const accumulated = merge(init.shape, firstStep) ?? init.shape;
    inner.set(c.accuVar, { ...accumulated, size: add(init.shape.size, mul(n, growth)) });
    const condition = this.estimate(c.loopCondition, inner);
    const step = this.estimate(c.loopStep, inner);
    const result = this.estimate(c.result, inner);
    return { cost: add(range.cost, init.cost, mul(n, add(condition.cost, step.cost)), result.cost), shape: result.shape };
  }

  private call(c: Extract<Expr['exprKind'], { case: 'callExpr' }>['value'], scope: Map<string, Shape>): Estimate {
    const target = c.target ? this.estimate(c.target, scope) : undefined;
    const args = c.args.map((a) => this.estimate(a, scope));
    const all = target ? [target, ...args] : args;
    const base = add(1, ...all.map((a) => a.cost));
    const size = (i: number): number => all[i]?.shape.size ?? 1;
    const fn = c.function;
    // Appending to a comprehension's accumulator copies nothing (the original builds the list in place).
    if (fn === '_+_' && !c.target && this.accumulators.has(identName(c.args[0]))) {
      const left = all[0]?.shape ?? SCALAR;
      const right = all[1]?.shape ?? SCALAR;
      return { cost: add(base, size(1)), shape: { ...(merge(left, right) ?? left), size: add(left.size, right.size) } };
    }
    switch (fn) {
      case '_[_]': {
        const container = all[0]?.shape ?? this.unknown;
        const keyExpr = c.args[1]?.exprKind;
        const known = keyExpr?.case === 'constExpr' && keyExpr.value.constantKind.case === 'stringValue' ? container.fields?.get(keyExpr.value.constantKind.value) : undefined;
        return { cost: base, shape: known ?? container.elem ?? this.unknown };
      }
      case '_?_:_':
        return { cost: base, shape: merge(all[1]?.shape, all[2]?.shape) ?? SCALAR };
      case '_&&_':
      case '_||_':
      case '!_':
      case '-_':
      case 'size':
      case 'has':
      case 'type':
      case 'int':
      case 'uint':
      case 'double':
      case 'bool':
      case '_*_':
      case '_/_':
      case '_%_':
      case '_-_':
        return { cost: base, shape: SCALAR };
      case '_+_': {
        const left = all[0]?.shape ?? SCALAR;
        const right = all[1]?.shape ?? SCALAR;
        return { cost: add(base, size(0), size(1)), shape: { ...(merge(left, right) ?? left), size: add(left.size, right.size) } };
      }
      case '@in':
        return { cost: add(base, size(1)), shape: SCALAR };
      case 'matches':
        return { cost: add(base, mul(size(0), Math.max(1, size(1)))), shape: SCALAR };
      case 'find':
        return { cost: add(base, mul(size(0), Math.max(1, size(1)))), shape: { size: size(0) } };
      case 'findAll':
        return { cost: add(base, mul(size(0), Math.max(1, size(1)))), shape: { size: size(0), elem: { size: size(0) } } };
      case 'min':
      case 'max': {
        const list = all[0]?.shape ?? this.unknown;
        return { cost: add(base, list.size), shape: list.elem ?? this.unknown };
      }
      case 'check':
        if (c.target) return { cost: add(base, AUTHORIZATION_CHECK_COST), shape: this.unknown };
        break;
      case 'fieldSelector':
      case 'labelSelector':
        // Parsing the selector: a traversal, and a requirement for about every few characters.
        if (c.target) return { cost: add(base, mul(size(1), 2)), shape: this.unknown };
        break;
      case 'getQuery':
        return { cost: add(base, size(0)), shape: { size: size(0), key: { size: size(0) }, elem: { size: size(0), elem: { size: size(0) } } } };
      case 'split':
        return { cost: add(base, size(0)), shape: { size: add(size(0), 1), elem: { size: size(0) } } };
      case 'join': {
        const list = all[0]?.shape ?? this.unknown;
        const total = add(mul(list.size, list.elem?.size ?? 1), mul(list.size, size(1)));
        return { cost: add(base, total), shape: { size: total } };
      }
      case 'replace': {
        const total = mul(size(0), add(1, size(2)));
        return { cost: add(base, total), shape: { size: total } };
      }
    }
    if (c.target && AUTHORIZER_BUILDERS.has(fn)) return { cost: base, shape: this.unknown };
    if (SCAN_FUNCTIONS.has(fn)) return { cost: add(base, ...all.map((a) => a.shape.size)), shape: SCALAR };
    if (COPY_FUNCTIONS.has(fn)) return { cost: add(base, size(0)), shape: { size: size(0) } };
    // Anything else (format, ...): visits all of its inputs and returns something as large as all of them.
    const total = add(...all.map((a) => mul(a.shape.size, Math.max(1, a.shape.elem?.size ?? 1))));
    return { cost: add(base, total), shape: { ...this.unknown, size: Math.max(1, total) } };
  }
}

