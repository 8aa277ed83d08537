/**
 * The shared vocabulary of every service: object and metadata types, API
 * errors and Status, the resource registry.
 */
export * from './types';
export type { Schema, SchemaType } from './schema';
export * from './errors';
export * from './registry';
export * from './validation';
export * from './selectors';
export * from './field-labels';
export * from './keys';
export * from './schema-check';
export * from './quantity';
export * from './meta';
export * from './duplicate-fields';
export * from './node-identity';
export * from './namespaces';
export * from './pod-references';
export * from './group-names';
export * from './version-priority';
export * from './resource-version-json';
export * from './authorization-attributes';
