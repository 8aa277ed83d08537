import type { DescMessage } from '@bufbuild/protobuf';
import { ResourceRegistry, type ResourceDefinition } from '@svc/apimachinery';
import { registerBuiltins } from '@svc/kinds';
import type { Schema } from '@svc/merge';
import { ProtobufObjectCodec } from './codec';
import { fieldForJsonKey } from './convert';

/**
 * Every field a built-in kind's schema admits must have a protobuf field, or
 * a stored object could not be answered in protobuf. This walks each schema
 * beside its message and lists the fields that have none.
 */
const codec = new ProtobufObjectCodec();
const registry = new ResourceRegistry();
registerBuiltins(registry);

/** Message types whose JSON form is a scalar or free-form JSON. */
const OPAQUE = new Set(['svc.api.meta.v1.Time', 'svc.api.meta.v1.MicroTime', 'svc.api.meta.v1.FieldsV1', 'svc.api.resource.Quantity', 'svc.api.intstr.IntOrString', 'svc.api.runtime.RawExtension']);

function uncovered(schema: Schema, desc: DescMessage, path: string, out: string[]): void {
  for (const [name, sub] of Object.entries(schema.properties ?? {})) {
    if (path === '' && (name === 'apiVersion' || name === 'kind')) continue;
    const field = fieldForJsonKey(desc, name);
    const fieldPath = path === '' ? name : `${path}.${name}`;
    if (!field) {
      out.push(fieldPath);
      continue;
    }
    if (!field.message || OPAQUE.has(field.message.typeName)) continue;
    const inner = field.fieldKind === 'list' ? sub.items : field.fieldKind === 'map' && typeof sub.additionalProperties === 'object' ? sub.additionalProperties : sub;
    if (inner) uncovered(inner, field.message, fieldPath, out);
  }
}

/** Group versions served in JSON and YAML only (as upstream: no protobuf for custom resource definitions). */
const JSON_ONLY = new Set(['apiextensions.svc.io/v1']);

function apiVersionOf(def: ResourceDefinition): string {
  return def.group === '' ? def.version : `${def.group}/${def.version}`;
}

function kinds(): ResourceDefinition[] {
  return registry.all().filter((def) => !JSON_ONLY.has(apiVersionOf(def)));
}

describe('protobuf coverage of the built-in kinds', () => {
  it('has no protobuf form for the JSON-only kinds, so they are refused cleanly', () => {
    const jsonOnly = registry.all().filter((def) => JSON_ONLY.has(apiVersionOf(def)));
    expect(jsonOnly.map((d) => d.kind)).toEqual(['CustomResourceDefinition']);
    for (const def of jsonOnly) {
      expect(codec.supports(apiVersionOf(def), def.kind)).toBe(false);
      expect(() => codec.encode({ apiVersion: apiVersionOf(def), kind: def.kind, metadata: { name: 'x' } })).toThrow(expect.objectContaining({ code: 406 }));
    }
  });

  it.each(kinds().map((def) => [def.kind, def] as const))('%s: every schema field has a protobuf field', (_kind, def) => {
    const apiVersion = def.group === '' ? def.version : `${def.group}/${def.version}`;
    const desc = codec.messageFor(apiVersion, def.kind);
    expect(desc?.typeName).toBeDefined();
    // Reviews are never listed, so they have no list message.
    expect(codec.supports(apiVersion, def.listKind)).toBe(!def.virtual);
    const missing: string[] = [];
    uncovered(def.schema, desc as DescMessage, '', missing);
    expect(missing).toEqual([]);
  });

  const subresourceKinds = kinds().flatMap((def) => def.subresources.filter((s) => s.schema).map((s) => [`${def.plural}/${s.name}`, s] as const));
  it.each(subresourceKinds)('%s: every schema field of its kind has a protobuf field', (_name, sub) => {
    const desc = codec.messageFor(`${sub.group ?? ''}/${sub.version ?? ''}`, sub.kind ?? '');
    expect(desc?.typeName).toBeDefined();
    const missing: string[] = [];
    uncovered(sub.schema as Schema, desc as DescMessage, '', missing);
    expect(missing).toEqual([]);
  });
});

describe('the coverage walk', () => {
  it('reports schema fields with no protobuf field, at any depth', () => {
    const desc = codec.messageFor('v1', 'ConfigMap') as DescMessage;
    const schema: Schema = { type: 'object', properties: { bogus: { type: 'string' }, metadata: { type: 'object', properties: { name: { type: 'string' }, nickname: { type: 'string' } } } } };
    const missing: string[] = [];
    uncovered(schema, desc, '', missing);
    expect(missing).toEqual(['bogus', 'metadata.nickname']);
  });
});
