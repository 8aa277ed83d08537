/**
 * The priority of API version names, as the original server orders a
 * group's versions in discovery (and so which one is preferred):
 *
 * - Names that look like Kubernetes versions (`v<major>`,
 *   `v<major>beta<minor>`, `v<major>alpha<minor>`, numbers in decimal and
 *   within int64) come before all others.
 * - Among them GA comes before beta, beta before alpha; within a level the
 *   higher major comes first, then the higher minor.
 * - Other names come last, in lexical (code unit) order.
 *
 * So `v2, v1, v1beta2, v1beta1, v1alpha1, foo`.
 */

type Level = 0 | 1 | 2;
const LEVELS: Record<string, Level> = { alpha: 0, beta: 1, '': 2 };
const INT64_MAX = (1n << 63n) - 1n;
const KUBE_VERSION = /^v([0-9]+)(?:(alpha|beta)([0-9]+))?$/;

interface KubeVersion {
  major: bigint;
  level: Level;
  minor: bigint;
}

/** A version name's parts when it looks like a Kubernetes version; undefined otherwise. */
export function parseKubeVersion(name: string): KubeVersion | undefined {
  const m = KUBE_VERSION.exec(name);
  if (!m) return undefined;
  const major = BigInt(m[1] as string);
  const minor = m[3] === undefined ? 0n : BigInt(m[3]);
  // A number beyond int64 does not parse as one in the original: such a name is not a Kubernetes version.
  if (major > INT64_MAX || minor > INT64_MAX) return undefined;
  return { major, level: LEVELS[m[2] ?? ''] as Level, minor };
}

function sign(n: bigint | number): number {
  return n > 0 ? 1 : n < 0 ? -1 : 0;
}

/**
 * Compares two version names by priority, for `Array.prototype.sort`:
 * negative when `a` comes first (has the higher priority), positive when `b`
 * does. Names of equal priority (`v1` and `v01`) are ordered lexically so
 * the order is total and stable.
 */
export function compareVersionPriority(a: string, b: string): number {
  if (a === b) return 0;
  const va = parseKubeVersion(a);
  const vb = parseKubeVersion(b);
  if (va && !vb) return -1;
  if (!va && vb) return 1;
  if (va && vb) {
    const byPriority = sign(vb.level - va.level) || sign(vb.major - va.major) || sign(vb.minor - va.minor);
    if (byPriority !== 0) return byPriority;
  }
  return a < b ? -1 : 1;
}

/** The items sorted by the priority of their version names, highest first (a new array). */
export function sortByVersionPriority<T>(items: readonly T[], versionOf: (item: T) => string): T[] {
  return [...items].sort((x, y) => compareVersionPriority(versionOf(x), versionOf(y)));
}
