import { AdmissionConfigurations } from '../configurations';
import { compileWebhook, resolveEndpoint, WebhookSource } from './compile';

/** Webhooks as compiled from their configurations: addresses, defaults, and one compilation per version. */
describe('compiled webhooks', () => {
  test('the address: url as given, a service reference as https://<name>.<namespace>.svc:<port><path>; anything else is an error', () => {
    expect(resolveEndpoint({ url: 'https://hooks.example.com/validate', caBundle: Buffer.from('PEM').toString('base64') })).toEqual({ endpoint: { url: 'https://hooks.example.com/validate', caBundle: Buffer.from('PEM') } });
    expect(resolveEndpoint({ service: { namespace: 'system', name: 'webhook-service', path: '/mutate' } }).endpoint?.url).toBe('https://webhook-service.system.svc/mutate');
    expect(resolveEndpoint({ service: { namespace: 'system', name: 'webhook-service', port: 8443 } }).endpoint?.url).toBe('https://webhook-service.system.svc:8443/');
    expect(resolveEndpoint({ url: 'http://plain.example.com/' }).error).toBe('clientConfig: "http://plain.example.com/" is not an https URL');
    expect(resolveEndpoint({ url: 'not a url' }).error).toBe('clientConfig: "not a url" is not a URL');
    expect(resolveEndpoint({}).error).toBe('the webhook has neither clientConfig.url nor clientConfig.service');
  });

  test('the v1 defaults fill what is absent', () => {
    const hook = compileWebhook('cfg', { name: 'h.test', clientConfig: { url: 'https://h.example.com/' }, rules: [] }, 0, true);
    expect(hook).toMatchObject({
      uid: 'cfg/h.test/0',
      failurePolicy: 'Fail',
      timeoutMs: 10_000,
      reviewVersion: undefined,
      reinvoke: false,
      match: { matchPolicy: 'Equivalent', namespaceSelector: null, objectSelector: null, resourceRules: [] },
    });
    expect(compileWebhook('cfg', { name: 'h.test', clientConfig: { url: 'https://h.example.com/' }, reinvocationPolicy: 'IfNeeded' }, 0, false).reinvoke).toBe(false);
  });

  test('a match condition that does not compile is kept with its error; the others are compiled', () => {
    const hook = compileWebhook('cfg', { name: 'h.test', clientConfig: { url: 'https://h.example.com/' }, matchConditions: [{ name: 'ok', expression: 'true' }, { name: 'bad', expression: 'nosuchvar == 1' }] }, 2, false);
    expect(hook.matchConditions[0]?.program).toBeDefined();
    expect(hook.matchConditions[1]?.error).toMatch(/^compilation error: webhooks\[2\]\.matchConditions\[1\]\.expression: /);
  });

  test('each configuration is compiled once per version; a removed one is forgotten', () => {
    const configurations = new AdmissionConfigurations();
    const source = new WebhookSource(configurations, 'ValidatingWebhookConfiguration');
    const put = (name: string, rv: string) => configurations.apply('ValidatingWebhookConfiguration', { metadata: { name, uid: `uid-${name}`, resourceVersion: rv }, webhooks: [{ name: `${name}.test`, clientConfig: { url: 'https://h.example.com/' } }] });
    put('b', '1');
    put('a', '2');
    expect(source.webhooks().map((h) => h.name)).toEqual(['a.test', 'b.test']);
    expect(source.compilations).toBe(2);
    const first = source.webhooks();
    expect(source.webhooks()).toBe(first);
    put('a', '3');
    source.webhooks();
    expect(source.compilations).toBe(3);
    configurations.apply('ValidatingWebhookConfiguration', { metadata: { name: 'b' } }, true);
    expect(source.webhooks().map((h) => h.name)).toEqual(['a.test']);
    expect(source.compilations).toBe(3);
  });
});
