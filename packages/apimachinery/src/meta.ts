import { randomInt } from 'node:crypto';

/** Timestamps as the API writes them: RFC 3339, UTC, whole seconds. */
export function rfc3339(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** RFC 3339 with microseconds, for MicroTime fields. */
export function rfc3339Micro(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

// Consonants and digits that cannot spell words, as the original server uses.
const ALPHANUMS = 'bcdfghjklmnpqrstvwxz2456789';
const SUFFIX_LENGTH = 5;
const MAX_NAME_LENGTH = 63;

/** `generateName` plus a random suffix; the prefix is cut so the result stays a valid label. */
export function generateNameFrom(prefix: string): string {
  const base = prefix.length > MAX_NAME_LENGTH - SUFFIX_LENGTH ? prefix.slice(0, MAX_NAME_LENGTH - SUFFIX_LENGTH) : prefix;
  let suffix = '';
  for (let i = 0; i < SUFFIX_LENGTH; i++) suffix += ALPHANUMS[randomInt(ALPHANUMS.length)];
  return base + suffix;
}
