import * as fs from 'node:fs';
import * as path from 'node:path';
import { BINARY_VERSION } from './metrics';

/**
 * What a build is, as the gateway's `/version` and every service's
 * `--version` report it (the fields of the original server's version.Info).
 *
 * The build writes `build-info.json` beside this module (scripts/build-info.js,
 * run by `npm run build`): the release, the commit and whether the tree had
 * changes, and when it was built. The environment overrides it
 * (`SVC_GIT_VERSION`, `SVC_GIT_COMMIT`, `SVC_BUILD_DATE`; the image build
 * passes them), so an image built without the repository's history still
 * says what it is.
 */
export interface VersionInfo {
  major: string;
  minor: string;
  gitVersion: string;
  gitCommit: string;
  /** `clean`, `dirty`, or empty when not known. */
  gitTreeState: string;
  /** RFC 3339, UTC, seconds. */
  buildDate: string;
  /** The field the original fills with its Go release; here the Node.js release (`v20.19.0`). */
  goVersion: string;
  compiler: string;
  /** `linux/amd64`, in Go's names. */
  platform: string;
}

/** What build-info.json holds; every field optional. */
export interface BuildInfo {
  gitVersion?: string;
  gitCommit?: string;
  gitTreeState?: string;
  buildDate?: string;
}

export const BUILD_INFO_FILE = path.join(__dirname, 'build-info.json');

/** The release this code implements, with no build behind it: `v1.32.0-svc`. */
export const DEFAULT_GIT_VERSION = `v${BINARY_VERSION}-svc`;

/** Used when nothing says when the build was made. */
const UNKNOWN_BUILD_DATE = '1970-01-01T00:00:00Z';

const GO_ARCH: Record<string, string> = { x64: 'amd64', ia32: '386', arm: 'arm', arm64: 'arm64' };

/** build-info.json's content; empty when the file is missing or not a JSON object of strings. */
export function readBuildInfo(file: string = BUILD_INFO_FILE): BuildInfo {
  let parsed: unknown;
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return {};
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return {};
  const info: BuildInfo = {};
  for (const key of ['gitVersion', 'gitCommit', 'gitTreeState', 'buildDate'] as const) {
    const value = (parsed as Record<string, unknown>)[key];
    if (typeof value === 'string' && value !== '') info[key] = value;
  }
  return info;
}

/** `v1.32.0-svc.0.1.0` → major `1`, minor `32` (the original's form); the release's when unparsable. */
function majorMinor(gitVersion: string): { major: string; minor: string } {
  const m = /^v?(\d+)\.(\d+)/.exec(gitVersion) ?? /^(\d+)\.(\d+)/.exec(BINARY_VERSION);
  return { major: m?.[1] ?? '', minor: m?.[2] ?? '' };
}

/** The version of this process: build-info.json, overridden by the environment. */
export function versionInfo(env: NodeJS.ProcessEnv = process.env, build: BuildInfo = readBuildInfo()): VersionInfo {
  const pick = (name: string, fromBuild: string | undefined): string | undefined => {
    const v = env[name];
    return v !== undefined && v !== '' ? v : fromBuild;
  };
  const gitVersion = pick('SVC_GIT_VERSION', build.gitVersion) ?? DEFAULT_GIT_VERSION;
  return {
    ...majorMinor(gitVersion),
    gitVersion,
    gitCommit: pick('SVC_GIT_COMMIT', build.gitCommit) ?? '',
    gitTreeState: build.gitTreeState ?? '',
    buildDate: pick('SVC_BUILD_DATE', build.buildDate) ?? UNKNOWN_BUILD_DATE,
    goVersion: process.version,
    compiler: 'node',
    platform: `${process.platform}/${GO_ARCH[process.arch] ?? process.arch}`,
  };
}

/**
 * What `<service> --version` prints, as the original's `--version`: one line,
 * `<service> <gitVersion>`; `--version=raw` prints every field (JSON).
 */
export function versionText(service: string, raw: boolean, info: VersionInfo = versionInfo()): string {
  return raw ? `${JSON.stringify(info, null, 2)}\n` : `${service} ${info.gitVersion}\n`;
}
