import { isIP } from 'node:net';
import type { StatusCause } from '@svc/apimachinery';

/**
 * Causes in the wording clients know from the original server, each naming
 * its field path (`spec.containers[0].name`, `data[key]`), and the value
 * checks the kinds share.
 */

function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (value === undefined) return 'null';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

export function required(field: string, detail?: string): StatusCause {
  return { reason: 'FieldValueRequired', field, message: detail ? `Required value: ${detail}` : 'Required value' };
}

export function invalid(field: string, value: unknown, detail: string): StatusCause {
  return { reason: 'FieldValueInvalid', field, message: `Invalid value: ${show(value)}: ${detail}` };
}

export function duplicate(field: string, value: unknown): StatusCause {
  return { reason: 'FieldValueDuplicate', field, message: `Duplicate value: ${show(value)}` };
}

export function notSupported(field: string, value: unknown, supported: readonly string[]): StatusCause {
  const list = supported.map((s) => JSON.stringify(s)).join(', ');
  return { reason: 'FieldValueNotSupported', field, message: `Unsupported value: ${show(value)}: supported values: ${list}` };
}

export function forbidden(field: string, detail: string): StatusCause {
  return { reason: 'FieldValueForbidden', field, message: `Forbidden: ${detail}` };
}

export function tooLong(field: string, max: number): StatusCause {
  return { reason: 'FieldValueTooLong', field, message: `Too long: may not be more than ${max} bytes` };
}

export function typeInvalid(field: string, value: unknown, expected: string): StatusCause {
  return { reason: 'FieldValueTypeInvalid', field, message: `Invalid value: ${show(value)}: must be ${expected}` };
}

/** An IP address (v4 or v6), as the original's IsValidIP words its refusal. */
export function ipAddressErrors(field: string, value: unknown): StatusCause[] {
  if (typeof value === 'string' && isIP(value) !== 0) return [];
  return [invalid(field, value ?? '', 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)')];
}

/** `path[key]`, the form field paths take for map entries. */
export function keyPath(path: string, key: string): string {
  return `${path}[${key}]`;
}

/** `path[i]`, the form field paths take for list items. */
export function indexPath(path: string, index: number): string {
  return `${path}[${index}]`;
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;
const IANA_SVC_NAME_CHARS = /^[-a-z0-9]+$/;
const HAS_LETTER = /[a-z]/;
const QUALIFIED_NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export function dnsLabelErrors(field: string, value: string): StatusCause[] {
  const causes: StatusCause[] = [];
  if (value.length > 63) causes.push(invalid(field, value, 'must be no more than 63 characters'));
  if (!DNS1123_LABEL.test(value)) {
    causes.push(
      invalid(
        field,
        value,
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
      ),
    );
  }
  return causes;
}

/** An RFC 1035 label: like a DNS label, but starting with a letter (Service names). */
export function dns1035LabelErrors(field: string, value: string): StatusCause[] {
  const causes: StatusCause[] = [];
  if (value.length > 63) causes.push(invalid(field, value, 'must be no more than 63 characters'));
  if (!DNS1035_LABEL.test(value)) {
    causes.push(
      invalid(
        field,
        value,
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
      ),
    );
  }
  return causes;
}

export function dnsSubdomainErrors(field: string, value: string): StatusCause[] {
  const causes: StatusCause[] = [];
  if (value.length > 253) causes.push(invalid(field, value, 'must be no more than 253 characters'));
  if (!DNS1123_SUBDOMAIN.test(value)) {
    causes.push(
      invalid(
        field,
        value,
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
      ),
    );
  }
  return causes;
}

/** Keys of ConfigMap and Secret data: the characters of a file name, at most 253 of them. */
export function configKeyErrors(field: string, key: string): StatusCause[] {
  const causes: StatusCause[] = [];
  if (key.length > 253) causes.push(invalid(field, key, 'must be no more than 253 characters'));
  if (!CONFIG_KEY.test(key)) {
    causes.push(
      invalid(
        field,
        key,
        "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
      ),
    );
  }
  if (key === '.') causes.push(invalid(field, key, "must not be '.'"));
  else if (key === '..') causes.push(invalid(field, key, "must not be '..'"));
  else if (key.startsWith('..')) causes.push(invalid(field, key, "must not start with '..'"));
  return causes;
}

/** A qualified name (`example.com/name` or `name`), as finalizer names are. */
export function qualifiedNameErrors(field: string, value: string): StatusCause[] {
  const parts = value.split('/');
  let name = value;
  if (parts.length === 2) {
    const [prefix = '', rest = ''] = parts;
    name = rest;
    if (prefix.length === 0) return [invalid(field, value, 'prefix part must be non-empty')];
    const prefixErrors = dnsSubdomainErrors(field, prefix);
    if (prefixErrors.length > 0) return prefixErrors.map((c) => ({ ...c, message: `${c.message} (prefix part)` }));
  } else if (parts.length > 2) {
    return [invalid(field, value, "a qualified name must consist of alphanumeric characters, '-', '_' or '.', with an optional DNS subdomain prefix and '/'")];
  }
  if (name.length === 0) return [invalid(field, value, 'name part must be non-empty')];
  if (name.length > 63) return [invalid(field, value, 'name part must be no more than 63 characters')];
  if (!QUALIFIED_NAME_PART.test(name)) {
    return [
      invalid(
        field,
        value,
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
      ),
    ];
  }
  return [];
}

export function isBase64(value: string): boolean {
  return BASE64.test(value);
}

/** Length of base64 data once decoded. */
export function decodedLength(value: string): number {
  const padding = value.endsWith('==') ? 2 : value.endsWith('=') ? 1 : 0;
  return Math.floor((value.length * 3) / 4) - padding;
}

export function isPortNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 65535;
}

/** An IANA service name: at most 15 characters, lower case, a letter among them, no leading, trailing or double dash. */
export function ianaServiceNameErrors(field: string, value: string): StatusCause[] {
  const causes: StatusCause[] = [];
  if (value.length > 15) causes.push(invalid(field, value, 'must be no more than 15 characters'));
  if (!IANA_SVC_NAME_CHARS.test(value)) causes.push(invalid(field, value, "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"));
  if (value.includes('--')) causes.push(invalid(field, value, 'must not contain consecutive hyphens'));
  if (!HAS_LETTER.test(value)) causes.push(invalid(field, value, 'must contain at least one letter (a-z)'));
  if (value.startsWith('-') || value.endsWith('-')) causes.push(invalid(field, value, 'must not begin or end with a hyphen'));
  return causes;
}

/** A port given as a number (1–65535) or as an IANA service name. */
export function portNumberOrNameErrors(field: string, value: unknown): StatusCause[] {
  if (typeof value === 'number') return isPortNumber(value) ? [] : [invalid(field, value, 'must be between 1 and 65535, inclusive')];
  if (typeof value === 'string') return ianaServiceNameErrors(field, value);
  return [invalid(field, value, 'must be a port number or a port name')];
}

/** An RFC 3339 timestamp, optionally with fractional seconds. */
export function isTimestamp(value: unknown): boolean {
  return (
    typeof value === 'string' &&
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/.test(value) &&
    !Number.isNaN(Date.parse(value))
  );
}

/** Name uniqueness over a list: duplicate causes at `path[i].name`. */
export function uniqueNameErrors(path: string, names: Array<{ index: number; name: string }>, seen = new Set<string>()): StatusCause[] {
  const causes: StatusCause[] = [];
  for (const { index, name } of names) {
    if (seen.has(name)) causes.push(duplicate(`${indexPath(path, index)}.name`, name));
    seen.add(name);
  }
  return causes;
}
