#!/usr/bin/env node
// Runs jest over the compiled tests and ends with one plain summary line
// ("tests: N passed, N failed"), which CI reads.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-jest-')), 'results.json');
const args = [require.resolve('jest/bin/jest'), '--ci', '--runInBand', '--json', `--outputFile=${out}`, ...process.argv.slice(2)];
const run = spawnSync(process.execPath, args, { stdio: 'inherit' });
let passed = 0;
let failed = 0;
try {
  const results = JSON.parse(fs.readFileSync(out, 'utf8'));
  passed = results.numPassedTests;
  failed = results.numFailedTests + (results.numRuntimeErrorTestSuites || 0);
} catch {
  failed += 1;
}
process.stdout.write(`\ntests: ${passed} passed, ${failed} failed\n`);
process.exit(run.status === 0 && failed === 0 && passed > 0 ? 0 : 1);
