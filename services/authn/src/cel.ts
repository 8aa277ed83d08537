import { celEnv, isCelError, isCelList, isCelMap, parse, plan, type CelInput, type CelValue } from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';

/**
 * CEL for the authentication configuration (`@bufbuild/cel`, with the
 * strings extension): expressions are compiled once when the file loads and
 * run against `claims` (the token's payload) or `user` (the mapped user).
 *
 * Cost: the library has no cost tracking, so evaluation is bounded by its
 * inputs instead. CEL has no unbounded loops; its work grows with the size
 * of the expression and of the data, and both are bounded: an expression is
 * at most `MAX_EXPRESSION_LENGTH` characters and the claims come from a
 * token of at most 16 KiB.
 */

export const MAX_EXPRESSION_LENGTH = 10_000;

export class CelCompileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CelCompileError';
  }
}

/** The JSON value as a CEL input: objects become maps, arrays lists, numbers doubles. */
export function toCel(value: unknown): CelInput {
  if (value === null || value === undefined) return null;
  if (Array.isArray(value)) return value.map(toCel);
  if (typeof value === 'object') return new Map(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, toCel(v)]));
  if (typeof value === 'string' || typeof value === 'boolean' || typeof value === 'number') return value;
  return String(value);
}

/** A CEL result as plain JSON-like data (lists as arrays, maps as objects). */
export function fromCel(value: CelValue): unknown {
  if (isCelList(value)) return [...value].map(fromCel);
  if (isCelMap(value)) return Object.fromEntries([...value.entries()].map(([k, v]) => [String(k), fromCel(v)]));
  if (typeof value === 'bigint') return Number(value);
  return value;
}

export type CompiledExpression = (bindings: Record<string, unknown>) => { ok: true; value: unknown } | { ok: false; error: string };

const ENV_VARIABLES = ['claims', 'user'] as const;

/** Compiles `source`; a syntax error or an unknown variable is a CelCompileError naming `field`. */
export function compileExpression(source: string, field: string): CompiledExpression {
  if (source.trim() === '') throw new CelCompileError(`${field}: Required value: an expression is required`);
  if (source.length > MAX_EXPRESSION_LENGTH) throw new CelCompileError(`${field}: Too long: may not be more than ${MAX_EXPRESSION_LENGTH} characters`);
  let parsed;
  try {
    parsed = parse(source);
  } catch (err) {
    throw new CelCompileError(`${field}: Invalid value: compilation failed: ${(err as Error).message}`);
  }
  const env = celEnv({ funcs: strings });
  const run = plan(env, parsed) as (ctx?: Record<string, CelInput>) => CelValue;
  return (bindings) => {
    const ctx: Record<string, CelInput> = {};
    for (const name of ENV_VARIABLES) if (name in bindings) ctx[name] = toCel(bindings[name]);
    let result: CelValue;
    try {
      result = run(ctx);
    } catch (err) {
      return { ok: false, error: (err as Error).message };
    }
    if (isCelError(result)) return { ok: false, error: result.message };
    return { ok: true, value: fromCel(result) };
  };
}

/** Whether the expression mentions `claims.<name>` (or `claims["<name>"]`). */
export function mentionsClaim(source: string, name: string): boolean {
  return new RegExp(`claims\\s*(\\.\\s*\\??\\s*${name}\\b|\\[\\s*["']${name}["']\\s*\\])`).test(source);
}
