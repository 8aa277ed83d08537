import type { ApiObject } from '@svc/apimachinery';
import { ADMISSION_CONFIGURATION_SOURCES, AdmissionConfigurations } from './configurations';

/** The in-memory admission configurations: what the feed applies, in name order, with a generation that moves on change only. */
describe('admission configurations', () => {
  const obj = (name: string, resourceVersion: string): ApiObject => ({ metadata: { name, uid: `uid-${name}`, resourceVersion } });

  test('lists each kind in name order and moves the generation on every change, not on a change read twice', () => {
    const c = new AdmissionConfigurations();
    const start = c.generation;
    c.apply('ValidatingWebhookConfiguration', obj('b', '1'));
    c.apply('ValidatingWebhookConfiguration', obj('a', '2'));
    c.apply('MutatingWebhookConfiguration', obj('m', '3'));
    expect(c.list('ValidatingWebhookConfiguration').map((o) => o.metadata?.name)).toEqual(['a', 'b']);
    expect(c.list('ValidatingAdmissionPolicy')).toEqual([]);
    expect(c.generation).toBe(start + 3);
    const listed = c.list('ValidatingWebhookConfiguration');
    c.apply('ValidatingWebhookConfiguration', obj('a', '2'));
    expect(c.generation).toBe(start + 3);
    expect(c.list('ValidatingWebhookConfiguration')).toBe(listed);
    c.apply('ValidatingWebhookConfiguration', obj('a', '4'));
    expect(c.list('ValidatingWebhookConfiguration').map((o) => o.metadata?.resourceVersion)).toEqual(['4', '1']);
    c.apply('ValidatingWebhookConfiguration', { metadata: { name: 'b' } }, true);
    c.apply('ValidatingWebhookConfiguration', { metadata: { name: 'never-there' } }, true);
    expect(c.list('ValidatingWebhookConfiguration').map((o) => o.metadata?.name)).toEqual(['a']);
    expect(c.generation).toBe(start + 5);
    expect(c.size).toEqual({ MutatingWebhookConfiguration: 1, ValidatingWebhookConfiguration: 1, ValidatingAdmissionPolicy: 0, ValidatingAdmissionPolicyBinding: 0, CustomResourceDefinition: 0 });
    c.clear();
    expect(c.list('MutatingWebhookConfiguration')).toEqual([]);
    // Kinds the feed does not follow are ignored.
    c.apply('Role', obj('r', '9'));
    expect(c.size).toEqual({ MutatingWebhookConfiguration: 0, ValidatingWebhookConfiguration: 0, ValidatingAdmissionPolicy: 0, ValidatingAdmissionPolicyBinding: 0, CustomResourceDefinition: 0 });
  });

  test('the feed follows the four kinds of admissionregistration.svc.io and the custom resource definitions', () => {
    expect(ADMISSION_CONFIGURATION_SOURCES.map((s) => `${s.group}/${s.resource}`)).toEqual([
      'admissionregistration.svc.io/mutatingwebhookconfigurations',
      'admissionregistration.svc.io/validatingwebhookconfigurations',
      'admissionregistration.svc.io/validatingadmissionpolicies',
      'admissionregistration.svc.io/validatingadmissionpolicybindings',
      'apiextensions.svc.io/customresourcedefinitions',
    ]);
  });
});
