import type { Request, Response } from 'express';
import type { UserInfo } from '@svc/apimachinery';
import { createLogger } from '@svc/service-kit';
import type { GatewayDeps } from '../backends';
import { initRequestState, userFrom, withRequestInfo } from '../context';
import { DEFAULT_LIMITS } from '../server';
import { withAuthentication } from './authentication';

/** What the authentication filter hands authn: the credential headers, the configured proxy headers, and nothing else. */
const quiet = createLogger('test', { write: () => undefined });
const info = { isResourceRequest: true, verb: 'list', path: '/api/v1/namespaces/a/configmaps', apiPrefix: 'api', apiGroup: '', apiVersion: 'v1', resource: 'configmaps', subresource: '', namespace: 'a', name: '', parts: [], query: new URLSearchParams(), segments: ['api', 'v1', 'namespaces', 'a', 'configmaps'] };

/** A request over a connection whose peer presented `certificate` (DER), if any; header values may repeat. */
function request(headers: Record<string, string[]>, certificate?: Buffer): Request {
  const socket = certificate
    ? { remoteAddress: '127.0.0.1', getPeerCertificate: () => ({ raw: certificate, fingerprint256: certificate.toString('hex') }) }
    : { remoteAddress: '127.0.0.1' };
  const req = { headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, v.join(', ')])), headersDistinct: headers, method: 'GET', socket } as unknown as Request;
  initRequestState(req, 'r1', quiet);
  withRequestInfo(req, info);
  return req;
}

interface Seen {
  headers: Record<string, string[]>;
  chain: number;
}

function deps(seen: Seen[], proxyHeaders: GatewayDeps['proxyHeaders'], ttlMs = 0): GatewayDeps {
  return {
    limits: { ...DEFAULT_LIMITS, authnCacheTtlMs: ttlMs },
    proxyHeaders,
    authn: {
      authenticate: async (input: { headers: Record<string, string[]>; clientCertificateChain: Buffer[] }) => {
        seen.push({ headers: input.headers, chain: input.clientCertificateChain.length });
        const username = input.headers['x-proxy-user']?.[0] ?? input.headers['x-remote-user']?.[0] ?? 'system:anonymous';
        const user: UserInfo = { username, uid: '', groups: [], extra: {} };
        return { authenticated: true, user, method: 'requestheader' };
      },
    },
  } as unknown as GatewayDeps;
}

describe('headers forwarded to authn', () => {
  const all = {
    authorization: ['Bearer t'],
    'impersonate-user': ['bob'],
    'x-remote-user': ['carol'],
    'x-remote-group': ['dev', 'ops'],
    'x-proxy-user': ['dave'],
    'x-proxy-groups': ['g1'],
    'x-proxy-extra-scopes': ['read', 'write'],
    'x-proxy-other': ['no'],
    cookie: ['session=secret'],
    'content-type': ['application/json'],
  };

  test('by default: authorization, impersonate-* and x-remote-*, repeated values kept apart', async () => {
    const seen: Seen[] = [];
    await withAuthentication(async () => undefined, deps(seen, { names: [], prefixes: [] }))(request(all), {} as Response);
    expect(seen[0]?.headers).toEqual({ authorization: ['Bearer t'], 'impersonate-user': ['bob'], 'x-remote-user': ['carol'], 'x-remote-group': ['dev', 'ops'] });
  });

  test('with the proxy headers configured, those too (names and name prefixes), and still nothing else', async () => {
    const seen: Seen[] = [];
    await withAuthentication(async () => undefined, deps(seen, { names: ['x-proxy-user', 'x-proxy-groups'], prefixes: ['x-proxy-extra-'] }))(request(all), {} as Response);
    expect(Object.keys(seen[0]?.headers ?? {}).sort()).toEqual(['authorization', 'impersonate-user', 'x-proxy-extra-scopes', 'x-proxy-groups', 'x-proxy-user', 'x-remote-group', 'x-remote-user']);
    expect(seen[0]?.headers['x-proxy-extra-scopes']).toEqual(['read', 'write']);
  });

  test('the authentication cache tells proxy requests apart by their headers, not only by the proxy certificate', async () => {
    const seen: Seen[] = [];
    const users: string[] = [];
    const filter = withAuthentication(async (req) => void users.push(userFrom(req).username), deps(seen, { names: ['x-proxy-user'], prefixes: [] }, 60_000));
    const proxyCertificate = Buffer.from('proxy certificate');
    for (const name of ['erin', 'frank', 'erin', 'frank']) await filter(request({ 'x-proxy-user': [name] }, proxyCertificate), {} as Response);
    expect(users).toEqual(['erin', 'frank', 'erin', 'frank']);
    expect(seen.map((s) => [s.headers['x-proxy-user']?.[0], s.chain])).toEqual([
      ['erin', 1],
      ['frank', 1],
    ]);
    // Another group list is another identity too.
    await filter(request({ 'x-proxy-user': ['erin'], 'x-remote-group': ['admins'] }, proxyCertificate), {} as Response);
    expect(seen).toHaveLength(3);
  });
});
