import { crdConditionTrue, servedNames } from '@svc/kinds';
import type { ApiObject } from '@svc/apimachinery';
import type { AdmissionConfigurationReader } from './configurations';
import type { EquivalentResource, EquivalentResourceMapper } from './policy/matching';

/**
 * The other served versions of a custom resource, for rules with
 * `matchPolicy: Equivalent` (the original's equivalent resource mapper),
 * read from the definitions the admission feed follows. Only definitions
 * whose conversion strategy is `None` offer their other versions: between
 * those a version is converted by its apiVersion alone, which admission
 * does itself. A resource converted by a webhook is matched only by rules
 * that name its requested version. The table is built again when the
 * followed objects change.
 */
export class CustomResourceEquivalents implements EquivalentResourceMapper {
  private table = new Map<string, EquivalentResource[]>();
  private builtAt = -1;

  constructor(private readonly source: AdmissionConfigurationReader) {}

  equivalents(resource: { group: string; version: string; resource: string }): EquivalentResource[] {
    if (this.builtAt !== this.source.generation) this.rebuild();
    return this.table.get(`${resource.group}/${resource.resource}`) ?? [];
  }

  private rebuild(): void {
    const table = new Map<string, EquivalentResource[]>();
    for (const crd of this.source.list('CustomResourceDefinition')) {
      const entry = convertibleVersions(crd);
      if (entry) table.set(`${entry.group}/${entry.plural}`, entry.versions.map((version) => ({ resource: { group: entry.group, version, resource: entry.plural }, kind: { group: entry.group, version, kind: entry.kind } })));
    }
    this.table = table;
    this.builtAt = this.source.generation;
  }
}

/** An established definition's served versions, when it has several and converts between them by apiVersion alone. */
function convertibleVersions(crd: ApiObject): { group: string; plural: string; kind: string; versions: string[] } | undefined {
  const spec = crd['spec'] as { group?: string; versions?: Array<{ name?: string; served?: boolean }>; conversion?: { strategy?: string } } | undefined;
  const names = servedNames(crd);
  if (!spec?.group || !names || !crdConditionTrue(crd, 'Established')) return undefined;
  if ((spec.conversion?.strategy ?? 'None') !== 'None') return undefined;
  const versions = (spec.versions ?? []).filter((v) => v.served === true && v.name).map((v) => v.name as string);
  if (versions.length < 2) return undefined;
  return { group: spec.group, plural: names.plural, kind: names.kind, versions };
}
