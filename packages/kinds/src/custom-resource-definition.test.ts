import type { ApiObject, StatusCause } from '@svc/apimachinery';
import { builtinResources } from './builtins';
import { BUILTIN_GROUPS } from './crd-validation';
import { CRD_CLEANUP_FINALIZER, customResourceDefinitionDefinition } from './custom-resource-definition';

const def = customResourceDefinitionDefinition();

/** Fixtures are edited by path, deep into the schema: loosely typed on purpose (test code only). */
type Fixture = Record<string, any>;
type Mutation = (crd: Fixture) => void;

function widgetCrd(mutate?: Mutation): ApiObject {
  const crd = {
    apiVersion: 'apiextensions.svc.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com' },
    spec: {
      group: 'example.com',
      scope: 'Namespaced',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList', shortNames: ['wd'], categories: ['all'] },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: {
                  type: 'object',
                  properties: {
                    size: { type: 'integer', minimum: 1, maximum: 10, default: 3 },
                    color: { type: 'string', enum: ['red', 'blue'] },
                    ports: {
                      type: 'array',
                      'x-svc-list-type': 'map',
                      'x-svc-list-map-keys': ['name'],
                      items: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, port: { 'x-svc-int-or-string': true } } },
                    },
                  },
                },
                status: { type: 'object', 'x-svc-preserve-unknown-fields': true },
              },
            },
          },
          subresources: { status: {} },
          additionalPrinterColumns: [{ name: 'Size', type: 'integer', jsonPath: '.spec.size' }],
        },
      ],
    },
  };
  mutate?.(crd);
  return crd as ApiObject;
}

function causesOf(crd: ApiObject): StatusCause[] {
  const obj = JSON.parse(JSON.stringify(crd)) as ApiObject;
  def.strategy.applyDefaults?.(obj);
  return def.strategy.validate?.(obj) ?? [];
}

function fieldsOf(crd: ApiObject): string[] {
  return causesOf(crd).map((c) => c.field ?? '');
}

const schemaPath = 'spec.versions[0].schema.openAPIV3Schema';
const root = (crd: Fixture): Fixture => crd.spec.versions[0].schema.openAPIV3Schema;
/** A conversion webhook with the given client config (a url by default). */
const hook = (clientConfig: Fixture = { url: 'https://convert.example.com/convert' }): Fixture => ({ clientConfig, conversionReviewVersions: ['v1'] });

