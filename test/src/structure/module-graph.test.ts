import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * The shape of the source tree, checked from the files themselves:
 * - no import cycle between the modules of one package or service (a
 *   contract's types live in a module of their own, not in one of the
 *   modules that implement or call it);
 * - production modules never import test helpers (`testing/` folders and
 *   `*.test.ts` files), so none ships in a service's entry points;
 * - the bottom layer, `@svc/apimachinery`, imports no other package of ours.
 */
const root = path.resolve(__dirname, '..', '..', '..');

interface Room {
  name: string;
  src: string;
}

function rooms(): Room[] {
  const out: Room[] = [];
  for (const parent of ['packages', 'services']) {
    for (const name of fs.readdirSync(path.join(root, parent))) {
      const src = path.join(root, parent, name, 'src');
      if (fs.existsSync(src)) out.push({ name: `${parent}/${name}`, src });
    }
  }
  return out;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'gen') out.push(...sourceFiles(full));
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+'([^']+)'/g;

function importsOf(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  return [...text.matchAll(IMPORT)].map((m) => m[1] as string);
}

function resolveRelative(from: string, spec: string): string | undefined {
  const base = path.resolve(path.dirname(from), spec);
  for (const candidate of [`${base}.ts`, path.join(base, 'index.ts')]) if (fs.existsSync(candidate)) return candidate;
  return undefined;
}

const isTest = (file: string): boolean => file.endsWith('.test.ts');
const isTestHelper = (file: string): boolean => file.split(path.sep).includes('testing');

function cyclesIn(room: Room): string[][] {
  const files = sourceFiles(room.src).filter((f) => !isTest(f));
  const edges = new Map<string, string[]>();
  for (const f of files) {
    edges.set(
      f,
      importsOf(f)
        .filter((s) => s.startsWith('.'))
        .map((s) => resolveRelative(f, s))
        .filter((t): t is string => t !== undefined),
    );
  }
  const cycles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (f: string): void => {
    state.set(f, 'open');
    stack.push(f);
    for (const t of edges.get(f) ?? []) {
      if (state.get(t) === 'open') cycles.push([...stack.slice(stack.indexOf(t)), t].map((x) => path.relative(room.src, x)));
      else if (!state.has(t)) visit(t);
    }
    stack.pop();
    state.set(f, 'done');
  };
  for (const f of files) if (!state.has(f)) visit(f);
  return cycles;
}

describe('module graph', () => {
  const all = rooms();

  it('finds the packages and services', () => {
    expect(all.map((r) => r.name)).toEqual(expect.arrayContaining(['packages/apimachinery', 'services/gateway', 'services/authz']));
  });

  it.each(all.map((r) => [r.name, r] as const))('%s has no import cycle', (_name, room) => {
    expect(cyclesIn(room)).toEqual([]);
  });

  it('production modules import no test helper', () => {
    const offenders: string[] = [];
    for (const room of all) {
      for (const f of sourceFiles(room.src)) {
        if (isTest(f) || isTestHelper(f)) continue;
        for (const spec of importsOf(f)) {
          const target = spec.startsWith('.') ? resolveRelative(f, spec) : undefined;
          if (/\/testing\//.test(spec) || (target && (isTest(target) || isTestHelper(target)))) offenders.push(`${path.relative(root, f)} imports ${spec}`);
        }
      }
    }
    expect(offenders).toEqual([]);
  });

  it('apimachinery, the bottom layer, imports no other package of ours', () => {
    const apimachinery = all.find((r) => r.name === 'packages/apimachinery') as Room;
    // Its tests count too: they compile in the same project, so an import of a package above would be a cycle of projects.
    const ours = sourceFiles(apimachinery.src)
      .flatMap((f) => importsOf(f).filter((s) => s.startsWith('@svc/')).map((s) => `${path.relative(root, f)} imports ${s}`));
    expect(ours).toEqual([]);
  });
});
