import { X509Certificate } from 'node:crypto';
import type { StatusCause } from '@svc/apimachinery';
import { dnsSubdomainErrors, invalid, isBase64, required } from './field-errors';
import { asRecord, asString, type Fields } from './object-access';

/**
 * How a webhook is reached (`clientConfig`), as the original server checks
 * it for admission webhooks and conversion webhooks alike: exactly one of an
 * https `url` (with a host, and no user information, query or fragment) and a
 * `service` reference (name, namespace, a path of DNS-subdomain segments
 * starting with `/`, a port from 1 to 65535); `caBundle` base64.
 */

export interface WebhookClientConfigOptions {
  /** `caBundle`, when set, must hold PEM certificates (admission webhooks: one that does not can verify nothing). */
  pemCaBundle?: boolean;
}

/** scheme://authority/rest, split as Go's url.Parse reads an absolute URL. */
const ABSOLUTE_URL = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)(.*)$/s;

function urlErrors(url: string, path: string): StatusCause[] {
  const parts = ABSOLUTE_URL.exec(url);
  if (!parts) {
    // No `scheme://`: a relative reference or a bare host.
    if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(url) && !url.toLowerCase().startsWith('https:')) return [invalid(path, url, "'https' is the only allowed URL scheme")];
    return [invalid(path, url, 'host must be specified')];
  }
  const [, scheme = '', authority = '', rest = ''] = parts;
  const causes: StatusCause[] = [];
  if (scheme.toLowerCase() !== 'https') causes.push(invalid(path, url, "'https' is the only allowed URL scheme"));
  const at = authority.lastIndexOf('@');
  const host = at >= 0 ? authority.slice(at + 1) : authority;
  if (host === '') causes.push(invalid(path, url, 'host must be specified'));
  else {
    try {
      new URL(`https://${host}/`);
    } catch {
      causes.push(invalid(path, url, 'url must be a valid URL: invalid host'));
    }
  }
  if (at >= 0) causes.push(invalid(path, url, 'user information is not permitted in the URL'));
  if (rest.includes('#')) causes.push(invalid(path, url, 'fragments are not permitted in the URL'));
  if (rest.split('#')[0]?.includes('?')) causes.push(invalid(path, url, 'query parameters are not permitted in the URL'));
  return causes;
}

function servicePathErrors(servicePath: unknown, path: string): StatusCause[] {
  if (servicePath === undefined || servicePath === null) return [];
  if (typeof servicePath !== 'string' || !servicePath.startsWith('/')) return [invalid(path, servicePath, "must start with a '/'")];
  if (servicePath === '/') return [];
  const causes: StatusCause[] = [];
  const segments = servicePath.slice(1).replace(/\/$/, '').split('/');
  segments.forEach((segment, i) => {
    if (segment === '') causes.push(invalid(path, servicePath, `segment[${i}] may not be empty`));
    else for (const c of dnsSubdomainErrors(path, segment)) causes.push({ ...c, message: (c.message ?? '').replace(/^Invalid value: "[^"]*": /, `Invalid value: ${JSON.stringify(servicePath)}: segment[${i}]: `) });
  });
  return causes;
}

function pemErrors(caBundle: string, path: string): StatusCause[] {
  const text = Buffer.from(caBundle, 'base64').toString('utf8');
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) return [invalid(path, '<bytes>', 'must hold PEM-encoded certificates')];
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch (err) {
      return [invalid(path, '<bytes>', `a certificate does not parse: ${(err as Error).message}`)];
    }
  }
  return [];
}

export function webhookClientConfigErrors(config: Fields, path: string, options: WebhookClientConfigOptions = {}): StatusCause[] {
  const causes: StatusCause[] = [];
  const url = config['url'];
  const service = asRecord(config['service']);
  const hasUrl = typeof url === 'string' && url !== '';
  if (hasUrl === !!service) causes.push(required(path, 'exactly one of url or service is required'));
  if (hasUrl) causes.push(...urlErrors(url, `${path}.url`));
  if (service) {
    for (const field of ['name', 'namespace']) if (!asString(service[field])) causes.push(required(`${path}.service.${field}`));
    causes.push(...servicePathErrors(service['path'], `${path}.service.path`));
    const port = service['port'];
    if (port !== undefined && port !== null && (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535)) {
      causes.push(invalid(`${path}.service.port`, port, 'port is not valid: must be between 1 and 65535, inclusive'));
    }
  }
  const caBundle = config['caBundle'];
  if (caBundle !== undefined && caBundle !== null && caBundle !== '') {
    if (typeof caBundle !== 'string' || !isBase64(caBundle)) causes.push(invalid(`${path}.caBundle`, '<bytes>', 'must be base64-encoded'));
    else if (options.pemCaBundle) causes.push(...pemErrors(caBundle, `${path}.caBundle`));
  }
  return causes;
}