describe('CustomResourceDefinition kind', () => {
  it('is a cluster-scoped apiextensions.svc.io/v1 kind with a status subresource and the upstream names', () => {
    expect([def.group, def.version, def.kind, def.plural, def.namespaced]).toEqual(['apiextensions.svc.io', 'v1', 'CustomResourceDefinition', 'customresourcedefinitions', false]);
    expect(def.shortNames).toEqual(['crd', 'crds']);
    expect(def.categories).toEqual(['api-extensions']);
    expect(def.subresources.map((s) => s.name)).toEqual(['status']);
    // No extra columns: the default table, NAME and CREATED AT.
    expect(def.printerColumns).toEqual([]);
  });

  it('keeps every built-in group reserved', () => {
    for (const d of builtinResources()) if (d.group !== '') expect(BUILTIN_GROUPS).toContain(d.group);
  });

  it('accepts a valid definition and defaults singular and listKind', () => {
    expect(causesOf(widgetCrd())).toEqual([]);
    const obj = widgetCrd((c) => {
      delete c.spec.names.singular;
      delete c.spec.names.listKind;
    });
    def.strategy.applyDefaults?.(obj);
    expect((obj['spec'] as { names: unknown }).names).toEqual(expect.objectContaining({ singular: 'widget', listKind: 'WidgetList' }));
    expect((obj['spec'] as { conversion: unknown }).conversion).toEqual({ strategy: 'None' });
  });

  const cases: Array<[string, Mutation, string, RegExp?]> = [
    ['metadata.name is <plural>.<group>', (c) => (c.metadata.name = 'widget.example.com'), 'metadata.name', /spec.names.plural\+"."\+spec.group/],
    ['group is required', (c) => (c.spec.group = ''), 'spec.group', /Required/],
    ['group has a dot', (c) => ((c.spec.group = 'example'), (c.metadata.name = 'widgets.example')), 'spec.group', /at least one dot/],
    ['group is a DNS subdomain', (c) => ((c.spec.group = 'Ex_ample.com'), (c.metadata.name = 'widgets.Ex_ample.com')), 'spec.group', /RFC 1123 subdomain/],
    ['built-in groups are reserved', (c) => ((c.spec.group = 'rbac.authorization.svc.io'), (c.metadata.name = 'widgets.rbac.authorization.svc.io')), 'spec.group', /reserved/],
    ['protected groups need approval', (c) => ((c.spec.group = 'widgets.svc.io'), (c.metadata.name = 'widgets.widgets.svc.io')), 'metadata.annotations[api-approved.svc.io]', /approval annotation/],
    ['plural is required', (c) => delete c.spec.names.plural, 'spec.names.plural', /Required/],
    ['plural is a DNS-1035 label', (c) => ((c.spec.names.plural = 'Widgets'), (c.metadata.name = 'Widgets.example.com')), 'spec.names.plural', /DNS-1035/],
    ['singular is a DNS-1035 label', (c) => (c.spec.names.singular = 'a_widget'), 'spec.names.singular', /DNS-1035/],
    ['kind is required', (c) => delete c.spec.names.kind, 'spec.names.kind', /Required/],
    ['kind is a DNS-1035 label when lowercased', (c) => (c.spec.names.kind = 'Wid.get'), 'spec.names.kind', /DNS-1035/],
    ['listKind differs from kind', (c) => (c.spec.names.listKind = 'Widget'), 'spec.names.listKind', /may not be the same/],
    ['shortNames are DNS-1035 labels', (c) => (c.spec.names.shortNames = ['ok', 'no way']), 'spec.names.shortNames[1]', /DNS-1035/],
    ['shortNames are unique', (c) => (c.spec.names.shortNames = ['wd', 'wd']), 'spec.names.shortNames[1]', /Duplicate/],
    ['categories are DNS-1035 labels', (c) => (c.spec.names.categories = ['A!']), 'spec.names.categories[0]', /DNS-1035/],
    ['scope is required', (c) => delete c.spec.scope, 'spec.scope', /Required/],
    ['scope is Namespaced or Cluster', (c) => (c.spec.scope = 'Global'), 'spec.scope', /Unsupported value: "Global"/],
    ['versions are required', (c) => (c.spec.versions = []), 'spec.versions', /Required/],
    ['version names are unique', (c) => c.spec.versions.push({ ...c.spec.versions[0], storage: false }), 'spec.versions[1].name', /Duplicate/],
    ['version names are DNS-1035 labels', (c) => (c.spec.versions[0].name = 'V1'), 'spec.versions[0].name', /DNS-1035/],
    ['exactly one storage version', (c) => c.spec.versions.push({ ...c.spec.versions[0], name: 'v2' }), 'spec.versions', /exactly one version marked as storage/],
    ['served is set', (c) => delete c.spec.versions[0].served, 'spec.versions[0].served', /Required/],
    ['a schema is required', (c) => delete c.spec.versions[0].schema, schemaPath, /Required/],
    ['the root is an object', (c) => (root(c).type = 'string'), `${schemaPath}.type`, /must be object at the root/],
    ['type at every level', (c) => delete root(c).properties.spec.properties.color.type, `${schemaPath}.properties[spec].properties[color].type`, /must not be empty/],
    ['known types only', (c) => (root(c).properties.spec.properties.color.type = 'text'), `${schemaPath}.properties[spec].properties[color].type`, /Unsupported value/],
    ['no additionalProperties with properties', (c) => (root(c).properties.spec.additionalProperties = { type: 'string' }), `${schemaPath}.properties[spec].additionalProperties`, /mutual exclusive/],
    ['additionalProperties is never false', (c) => (root(c).properties.status = { type: 'object', additionalProperties: false }), `${schemaPath}.properties[status].additionalProperties`, /cannot be set to false/],
    ['arrays have items', (c) => delete root(c).properties.spec.properties.ports.items, `${schemaPath}.properties[spec].properties[ports].items`, /must be specified/],
    ['preserve-unknown-fields is true or unset', (c) => (root(c).properties.status['x-svc-preserve-unknown-fields'] = false), `${schemaPath}.properties[status].x-svc-preserve-unknown-fields`, /must be true or undefined/],
    ['int-or-string has no type', (c) => (root(c).properties.spec.properties.ports.items.properties.port.type = 'string'), `${schemaPath}.properties[spec].properties[ports].items.properties[port].type`, /must be empty if x-svc-int-or-string/],
    ['embedded resources are objects', (c) => (root(c).properties.spec.properties.color['x-svc-embedded-resource'] = true), `${schemaPath}.properties[spec].properties[color].type`, /must be object if x-svc-embedded-resource/],
    ['embedded resources declare properties or preserve fields', (c) => (root(c).properties.spec.properties.tpl = { type: 'object', 'x-svc-embedded-resource': true }), `${schemaPath}.properties[spec].properties[tpl].properties`, /must not be empty/],
    ['root metadata only restricts name and generateName', (c) => (root(c).properties.metadata = { type: 'object', properties: { labels: { type: 'object' } } }), `${schemaPath}.properties[metadata].properties[labels]`, /other than name and generateName/],
    ['map lists name their keys', (c) => delete root(c).properties.spec.properties.ports['x-svc-list-map-keys'], `${schemaPath}.properties[spec].properties[ports].x-svc-list-map-keys`, /must not be empty/],
    ['map list keys are item properties', (c) => (root(c).properties.spec.properties.ports['x-svc-list-map-keys'] = ['id']), `${schemaPath}.properties[spec].properties[ports].x-svc-list-map-keys[0]`, /names of item properties/],
    ['map list keys are required or defaulted', (c) => (root(c).properties.spec.properties.ports.items.required = []), `${schemaPath}.properties[spec].properties[ports].items.properties[name]`, /default or be a required/],
    ['list types are atomic, set or map', (c) => (root(c).properties.spec.properties.ports['x-svc-list-type'] = 'bag'), `${schemaPath}.properties[spec].properties[ports].x-svc-list-type`, /Unsupported value/],
    ['map types are granular or atomic on objects', (c) => (root(c).properties.spec.properties.color['x-svc-map-type'] = 'atomic'), `${schemaPath}.properties[spec].properties[color].x-svc-map-type`, /only be used if type is object/],
    ['defaults validate against their schema', (c) => (root(c).properties.spec.properties.size.default = 11), `${schemaPath}.properties[spec].properties[size].default`, /less than or equal to 10/],
    ['patterns compile', (c) => (root(c).properties.spec.properties.color.pattern = '('), `${schemaPath}.properties[spec].properties[color].pattern`, /regular expression/],
    ['$ref is not supported', (c) => (root(c).properties.spec.properties.color.$ref = '#/x'), `${schemaPath}.properties[spec].properties[color].$ref`, /not supported/],
    ['printer columns have a jsonPath', (c) => delete c.spec.versions[0].additionalPrinterColumns[0].jsonPath, 'spec.versions[0].additionalPrinterColumns[0].jsonPath', /Required/],
    ['printer column paths are simple', (c) => (c.spec.versions[0].additionalPrinterColumns[0].jsonPath = 'spec.size'), 'spec.versions[0].additionalPrinterColumns[0].jsonPath', /simple json path/],
    ['printer column types are known', (c) => (c.spec.versions[0].additionalPrinterColumns[0].type = 'float'), 'spec.versions[0].additionalPrinterColumns[0].type', /Unsupported value/],
    ['scale needs specReplicasPath under .spec', (c) => (c.spec.versions[0].subresources.scale = { specReplicasPath: '.status.replicas', statusReplicasPath: '.status.replicas' }), 'spec.versions[0].subresources.scale.specReplicasPath', /under .spec./],
    ['scale needs statusReplicasPath', (c) => (c.spec.versions[0].subresources.scale = { specReplicasPath: '.spec.replicas' }), 'spec.versions[0].subresources.scale.statusReplicasPath', /Required/],
    ['conversion strategy is None or Webhook', (c) => (c.spec.conversion = { strategy: 'Magic' }), 'spec.conversion.strategy', /Unsupported value: "Magic"/],
    ['a Webhook strategy needs the webhook', (c) => (c.spec.conversion = { strategy: 'Webhook' }), 'spec.conversion.webhook', /Required value: required when strategy is set to Webhook/],
    ['a webhook only with strategy Webhook', (c) => (c.spec.conversion = { strategy: 'None', webhook: hook() }), 'spec.conversion.webhook', /should not be set/],
    ['a webhook has a client config', (c) => (c.spec.conversion = { strategy: 'Webhook', webhook: { conversionReviewVersions: ['v1'] } }), 'spec.conversion.webhook.clientConfig', /Required/],
    ['url or service, not both', (c) => (c.spec.conversion = { strategy: 'Webhook', webhook: hook({ url: 'https://h/convert', service: { name: 's', namespace: 'n' } }) }), 'spec.conversion.webhook.clientConfig', /exactly one of url or service/],
    ['url or service, not neither', (c) => (c.spec.conversion = { strategy: 'Webhook', webhook: hook({}) }), 'spec.conversion.webhook.clientConfig', /exactly one of url or service/],
    ['webhook urls are https', (c) => (c.spec.conversion = { strategy: 'Webhook', webhook: hook({ url: 'http://h/convert' }) }), 'spec.conversion.webhook.clientConfig.url', /'https' is the only allowed URL scheme/],
    ['webhook urls carry no query', (c) => (c.spec.conversion = { strategy: 'Webhook', webhook: hook({ url: 'https://h/convert?x=1' }) }), 'spec.conversion.webhook.clientConfig.url', /query parameters/],
    ['webhook urls carry no user', (c) => (c.spec.conversion = { strategy: 'Webhook', webhook: hook({ url: 'https://u:p@h/convert' }) }), 'spec.conversion.webhook.clientConfig.url', /user information/],
    ['service paths start with a slash', (c) => (c.spec.conversion = { strategy: 'Webhook', webhook: hook({ service: { name: 's', namespace: 'n', path: 'convert' } }) }), 'spec.conversion.webhook.clientConfig.service.path', /must start with/],
    ['service ports are ports', (c) => (c.spec.conversion = { strategy: 'Webhook', webhook: hook({ service: { name: 's', namespace: 'n', port: 70000 } }) }), 'spec.conversion.webhook.clientConfig.service.port', /between 1 and 65535/],
    ['services are named', (c) => (c.spec.conversion = { strategy: 'Webhook', webhook: hook({ service: { namespace: 'n' } }) }), 'spec.conversion.webhook.clientConfig.service.name', /Required/],
    ['caBundle is base64', (c) => (c.spec.conversion = { strategy: 'Webhook', webhook: hook({ url: 'https://h/', caBundle: 'not base64!' }) }), 'spec.conversion.webhook.clientConfig.caBundle', /base64/],
    ['review versions are given', (c) => (c.spec.conversion = { strategy: 'Webhook', webhook: { ...hook(), conversionReviewVersions: [] } }), 'spec.conversion.webhook.conversionReviewVersions', /at least one version/],
    ['review versions include one we speak', (c) => (c.spec.conversion = { strategy: 'Webhook', webhook: { ...hook(), conversionReviewVersions: ['v2', 'v1alpha1'] } }), 'spec.conversion.webhook.conversionReviewVersions', /at least one of v1, v1beta1/],
    ['review versions are unique', (c) => (c.spec.conversion = { strategy: 'Webhook', webhook: { ...hook(), conversionReviewVersions: ['v1', 'v1'] } }), 'spec.conversion.webhook.conversionReviewVersions[1]', /Duplicate/],
  ];

  it('accepts conversion webhooks reached by url or by service', () => {
    expect(causesOf(widgetCrd((c) => (c.spec.conversion = { strategy: 'Webhook', webhook: hook({ url: 'https://convert.example.com:8443/convert', caBundle: Buffer.from('pem').toString('base64') }) })))).toEqual([]);
    expect(causesOf(widgetCrd((c) => (c.spec.conversion = { strategy: 'Webhook', webhook: hook({ service: { name: 's', namespace: 'n', path: '/convert', port: 8443 } }) })))).toEqual([]);
  });

  it('accepts webhooks speaking only ConversionReview v1beta1, or another version besides one we speak', () => {
    expect(causesOf(widgetCrd((c) => (c.spec.conversion = { strategy: 'Webhook', webhook: { ...hook(), conversionReviewVersions: ['v1beta1'] } })))).toEqual([]);
    expect(causesOf(widgetCrd((c) => (c.spec.conversion = { strategy: 'Webhook', webhook: { ...hook(), conversionReviewVersions: ['v2', 'v1'] } })))).toEqual([]);
  });

  it.each(cases)('refuses: %s', (_rule, mutate, field, message) => {
    const causes = causesOf(widgetCrd(mutate));
    const cause = causes.find((c) => c.field === field);
    expect({ field: cause?.field, all: fieldsOf(widgetCrd(mutate)) }).toEqual(expect.objectContaining({ field }));
    if (message) expect(cause?.message).toMatch(message);
  });

  it('accepts protected groups with an approval, and x-kubernetes-* extensions', () => {
    const approved = widgetCrd((c) => {
      c.spec.group = 'widgets.svc.io';
      c.metadata.name = 'widgets.widgets.svc.io';
      c.metadata.annotations = { 'api-approved.svc.io': 'https://example.com/review/1' };
      const ports = root(c).properties.spec.properties.ports;
      ports['x-kubernetes-list-type'] = ports['x-svc-list-type'];
      ports['x-kubernetes-list-map-keys'] = ports['x-svc-list-map-keys'];
      delete ports['x-svc-list-type'];
      delete ports['x-svc-list-map-keys'];
    });
    expect(causesOf(approved)).toEqual([]);
  });

  it('keeps group and scope, and stored versions listed in spec, on update', () => {
    const old = widgetCrd();
    old['status'] = { storedVersions: ['v1'] };
    const changed = widgetCrd((c) => {
      c.spec.scope = 'Cluster';
      c.spec.versions[0].name = 'v2';
    });
    changed['status'] = { storedVersions: ['v1'] };
    const fields = (def.strategy.validateUpdate?.(changed, old) ?? []).map((c) => c.field);
    expect(fields).toEqual(['spec.scope', 'status.storedVersions[0]']);
  });

  it('starts with an empty status and generation 1; the main resource keeps status and bumps generation on spec changes', () => {
    const created = widgetCrd();
    created['status'] = { acceptedNames: { plural: 'x', kind: 'X' } };
    def.strategy.prepareForCreate?.(created);
    expect(created['status']).toEqual({ conditions: [], acceptedNames: { plural: '', kind: '' }, storedVersions: ['v1'] });
    expect(created.metadata?.generation).toBe(1);
    const stored = { ...created, status: { storedVersions: ['v1'] } };
    const relabeled: ApiObject = { ...widgetCrd(), metadata: { ...created.metadata, labels: { a: 'b' } } };
    def.strategy.prepareForUpdate?.(relabeled, stored);
    expect([relabeled.metadata?.generation, relabeled['status']]).toEqual([1, { storedVersions: ['v1'] }]);
    const resized = widgetCrd((c) => (c.spec.names.shortNames = ['w']));
    resized.metadata = { ...created.metadata };
    def.strategy.prepareForUpdate?.(resized, stored);
    expect(resized.metadata?.generation).toBe(2);
  });

  it('adds a new storage version to status.storedVersions on update, keeping the ones before', () => {
    const stored = { ...widgetCrd(), status: { storedVersions: ['v1'] } };
    const moved = widgetCrd((c) => {
      c.spec.versions[0].storage = false;
      c.spec.versions.push({ ...c.spec.versions[0], name: 'v2', storage: true });
    });
    def.strategy.prepareForUpdate?.(moved, stored);
    expect(moved['status']).toEqual({ storedVersions: ['v1', 'v2'] });
  });

  it('is only marked by a delete: the cleanup finalizer and a Terminating condition hold it', () => {
    const crd = widgetCrd();
    expect(def.strategy.finalizing?.(crd)).toBe(true);
    crd.metadata = { ...crd.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' };
    def.strategy.prepareForDeletion?.(crd);
    expect(crd.metadata?.finalizers).toEqual([CRD_CLEANUP_FINALIZER]);
    expect((crd['status'] as { conditions: unknown[] }).conditions).toEqual([expect.objectContaining({ type: 'Terminating', status: 'True' })]);
    expect(def.strategy.finalizing?.(crd)).toBe(false);
  });
});
