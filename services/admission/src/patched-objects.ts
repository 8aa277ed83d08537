import { checkAgainstSchema, type ApiObject, type ResourceDefinition } from '@svc/apimachinery';
import { builtinResources, customResourceDefinitions } from '@svc/kinds';
import type { AdmissionConfigurationReader } from './configurations';

/**
 * Decodes an object a mutating webhook patched as the kind's schema reads
 * it, as the original decodes a patched object before the next webhook
 * sees it: built-in kinds are typed (each field's type and format), custom
 * resources unstructured (their metadata only; their schema is validated
 * when the object is stored). A patch whose result does not decode is a
 * failed call of that webhook, so its failurePolicy decides (`Ignore`
 * goes on without the patch) instead of the write failing later.
 */
export class PatchedObjectDecoder {
  private readonly builtins = new Map<string, ResourceDefinition>(builtinResources().map((d) => [keyOf(d), d]));
  private custom = new Map<string, ResourceDefinition>();
  private builtAt = -1;

  constructor(private readonly source: AdmissionConfigurationReader) {}

  /** Why `obj` does not decode as `kind`, or undefined when it does (or the kind is not known here). */
  problem(kind: { group: string; version: string; kind: string }, obj: ApiObject): string | undefined {
    const def = this.definition(`${kind.group}/${kind.version}/${kind.kind}`);
    if (!def) return undefined;
    const unstructured = def.decoding === 'unstructured';
    const result = checkAgainstSchema(obj, def.schema, { unstructured, formats: unstructured ? 'metadata' : true });
    const first = (unstructured ? result.formatErrors : result.typeErrors)[0];
    return first ? `${def.kind} in version "${def.version}" cannot be handled as a ${def.kind}: ${first.message ?? ''}` : undefined;
  }

  private definition(key: string): ResourceDefinition | undefined {
    const builtin = this.builtins.get(key);
    if (builtin) return builtin;
    if (this.builtAt !== this.source.generation) {
      this.custom = new Map(this.source.list('CustomResourceDefinition').flatMap((crd) => servedDefinitions(crd).map((d): [string, ResourceDefinition] => [keyOf(d), d])));
      this.builtAt = this.source.generation;
    }
    return this.custom.get(key);
  }
}

function keyOf(def: ResourceDefinition): string {
  return `${def.group}/${def.version}/${def.kind}`;
}

/** Each followed definition object's served versions, built once (a changed definition is a new object). */
const built = new WeakMap<ApiObject, ResourceDefinition[]>();

/** A stored definition's served versions; none for one that cannot be read (it is then not decoded here, and storage's own checks stand). */
function servedDefinitions(crd: ApiObject): ResourceDefinition[] {
  let defs = built.get(crd);
  if (!defs) {
    try {
      defs = customResourceDefinitions(crd);
    } catch {
      defs = [];
    }
    built.set(crd, defs);
  }
  return defs;
}
