import { startEnvironment, type Environment } from '@svc/testenv';
import { adminRequest, type HttpResponse } from './http';

/**
 * Query parameters and options as the original checks them, for every verb,
 * on built-in kinds and a custom resource alike: write options with a value
 * the server does not honour are 422 Invalid naming the options kind and
 * every field at fault, and nothing is written; ListOptions that do not fit
 * together are 400 with the same causes; a field selector naming a field
 * the kind cannot be selected by is 400, never an empty answer.
 */
describe('query parameters', () => {
  let env: Environment;
  const ns = '/api/v1/namespaces/default';
  const widgets = '/apis/example.com/v1/namespaces/default/widgets';
  const MERGE = { 'content-type': 'application/merge-patch+json' };
  const APPLY = { 'content-type': 'application/apply-patch+yaml' };
  const configMap = (name: string) => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { k: 'v' } });
  const widget = (name: string, color: string) => JSON.stringify({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name }, spec: { color, size: 1 } });

  /** The Status of a refusal: code, reason, options kind, and the causes' fields. */
  const refusal = (res: HttpResponse) => {
    const body = res.json() as { reason?: string; message?: string; details?: { kind?: string; group?: string; causes?: Array<{ field?: string }> } };
    return { code: res.status, reason: body.reason, kind: body.details?.kind, fields: (body.details?.causes ?? []).map((c) => c.field), message: body.message };
  };
  const names = async (path: string): Promise<string[]> => {
    const res = await adminRequest(env, 'GET', path);
    expect(res.status).toBe(200);
    return ((res.json() as { items: Array<{ metadata: { name: string } }> }).items ?? []).map((i) => i.metadata.name).sort();
  };

  /** Widgets can be selected by spec.color, not by spec.size. */
  const WIDGET_SCHEMA = { type: 'object', properties: { spec: { type: 'object', properties: { color: { type: 'string' }, size: { type: 'integer' } } } } };
  const WIDGET_VERSION = { name: 'v1', served: true, storage: true, selectableFields: [{ jsonPath: '.spec.color' }], schema: { openAPIV3Schema: WIDGET_SCHEMA } };
  const WIDGET_NAMES = { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' };
  const WIDGETS_CRD = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.example.com' }, spec: { group: 'example.com', scope: 'Namespaced', names: WIDGET_NAMES, versions: [WIDGET_VERSION] } };

  beforeAll(async () => {
    env = await startEnvironment({ crds: [WIDGETS_CRD] });
    for (const [name, color] of [['red-one', 'red'], ['blue-one', 'blue']]) expect((await adminRequest(env, 'POST', widgets, widget(name as string, color as string))).status).toBe(201);
    expect((await adminRequest(env, 'POST', `${ns}/configmaps`, configMap('keep'))).status).toBe(201);
  }, 120_000);

  afterAll(async () => {
    await env?.stop(true);
  });

  test('create and update options the server cannot honour are 422 for CreateOptions and UpdateOptions, every field named, nothing written', async () => {
    for (const base of [`${ns}/configmaps`, widgets]) {
      const body = base === widgets ? widget('refused', 'green') : configMap('refused');
      const create = await adminRequest(env, 'POST', `${base}?dryRun=All&dryRun=Sometimes&fieldManager=a%01b&fieldValidation=strict`, body);
      expect(refusal(create)).toMatchObject({ code: 422, reason: 'Invalid', kind: 'CreateOptions', fields: ['fieldManager', 'dryRun', 'fieldValidation'] });
      expect(refusal(create).message).toMatch(/^CreateOptions\.meta\.svc\.io "" is invalid: fieldManager: Invalid value: "a\\u0001b": invalid character U\+0001 \(at position 1\), dryRun: Unsupported value: \[\]string\{"All", "Sometimes"\}/);
      expect((await adminRequest(env, 'GET', `${base}/refused`)).status).toBe(404);
      const update = await adminRequest(env, 'PUT', `${base}/refused?fieldManager=${'m'.repeat(129)}`, body);
      expect(refusal(update)).toMatchObject({ code: 422, kind: 'UpdateOptions', fields: ['fieldManager'], message: 'UpdateOptions.meta.svc.io "" is invalid: fieldManager: Too long: must have at most 128 bytes' });
      expect((await adminRequest(env, 'GET', `${base}/refused`)).status).toBe(404);
    }
  });

  test('force on a patch that is not an apply is 422 for PatchOptions, for every patch type; apply takes it', async () => {
    const path = `${ns}/configmaps/keep`;
    for (const [type, body] of [
      ['application/merge-patch+json', '{"data":{"k":"changed"}}'],
      ['application/strategic-merge-patch+json', '{"data":{"k":"changed"}}'],
      ['application/json-patch+json', '[{"op":"replace","path":"/data/k","value":"changed"}]'],
    ] as const) {
      const res = await adminRequest(env, 'PATCH', `${path}?force=false`, body, { 'content-type': type });
      expect(refusal(res)).toMatchObject({ code: 422, reason: 'Invalid', kind: 'PatchOptions', fields: ['force'], message: 'PatchOptions.meta.svc.io "" is invalid: force: Forbidden: may not be specified for non-apply patch' });
    }
    expect(refusal(await adminRequest(env, 'PATCH', `${widgets}/red-one?force=true`, '{"spec":{"size":2}}', MERGE))).toMatchObject({ code: 422, kind: 'PatchOptions', fields: ['force'] });
    expect(((await adminRequest(env, 'GET', path)).json() as { data: Record<string, string> }).data).toEqual({ k: 'v' });
    const applied = await adminRequest(env, 'PATCH', `${path}?fieldManager=qp&force=true`, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep\ndata:\n  k: applied\n', APPLY);
    expect(applied.status).toBe(200);
  });

  test('a duplicate key in a merge, strategic merge or apply patch is refused under Strict, warned of under Warn and taken under Ignore', async () => {
    const path = `${ns}/configmaps/keep`;
    const twice = '{"data":{"k":"one"},"data":{"k":"two"}}';
    const strict = await adminRequest(env, 'PATCH', `${path}?fieldValidation=Strict`, twice, MERGE);
    expect(refusal(strict)).toMatchObject({ code: 400, reason: 'BadRequest', message: 'strict decoding error: duplicate field "data"' });
    const warned = await adminRequest(env, 'PATCH', `${path}?fieldValidation=Warn`, twice, { 'content-type': 'application/strategic-merge-patch+json' });
    expect([warned.status, warned.headers['warning']]).toEqual([200, '299 - "duplicate field \\"data\\""']);
    const applyTwice = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep\ndata:\n  k: one\ndata:\n  k: last\n';
    const refused = await adminRequest(env, 'PATCH', `${path}?fieldManager=qp&fieldValidation=Strict`, applyTwice, APPLY);
    expect(refusal(refused)).toMatchObject({ code: 400, message: expect.stringMatching(/^error strict decoding YAML: error converting YAML to JSON: duplicated mapping key/) });
    const ignored = await adminRequest(env, 'PATCH', `${path}?fieldManager=qp&force=true&fieldValidation=Ignore`, applyTwice, APPLY);
    expect([ignored.status, ignored.headers['warning'], (ignored.json() as { data: Record<string, string> }).data['k']]).toEqual([200, undefined, 'last']);
    const warnedApply = await adminRequest(env, 'PATCH', `${path}?fieldManager=qp&force=true`, applyTwice, APPLY);
    expect([warnedApply.status, warnedApply.headers['warning']]).toEqual([200, expect.stringMatching(/^299 - "duplicated mapping key/)]);
  });

  test('DeleteOptions the original refuses are 422 for DeleteOptions with every problem, on delete and deletecollection; nothing is deleted', async () => {
    const one = await adminRequest(env, 'DELETE', `${ns}/configmaps/keep?orphanDependents=true&propagationPolicy=Sideways&dryRun=x`);
    expect(refusal(one)).toMatchObject({ code: 422, reason: 'Invalid', kind: 'DeleteOptions', fields: ['propagationPolicy', 'propagationPolicy', 'dryRun'] });
    const collection = await adminRequest(env, 'DELETE', widgets, JSON.stringify({ propagationPolicy: 'background' }));
    expect(refusal(collection)).toMatchObject({ code: 422, kind: 'DeleteOptions', fields: ['propagationPolicy'], message: 'DeleteOptions.meta.svc.io "" is invalid: propagationPolicy: Unsupported value: "background": supported values: "Foreground", "Background", "Orphan", "nil"' });
    expect((await adminRequest(env, 'GET', `${ns}/configmaps/keep`)).status).toBe(200);
    expect(await names(widgets)).toEqual(['blue-one', 'red-one']);
  });

  test('a Table with an includeObject the server does not know is 400 for get, list and watch; a delete ignores write-only parameters', async () => {
    const TABLE = { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' };
    const UNKNOWN = `Unable to convert to Table as requested: includeObject: Invalid value: "object": must be 'Metadata', 'Object', 'None', or empty`;
    for (const path of [`${ns}/configmaps/keep`, `${ns}/configmaps`, `${widgets}?watch=true&timeoutSeconds=1`]) {
      const res = await adminRequest(env, 'GET', `${path}${path.includes('?') ? '&' : '?'}includeObject=object`, undefined, TABLE);
      expect(refusal(res)).toMatchObject({ code: 400, reason: 'BadRequest', message: UNKNOWN });
    }
    const full = await adminRequest(env, 'GET', `${ns}/configmaps/keep?includeObject=Object`, undefined, TABLE);
    expect((full.json() as { rows: Array<{ object: { data?: unknown } }> }).rows[0]?.object.data).toBeDefined();
    const deleted = await adminRequest(env, 'DELETE', `${widgets}/blue-one?dryRun=All&fieldManager=${'m'.repeat(200)}&fieldValidation=Sometimes`);
    expect(deleted.status).toBe(200);
    expect(await names(widgets)).toEqual(['blue-one', 'red-one']);
  });

  test('ListOptions that do not fit together are 400 naming the field: sendInitialEvents on a list, or on a watch without NotOlderThan', async () => {
    expect(refusal(await adminRequest(env, 'GET', `${ns}/configmaps?sendInitialEvents=true`))).toMatchObject({ code: 400, reason: 'BadRequest', fields: ['sendInitialEvents'], message: 'sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list' });
    expect(refusal(await adminRequest(env, 'DELETE', `${widgets}?sendInitialEvents=false`))).toMatchObject({ code: 400, fields: ['sendInitialEvents'] });
    expect(refusal(await adminRequest(env, 'GET', `${widgets}?watch=true&sendInitialEvents=false`))).toMatchObject({
      code: 400,
      fields: ['resourceVersionMatch'],
      message: 'resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan',
    });
    expect(refusal(await adminRequest(env, 'GET', `${ns}/configmaps?resourceVersionMatch=Exact&resourceVersion=0`))).toMatchObject({ code: 400, fields: ['resourceVersionMatch'] });
    expect(await names(widgets)).toEqual(['blue-one', 'red-one']);
  });

  test('a field selector is refused unless the kind can be selected by every field it names; a custom resource by its selectableFields', async () => {
    const NOT_KNOWN = /^"spec\.\w+" is not a known field selector: only "metadata\.name", "metadata\.namespace"$/;
    for (const [path, message] of [
      [`${ns}/configmaps?fieldSelector=spec.nodeName%3Dx`, NOT_KNOWN],
      [`${ns}/configmaps?watch=true&fieldSelector=spec.nodeName%3Dx`, NOT_KNOWN],
      [`${widgets}?fieldSelector=spec.size%3D1`, NOT_KNOWN],
      [`/api/v1/pods?fieldSelector=spec.bogus%3Dx`, /^field label not supported: spec\.bogus$/],
      [`/api/v1/namespaces?fieldSelector=metadata.namespace%3Ddefault`, /^field label not supported: metadata\.namespace$/],
    ] as const) {
      const res = await adminRequest(env, 'GET', path);
      expect([res.status, refusal(res).reason, refusal(res).message]).toEqual([400, 'BadRequest', expect.stringMatching(message)]);
    }
    const crd = (await adminRequest(env, 'GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com')).json() as { spec: { versions: Array<{ selectableFields?: unknown }> } };
    expect(crd.spec.versions[0]?.selectableFields).toEqual([{ jsonPath: '.spec.color' }]);
    expect(await names(`${widgets}?fieldSelector=spec.color%3Dred`)).toEqual(['red-one']);
    expect(await names(`${widgets}?fieldSelector=spec.color!%3Dred,metadata.name%3Dblue-one`)).toEqual(['blue-one']);
    expect((await adminRequest(env, 'GET', '/api/v1/pods?fieldSelector=spec.nodeName%3Dn1,status.phase!%3DRunning')).status).toBe(200);
    expect(await names('/api/v1/namespaces?fieldSelector=status.phase%3DActive,metadata.name%3Ddefault')).toEqual(['default']);
  });
});
