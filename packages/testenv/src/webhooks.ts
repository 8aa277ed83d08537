import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ServiceReference, WebhookClientConfig } from '@svc/apimachinery';
import { call, readDocuments, type AdminTls } from './crds';
import { ensureServingCertificate } from './pki';
import { freePort } from './ports';

/**
 * Admission webhooks served by the test itself, installed the way envtest's
 * WebhookInstallOptions installs them: the configurations come from files
 * or objects; the harness makes a serving CA and a certificate for a local
 * address, picks a free port on it, points every webhook at that address
 * (a `service` reference becomes `url: https://<host>:<port><path>`) with
 * the CA in `caBundle`, and creates the configurations once the control
 * plane is up. The test serves its webhooks with the certificate on that
 * address.
 */

export type { ServiceReference, WebhookClientConfig };

export const WEBHOOK_GROUP = 'admissionregistration.svc.io';
const UPSTREAM_WEBHOOK_GROUP = 'admissionregistration.k8s.io';
const WEBHOOK_KINDS = { MutatingWebhookConfiguration: 'mutatingwebhookconfigurations', ValidatingWebhookConfiguration: 'validatingwebhookconfigurations' } as const;
type WebhookKind = keyof typeof WEBHOOK_KINDS;

export interface Webhook {
  name: string;
  clientConfig: WebhookClientConfig;
  [field: string]: unknown;
}

/** A MutatingWebhookConfiguration or ValidatingWebhookConfiguration as JSON. */
export interface WebhookConfiguration {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; [field: string]: unknown };
  webhooks?: Webhook[];
  [field: string]: unknown;
}

export interface WebhookInstallOptions {
  /**
   * Files or directories (their `.yaml`, `.yml` and `.json` files) of
   * MutatingWebhookConfiguration and ValidatingWebhookConfiguration
   * documents, `admissionregistration.svc.io/v1` or
   * `admissionregistration.k8s.io/v1`; other kinds in them are skipped.
   */
  paths?: string[];
  /** A path that does not exist is skipped instead of failing the start. */
  ignoreErrorIfPathMissing?: boolean;
  mutatingWebhooks?: WebhookConfiguration[];
  validatingWebhooks?: WebhookConfiguration[];
  /** The address the test serves its webhooks on (default 127.0.0.1). */
  localServingHost?: string;
  /** Its port (default: a free one). */
  localServingPort?: number;
  /** The host name the server calls instead of `localServingHost` (it is put in the certificate too). */
  localServingHostExternalName?: string;
  /** Where the CA, certificate and key are written (default `<env dir>/webhook-serving-certs`). */
  localServingCertDir?: string;
  /** Delete the installed configurations when the environment stops (default false). */
  uninstallOnStop?: boolean;
  /** How long to wait for the configurations to be served by every gateway (default 10 s). */
  timeoutMs?: number;
}

/** What the test serves its webhooks with, and what was installed. */
export interface WebhookServing {
  /** The address to listen on. */
  localServingHost: string;
  localServingPort: number;
  /** Holds `ca.crt`, `tls.crt` and `tls.key`. */
  localServingCertDir: string;
  /** The CA's PEM, as it is in every webhook's `caBundle`. */
  localServingCaData: Buffer;
  caFile: string;
  certFile: string;
  keyFile: string;
  /** The serving certificate and key, ready for `https.createServer`. */
  tls: { cert: Buffer; key: Buffer };
  /** `https://<host>:<port><path>`: the URL a webhook at `path` is called on. */
  url(path: string): string;
  /** The configurations as installed (clientConfig rewritten). */
  mutatingWebhooks: WebhookConfiguration[];
  validatingWebhooks: WebhookConfiguration[];
}

function webhookKindOf(file: string, doc: Record<string, unknown>): WebhookKind | undefined {
  const kind = doc['kind'];
  if (kind !== 'MutatingWebhookConfiguration' && kind !== 'ValidatingWebhookConfiguration') return undefined;
  const version = String(doc['apiVersion']);
  if (version !== `${WEBHOOK_GROUP}/v1` && version !== `${UPSTREAM_WEBHOOK_GROUP}/v1`) {
    const name = (doc['metadata'] as { name?: unknown } | undefined)?.name;
    throw new Error(`${file}: only v1 is supported for ${kind} (name: ${String(name)}, apiVersion: ${version})`);
  }
  return kind;
}

/** The webhook configurations of the files and directories, by kind; other kinds are skipped. */
export function readWebhookDocuments(paths: string[], ignoreMissing = false): { mutating: WebhookConfiguration[]; validating: WebhookConfiguration[] } {
  const out = { mutating: [] as WebhookConfiguration[], validating: [] as WebhookConfiguration[] };
  for (const { file, doc } of readDocuments(paths, ignoreMissing)) {
    const kind = webhookKindOf(file, doc);
    if (!kind) continue;
    const metadata = doc['metadata'] as { name?: unknown } | undefined;
    if (typeof metadata?.name !== 'string' || metadata.name === '') throw new Error(`${file}: a ${kind} without metadata.name`);
    (kind === 'MutatingWebhookConfiguration' ? out.mutating : out.validating).push(doc as WebhookConfiguration);
  }
  return out;
}

