import type { StatusCause } from './errors';

/**
 * Name and metadata validation shared by every kind (the rules of the
 * original API machinery: DNS subdomains for names, qualified names for label
 * keys). Each function returns causes naming the field; empty means valid.
 */

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

const SUBDOMAIN_MESSAGE =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

export type NameValidator = (name: string, field: string) => StatusCause[];

function invalid(field: string, value: string, message: string): StatusCause {
  return { reason: 'FieldValueInvalid', field, message: `Invalid value: ${JSON.stringify(value)}: ${message}` };
}

export function validateDns1123Subdomain(name: string, field: string): StatusCause[] {
  const causes: StatusCause[] = [];
  if (name.length > 253) causes.push(invalid(field, name, 'must be no more than 253 characters'));
  if (!DNS1123_SUBDOMAIN.test(name)) causes.push(invalid(field, name, SUBDOMAIN_MESSAGE));
  return causes;
}

export function validateDns1123Label(name: string, field: string): StatusCause[] {
  const causes: StatusCause[] = [];
  if (name.length > 63) causes.push(invalid(field, name, 'must be no more than 63 characters'));
  if (!DNS1123_LABEL.test(name)) {
    causes.push(
      invalid(
        field,
        name,
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
      ),
    );
  }
  return causes;
}

/** Any name usable as one URL path segment (roles, bindings): every character it may not contain is named. */
export function validatePathSegmentName(name: string, field: string): StatusCause[] {
  if (name === '.' || name === '..') return [invalid(field, name, `may not be '${name}'`)];
  return ['/', '%'].filter((bad) => name.includes(bad)).map((bad) => invalid(field, name, `may not contain '${bad}'`));
}

const QUALIFIED_NAME_MESSAGE =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MESSAGE =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/** Label and annotation keys: an optional DNS-subdomain prefix, a slash, a name of up to 63 characters (the original's messages, each problem named). */
export function validateQualifiedName(key: string, field: string): StatusCause[] {
  const parts = key.split('/');
  let name = key;
  const causes: StatusCause[] = [];
  if (parts.length === 2) {
    const prefix = parts[0] ?? '';
    name = parts[1] ?? '';
    if (prefix.length === 0) causes.push(invalid(field, key, 'prefix part must be non-empty'));
    else {
      if (prefix.length > 253) causes.push(invalid(field, key, 'prefix part must be no more than 253 characters'));
      if (!DNS1123_SUBDOMAIN.test(prefix)) causes.push(invalid(field, key, `prefix part ${SUBDOMAIN_MESSAGE}`));
    }
  } else if (parts.length > 2) {
    return [invalid(field, key, `a qualified name ${QUALIFIED_NAME_MESSAGE} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`)];
  }
  if (name.length === 0) causes.push(invalid(field, key, 'name part must be non-empty'));
  else if (name.length > 63) causes.push(invalid(field, key, 'name part must be no more than 63 characters'));
  if (!QUALIFIED_NAME.test(name)) causes.push(invalid(field, key, `name part ${QUALIFIED_NAME_MESSAGE}`));
  return causes;
}

export function validateLabelValue(value: string, field: string): StatusCause[] {
  const causes: StatusCause[] = [];
  if (value.length > 63) causes.push(invalid(field, value, 'must be no more than 63 characters'));
  if (!LABEL_VALUE.test(value)) causes.push(invalid(field, value, LABEL_VALUE_MESSAGE));
  return causes;
}

export function validateLabels(labels: unknown, field: string): StatusCause[] {
  if (labels === undefined || labels === null) return [];
  if (typeof labels !== 'object' || Array.isArray(labels)) {
    return [{ reason: 'FieldValueTypeInvalid', field, message: 'Invalid value: must be a map of string to string' }];
  }
  const causes: StatusCause[] = [];
  for (const [k, v] of Object.entries(labels as Record<string, unknown>)) {
    causes.push(...validateQualifiedName(k, field));
    if (typeof v !== 'string') causes.push({ reason: 'FieldValueTypeInvalid', field: `${field}.${k}`, message: 'Invalid value: must be a string' });
    else causes.push(...validateLabelValue(v, field));
  }
  return causes;
}

/** The most the keys and values of an object's annotations may take together, in bytes of UTF-8 (as the original counts them). */
const TOTAL_ANNOTATION_SIZE = 256 * 1024;

export function validateAnnotations(annotations: unknown, field: string): StatusCause[] {
  if (annotations === undefined || annotations === null) return [];
  if (typeof annotations !== 'object' || Array.isArray(annotations)) {
    return [{ reason: 'FieldValueTypeInvalid', field, message: 'Invalid value: must be a map of string to string' }];
  }
  const causes: StatusCause[] = [];
  let size = 0;
  for (const [k, v] of Object.entries(annotations as Record<string, unknown>)) {
    causes.push(...validateQualifiedName(k.toLowerCase(), field));
    if (typeof v !== 'string') causes.push({ reason: 'FieldValueTypeInvalid', field: `${field}.${k}`, message: 'Invalid value: must be a string' });
    else size += Buffer.byteLength(k) + Buffer.byteLength(v);
  }
  if (size > TOTAL_ANNOTATION_SIZE) {
    causes.push({ reason: 'FieldValueTooLong', field, message: `Too long: must have at most ${TOTAL_ANNOTATION_SIZE} bytes` });
  }
  return causes;
}
