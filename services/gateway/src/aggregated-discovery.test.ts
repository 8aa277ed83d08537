import type { Request, Response } from 'express';
import { ResourceRegistry } from '@svc/apimachinery';
import { registerBuiltins } from '@svc/kinds';
import { AggregatedDiscovery } from '@svc/openapi';
import { PROTOBUF_PREFIX, ProtobufObjectCodec } from '@svc/protobuf-codec';
import { etagMatches, serveAggregatedDiscovery } from './aggregated-discovery';
import type { GatewayDeps } from './backends';
import { negotiateDiscovery } from './negotiation';

const V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const V2BETA1 = 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList';

describe('negotiating aggregated discovery', () => {
  const json = { kind: 'json', mediaType: 'application/json' };
  test.each([
    // kubectl 1.32's Accept: v2 first, then v2beta1, then the legacy document.
    [`${V2},${V2BETA1},application/json`, { output: json, group: 'apidiscovery.k8s.io', version: 'v2' }],
    [`${V2BETA1},application/json`, { output: json, group: 'apidiscovery.k8s.io', version: 'v2beta1' }],
    ['application/json;g=apidiscovery.svc.io;v=v2;as=APIGroupDiscoveryList', { output: json, group: 'apidiscovery.svc.io', version: 'v2' }],
    // Parameters in any order, unknown ones ignored (a newer client's profile).
    ['application/json;as=APIGroupDiscoveryList;v=v2;g=apidiscovery.k8s.io;profile=nopeer', { output: json, group: 'apidiscovery.k8s.io', version: 'v2' }],
    ['application/yaml;g=apidiscovery.svc.io;v=v2;as=APIGroupDiscoveryList', { output: { kind: 'yaml', mediaType: 'application/yaml' }, group: 'apidiscovery.svc.io', version: 'v2' }],
    [
      'application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json',
      { output: { kind: 'protobuf', mediaType: 'application/vnd.kubernetes.protobuf' }, group: 'apidiscovery.k8s.io', version: 'v2' },
    ],
    [
      'application/vnd.svc.protobuf;g=apidiscovery.svc.io;v=v2;as=APIGroupDiscoveryList',
      { output: { kind: 'protobuf', mediaType: 'application/vnd.svc.protobuf' }, group: 'apidiscovery.svc.io', version: 'v2' },
    ],
    // Preference first: a plain JSON range preferred over the aggregated one gets the legacy document.
    [`application/json,${V2}`, undefined],
    [`${V2};q=0.5,application/json`, undefined],
    [`application/json;q=0.5,${V2}`, { output: json, group: 'apidiscovery.k8s.io', version: 'v2' }],
    [`${V2};q=0,application/json`, undefined],
    // Conversions this endpoint does not offer are passed over, as are types it does not serve.
    [`application/json;as=Table;g=meta.k8s.io;v=v1,${V2}`, { output: json, group: 'apidiscovery.k8s.io', version: 'v2' }],
    [`application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList,${V2BETA1}`, { output: json, group: 'apidiscovery.k8s.io', version: 'v2beta1' }],
    [`text/html,${V2}`, { output: json, group: 'apidiscovery.k8s.io', version: 'v2' }],
    ['application/json;as=Table;g=meta.k8s.io;v=v1', undefined],
    ['*/*', undefined],
    ['application/json', undefined],
    ['', undefined],
    [undefined, undefined],
  ])('Accept %j', (accept, expected) => {
    expect(negotiateDiscovery(accept, { protobuf: true })).toEqual(expected);
  });

  test('protobuf is passed over when the codec cannot write the list', () => {
    expect(negotiateDiscovery(`application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,${V2}`, { protobuf: false })).toEqual({
      output: json,
      group: 'apidiscovery.k8s.io',
      version: 'v2',
    });
  });
});

describe('If-None-Match', () => {
  test.each([
    ['"abc"', true],
    ['W/"abc"', true],
    ['"x", "abc"', true],
    ['*', true],
    ['"abd"', false],
    ['abc', false],
    [undefined, false],
  ])('%j against "abc": %s', (header, expected) => {
    expect(etagMatches(header, '"abc"')).toBe(expected);
  });
});

interface Answer {
  code: number;
  headers: Record<string, string>;
  body: Buffer | undefined;
}

