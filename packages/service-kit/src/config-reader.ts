import { load } from 'js-yaml';

/**
 * Strict reading of a configuration document (the structured authentication
 * and authorization files): each problem is collected with the path of its
 * field (`authorizers[1].webhook.timeout: Invalid value: ...`), so one read
 * reports all of them, and an unknown field is a problem, as the original
 * server's strict decoding makes it.
 */
export type JsonObject = Record<string, unknown>;

export class FieldReader {
  readonly problems: string[] = [];

  problem(field: string, message: string): void {
    this.problems.push(`${field}: ${message}`);
  }

  /** An object whose fields are among `known` (strict decoding). */
  object(value: unknown, field: string, known?: readonly string[]): JsonObject | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'object' || Array.isArray(value)) {
      this.problem(field, 'Invalid value: must be an object');
      return undefined;
    }
    if (known) {
      for (const key of Object.keys(value)) if (!known.includes(key)) this.problem(field === '<root>' ? key : `${field}.${key}`, 'unknown field');
    }
    return value as JsonObject;
  }

  /** The document's `apiVersion` is one of `versions` and its `kind` is `kind`. */
  typeMeta(root: JsonObject, kind: string, versions: readonly string[]): void {
    if (!versions.includes(String(root['apiVersion']))) {
      this.problem('apiVersion', `Unsupported value: ${JSON.stringify(root['apiVersion'] ?? '')}: supported values: ${versions.map((v) => JSON.stringify(v)).join(', ')}`);
    }
    if (root['kind'] !== kind) this.problem('kind', `Unsupported value: ${JSON.stringify(root['kind'] ?? '')}: supported values: ${JSON.stringify(kind)}`);
  }

  list(value: unknown, field: string): unknown[] {
    if (value === undefined || value === null) return [];
    if (!Array.isArray(value)) {
      this.problem(field, 'Invalid value: must be a list');
      return [];
    }
    return value;
  }

  string(value: unknown, field: string): string | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string') {
      this.problem(field, 'Invalid value: must be a string');
      return undefined;
    }
    return value;
  }
}

/** The parsed YAML or JSON document of a configuration file; a syntax error is thrown with the file's name and the first line of the parser's message. */
export function parseConfigDocument(text: string, file: string): unknown {
  try {
    return load(text);
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message.split('\n')[0] ?? 'cannot be parsed'}`);
  }
}
