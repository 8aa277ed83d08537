import { ApiError, canonicalGroup } from '@svc/apimachinery';
import { parseBoolParam } from './query-bool';
import { parseTimeoutParam } from './request-timeout';

/**
 * What a request is about, parsed from its path and method by the shapes of
 * SPEC section 4. Resource requests name a group, version and resource;
 * everything else is a non-resource request whose verb is the lower-case
 * HTTP method.
 */
export interface RequestInfo {
  isResourceRequest: boolean;
  path: string;
  verb: string;
  apiPrefix: string;
  apiGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
  parts: string[];
  /**
   * The path as percent-decoded segments, parsed once by `parseRequestPath`.
   * Every later decision (always-allowed paths, authorization, routing) is
   * made on these; `path` is the same segments joined with `/`.
   */
  segments: string[];
  /** The query, parsed once from the request target; handlers read their parameters here. */
  query: URLSearchParams;
  /**
   * The group as the path named it, when that was the upstream name of one
   * of our groups (`authentication.k8s.io` for `authentication.svc.io`).
   * `apiGroup` is always our name; answers that echo a kind (reviews) use
   * the client's.
   */
  requestedGroup?: string;
  /**
   * The `timeout` query parameter in milliseconds, parsed once here for a
   * request that is not long-running (a watch or a connection ignores it);
   * undefined when absent. The request's deadline is derived from it.
   */
  timeoutMs?: number;
}

// Subresources of a namespace, addressed as /namespaces/<name>/<sub>.
const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

/** The request target split into its raw path and query, both still encoded. */
export interface RequestTarget {
  rawPath: string;
  query: URLSearchParams;
}

/**
 * Splits the request target as the client sent it. Only the origin form
 * (`/path?query`) is served; the absolute form (`https://host/path`) is what
 * proxies receive, and honouring it would mean trusting a host named by the
 * client, so it is refused like any other malformed target.
 */
export function splitRequestTarget(target: string): RequestTarget {
  if (!target.startsWith('/')) throw ApiError.badRequest(`the request target must be an absolute path, got ${JSON.stringify(target.slice(0, 256))}`);
  const q = target.indexOf('?');
  return { rawPath: q < 0 ? target : target.slice(0, q), query: new URLSearchParams(q < 0 ? '' : target.slice(q + 1)) };
}

/**
 * Decodes and validates the raw (still percent-encoded) path once, into the
 * segments every later step decides on. Nothing downstream decodes or
 * normalises again, so a path can never mean one thing to the filters and
 * another to the router. Refused:
 *
 * - `.` and `..` segments, literal or encoded (`%2e`, `%2E`, `.%2e`, ...):
 *   400 BadRequest. They would name a different path than the one
 *   authorised; the original server likewise refuses `.`, `..` and names
 *   holding `/` or `%` as path segments with BadRequest ("Name parameter
 *   invalid").
 * - An encoded `/` (`%2f`), an encoded NUL or other control character, a backslash (literal or encoded:
 *   some proxies and clients treat it as a separator), a segment that still
 *   holds `%` after decoding (double encoding, which a second decoder would
 *   turn into one of the above), and invalid percent-encoding or UTF-8:
 *   400 BadRequest, as the original's HTTP server answers a request URI it
 *   cannot parse.
 * - An empty segment in the middle (`//`, or a leading `//`): 404 NotFound;
 *   no route of the original has an empty segment, so such a path finds
 *   nothing there either.
 *
 * One trailing slash is trimmed (`/api/v1/` is `/api/v1`), as the original's
 * request-info parser trims it.
 */
export function parseRequestPath(rawPath: string): string[] {
  if (!rawPath.startsWith('/')) throw ApiError.badRequest(`the request path must start with "/"`);
  if (rawPath === '/') return [];
  const body = rawPath.endsWith('/') ? rawPath.slice(1, -1) : rawPath.slice(1);
  return body.split('/').map((raw) => {
    if (raw === '') throw new ApiError(404, 'NotFound', 'the server could not find the requested resource: the path has an empty segment', {});
    const segment = decodeSegment(raw);
    if (segment === '.' || segment === '..') throw ApiError.badRequest(`the path segment ${JSON.stringify(raw)} is a relative path element, which is not allowed`);
    if (/[/\\%\u0000-\u001f\u007f]/.test(segment)) {
      throw ApiError.badRequest(`the path segment ${JSON.stringify(raw)} may not contain an encoded "/", "%" or control character, or a backslash`);
    }
    return segment;
  });
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw ApiError.badRequest(`malformed path segment ${JSON.stringify(segment)}`);
  }
}