describe('serving aggregated discovery', () => {
  const registry = new ResourceRegistry();
  registerBuiltins(registry);
  const discovery = new AggregatedDiscovery(registry);
  const protobuf = new ProtobufObjectCodec();
  const deps = { registry, protobuf, documents: { aggregatedDiscovery: (_r: ResourceRegistry, scope: 'core' | 'named') => discovery.document(scope) } } as unknown as GatewayDeps;
  afterAll(() => discovery.close());

  function serve(headers: Record<string, string>, scope: 'core' | 'named' = 'named', using: GatewayDeps = deps): { served: boolean; answer: Answer } {
    const answer: Answer = { code: 0, headers: {}, body: undefined };
    const res = {
      headersSent: false,
      status(code: number) {
        answer.code = code;
        return res;
      },
      set(fields: Record<string, string>) {
        Object.assign(answer.headers, fields);
        return res;
      },
      setHeader(name: string, value: string) {
        answer.headers[name] = value;
        return res;
      },
      end(data?: Buffer) {
        answer.body = data;
      },
    } as unknown as Response;
    const served = serveAggregatedDiscovery({ headers } as unknown as Request, res, using, scope);
    return { served, answer };
  }

  test('answers the list in JSON under the name asked for, with an ETag, and 304 to that ETag', () => {
    const { served, answer } = serve({ accept: `${V2},${V2BETA1},application/json` });
    expect(served).toBe(true);
    expect(answer.code).toBe(200);
    expect(answer.headers['Content-Type']).toBe(V2);
    expect(answer.headers['Vary']).toBe('Accept');
    const etag = answer.headers['ETag'] ?? '';
    expect(etag).toBe(`"${discovery.document('named').etag}"`);
    const list = JSON.parse(String(answer.body)) as { apiVersion: string; kind: string; items: Array<{ metadata: { name: string } }> };
    expect(list.apiVersion).toBe('apidiscovery.k8s.io/v2');
    expect(list.kind).toBe('APIGroupDiscoveryList');
    expect(list.items.map((g) => g.metadata.name)).toContain('coordination.svc.io');

    // The same bytes again, encoded once.
    expect(serve({ accept: V2 }).answer.body).toBe(answer.body);
    const ours = serve({ accept: 'application/json;g=apidiscovery.svc.io;v=v2beta1;as=APIGroupDiscoveryList' }).answer;
    expect(ours.headers['Content-Type']).toBe('application/json;g=apidiscovery.svc.io;v=v2beta1;as=APIGroupDiscoveryList');
    expect((JSON.parse(String(ours.body)) as { apiVersion: string }).apiVersion).toBe('apidiscovery.svc.io/v2beta1');
    expect(ours.headers['ETag']).toBe(etag);

    const notModified = serve({ accept: V2, 'if-none-match': etag }).answer;
    expect(notModified.code).toBe(304);
    expect(notModified.body).toBeUndefined();
    expect(notModified.headers['ETag']).toBe(etag);
    expect(serve({ accept: V2, 'if-none-match': '"stale"' }).answer.code).toBe(200);
  });

  test('answers the core group at /api', () => {
    const { answer } = serve({ accept: V2 }, 'core');
    const list = JSON.parse(String(answer.body)) as { items: Array<{ metadata: object; versions: Array<{ version: string }> }> };
    expect(list.items).toHaveLength(1);
    expect(list.items[0]?.metadata).toEqual({});
    expect(list.items[0]?.versions.map((v) => v.version)).toEqual(['v1']);
    expect(answer.headers['ETag']).toBe(`"${discovery.document('core').etag}"`);
  });

  test('answers protobuf in the envelope, decodable back to the JSON list', () => {
    const { answer } = serve({ accept: 'application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' }, 'core');
    expect(answer.headers['Content-Type']).toBe('application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
    const body = answer.body as Buffer;
    expect(body.subarray(0, 4).equals(PROTOBUF_PREFIX)).toBe(true);
    // Empty strings are absent from the decoded form, as Go's decoder leaves them empty.
    const withoutEmpty = (value: unknown): unknown => JSON.parse(JSON.stringify(value), (_k, v: unknown) => (v === '' ? undefined : v));
    const json = JSON.parse(String(serve({ accept: V2 }, 'core').answer.body)) as Record<string, unknown>;
    expect(protobuf.decode(body)).toEqual(withoutEmpty(json));
  });

  test('leaves the legacy Accept, and a gateway without the documents, to the legacy documents', () => {
    expect(serve({ accept: 'application/json' }).served).toBe(false);
    expect(serve({}).served).toBe(false);
    const without = { ...deps, documents: {} } as GatewayDeps;
    expect(serve({ accept: V2 }, 'named', without).served).toBe(false);
  });
});
