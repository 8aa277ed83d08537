import { ApiError, type ApiObject, type ConversionWebhookConfig } from '@svc/apimachinery';
import { converterFor, DEFAULT_WEBHOOK_CONVERTER_OPTIONS, noneConverter, WebhookConverter, type ReviewPoster } from './converter';

const widget = (name: string, apiVersion = 'example.com/v1'): ApiObject => ({ apiVersion, kind: 'Widget', metadata: { name, uid: `uid-${name}` }, spec: { size: name.length } });
const webhook: ConversionWebhookConfig = { url: 'https://convert.example.com/convert', conversionReviewVersions: ['v1'] };

interface Review {
  request: { uid: string; desiredAPIVersion: string; objects: ApiObject[] };
}

/** A webhook that converts by renaming the version, recording every review it got. */
function recordingWebhook(reviews: Review[]): ReviewPoster {
  return async (_hook, body) => {
    const review = JSON.parse(body) as Review;
    reviews.push(review);
    const convertedObjects = review.request.objects.map((o) => ({ ...o, apiVersion: review.request.desiredAPIVersion }));
    return { status: 200, body: JSON.stringify({ apiVersion: 'apiextensions.svc.io/v1', kind: 'ConversionReview', response: { uid: review.request.uid, result: { status: 'Success' }, convertedObjects } }) };
  };
}

describe('conversion strategy None', () => {
  it('rewrites apiVersion only, leaving the input unchanged', async () => {
    const input = [widget('a'), widget('b', 'example.com/v2')];
    const out = await noneConverter.convert(input, 'example.com/v2');
    expect(out).toEqual([{ ...widget('a'), apiVersion: 'example.com/v2' }, widget('b', 'example.com/v2')]);
    expect(input[0]?.apiVersion).toBe('example.com/v1');
  });
});

describe('conversion strategy Builtin', () => {
  it("converts each object not yet in the asked version with the kind's own function", async () => {
    const seen: string[] = [];
    const converter = converterFor({
      strategy: 'Builtin',
      convert: (obj, apiVersion) => {
        seen.push(obj.metadata?.name ?? '');
        return { ...obj, apiVersion, spec: undefined, renamed: obj['spec'] };
      },
    });
    const out = await converter.convert([widget('a'), widget('b', 'example.com/v2')], 'example.com/v2');
    expect(seen).toEqual(['a']);
    expect(out[0]).toMatchObject({ apiVersion: 'example.com/v2', renamed: { size: 1 } });
    expect(out[1]).toEqual(widget('b', 'example.com/v2'));
  });
});

