#!/usr/bin/env node
// Writes packages/service-kit/dist/build-info.json, which every service reads
// for `--version` and the gateway for /version (packages/service-kit/src/version.ts).
// Run by `npm run build` after tsc. SVC_GIT_VERSION, SVC_GIT_COMMIT and
// SVC_BUILD_DATE, when set (the image build passes them), win over what git
// and the clock say; without git (an image built from a copy of the tree)
// the commit stays empty.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const root = path.resolve(__dirname, '..');
// The release these services implement (packages/service-kit/src/metrics.ts BINARY_VERSION).
const RELEASE = '1.32.0';

function git(args) {
  try {
    return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

function packageVersion() {
  for (const file of ['package.json', 'packages/service-kit/package.json']) {
    const { version } = JSON.parse(fs.readFileSync(path.join(root, file), 'utf8'));
    if (typeof version === 'string' && version !== '') return version;
  }
  return '0.0.0';
}

function buildInfo(env) {
  const commit = git(['rev-parse', 'HEAD']);
  const status = commit === undefined ? undefined : git(['status', '--porcelain', '--untracked-files=no']);
  const info = {
    gitVersion: env.SVC_GIT_VERSION || `v${RELEASE}-svc.${packageVersion()}`,
    gitCommit: env.SVC_GIT_COMMIT || commit || '',
    gitTreeState: env.SVC_GIT_COMMIT ? '' : status === undefined ? '' : status === '' ? 'clean' : 'dirty',
    buildDate: env.SVC_BUILD_DATE || new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
  };
  return info;
}

const out = path.join(root, 'packages/service-kit/dist/build-info.json');
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, JSON.stringify(buildInfo(process.env), null, 2) + '\n');
process.stdout.write(`build-info: ${path.relative(root, out)}\n`);
