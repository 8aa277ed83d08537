import { createHmac } from 'node:crypto';
import { detachedSignature } from './bootstrap-controllers';
import { clusterInfoKubeconfig, enabledControllers } from './server';

describe('bootstrap signer pieces', () => {
  test('a detached JWS: the header names HS256 and the token id, the payload part is empty, the MAC is keyed with the whole token', () => {
    const jws = detachedSignature('content', 'abcdef', '0123456789abcdef');
    const [header, payload, signature] = jws.split('.');
    expect(JSON.parse(Buffer.from(header as string, 'base64url').toString())).toEqual({ alg: 'HS256', kid: 'abcdef' });
    expect(payload).toBe('');
    const mac = createHmac('sha256', 'abcdef.0123456789abcdef').update(`${header}.${Buffer.from('content').toString('base64url')}`).digest('base64url');
    expect(signature).toBe(mac);
    expect(detachedSignature('content!', 'abcdef', '0123456789abcdef')).not.toBe(jws);
  });

  test('the published kubeconfig names the server and its CA, and no credentials', () => {
    const text = clusterInfoKubeconfig({ server: 'https://a:6443', ca: Buffer.from('CA') }, 'https://public:443');
    expect(text).toContain('server: https://public:443');
    expect(text).toContain(`certificate-authority-data: ${Buffer.from('CA').toString('base64')}`);
    expect(text).toContain('users: null');
  });

  test('--controllers: * is the default set, names add optional ones, -name removes, unknown names are refused', () => {
    expect([...enabledControllers(['*'])].sort()).toEqual(['clusterrole-aggregation', 'customresourcedefinition', 'disruption', 'flowcontrol-bootstrap', 'garbagecollector', 'namespace', 'rbac-bootstrap', 'serviceaccount', 'validatingadmissionpolicy-status']);
    expect([...enabledControllers(['*', 'bootstrapsigner', 'tokencleaner'])].sort()).toEqual(['bootstrapsigner', 'clusterrole-aggregation', 'customresourcedefinition', 'disruption', 'flowcontrol-bootstrap', 'garbagecollector', 'namespace', 'rbac-bootstrap', 'serviceaccount', 'tokencleaner', 'validatingadmissionpolicy-status']);
    expect([...enabledControllers(['*', '-serviceaccount', '-rbac-bootstrap', '-clusterrole-aggregation', '-customresourcedefinition', '-validatingadmissionpolicy-status', '-disruption', '-garbagecollector', '-flowcontrol-bootstrap'])]).toEqual(['namespace']);
    expect([...enabledControllers(['tokencleaner'])]).toEqual(['tokencleaner']);
    expect(() => enabledControllers(['*', 'csrsigner'])).toThrow('--controllers: unknown controller "csrsigner"');
  });
});