/** The canonical path of parsed segments: what authorization and messages name. */
export function pathOf(segments: readonly string[]): string {
  return `/${segments.join('/')}`;
}

export function parseRequestInfo(method: string, segments: string[], query: URLSearchParams): RequestInfo {
  const info = requestInfoOf(method, segments, query);
  if (!isLongRunning(info)) {
    const timeoutMs = parseTimeoutParam(query);
    if (timeoutMs !== undefined) info.timeoutMs = timeoutMs;
  }
  return info;
}

function requestInfoOf(method: string, segments: string[], query: URLSearchParams): RequestInfo {
  const info: RequestInfo = {
    isResourceRequest: false,
    path: pathOf(segments),
    verb: method.toLowerCase(),
    apiPrefix: '',
    apiGroup: '',
    apiVersion: '',
    namespace: '',
    resource: '',
    subresource: '',
    name: '',
    parts: [],
    segments,
    query,
  };
  let parts = segments;
  const prefix = parts[0];
  if (prefix !== 'api' && prefix !== 'apis') return info;
  info.apiPrefix = prefix;
  parts = parts.slice(1);
  if (prefix === 'apis') {
    if (parts.length < 3) return info; // /apis, /apis/<group>, /apis/<group>/<version>: discovery
    const named = parts[0] as string;
    info.apiGroup = canonicalGroup(named);
    if (info.apiGroup !== named) info.requestedGroup = named;
    parts = parts.slice(1);
  } else if (parts.length < 2) {
    return info; // /api, /api/v1: discovery
  }
  info.apiVersion = parts[0] as string;
  parts = parts.slice(1);
  info.isResourceRequest = true;

  switch (method) {
    case 'POST':
      info.verb = 'create';
      break;
    case 'GET':
    case 'HEAD':
      info.verb = 'get';
      break;
    case 'PUT':
      info.verb = 'update';
      break;
    case 'PATCH':
      info.verb = 'patch';
      break;
    case 'DELETE':
      info.verb = 'delete';
      break;
    default:
      info.verb = '';
  }
  // The legacy /watch/ prefix.
  if (parts[0] === 'watch' && info.verb === 'get') {
    info.verb = 'watch';
    parts = parts.slice(1);
  }
  if (parts[0] === 'namespaces') {
    if (parts.length > 1) {
      info.namespace = parts[1] as string;
      if (parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2] as string)) parts = parts.slice(2);
    }
  }
  info.parts = parts;
  if (parts.length >= 3) info.subresource = parts[2] as string;
  if (parts.length >= 2) info.name = parts[1] as string;
  if (parts.length >= 1) info.resource = parts[0] as string;
  if (parts.length > 3) info.isResourceRequest = false;

  // A namespace is addressed by name, not as a namespace of itself.
  if (info.resource === 'namespaces' && info.namespace && parts.length <= 3 && parts[0] === 'namespaces') {
    info.namespace = '';
  }

  const watchParam = query.get('watch');
  if (info.name === '' && info.verb === 'get') info.verb = isTrue(watchParam) ? 'watch' : 'list';
  else if (info.verb === 'get' && isTrue(watchParam)) info.verb = 'watch';
  if (info.name === '' && info.verb === 'delete') info.verb = 'deletecollection';

  // A list or watch narrowed to one name is authorized as that name.
  if ((info.verb === 'list' || info.verb === 'watch') && info.name === '') {
    const selector = query.get('fieldSelector') ?? '';
    const m = /(?:^|,)metadata\.name==?([^,]+)(?:,|$)/.exec(selector);
    if (m) info.name = m[1] as string;
  }
  return info;
}

/** Subresources that hold a connection to something else open (the original's CONNECT verb). */
export const CONNECT_SUBRESOURCES = new Set(['exec', 'attach', 'portforward', 'proxy']);

/**
 * Whether a request holds its connection open for long: it is not an
 * in-flight request, and it has no request deadline.
 */
export function isLongRunning(info: Pick<RequestInfo, 'isResourceRequest' | 'verb' | 'subresource' | 'query'>): boolean {
  if (!info.isResourceRequest) return false;
  if (info.verb === 'watch' || CONNECT_SUBRESOURCES.has(info.subresource)) return true;
  return info.subresource === 'log' && info.query.get('follow') === 'true';
}

function isTrue(v: string | null): boolean {
  return v !== null && parseBoolParam(v);
}
