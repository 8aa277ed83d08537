import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeTestPki, type TestPki } from '@svc/service-kit/testing/pki';

/**
 * The service process itself: an authorization setup it must refuse ends it
 * at start, with an error that names the file and the field (the line of an ABAC
 * policy file), or the flags that may not be combined.
 */
describe('authz refuses to start', () => {
  let pki: TestPki;
  let tlsFlags: string[] = [];

  beforeAll(() => {
    pki = makeTestPki('authz-main-ca');
    pki.tlsFor('authz');
    tlsFlags = [`--internal-ca-file=${path.join(pki.dir, 'ca.crt')}`, `--internal-cert-file=${path.join(pki.dir, 'authz.crt')}`, `--internal-key-file=${path.join(pki.dir, 'authz.key')}`, '--listen=127.0.0.1:0'];
  });
  afterAll(() => pki.remove());

  const start = (args: string[]) => spawnSync(process.execPath, [path.join(__dirname, 'main.js'), ...tlsFlags, ...args], { encoding: 'utf8', timeout: 30000, env: { ...process.env, SVC_LOG_LEVEL: 'info' } });
  const policyFile = (name: string, lines: string[]): string => {
    const file = path.join(pki.dir, name);
    fs.writeFileSync(file, lines.join('\n') + '\n');
    return file;
  };
  const good = '{"apiVersion":"abac.authorization.svc.io/v1beta1","kind":"Policy","spec":{"user":"alice","namespace":"*","resource":"*","apiGroup":"*"}}';

  const configFile = (name: string, authorizers: string): string => {
    const file = path.join(pki.dir, name);
    fs.writeFileSync(file, `apiVersion: apiserver.config.svc.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n${authorizers}`);
    return file;
  };
  const ok = () => configFile('ok.yaml', '- {type: AlwaysAllow, name: allow}\n');

  test.each([
    ['an unknown field', () => ['--authorization-mode=ABAC', `--authorization-policy-file=${policyFile('unknown.jsonl', ['# ok', good, '{"apiVersion":"abac.authorization.svc.io/v1beta1","kind":"Policy","spec":{"user":"bob","verbs":["get"]}}'])}`], 'unknown.jsonl, line 3: spec.verbs: unknown field'],
    ['a line with neither user nor group', () => ['--authorization-mode=ABAC,RBAC', `--authorization-policy-file=${policyFile('nosubject.jsonl', [good, '{"apiVersion":"abac.authorization.svc.io/v1beta1","kind":"Policy","spec":{"resource":"pods"}}'])}`], 'nosubject.jsonl, line 2: spec.user: Required value'],
    ['a line that is not JSON', () => ['--authorization-mode=ABAC', `--authorization-policy-file=${policyFile('broken.jsonl', ['', '{"user":'])}`], 'broken.jsonl, line 2: not valid JSON'],
    ['a missing file', () => ['--authorization-mode=ABAC', `--authorization-policy-file=${path.join(pki.dir, 'missing.jsonl')}`], 'missing.jsonl: ENOENT'],
    ['the ABAC mode without a policy file', () => ['--authorization-mode=ABAC'], 'the ABAC authorization mode needs --authorization-policy-file'],
    ['a policy file without the ABAC mode', () => ['--authorization-mode=AlwaysDeny', `--authorization-policy-file=${policyFile('ok.jsonl', [good])}`], '--authorization-policy-file is only used by the ABAC authorization mode, which --authorization-mode (AlwaysDeny) does not name'],
    ['--authorization-config with an explicit --authorization-mode', () => [`--authorization-config=${ok()}`, '--authorization-mode=RBAC'], '--authorization-config and --authorization-mode may not be used together'],
    ['--authorization-config with --authorization-webhook-config-file', () => [`--authorization-config=${ok()}`, `--authorization-webhook-config-file=${ok()}`], '--authorization-config and --authorization-webhook-config-file may not be used together'],
    ['--authorization-config with --authorization-policy-file', () => [`--authorization-config=${ok()}`, `--authorization-policy-file=${policyFile('with-config.jsonl', [good])}`], '--authorization-config and --authorization-policy-file may not be used together'],
    ['--authorization-config with --authorization-webhook-version', () => [`--authorization-config=${ok()}`, '--authorization-webhook-version=v1'], '--authorization-config and --authorization-webhook-version may not be used together'],
    [
      'an invalid file',
      () => [`--authorization-config=${configFile('bad.yaml', `- {type: AlwaysDeny, name: deny}\n- {type: Webhook, name: w, webhook: {timeout: 45s, subjectAccessReviewVersion: v1, matchConditionSubjectAccessReviewVersion: v1, failurePolicy: Deny, connectionInfo: {type: InClusterConfig}}}\n`)}`],
      'bad.yaml: authorizers[1].webhook.timeout: Invalid value: \\"45s\\": must be no more than 30s',
    ],
    ['a missing file', () => [`--authorization-config=${path.join(pki.dir, 'missing.yaml')}`], 'missing.yaml: ENOENT'],
    ['a Node entry without the peers its graph is read from', () => [`--authorization-config=${configFile('node.yaml', '- {type: Node, name: node}\n')}`], 'the Node mode needs --storage-address and --watch-fanout-address'],
  ])('%s', (_name, args, message) => {
    const res = start(args());
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('"msg":"start failed"');
    expect(res.stderr).toContain(message);
  });
});
