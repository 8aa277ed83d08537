import { ApiError } from '@svc/apimachinery';
import { parseBoolParam } from './query-bool';

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
}

// Subresources of a namespace, addressed as /namespaces/<name>/<sub>.
const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

function splitPath(path: string): string[] {
  return path.split('/').filter((p) => p.length > 0);
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw ApiError.badRequest(`malformed path segment ${JSON.stringify(segment)}`);
  }
}

export function parseRequestInfo(method: string, path: string, query: URLSearchParams): RequestInfo {
  const info: RequestInfo = {
    isResourceRequest: false,
    path,
    verb: method.toLowerCase(),
    apiPrefix: '',
    apiGroup: '',
    apiVersion: '',
    namespace: '',
    resource: '',
    subresource: '',
    name: '',
    parts: [],
  };
  let parts = splitPath(path).map(decodeSegment);
  const prefix = parts[0];
  if (prefix !== 'api' && prefix !== 'apis') return info;
  info.apiPrefix = prefix;
  parts = parts.slice(1);
  if (prefix === 'apis') {
    if (parts.length < 3) return info; // /apis, /apis/<group>, /apis/<group>/<version>: discovery
    info.apiGroup = parts[0] as string;
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

function isTrue(v: string | null): boolean {
  return v !== null && parseBoolParam(v);
}
