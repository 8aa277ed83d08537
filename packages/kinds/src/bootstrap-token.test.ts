import type { ApiObject } from '@svc/apimachinery';
import { bootstrapSecretMatches, bootstrapTokenExpired, parseBootstrapToken, readBootstrapTokenSecret } from './bootstrap-token';

const secret = (data: Record<string, string>, name = 'bootstrap-token-abcdef', type = 'bootstrap.svc.io/token'): ApiObject => ({
  metadata: { name, namespace: 'svc-system' },
  type,
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
});

describe('bootstrap tokens', () => {
  test('the token format: six and sixteen lowercase alphanumerics', () => {
    expect(parseBootstrapToken('abcdef.0123456789abcdef')).toEqual({ id: 'abcdef', secret: '0123456789abcdef' });
    for (const bad of ['ABCDEF.0123456789abcdef', 'abcde.0123456789abcdef', 'abcdef.0123456789abcde', 'abcdef0123456789abcdef', 'abcdef.0123456789abcdef\n', '']) expect(parseBootstrapToken(bad)).toBeUndefined();
  });

  test('a Secret is read with its usages, expiration and extra groups', () => {
    const read = readBootstrapTokenSecret(secret({ 'token-id': 'abcdef', 'token-secret': '0123456789abcdef', 'usage-bootstrap-authentication': 'true', expiration: '2030-01-01T00:00:00Z', 'auth-extra-groups': 'system:bootstrappers:a, system:bootstrappers:b' }));
    expect(read).toEqual({ token: { id: 'abcdef', secret: '0123456789abcdef', description: '', expiration: new Date('2030-01-01T00:00:00Z'), usageAuthentication: true, usageSigning: false, extraGroups: ['system:bootstrappers:a', 'system:bootstrappers:b'] } });
    if (!('token' in read)) throw new Error('unreadable');
    expect(bootstrapTokenExpired(read.token, new Date('2029-12-31T23:59:59Z'))).toBe(false);
    expect(bootstrapTokenExpired(read.token, new Date('2030-01-01T00:00:00Z'))).toBe(true);
    expect(bootstrapSecretMatches(read.token, '0123456789abcdef')).toBe(true);
    expect(bootstrapSecretMatches(read.token, '0123456789abcdeF')).toBe(false);
    expect(bootstrapSecretMatches(read.token, 'short')).toBe(false);
  });

  test('unusable Secrets say why, without their secret', () => {
    const good = { 'token-id': 'abcdef', 'token-secret': '0123456789abcdef' };
    const problems = [
      readBootstrapTokenSecret(secret(good, 'bootstrap-token-abcdef', 'Opaque')),
      readBootstrapTokenSecret(secret(good, 'bootstrap-token-zzzzzz')),
      readBootstrapTokenSecret(secret({ 'token-id': 'abcdef' })),
      readBootstrapTokenSecret(secret({ ...good, expiration: 'tomorrow' })),
      readBootstrapTokenSecret(secret({ ...good, 'auth-extra-groups': 'system:masters' })),
    ];
    for (const p of problems) {
      expect(p).toHaveProperty('problem');
      expect(JSON.stringify(p)).not.toContain('0123456789abcdef');
    }
  });
});
