/**
 * Merge engines: field sets, server-side apply with managed fields, and the
 * patch formats (strategic merge, JSON patch, merge patch). Pure logic driven
 * by structural schemas; no I/O.
 */
export type { Schema, SchemaType } from './schema';
