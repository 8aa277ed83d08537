import { createHmac, generateKeyPairSync } from 'node:crypto';
import { SignJWT } from 'jose';
import type { ApiObject } from '@svc/apimachinery';
import { parseSigningKey, parseVerificationKeys, serviceAccountTokens, type ObjectLookup, type ServiceAccountTokens } from './service-account';

const ISSUER = 'https://svc.test';

function rsaPem(): { privatePem: string; publicPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
}

function b64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

describe('service-account tokens', () => {
  const oldKey = rsaPem();
  const newKey = rsaPem();
  const objects = new Map<string, ApiObject>();
  const put = (resource: string, name: string, uid: string, extra: Partial<ApiObject> = {}) => objects.set(`${resource}/ns/${name}`, { metadata: { name, namespace: 'ns', uid }, ...extra });
  const lookup: ObjectLookup = async (resource, namespace, name) => objects.get(`${resource}/${namespace}/${name}`);
  let now = new Date('2026-01-01T00:00:00Z');

  function tokens(signWith = newKey, verifyWith = [oldKey, newKey]): ServiceAccountTokens {
    return serviceAccountTokens({
      issuers: [ISSUER, 'https://legacy.test'],
      apiAudiences: ['api'],
      signingKey: parseSigningKey(signWith.privatePem, 'signing.key'),
      verificationKeys: verifyWith.flatMap((k, i) => parseVerificationKeys(k.publicPem, `key-${i}.pub`)),
      maxExpirationSeconds: 24 * 3600,
      lookup,
      now: () => now,
    });
  }

  beforeEach(() => {
    objects.clear();
    put('serviceaccounts', 'robot', 'sa-1');
    put('pods', 'web', 'pod-1', { spec: { serviceAccountName: 'robot' } });
    now = new Date('2026-01-01T00:00:00Z');
  });

  test('an issued token authenticates as the account, with its groups and the pod binding in extra', async () => {
    const sa = tokens();
    const { token, expires } = await sa.issue({ namespace: 'ns', name: 'robot', uid: 'sa-1', audiences: [], expirationSeconds: 3600, bound: { kind: 'Pod', name: 'web', uid: 'pod-1' } });
    expect(expires.toISOString()).toBe('2026-01-01T01:00:00.000Z');
    const out = await sa.authenticateToken(token, ['api']);
    expect(out).toMatchObject({
      status: 'authenticated',
      audiences: ['api'],
      user: {
        username: 'system:serviceaccount:ns:robot',
        uid: 'sa-1',
        groups: ['system:serviceaccounts', 'system:serviceaccounts:ns'],
        extra: { 'authentication.svc.io/pod-name': ['web'], 'authentication.svc.io/pod-uid': ['pod-1'] },
      },
    });
    if (out.status !== 'authenticated') throw new Error('not authenticated');
    expect(out.user.extra['authentication.svc.io/credential-id']?.[0]).toMatch(/^JTI=[0-9a-f-]{36}$/);
  });

  test('the lifetime is capped by --service-account-max-token-expiration', async () => {
    const { expires } = await tokens().issue({ namespace: 'ns', name: 'robot', uid: 'sa-1', audiences: [], expirationSeconds: 7 * 24 * 3600 });
    expect(expires.toISOString()).toBe('2026-01-02T00:00:00.000Z');
  });

  test('a token signed by a rotated-out key verifies while its key is listed, and not after', async () => {
    const { token } = await tokens(oldKey).issue({ namespace: 'ns', name: 'robot', uid: 'sa-1', audiences: [], expirationSeconds: 3600 });
    expect((await tokens(newKey, [oldKey, newKey]).authenticateToken(token, ['api'])).status).toBe('authenticated');
    expect(await tokens(newKey, [newKey]).authenticateToken(token, ['api'])).toEqual({ status: 'rejected', error: expect.stringContaining('unknown key') });
  });

  test('audiences: a token for other audiences is refused, one of several requested is enough', async () => {
    const sa = tokens();
    const { token } = await sa.issue({ namespace: 'ns', name: 'robot', uid: 'sa-1', audiences: ['vault', 'api'], expirationSeconds: 3600 });
    expect(await sa.authenticateToken(token, ['other'])).toEqual({ status: 'rejected', error: expect.stringContaining('audiences') });
    expect(await sa.authenticateToken(token, ['other', 'vault'])).toMatchObject({ status: 'authenticated', audiences: ['vault'] });
  });

  test('expired tokens are refused', async () => {
    const sa = tokens();
    const { token } = await sa.issue({ namespace: 'ns', name: 'robot', uid: 'sa-1', audiences: [], expirationSeconds: 600 });
    expect((await sa.authenticateToken(token, ['api'])).status).toBe('authenticated');
    now = new Date(now.getTime() + 601_000);
    expect(await sa.authenticateToken(token, ['api'])).toEqual({ status: 'rejected', error: expect.stringContaining('"exp"') });
  });

  test('a deleted or replaced account, or a deleted bound pod, revokes the token', async () => {
    const sa = tokens();
    const { token } = await sa.issue({ namespace: 'ns', name: 'robot', uid: 'sa-1', audiences: [], expirationSeconds: 3600, bound: { kind: 'Pod', name: 'web', uid: 'pod-1' } });
    objects.delete('pods/ns/web');
    expect(await sa.authenticateToken(token, ['api'])).toEqual({ status: 'rejected', error: 'pod ns/web the token is bound to has been deleted' });
    put('pods', 'web', 'pod-2');
    expect((await sa.authenticateToken(token, ['api'])).status).toBe('rejected');
    put('pods', 'web', 'pod-1', { metadata: { name: 'web', namespace: 'ns', uid: 'pod-1', deletionTimestamp: '2026-01-01T00:00:00Z' } });
    expect((await sa.authenticateToken(token, ['api'])).status).toBe('rejected');
    put('pods', 'web', 'pod-1');
    expect((await sa.authenticateToken(token, ['api'])).status).toBe('authenticated');
    put('serviceaccounts', 'robot', 'sa-2');
    expect(await sa.authenticateToken(token, ['api'])).toEqual({ status: 'rejected', error: 'service account ns/robot has been deleted' });
    objects.delete('serviceaccounts/ns/robot');
    expect((await sa.authenticateToken(token, ['api'])).status).toBe('rejected');
  });

  test('forged tokens are refused: alg none, HS256 keyed with the public key, a changed payload, a foreign key', async () => {
    const sa = tokens();
    const { token } = await sa.issue({ namespace: 'ns', name: 'robot', uid: 'sa-1', audiences: [], expirationSeconds: 3600 });
    const [, payload] = token.split('.') as [string, string, string];
    const none = `${b64url({ alg: 'none', typ: 'JWT' })}.${payload}.`;
    expect((await sa.authenticateToken(none, ['api'])).status).toBe('rejected');
    const hsHeader = b64url({ alg: 'HS256', typ: 'JWT' });
    const hs = `${hsHeader}.${payload}.${createHmac('sha256', newKey.publicPem).update(`${hsHeader}.${payload}`).digest('base64url')}`;
    expect((await sa.authenticateToken(hs, ['api'])).status).toBe('rejected');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    const elevated = b64url({ ...claims, sub: 'system:serviceaccount:kube:admin' });
    const [header, , signature] = token.split('.') as [string, string, string];
    expect((await sa.authenticateToken(`${header}.${elevated}.${signature}`, ['api'])).status).toBe('rejected');
    const stranger = rsaPem();
    const foreign = await tokens(stranger, [stranger]).issue({ namespace: 'ns', name: 'robot', uid: 'sa-1', audiences: [], expirationSeconds: 3600 });
    expect((await sa.authenticateToken(foreign.token, ['api'])).status).toBe('rejected');
  });

  test('a token signed with the right key but without the account claim is refused', async () => {
    const key = parseSigningKey(newKey.privatePem, 'k');
    const bare = await new SignJWT({}).setProtectedHeader({ alg: 'RS256', kid: key.kid }).setIssuer(ISSUER).setAudience('api').setSubject('system:serviceaccount:ns:robot').setExpirationTime('1h').setIssuedAt(Math.floor(now.getTime() / 1000)).sign(key.key);
    expect(await tokens().authenticateToken(bare, ['api'])).toEqual({ status: 'rejected', error: 'service account token claims are missing or inconsistent' });
  });

  test('tokens of other issuers, opaque tokens and oversized ones are left to the other methods', async () => {
    const sa = tokens();
    const stranger = rsaPem();
    const other = serviceAccountTokens({ issuers: ['https://elsewhere'], apiAudiences: ['api'], signingKey: parseSigningKey(stranger.privatePem, 'k'), verificationKeys: [], maxExpirationSeconds: 0, now: () => now });
    const { token } = await other.issue({ namespace: 'ns', name: 'robot', uid: 'sa-1', audiences: [], expirationSeconds: 3600 });
    expect(await sa.authenticateToken(token, ['api'])).toEqual({ status: 'not-mine' });
    expect(await sa.authenticateToken('opaque-static-token', ['api'])).toEqual({ status: 'not-mine' });
    expect(await sa.authenticateToken(`a.${'b'.repeat(20000)}.c`, ['api'])).toEqual({ status: 'not-mine' });
    expect(await sa.authenticateToken('not.base64!.json', ['api'])).toEqual({ status: 'not-mine' });
  });

  test('key files: several keys per file, private keys give their public half, garbage is refused naming the file', () => {
    const both = `${oldKey.publicPem}\n${newKey.privatePem}`;
    const keys = parseVerificationKeys(both, 'keys.pem');
    expect(keys.map((k) => k.alg)).toEqual(['RS256', 'RS256']);
    expect(keys[1]?.kid).toBe(parseSigningKey(newKey.privatePem, 'x').kid);
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    expect(parseSigningKey(ec, 'ec.key').alg).toBe('ES256');
    expect(() => parseVerificationKeys('nothing here', 'empty.pem')).toThrow('empty.pem: no public or private key found');
    expect(() => parseSigningKey(oldKey.publicPem, 'pub.pem')).toThrow('pub.pem: expected exactly one private key, found 0');
    expect(() => parseVerificationKeys('-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n', 'bad.pem')).toThrow(/^bad\.pem: the PUBLIC KEY block cannot be read/);
  });
});
