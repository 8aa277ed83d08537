import { Readable } from 'node:stream';
import type { Request, Response } from 'express';
import { ApiError, type ResourceDefinition } from '@svc/apimachinery';
import type { Attributes } from '@svc/authz/client';
import { configMapDefinition, customResourceDefinitions, eventDefinition } from '@svc/kinds';
import { createLogger } from '@svc/service-kit';
import { initRequestState, withAuthorizationState, withRequestInfo, withUser } from '../context';
import type { RequestInfo } from '../request-info';
import { FakeStorage, TEST_USER, fakeDeps } from '../registry/testing/fakes';
import { handlePatch } from './patch';
import { handleUpdate } from './update';

/**
 * The checks every write handler shares, driven through the handlers
 * themselves: a write that turns out to create is authorized as `create`
 * (PUT of a kind that allows create on update, server-side apply of a
 * missing object, custom resources alike), and the body's name and
 * namespace are the URL's whatever the patch type or subresource. Storage,
 * admission and authz are in-process fakes here; the end-to-end test
 * (write-checks) runs these cases against the real services, and renames
 * of custom objects and through their subresources there too.
 */

const user = TEST_USER;
const quiet = createLogger('test', { write: () => undefined });

const gadgets = customResourceDefinitions({
  apiVersion: 'apiextensions.svc.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'gadgets.example.com' },
  spec: {
    group: 'example.com',
    scope: 'Namespaced',
    names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', listKind: 'GadgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { size: { type: 'integer' } } }, status: { type: 'object', properties: { ready: { type: 'boolean' } } } } } },
      },
    ],
  },
  status: { acceptedNames: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', listKind: 'GadgetList' }, conditions: [{ type: 'Established', status: 'True' }] },
})[0] as ResourceDefinition;

interface Outcome {
  code: number;
  body: Record<string, unknown>;
}

interface Write {
  def: ResourceDefinition;
  verb: 'update' | 'patch';
  name: string;
  subresource?: string;
  contentType: string;
  body: unknown;
  query?: string;
}

function harness(allowedVerbs: string[]) {
  const objects = new FakeStorage();
  const asked: Attributes[] = [];
  const deps = fakeDeps({ storage: objects });

  async function send(w: Write): Promise<Outcome> {
    const raw = typeof w.body === 'string' ? w.body : JSON.stringify(w.body);
    const req = Readable.from([Buffer.from(raw)]) as unknown as Request;
    Object.assign(req, { headers: { 'content-type': w.contentType, accept: 'application/json', 'content-length': String(Buffer.byteLength(raw)) }, method: w.verb === 'update' ? 'PUT' : 'PATCH' });
    initRequestState(req, 'r1', quiet);
    const info: RequestInfo = {
      isResourceRequest: true,
      verb: w.verb,
      path: '/test',
      apiPrefix: w.def.group ? 'apis' : 'api',
      apiGroup: w.def.group,
      apiVersion: w.def.version,
      resource: w.def.plural,
      subresource: w.subresource ?? '',
      namespace: 'default',
      name: w.name,
      parts: [],
      query: new URLSearchParams(w.query ?? ''),
      segments: [],
    } as unknown as RequestInfo;
    withRequestInfo(req, info);
    withUser(req, user);
    const attributes: Attributes = { user, resourceRequest: true, verb: w.verb, path: '/test', apiGroup: w.def.group, apiVersion: w.def.version, resource: w.def.plural, subresource: info.subresource, namespace: 'default', name: w.name };
    withAuthorizationState(req, {
      attributes,
      authorize: async (attrs) => {
        asked.push(attrs);
        return { decision: allowedVerbs.includes(attrs.verb) ? 'allow' : 'deny', reason: '' };
      },
    });
    const out: Outcome = { code: 0, body: {} };
    const res = {
      headersSent: false,
      status(code: number) {
        out.code = code;
        return res;
      },
      setHeader: () => res,
      end(data: Buffer) {
        out.body = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
      },
    } as unknown as Response;
    try {
      await (w.verb === 'update' ? handleUpdate : handlePatch)(req, res, { deps, def: w.def, info });
    } catch (err) {
      const e = ApiError.from(err);
      return { code: e.code, body: e.toStatus() as unknown as Record<string, unknown> };
    }
    return out;
  }
  return { objects, asked, send };
}

