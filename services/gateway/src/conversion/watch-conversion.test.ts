import { ApiError, type ApiObject, type ResourceDefinition } from '@svc/apimachinery';
import { customResourceDefinitions } from '@svc/kinds';
import { DEFAULT_WEBHOOK_CONVERTER_OPTIONS, WebhookConverter, type ReviewPoster } from './converter';
import { VersionedObjects } from './versioned-storage';
import { SharedConversion, WatchConversions } from './watch-conversion';

/** v1 stored, v2 served through a webhook (the fake below nests spec in `nested`). */
function v2Def(): ResourceDefinition {
  const names = { plural: 'things', singular: 'thing', kind: 'Thing', listKind: 'ThingList' };
  const version = (name: string, storage: boolean) => ({ name, served: true, storage, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', 'x-svc-preserve-unknown-fields': true } } } } });
  const webhook = { conversionReviewVersions: ['v1'], clientConfig: { url: 'https://convert.example.com/' } };
  const crd: ApiObject = {
    apiVersion: 'apiextensions.svc.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'things.example.com' },
    spec: { group: 'example.com', scope: 'Cluster', names, conversion: { strategy: 'Webhook', webhook }, versions: [version('v1', true), version('v2', false)] },
    status: { acceptedNames: names, conditions: [{ type: 'Established', status: 'True' }] },
  };
  return customResourceDefinitions(crd).find((d) => d.version === 'v2') as ResourceDefinition;
}

/** A webhook that counts its calls and converts, or fails when told. */
function webhook() {
  const state = { calls: 0, fail: false };
  const post: ReviewPoster = async (_webhook, body) => {
    state.calls++;
    if (state.fail) return { status: 500, body: 'broken' };
    const review = JSON.parse(body) as { request: { uid: string; desiredAPIVersion: string; objects: ApiObject[] } };
    const convertedObjects = review.request.objects.map((o) => ({ ...o, apiVersion: review.request.desiredAPIVersion, spec: { nested: o['spec'] } }));
    return { status: 200, body: JSON.stringify({ apiVersion: 'apiextensions.svc.io/v1', kind: 'ConversionReview', response: { uid: review.request.uid, result: { status: 'Success' }, convertedObjects } }) };
  };
  return { state, post };
}

function sharedFor(post: ReviewPoster): SharedConversion {
  const def = v2Def();
  const versioning = def.storageVersioning;
  if (!versioning || versioning.conversion.strategy !== 'Webhook') throw new Error('expected a webhook-converted definition');
  return new SharedConversion(new VersionedObjects(def, versioning, new WebhookConverter(versioning.conversion.webhook, DEFAULT_WEBHOOK_CONVERTER_OPTIONS, post)));
}

const stored = (name: string, size: number): ApiObject => ({ apiVersion: 'example.com/v1', kind: 'Thing', metadata: { name, uid: `u-${name}` }, spec: { size } });

describe('conversion of watch events shared by the watches of a version', () => {
  it('calls the webhook once per change for two watchers, each getting every change in order', async () => {
    const { state, post } = webhook();
    const shared = sharedFor(post);
    const changes = [stored('a', 1), stored('b', 2), stored('a', 3)];
    // The hub hands each change to both watchers in turn.
    const claims = changes.map((obj, i) => [shared.claim(`${i + 2}:/registry/example.com/things//${String(obj.metadata?.name)}`, [obj]), shared.claim(`${i + 2}:/registry/example.com/things//${String(obj.metadata?.name)}`, [obj])]);
    const seen: Array<Array<unknown>> = [[], []];
    for (const pair of claims) {
      for (const [watcher, claim] of pair.entries()) {
        const [shown] = await claim.take();
        seen[watcher]?.push([shown?.apiVersion, shown?.['spec']]);
      }
    }
    expect(state.calls).toBe(3);
    const expected = [['example.com/v2', { nested: { size: 1 } }], ['example.com/v2', { nested: { size: 2 } }], ['example.com/v2', { nested: { size: 3 } }]];
    expect(seen).toEqual([expected, expected]);
    // Everything was taken: nothing is held.
    expect(shared.size).toBe(0);
  });

  it('gives a failed conversion to every watcher, and goes on with the next change', async () => {
    const { state, post } = webhook();
    const shared = sharedFor(post);
    state.fail = true;
    const first = shared.claim('2:/k', [stored('a', 1)]);
    const second = shared.claim('2:/k', [stored('a', 1)]);
    await expect(first.take()).rejects.toThrow(ApiError);
    await expect(second.take()).rejects.toThrow(/conversion webhook for example.com\/v1, Kind=Thing failed: the webhook answered HTTP 500/);
    expect(state.calls).toBe(1);
    state.fail = false;
    const [shown] = await shared.claim('3:/k', [stored('a', 2)]).take();
    expect(shown?.['spec']).toEqual({ nested: { size: 2 } });
    expect(shared.size).toBe(0);
  });

  it('releases a conversion its watchers gave up, without calling the webhook when none is left', async () => {
    const { state, post } = webhook();
    const shared = sharedFor(post);
    const one = shared.claim('2:/k', [stored('a', 1)]);
    const two = shared.claim('2:/k', [stored('a', 1)]);
    one.release();
    two.release();
    expect(shared.size).toBe(0);
    // The queue has run what was claimed; nothing was asked for.
    await shared.claim('3:/k', [stored('a', 2)]).take();
    expect(state.calls).toBe(1);
  });

  it('keeps one shared conversion per served definition, none for kinds stored as served', () => {
    const conversions = new WatchConversions();
    const def = v2Def();
    expect(conversions.for(def)).toBe(conversions.for(def));
    expect(conversions.for(v2Def())).not.toBe(conversions.for(def));
    expect(conversions.for({ ...def, storageVersioning: undefined } as ResourceDefinition)).toBeUndefined();
  });
});
