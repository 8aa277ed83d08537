import { compareVersionPriority, parseKubeVersion, sortByVersionPriority } from './version-priority';

describe('version priority', () => {
  const sorted = (names: string[]): string[] => sortByVersionPriority(names, (n) => n);

  test.each([
    // [input, ordered by priority]
    [['v1', 'v2'], ['v2', 'v1']],
    [['foo', 'v1alpha1', 'v1beta1', 'v1', 'v1beta2'], ['v1', 'v1beta2', 'v1beta1', 'v1alpha1', 'foo']],
    [['v1beta1', 'v1'], ['v1', 'v1beta1']],
    [['v2beta1', 'v1'], ['v1', 'v2beta1']],
    [['v1alpha1', 'v2alpha1', 'v1beta1'], ['v1beta1', 'v2alpha1', 'v1alpha1']],
    [['v10', 'v9', 'v11'], ['v11', 'v10', 'v9']],
    [['v1beta10', 'v1beta9', 'v2beta1'], ['v2beta1', 'v1beta10', 'v1beta9']],
    [['foo10', 'foo1', 'v12alpha1', 'v11alpha2', 'v3beta1', 'v10beta3', 'v11beta2', 'v1', 'v2', 'v10'], ['v10', 'v2', 'v1', 'v11beta2', 'v10beta3', 'v3beta1', 'v12alpha1', 'v11alpha2', 'foo1', 'foo10']],
    // Not Kubernetes versions: a gamma level, no leading v, a suffix, a number beyond int64.
    [['v1gamma1', 'v1'], ['v1', 'v1gamma1']],
    [['1', 'v1'], ['v1', '1']],
    [['v1beta', 'v1alpha1'], ['v1alpha1', 'v1beta']],
    [['v99999999999999999999', 'v1alpha1'], ['v1alpha1', 'v99999999999999999999']],
    [['zeta', 'alpha', 'beta'], ['alpha', 'beta', 'zeta']],
    // Equal priority, different names: lexical, so the order does not depend on the input's.
    [['v1', 'v01'], ['v01', 'v1']],
    [['v01', 'v1'], ['v01', 'v1']],
    // Already in order: unchanged (built-in groups).
    [['v1', 'v1beta1'], ['v1', 'v1beta1']],
    [['v1'], ['v1']],
    [[], []],
  ])('%j is ordered %j', (input, want) => {
    expect(sorted(input)).toEqual(want);
  });

  test('the comparison is antisymmetric and zero only for the same name', () => {
    const names = ['v1', 'v2', 'v01', 'v1beta1', 'v1alpha1', 'v2alpha3', 'foo', 'bar', 'v9223372036854775807', 'v9223372036854775808'];
    for (const a of names) {
      for (const b of names) {
        const ab = compareVersionPriority(a, b);
        expect(Math.sign(ab) + Math.sign(compareVersionPriority(b, a))).toBe(0);
        expect(ab === 0).toBe(a === b);
      }
    }
  });

  test('parses Kubernetes version names and nothing else', () => {
    expect(parseKubeVersion('v3')).toEqual({ major: 3n, level: 2, minor: 0n });
    expect(parseKubeVersion('v2beta4')).toEqual({ major: 2n, level: 1, minor: 4n });
    expect(parseKubeVersion('v1alpha1')).toEqual({ major: 1n, level: 0, minor: 1n });
    expect(parseKubeVersion('v9223372036854775807')).toEqual({ major: 9223372036854775807n, level: 2, minor: 0n });
    for (const name of ['', 'v', 'V1', 'v1.0', 'v1beta', 'v-1', 'v1 ', 'v1rc1', 'v9223372036854775808', 'v1beta9223372036854775808']) {
      expect(parseKubeVersion(name)).toBeUndefined();
    }
  });

  test('sorts items by their version without changing the input', () => {
    const items = [{ version: 'v1' }, { version: 'v2' }];
    expect(sortByVersionPriority(items, (i) => i.version)).toEqual([{ version: 'v2' }, { version: 'v1' }]);
    expect(items).toEqual([{ version: 'v1' }, { version: 'v2' }]);
  });
});