const configMaps = configMapDefinition();
const events = eventDefinition();
const APPLY = 'application/apply-patch+yaml';

const applyConfigMap = (name: string): Write => ({ def: configMaps, verb: 'patch', name, contentType: APPLY, query: 'fieldManager=robot', body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { a: 'b' } } });
const putEvent = (name: string): Write => ({ def: events, verb: 'update', name, contentType: 'application/json', body: { apiVersion: 'v1', kind: 'Event', metadata: { name, namespace: 'default' }, involvedObject: { kind: 'Pod', name: 'p', namespace: 'default' }, reason: 'Test', message: 'm' } });
const applyGadget = (name: string): Write => ({ def: gadgets, verb: 'patch', name, contentType: APPLY, query: 'fieldManager=robot', body: { apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name }, spec: { size: 1 } } });

describe('a write that creates is authorized as create', () => {
  test.each([
    ['server-side apply of a missing ConfigMap', applyConfigMap('cm'), 'patch', 'configmaps'],
    ['PUT of a missing Event (create on update)', putEvent('ev'), 'update', 'events'],
    ['server-side apply of a missing custom object', applyGadget('g'), 'patch', 'gadgets'],
  ])('%s: 403 naming create without it, 201 with it', async (_what, write, verb, resource) => {
    const denied = harness([verb, 'get']);
    const refused = await denied.send(write);
    expect(refused.code).toBe(403);
    expect(refused.body).toMatchObject({ kind: 'Status', reason: 'Forbidden', details: { name: write.name, kind: resource } });
    expect(String(refused.body['message'])).toBe(
      `${resource}${write.def.group ? `.${write.def.group}` : ''} "${write.name}" is forbidden: User "robot" cannot create resource "${resource}" in API group "${write.def.group}" in the namespace "default"`,
    );
    expect(denied.objects.byKey.size).toBe(0);
    expect(denied.asked).toEqual([expect.objectContaining({ verb: 'create', resource, name: write.name, namespace: 'default', apiGroup: write.def.group })]);

    const allowed = harness([verb, 'create']);
    const created = await allowed.send(write);
    expect(created.code).toBe(201);
    expect(allowed.objects.byKey.size).toBe(1);
  });

  test('a write to an existing object is not asked about create', async () => {
    const h = harness(['patch', 'create']);
    expect((await h.send(applyConfigMap('cm'))).code).toBe(201);
    h.asked.length = 0;
    expect((await h.send(applyConfigMap('cm'))).code).toBe(200);
    expect(h.asked).toEqual([]);
  });

  test.each([
    ['PUT', { def: gadgets, verb: 'update', name: 'g', subresource: 'status', contentType: 'application/json', body: { apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'g' }, status: { ready: true } } }],
    ['apply', { def: gadgets, verb: 'patch', name: 'g', subresource: 'status', contentType: APPLY, query: 'fieldManager=robot', body: { apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'g' }, status: { ready: true } } }],
  ] as Array<[string, Write]>)('%s through the status subresource of a missing object is 404 and creates nothing', async (_what, write) => {
    const h = harness(['update', 'patch', 'create']);
    const res = await h.send(write);
    expect(res.code).toBe(404);
    expect(h.objects.byKey.size).toBe(0);
  });
});

