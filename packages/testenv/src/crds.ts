import * as fs from 'node:fs';
import * as https from 'node:https';
import * as path from 'node:path';
import * as yaml from 'js-yaml';

/**
 * Installs CustomResourceDefinitions before an environment is handed out,
 * as envtest does: every YAML or JSON document of the given files (or of
 * the `.yaml`, `.yml` and `.json` files of the given directories) is
 * created, then the harness waits until each is Established and every
 * gateway serves its versions.
 */

const CRDS = '/apis/apiextensions.svc.io/v1/customresourcedefinitions';

export interface AdminTls {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

/**
 * The YAML or JSON documents of the files and of the `.yaml`, `.yml` and
 * `.json` files of the directories, in order (directories sorted by file
 * name); each must be an object. A path that does not exist is an error
 * unless `ignoreMissing`.
 */
export function readDocuments(paths: string[], ignoreMissing = false): Array<{ file: string; doc: Record<string, unknown> }> {
  const files: string[] = [];
  for (const p of paths) {
    if (ignoreMissing && !fs.existsSync(p)) continue;
    if (fs.statSync(p).isDirectory()) {
      for (const name of fs.readdirSync(p).sort()) if (/\.(ya?ml|json)$/.test(name)) files.push(path.join(p, name));
    } else {
      files.push(p);
    }
  }
  const docs: Array<{ file: string; doc: Record<string, unknown> }> = [];
  for (const file of files) {
    for (const doc of yaml.loadAll(fs.readFileSync(file, 'utf8'), undefined, { schema: yaml.JSON_SCHEMA })) {
      if (doc === null || doc === undefined) continue;
      if (typeof doc !== 'object' || Array.isArray(doc)) throw new Error(`${file}: a document is not an object`);
      docs.push({ file, doc: doc as Record<string, unknown> });
    }
  }
  return docs;
}

/** The definitions in the files and directories, in order (directories sorted by file name). */
export function readCrdDocuments(paths: string[]): Array<Record<string, unknown>> {
  return readDocuments(paths).map(({ file, doc }) => checkedCrd(doc, file));
}

/** A definition given as a file, a directory or an object (a CustomResourceDefinition as JSON). */
export type CrdSource = string | Record<string, unknown>;

/** The definitions of files, directories and objects, in the order given. */
export function crdDocumentsOf(sources: CrdSource[]): Array<Record<string, unknown>> {
  return sources.flatMap((source, i) => (typeof source === 'string' ? readCrdDocuments([source]) : [checkedCrd(source, `crds[${i}]`)]));
}

function checkedCrd(doc: Record<string, unknown>, where: string): Record<string, unknown> {
  if (doc['kind'] !== 'CustomResourceDefinition') throw new Error(`${where}: expected kind CustomResourceDefinition, found ${String(doc['kind'])}`);
  const name = (doc['metadata'] as { name?: unknown } | undefined)?.name;
  if (typeof name !== 'string' || !name) throw new Error(`${where}: metadata.name is required`);
  return doc;
}

/** One JSON request with the admin's credentials; the body parsed when it is JSON. */
export function call(url: string, tls: AdminTls, method: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, { method, ca: tls.ca, cert: tls.cert, key: tls.key, headers: { 'content-type': 'application/json', accept: 'application/json' }, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = text;
        try {
          parsed = text ? (JSON.parse(text) as unknown) : undefined;
        } catch {
          // not JSON; kept as text for the error message
        }
        resolve({ status: res.statusCode ?? 0, body: parsed });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${url}: no answer in time`)));
    req.on('error', reject);
    if (body !== undefined) req.write(JSON.stringify(body));
    req.end();
  });
}

interface CrdShape {
  metadata?: { name?: string };
  spec?: { group?: string; names?: { plural?: string }; versions?: Array<{ name?: string; served?: boolean }> };
  status?: { conditions?: Array<{ type?: string; status?: string; reason?: string; message?: string }> };
}

/**
 * Creates the definitions through `urls[0]` (an existing one is left as it
 * is) and resolves once each is Established and served by every URL;
 * rejects with what it last saw after `timeoutMs`. Resolves to the names
 * of the definitions it created (not those that were there).
 */
export async function installCrds(urls: string[], tls: AdminTls, docs: Array<Record<string, unknown>>, timeoutMs = 30_000): Promise<string[]> {
  const [first] = urls;
  if (!first) throw new Error('no gateway to install definitions through');
  const created: string[] = [];
  for (const doc of docs) {
    const name = String((doc as CrdShape).metadata?.name);
    const res = await call(`${first}${CRDS}`, tls, 'POST', doc);
    if (res.status !== 201 && res.status !== 409) throw new Error(`creating the definition ${name}: ${res.status} ${JSON.stringify(res.body)}`);
    if (res.status === 201) created.push(name);
  }
  const deadline = Date.now() + timeoutMs;
  for (const doc of docs as CrdShape[]) {
    const name = doc.metadata?.name ?? '';
    let last = '';
    for (;;) {
      const res = await call(`${first}${CRDS}/${encodeURIComponent(name)}`, tls, 'GET');
      const crd = res.body as CrdShape;
      const established = crd.status?.conditions?.find((c) => c.type === 'Established')?.status === 'True';
      if (established && (await servedEverywhere(urls, tls, crd))) break;
      const accepted = crd.status?.conditions?.find((c) => c.type === 'NamesAccepted');
      last = accepted?.status === 'False' ? `names not accepted: ${accepted.reason ?? ''} ${accepted.message ?? ''}` : `status ${JSON.stringify(crd.status ?? {})}`;
      if (Date.now() > deadline) throw new Error(`the definition ${name} did not become Established and served in time (${last})`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return created;
}

/**
 * Deletes the definitions named (with their custom resources) through
 * `url` and resolves once each is gone; one already gone is fine. Rejects
 * with what it last saw after `timeoutMs`.
 */
export async function uninstallCrds(url: string, tls: AdminTls, names: string[], timeoutMs = 30_000): Promise<void> {
  for (const name of names) {
    const res = await call(`${url}${CRDS}/${encodeURIComponent(name)}`, tls, 'DELETE');
    if (res.status !== 200 && res.status !== 202 && res.status !== 404) throw new Error(`deleting the definition ${name}: ${res.status} ${JSON.stringify(res.body)}`);
  }
  const deadline = Date.now() + timeoutMs;
  for (const name of names) {
    for (;;) {
      const res = await call(`${url}${CRDS}/${encodeURIComponent(name)}`, tls, 'GET');
      if (res.status === 404) break;
      if (Date.now() > deadline) throw new Error(`the definition ${name} was not removed in time (${res.status} ${JSON.stringify((res.body as CrdShape | undefined)?.status ?? res.body)})`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

async function servedEverywhere(urls: string[], tls: AdminTls, crd: CrdShape): Promise<boolean> {
  const group = crd.spec?.group ?? '';
  const plural = crd.spec?.names?.plural ?? '';
  for (const version of (crd.spec?.versions ?? []).filter((v) => v.served)) {
    for (const url of urls) {
      const res = await call(`${url}/apis/${group}/${version.name ?? ''}`, tls, 'GET');
      const resources = (res.body as { resources?: Array<{ name?: string }> } | undefined)?.resources ?? [];
      if (res.status !== 200 || !resources.some((r) => r.name === plural)) return false;
    }
  }
  return true;
}
