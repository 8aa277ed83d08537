import { fieldSelectorValue, labelSelectorFromObject, matchesSelectors, parseFieldSelector, parseLabelSelector } from './selectors';

/** The one matcher lists and watches share: the same answer for every kind of value. */
describe('matchesSelectors', () => {
  const pod = {
    metadata: { name: 'p', namespace: 'a', labels: { app: 'web', tier: 'front' } },
    spec: { nodeName: 'n1', hostNetwork: false, priority: 0, tolerations: [{ key: 'k' }], affinity: { nodeAffinity: {} } },
    status: { phase: 'Running', podIP: null },
  };
  const matches = (labels: string, fields: string) => matchesSelectors(pod, parseLabelSelector(labels), parseFieldSelector(fields));

  test.each([
    ['', '', true],
    ['app=web', '', true],
    ['app=db', '', false],
    ['app in (web,db),tier!=back', 'spec.nodeName=n1', true],
    ['', 'metadata.name=p,metadata.namespace=a', true],
    ['', 'metadata.namespace!=a', false],
    ['', 'spec.nodeName=n2', false],
    ['', 'spec.nodeName!=n2', true],
    ['', 'status.phase==Running', true],
    ['', 'spec.hostNetwork=false', true],
    ['', 'spec.priority=0', true],
    // Missing and null fields read as empty.
    ['', 'spec.missing=', true],
    ['', 'status.podIP=', true],
    ['', 'spec.missing.deeper=x', false],
    // Objects and lists compare as their JSON, never as "[object Object]".
    ['', 'spec.affinity={"nodeAffinity":{}}', true],
    ['', 'spec.affinity=[object Object]', false],
    ['', 'spec.tolerations=[{"key":"k"}]', true],
    ['app=web', 'spec.nodeName=n2', false],
  ])('labels %j, fields %j: %s', (labels, fields, expected) => {
    expect(matches(labels, fields)).toBe(expected);
  });

  test('field values', () => {
    expect(fieldSelectorValue(pod, 'metadata.name')).toBe('p');
    expect(fieldSelectorValue(pod, 'spec.priority')).toBe('0');
    expect(fieldSelectorValue(pod, 'status.podIP')).toBeUndefined();
    expect(fieldSelectorValue(pod, 'spec.nodeName.x')).toBeUndefined();
    expect(fieldSelectorValue(pod, 'spec.tolerations')).toBe('[{"key":"k"}]');
  });
});

describe('labelSelectorFromObject', () => {
  const labels = { app: 'web', tier: 'front' };
  test.each([
    [undefined, true],
    [{}, true],
    [{ matchLabels: { app: 'web' } }, true],
    [{ matchLabels: { app: 'db' } }, false],
    [{ matchExpressions: [{ key: 'app', operator: 'In', values: ['db', 'web'] }] }, true],
    [{ matchExpressions: [{ key: 'app', operator: 'NotIn', values: ['web'] }] }, false],
    [{ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['x'] }] }, true],
    [{ matchExpressions: [{ key: 'tier', operator: 'Exists' }] }, true],
    [{ matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] }, false],
    [{ matchLabels: { app: 'web' }, matchExpressions: [{ key: 'zone', operator: 'Exists' }] }, false],
  ])('%j matches: %s', (sel, expected) => {
    expect(labelSelectorFromObject(sel).matches(labels)).toBe(expected);
  });

  test('an unknown operator or values that do not fit the operator are refused', () => {
    expect(() => labelSelectorFromObject({ matchExpressions: [{ key: 'a', operator: 'Gt', values: ['1'] }] })).toThrow('"Gt" is not a valid label selector operator');
    expect(() => labelSelectorFromObject({ matchExpressions: [{ key: 'a', operator: 'In', values: [] }] })).toThrow("values set can't be empty");
    expect(() => labelSelectorFromObject({ matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] })).toThrow('values set must be empty');
  });
});