function hostPort(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * The webhook pointed at the local address: a `service` reference becomes
 * a `url` with the reference's path (`/` without one); a `url` is kept.
 * Either way the CA is put in `caBundle`.
 */
function pointAtLocal(webhook: Webhook, base: string, caBundle: string): Webhook {
  const config: WebhookClientConfig = { ...webhook.clientConfig, caBundle };
  if (config.service) {
    const p = config.service.path ?? '/';
    config.url = `${base}${p.startsWith('/') ? p : `/${p}`}`;
    delete config.service;
  }
  return { ...webhook, clientConfig: config };
}

function prepared(kind: WebhookKind, configs: WebhookConfiguration[], base: string, caBundle: string): WebhookConfiguration[] {
  return configs.map((c) => ({
    ...c,
    apiVersion: `${WEBHOOK_GROUP}/v1`,
    kind,
    webhooks: (c.webhooks ?? []).map((w) => pointAtLocal(w, base, caBundle)),
  }));
}

/**
 * Everything but the install (envtest's PrepWithoutInstalling): reads the
 * files, makes the CA and certificate under `certDir` (or
 * `options.localServingCertDir`), picks the port and rewrites the
 * configurations.
 */
export async function prepareWebhooks(options: WebhookInstallOptions, certDir: string): Promise<WebhookServing> {
  const fromFiles = readWebhookDocuments(options.paths ?? [], options.ignoreErrorIfPathMissing);
  const host = options.localServingHost ?? '127.0.0.1';
  const port = options.localServingPort || (await freePort());
  const callHost = options.localServingHostExternalName ?? host;
  const dir = options.localServingCertDir ?? certDir;
  const hosts = [...new Set(['localhost', '127.0.0.1', host, callHost])];
  const files = await ensureServingCertificate(dir, hosts);
  const caData = fs.readFileSync(files.caCert);
  const caBundle = caData.toString('base64');
  const base = `https://${hostPort(callHost, port)}`;
  return {
    localServingHost: host,
    localServingPort: port,
    localServingCertDir: path.resolve(dir),
    localServingCaData: caData,
    caFile: files.caCert,
    certFile: files.cert,
    keyFile: files.key,
    tls: { cert: fs.readFileSync(files.cert), key: fs.readFileSync(files.key) },
    url: (p: string) => `${base}${p.startsWith('/') ? p : `/${p}`}`,
    mutatingWebhooks: prepared('MutatingWebhookConfiguration', [...fromFiles.mutating, ...(options.mutatingWebhooks ?? [])], base, caBundle),
    validatingWebhooks: prepared('ValidatingWebhookConfiguration', [...fromFiles.validating, ...(options.validatingWebhooks ?? [])], base, caBundle),
  };
}

function collection(kind: WebhookKind): string {
  return `/apis/${WEBHOOK_GROUP}/v1/${WEBHOOK_KINDS[kind]}`;
}

function installed(serving: WebhookServing): Array<{ kind: WebhookKind; config: WebhookConfiguration }> {
  return [
    ...serving.mutatingWebhooks.map((config) => ({ kind: 'MutatingWebhookConfiguration' as const, config })),
    ...serving.validatingWebhooks.map((config) => ({ kind: 'ValidatingWebhookConfiguration' as const, config })),
  ];
}

/**
 * Creates the configurations through `urls[0]` (one that exists is
 * replaced, as envtest does) and resolves once every URL serves each of
 * them; rejects with what it last saw after `timeoutMs`.
 */
export async function installWebhooks(urls: string[], tls: AdminTls, serving: WebhookServing, timeoutMs = 10_000): Promise<void> {
  const [first] = urls;
  if (!first) throw new Error('no gateway to install webhook configurations through');
  for (const { kind, config } of installed(serving)) {
    const item = `${first}${collection(kind)}/${encodeURIComponent(config.metadata.name)}`;
    const existing = await call(item, tls, 'GET');
    const res =
      existing.status === 200
        ? await call(item, tls, 'PUT', { ...config, metadata: { ...config.metadata, resourceVersion: (existing.body as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion } })
        : await call(`${first}${collection(kind)}`, tls, 'POST', config);
    if (res.status !== 200 && res.status !== 201) throw new Error(`installing the ${kind} ${config.metadata.name}: ${res.status} ${JSON.stringify(res.body)}`);
  }
  const deadline = Date.now() + timeoutMs;
  for (const { kind, config } of installed(serving)) {
    for (const url of urls) {
      for (;;) {
        const res = await call(`${url}${collection(kind)}/${encodeURIComponent(config.metadata.name)}`, tls, 'GET');
        if (res.status === 200) break;
        if (Date.now() > deadline) throw new Error(`the ${kind} ${config.metadata.name} was not served by ${url} in time (${res.status} ${JSON.stringify(res.body)})`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
}

/** Deletes the configurations that were installed; one already gone is fine. */
export async function uninstallWebhooks(url: string, tls: AdminTls, serving: WebhookServing): Promise<void> {
  for (const { kind, config } of installed(serving)) {
    const res = await call(`${url}${collection(kind)}/${encodeURIComponent(config.metadata.name)}`, tls, 'DELETE');
    if (res.status !== 200 && res.status !== 202 && res.status !== 404) throw new Error(`deleting the ${kind} ${config.metadata.name}: ${res.status} ${JSON.stringify(res.body)}`);
  }
}
