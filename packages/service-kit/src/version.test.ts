import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { versionRequest } from './main';
import { BINARY_VERSION } from './metrics';
import { DEFAULT_GIT_VERSION, readBuildInfo, versionInfo, versionText } from './version';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-version-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function buildFile(content: string): string {
  const file = path.join(dir, `build-info-${Math.random().toString(36).slice(2)}.json`);
  fs.writeFileSync(file, content);
  return file;
}

describe('version info', () => {
  const build = { gitVersion: 'v1.32.0-svc.0.1.0', gitCommit: 'abc123', gitTreeState: 'clean', buildDate: '2026-11-27T10:00:00Z' };

  it('reports what the build wrote, with the major and minor of its gitVersion and the Node.js release', () => {
    const info = versionInfo({}, build);
    expect(info).toEqual({
      major: '1',
      minor: '32',
      ...build,
      goVersion: process.version,
      compiler: 'node',
      platform: expect.stringMatching(/^[a-z0-9]+\/[a-z0-9]+$/),
    });
    expect(info.platform).not.toContain('x64');
  });

  it('lets SVC_GIT_VERSION, SVC_GIT_COMMIT and SVC_BUILD_DATE override the build', () => {
    const info = versionInfo({ SVC_GIT_VERSION: 'v1.33.1-svc.2.0.0', SVC_GIT_COMMIT: 'def456', SVC_BUILD_DATE: '2027-01-02T03:04:05Z' }, build);
    expect([info.major, info.minor, info.gitVersion, info.gitCommit, info.buildDate]).toEqual(['1', '33', 'v1.33.1-svc.2.0.0', 'def456', '2027-01-02T03:04:05Z']);
    expect(versionInfo({ SVC_GIT_COMMIT: '' }, build).gitCommit).toBe('abc123');
  });

  it('falls back to the release the code implements without a build file', () => {
    const info = versionInfo({}, readBuildInfo(path.join(dir, 'missing.json')));
    expect([info.gitVersion, info.major, info.minor, info.gitCommit]).toEqual([DEFAULT_GIT_VERSION, ...BINARY_VERSION.split('.').slice(0, 2), '']);
  });

  it('ignores a build file that is not an object of strings', () => {
    expect(readBuildInfo(buildFile('not json'))).toEqual({});
    expect(readBuildInfo(buildFile('[1]'))).toEqual({});
    expect(readBuildInfo(buildFile('{"gitVersion": 7, "gitCommit": "abc"}'))).toEqual({ gitCommit: 'abc' });
  });

  it('prints one line for --version and every field for --version=raw', () => {
    const info = versionInfo({}, build);
    expect(versionText('storage', false, info)).toBe('storage v1.32.0-svc.0.1.0\n');
    expect(JSON.parse(versionText('storage', true, info))).toEqual(info);
    expect(versionRequest('storage', ['--listen=:1', '--version'])).toMatch(/^storage v\S+\n$/);
    expect(versionRequest('storage', ['--version=raw'])).toContain('"gitVersion"');
    expect(versionRequest('storage', ['--listen=:1'])).toBeUndefined();
  });
});

describe('scripts/build-info.js', () => {
  const root = path.resolve(__dirname, '../../..');
  const script = path.join(root, 'scripts/build-info.js');
  const written = path.join(root, 'packages/service-kit/dist/build-info.json');

  it('writes the release, the commit and the build date, the environment winning', () => {
    const before = fs.existsSync(written) ? fs.readFileSync(written) : undefined;
    try {
      execFileSync(process.execPath, [script], { env: { ...process.env, SVC_GIT_COMMIT: 'feedbeef', SVC_BUILD_DATE: '2026-11-27T00:00:00Z', SVC_GIT_VERSION: '' }, stdio: 'ignore' });
      const info = readBuildInfo(written);
      expect(info.gitVersion).toMatch(new RegExp(`^v${BINARY_VERSION.replace(/\./g, '\\.')}-svc\\.\\d+\\.\\d+\\.\\d+$`));
      expect([info.gitCommit, info.buildDate]).toEqual(['feedbeef', '2026-11-27T00:00:00Z']);
    } finally {
      if (before) fs.writeFileSync(written, before);
    }
  });
});
