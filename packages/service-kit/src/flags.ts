/**
 * Command-line flags in the `--name=value` / `--name value` form the original
 * server uses. Each service declares its flags once; `--help` prints them.
 */
import { DurationError, parseGoDuration } from './duration';

export interface FlagSpec {
  description: string;
  /** Default value; a flag without a default and with `required` must be given. */
  default?: string;
  required?: boolean;
  /** The flag may be repeated; values are collected in order. */
  repeated?: boolean;
  /** The flag is boolean: `--flag` alone means true. */
  boolean?: boolean;
}

export type FlagSpecs = Record<string, FlagSpec>;

export class FlagError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FlagError';
  }
}

export interface ParsedFlags {
  get(name: string): string;
  getOptional(name: string): string | undefined;
  getAll(name: string): string[];
  getBool(name: string): boolean;
  getInt(name: string): number;
  /** Whether the flag was on the command line (rather than left at its default). */
  given(name: string): boolean;
}

export function usage(command: string, specs: FlagSpecs): string {
  const lines = [`Usage: ${command} [flags]`, '', 'Flags:'];
  for (const [name, spec] of Object.entries(specs)) {
    const def = spec.default !== undefined ? ` (default ${JSON.stringify(spec.default)})` : spec.required ? ' (required)' : '';
    lines.push(`  --${name}${spec.boolean ? '' : '=<value>'}${spec.repeated ? ' (repeatable)' : ''}`);
    lines.push(`      ${spec.description}${def}`);
  }
  return lines.join('\n');
}

export function parseFlags(argv: readonly string[], specs: FlagSpecs): ParsedFlags {
  const values = new Map<string, string[]>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (!arg.startsWith('--')) throw new FlagError(`unexpected argument ${JSON.stringify(arg)}`);
    const eq = arg.indexOf('=');
    const name = eq >= 0 ? arg.slice(2, eq) : arg.slice(2);
    const spec = specs[name];
    if (!spec) throw new FlagError(`unknown flag --${name}`);
    let value: string;
    if (eq >= 0) value = arg.slice(eq + 1);
    else if (spec.boolean) value = 'true';
    else {
      const next = argv[i + 1];
      if (next === undefined) throw new FlagError(`flag --${name} needs a value`);
      value = next;
      i++;
    }
    const list = values.get(name) ?? [];
    if (!spec.repeated) list.length = 0;
    list.push(value);
    values.set(name, list);
  }
  for (const [name, spec] of Object.entries(specs)) {
    if (spec.required && !values.has(name) && spec.default === undefined) throw new FlagError(`flag --${name} is required`);
  }
  const optional = (name: string): string | undefined => {
    const spec = specs[name];
    if (!spec) throw new FlagError(`flag --${name} is not declared`);
    const list = values.get(name);
    return list && list.length > 0 ? list[list.length - 1] : spec.default;
  };
  return {
    given: (name) => values.has(name),
    getOptional: optional,
    get(name) {
      const v = optional(name);
      if (v === undefined) throw new FlagError(`flag --${name} is required`);
      return v;
    },
    getAll(name) {
      return values.get(name) ?? (specs[name]?.default !== undefined && specs[name]?.default !== '' ? [specs[name]?.default as string] : []);
    },
    getBool(name) {
      const v = optional(name);
      if (v === undefined || v === '' || v === 'false' || v === '0') return false;
      if (v === 'true' || v === '1') return true;
      throw new FlagError(`flag --${name} must be true or false, got ${JSON.stringify(v)}`);
    },
    getInt(name) {
      const v = optional(name);
      const n = Number(v);
      if (v === undefined || !Number.isInteger(n)) throw new FlagError(`flag --${name} must be an integer, got ${JSON.stringify(v)}`);
      return n;
    },
  };
}

/**
 * A list flag as the original server's string-slice flags take it: the flag
 * may be repeated, and each value may itself be comma-separated
 * (`--h=A,B --h=C` is `[A, B, C]`). Blank entries are dropped.
 */
export function listFlag(flags: ParsedFlags, name: string): string[] {
  return flags
    .getAll(name)
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean);
}

/**
 * A duration in the form the original server's flags take (`2m0s`, `1h`,
 * `90s`, `500ms`, `0`), in milliseconds, read by the one duration parser.
 * A plain number is refused except 0, as there it would be ambiguous, and
 * so is a sign: no flag takes a negative duration.
 */
export function parseDuration(value: string, flag: string): number {
  const text = value.trim();
  const refused = () => new FlagError(`--${flag}: invalid duration ${JSON.stringify(value)} (examples: 2m0s, 1h, 90s, 500ms)`);
  if (text.startsWith('-') || text.startsWith('+')) throw refused();
  try {
    return parseGoDuration(text);
  } catch (err) {
    if (err instanceof DurationError) throw refused();
    throw err;
  }
}