describe("a body's name and namespace are the URL's", () => {
  const seeded = async () => {
    const h = harness(['patch', 'update', 'create']);
    expect((await h.send(applyConfigMap('cm'))).code).toBe(201);
    expect((await h.send(applyGadget('g'))).code).toBe(201);
    return h;
  };
  const snapshot = (h: ReturnType<typeof harness>) => h.objects.snapshot();

  test.each([
    ['merge patch', configMaps, 'cm', '', 'application/merge-patch+json', { metadata: { name: 'other' }, data: { a: 'x' } }, 'the name of the object (other) does not match the name on the URL (cm)'],
    ['merge patch removing the name', configMaps, 'cm', '', 'application/merge-patch+json', { metadata: { name: null }, data: { a: 'x' } }, 'the name of the object () does not match the name on the URL (cm)'],
    ['JSON patch', configMaps, 'cm', '', 'application/json-patch+json', [{ op: 'replace', path: '/metadata/name', value: 'other' }, { op: 'replace', path: '/data/a', value: 'x' }], 'the name of the object (other) does not match the name on the URL (cm)'],
    ['JSON patch removing metadata', configMaps, 'cm', '', 'application/json-patch+json', [{ op: 'remove', path: '/metadata' }], 'the name of the object () does not match the name on the URL (cm)'],
    ['strategic merge patch', configMaps, 'cm', '', 'application/strategic-merge-patch+json', { metadata: { name: 'other' }, data: { a: 'x' } }, 'the name of the object (other) does not match the name on the URL (cm)'],
    ['strategic merge patch moving namespaces', configMaps, 'cm', '', 'application/strategic-merge-patch+json', { metadata: { namespace: 'elsewhere' }, data: { a: 'x' } }, 'the namespace of the provided object (elsewhere) does not match the namespace sent on the request (default)'],
    ['apply', configMaps, 'cm', '', APPLY, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'other' }, data: { a: 'x' } }, 'the name of the object (other) does not match the name on the URL (cm)'],
  ] as const)('%s that renames is 400 and writes nothing', async (_what, def, name, subresource, contentType, body, message) => {
    const h = await seeded();
    const before = snapshot(h);
    const res = await h.send({ def, verb: 'patch', name, subresource, contentType, body, query: contentType === APPLY ? 'fieldManager=robot' : '' });
    expect(res.code).toBe(400);
    expect(res.body).toMatchObject({ kind: 'Status', reason: 'BadRequest', message });
    expect(snapshot(h)).toBe(before);
  });

  test.each([
    ['another name', '', { name: 'other' }, 'the name of the object (other) does not match the name on the URL (cm)'],
    ['no name', '', {}, 'the name of the object () does not match the name on the URL (cm)'],
    ['another namespace', '', { name: 'cm', namespace: 'elsewhere' }, 'the namespace of the provided object (elsewhere) does not match the namespace sent on the request (default)'],
  ])('PUT with %s is 400 and writes nothing', async (_what, subresource, metadata, message) => {
    const h = await seeded();
    const before = snapshot(h);
    const res = await h.send({ def: configMaps, verb: 'update', name: 'cm', subresource, contentType: 'application/json', body: { apiVersion: 'v1', kind: 'ConfigMap', metadata, data: { a: 'x' } } });
    expect(res.code).toBe(400);
    expect(res.body).toMatchObject({ kind: 'Status', reason: 'BadRequest', message });
    expect(snapshot(h)).toBe(before);
  });

  test('PUT through status with another name is 400 and writes nothing', async () => {
    const h = await seeded();
    const before = snapshot(h);
    const res = await h.send({ def: gadgets, verb: 'update', name: 'g', subresource: 'status', contentType: 'application/json', body: { apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'other' }, status: { ready: true } } });
    const message = 'the name of the object (other) does not match the name on the URL (g)';
    expect(res.code).toBe(400);
    expect(res.body).toMatchObject({ kind: 'Status', reason: 'BadRequest', message });
    expect(snapshot(h)).toBe(before);
  });

  test('a patch that keeps the name is stored', async () => {
    const h = await seeded();
    const res = await h.send({ def: configMaps, verb: 'patch', name: 'cm', contentType: 'application/merge-patch+json', body: { metadata: { name: 'cm', namespace: 'default' }, data: { a: 'x' } } });
    expect(res.code).toBe(200);
    expect(res.body).toMatchObject({ metadata: { name: 'cm', namespace: 'default' }, data: { a: 'x' } });
  });
});

describe('a patch may not nest the object deeper than a body may be', () => {
  test('a JSON patch whose result is nested past the limit is 400 and writes nothing', async () => {
    const h = harness(['patch', 'update', 'create']);
    expect((await h.send(applyConfigMap('cm'))).code).toBe(201);
    const before = h.objects.snapshot();
    let value: unknown = 1;
    for (let i = 0; i < 200; i++) value = { a: value };
    // Each operation's value is within the body limit; together they nest 400 levels.
    const body = [
      { op: 'add', path: '/data/x', value },
      { op: 'add', path: `/data/x${'/a'.repeat(199)}`, value },
    ];
    const res = await h.send({ def: configMaps, verb: 'patch', name: 'cm', contentType: 'application/json-patch+json', body });
    expect(res.code).toBe(400);
    expect(res.body).toMatchObject({ kind: 'Status', reason: 'BadRequest', message: 'the patched object is nested deeper than the limit of 256 levels' });
    expect(h.objects.snapshot()).toBe(before);
  });
});