describe('conversion webhook', () => {
  it('sends only objects in another version, and keeps the order', async () => {
    const reviews: Review[] = [];
    const converter = new WebhookConverter(webhook, DEFAULT_WEBHOOK_CONVERTER_OPTIONS, recordingWebhook(reviews));
    const out = await converter.convert([widget('a'), widget('b', 'example.com/v2'), widget('c')], 'example.com/v2');
    expect(out.map((o) => [o.metadata?.name, o.apiVersion])).toEqual([['a', 'example.com/v2'], ['b', 'example.com/v2'], ['c', 'example.com/v2']]);
    expect(reviews.map((r) => r.request.objects.map((o) => o.metadata?.name))).toEqual([['a', 'c']]);
    expect(reviews[0]?.request.desiredAPIVersion).toBe('example.com/v2');
  });

  it('calls nothing when every object is in the desired version', async () => {
    const reviews: Review[] = [];
    const converter = new WebhookConverter(webhook, DEFAULT_WEBHOOK_CONVERTER_OPTIONS, recordingWebhook(reviews));
    expect(await converter.convert([widget('a', 'example.com/v2')], 'example.com/v2')).toEqual([widget('a', 'example.com/v2')]);
    expect(reviews).toEqual([]);
  });

  it('converts a long list in several bounded reviews, each with its own uid', async () => {
    const reviews: Review[] = [];
    const converter = new WebhookConverter(webhook, { ...DEFAULT_WEBHOOK_CONVERTER_OPTIONS, maxReviewObjects: 2 }, recordingWebhook(reviews));
    const out = await converter.convert(['a', 'b', 'c', 'd', 'e'].map((n) => widget(n)), 'example.com/v2');
    expect(out.map((o) => o.metadata?.name)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(reviews.map((r) => r.request.objects.length)).toEqual([2, 2, 1]);
    expect(new Set(reviews.map((r) => r.request.uid)).size).toBe(3);
    const bySize = new WebhookConverter(webhook, { ...DEFAULT_WEBHOOK_CONVERTER_OPTIONS, maxReviewBytes: 1 }, recordingWebhook((reviews.length = 0, reviews)));
    await bySize.convert([widget('a'), widget('b')], 'example.com/v2');
    expect(reviews.map((r) => r.request.objects.length)).toEqual([1, 1]);
  });

  it.each<[string, ReviewPoster, RegExp]>([
    ['garbage', async () => ({ status: 200, body: 'garbage' }), /not a JSON ConversionReview/],
    ['an HTTP error', async () => ({ status: 503, body: '' }), /the webhook answered HTTP 503/],
    ['a timeout', async () => Promise.reject(new Error('the webhook did not answer within 1000 ms')), /did not answer within 1000 ms/],
    ['a wrong uid', async () => ({ status: 200, body: JSON.stringify({ apiVersion: 'apiextensions.svc.io/v1', kind: 'ConversionReview', response: { uid: 'x', result: { status: 'Success' }, convertedObjects: [] } }) }), /expected response.uid/],
  ])('fails with a 500 naming the webhook on %s', async (_what, post, message) => {
    const converting = new WebhookConverter(webhook, DEFAULT_WEBHOOK_CONVERTER_OPTIONS, post).convert([widget('a')], 'example.com/v2');
    await expect(converting).rejects.toBeInstanceOf(ApiError);
    await expect(converting).rejects.toMatchObject({ code: 500, reason: 'InternalError', message: expect.stringMatching(/^Internal error occurred: conversion webhook for example.com\/v1, Kind=Widget failed: /) });
    await expect(converting).rejects.toMatchObject({ message: expect.stringMatching(message) });
  });

  it('refuses a webhook that speaks no ConversionReview version we send', async () => {
    const reviews: Review[] = [];
    const converting = new WebhookConverter({ ...webhook, conversionReviewVersions: ['v2'] }, DEFAULT_WEBHOOK_CONVERTER_OPTIONS, recordingWebhook(reviews)).convert([widget('a')], 'example.com/v2');
    await expect(converting).rejects.toMatchObject({ code: 500, message: expect.stringMatching(/webhook does not accept known ConversionReview versions \(v1, v1beta1\)/) });
    expect(reviews).toEqual([]);
  });

  it('sends the first ConversionReview version the webhook lists that we speak, and reads the answer in it', async () => {
    const sent: string[] = [];
    // A v1beta1 webhook answers in the upstream group, and (as upstream never checked it in v1beta1) without our uid.
    const v1beta1Webhook: ReviewPoster = async (_hook, body) => {
      const review = JSON.parse(body) as Review & { apiVersion: string };
      sent.push(review.apiVersion);
      const convertedObjects = review.request.objects.map((o) => ({ ...o, apiVersion: review.request.desiredAPIVersion }));
      return { status: 200, body: JSON.stringify({ apiVersion: 'apiextensions.k8s.io/v1beta1', kind: 'ConversionReview', response: { result: { status: 'Success' }, convertedObjects } }) };
    };
    const converter = new WebhookConverter({ ...webhook, conversionReviewVersions: ['v2', 'v1beta1', 'v1'] }, DEFAULT_WEBHOOK_CONVERTER_OPTIONS, v1beta1Webhook);
    expect((await converter.convert([widget('a')], 'example.com/v2'))[0]?.apiVersion).toBe('example.com/v2');
    const onlyBeta = new WebhookConverter({ ...webhook, conversionReviewVersions: ['v1beta1'] }, DEFAULT_WEBHOOK_CONVERTER_OPTIONS, v1beta1Webhook);
    expect((await onlyBeta.convert([widget('b')], 'example.com/v2'))[0]?.apiVersion).toBe('example.com/v2');
    expect(sent).toEqual(['apiextensions.svc.io/v1beta1', 'apiextensions.svc.io/v1beta1']);
    // Listed first, v1 is what is sent, and a v1beta1 answer to it is refused.
    const v1First = new WebhookConverter({ ...webhook, conversionReviewVersions: ['v1', 'v1beta1'] }, DEFAULT_WEBHOOK_CONVERTER_OPTIONS, v1beta1Webhook);
    await expect(v1First.convert([widget('c')], 'example.com/v2')).rejects.toMatchObject({ code: 500, message: expect.stringMatching(/expected webhook response of apiextensions.svc.io\/v1, Kind=ConversionReview/) });
    expect(sent[2]).toBe('apiextensions.svc.io/v1');
  });
});
