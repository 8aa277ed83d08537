import { randomUUID } from 'node:crypto';
import { ApiError, type ApiObject, type ConversionWebhookConfig, type ConversionStrategy, type ResourceDefinition } from '@svc/apimachinery';
import { postJson, type WebhookAgents, type WebhookEndpoint, type WebhookReply } from '@svc/service-kit';
import { conversionReviewRequest, convertedObjectsFrom, reviewVersionFor } from './conversion-review';

/**
 * Converts objects of one kind between its versions, as a definition's
 * conversion strategy says: `None` rewrites apiVersion only; `Builtin`
 * is the kind's own field mapping; `Webhook`
 * asks the definition's conversion webhook with ConversionReviews. Objects
 * already in the desired version are not sent. A failure is a 500
 * InternalError naming the webhook, turned into it here and nowhere else.
 */
export interface ObjectConverter {
  /** `objects` in `apiVersion`, in the same order; the input is not changed. */
  convert(objects: readonly ApiObject[], apiVersion: string): Promise<ApiObject[]>;
}

export interface WebhookConverterOptions {
  /** Deadline of one ConversionReview exchange (upstream: 30 s). */
  timeoutMs: number;
  /** Largest ConversionReview we send: a list is converted in as many reviews as it takes. */
  maxReviewBytes: number;
  /** Most objects in one review. */
  maxReviewObjects: number;
  /** Largest answer read; a larger one fails the conversion. */
  maxAnswerBytes: number;
  /** Kept-alive connections to the webhooks; without it each review opens its own. */
  agents?: WebhookAgents;
}

/** The transport of a review, injectable so tests need no network. */
export type ReviewPoster = (webhook: ConversionWebhookConfig, body: string, timeoutMs: number, maxBytes: number) => Promise<WebhookReply>;

function reviewPoster(agents: WebhookAgents | undefined): ReviewPoster {
  return (webhook, body, timeoutMs, maxBytes) =>
    postJson({ server: webhook.url, ...(webhook.caBundle ? { ca: webhook.caBundle } : {}) }, body, timeoutMs, maxBytes, agents?.agentFor(webhook));
}

/** The conversion webhooks of `defs` (whose kept-alive connections stay open). */
export function conversionWebhooks(defs: Iterable<ResourceDefinition>): WebhookEndpoint[] {
  const out: WebhookEndpoint[] = [];
  for (const def of defs) {
    const conversion = def.storageVersioning?.conversion;
    if (conversion?.strategy === 'Webhook') out.push(conversion.webhook);
  }
  return out;
}

export const DEFAULT_WEBHOOK_CONVERTER_OPTIONS: WebhookConverterOptions = {
  timeoutMs: 30_000,
  maxReviewBytes: 3 * 1024 * 1024,
  maxReviewObjects: 500,
  maxAnswerBytes: 32 * 1024 * 1024,
};

export const noneConverter: ObjectConverter = {
  async convert(objects, apiVersion) {
    return objects.map((o) => (o.apiVersion === apiVersion ? o : { ...o, apiVersion }));
  },
};

/** What a failure names: the kind and version being converted, as upstream's message does. */
function subject(objects: readonly ApiObject[]): string {
  const first = objects[0];
  return `${String(first?.apiVersion ?? '')}, Kind=${String(first?.kind ?? '')}`;
}

export class WebhookConverter implements ObjectConverter {
  constructor(
    private readonly webhook: ConversionWebhookConfig,
    private readonly options: WebhookConverterOptions = DEFAULT_WEBHOOK_CONVERTER_OPTIONS,
    private readonly post: ReviewPoster = reviewPoster(options.agents),
  ) {}

  async convert(objects: readonly ApiObject[], apiVersion: string): Promise<ApiObject[]> {
    const out = objects.slice();
    const pending = objects.map((o, i) => (o.apiVersion === apiVersion ? -1 : i)).filter((i) => i >= 0);
    if (pending.length === 0) return out;
    try {
      for (const batch of this.batches(objects, pending)) {
        const converted = await this.review(batch.map((i) => objects[i] as ApiObject), apiVersion);
        batch.forEach((index, j) => (out[index] = converted[j] as ApiObject));
      }
    } catch (err) {
      throw ApiError.internal(`conversion webhook for ${subject(pending.map((i) => objects[i] as ApiObject))} failed: ${(err as Error).message}`, err);
    }
    return out;
  }

  /** Indices of `objects` in reviews of bounded size (an object larger than the bound goes alone). */
  private *batches(objects: readonly ApiObject[], indices: number[]): Generator<number[]> {
    let batch: number[] = [];
    let bytes = 0;
    for (const i of indices) {
      const size = JSON.stringify(objects[i]).length;
      if (batch.length > 0 && (bytes + size > this.options.maxReviewBytes || batch.length >= this.options.maxReviewObjects)) {
        yield batch;
        batch = [];
        bytes = 0;
      }
      batch.push(i);
      bytes += size;
    }
    if (batch.length > 0) yield batch;
  }

  private async review(objects: ApiObject[], apiVersion: string): Promise<ApiObject[]> {
    const version = reviewVersionFor(this.webhook.conversionReviewVersions);
    const uid = randomUUID();
    const body = JSON.stringify(conversionReviewRequest(uid, apiVersion, objects, version));
    const reply = await this.post(this.webhook, body, this.options.timeoutMs, this.options.maxAnswerBytes);
    if (reply.status < 200 || reply.status > 299) throw new Error(`the webhook answered HTTP ${reply.status}`);
    return convertedObjectsFrom(reply.body, uid, objects, apiVersion, version);
  }
}

/** A built-in kind's own conversion, object by object. */
function builtinConverter(convert: (obj: ApiObject, apiVersion: string) => ApiObject): ObjectConverter {
  return {
    async convert(objects, apiVersion) {
      return objects.map((o) => (o.apiVersion === apiVersion ? o : convert(o, apiVersion)));
    },
  };
}

export function converterFor(conversion: ConversionStrategy, options?: WebhookConverterOptions): ObjectConverter {
  switch (conversion.strategy) {
    case 'Webhook':
      return new WebhookConverter(conversion.webhook, options);
    case 'Builtin':
      return builtinConverter(conversion.convert);
    default:
      return noneConverter;
  }
}
