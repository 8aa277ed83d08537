#!/usr/bin/env node
// The one-shot PKI step of docker-compose.yml and deploy/kubernetes/pki-job.yaml.
//
// Makes (or keeps, when already there) the CA, the gateway's serving
// certificate and the admin client certificate (CN svc-admin, O
// system:masters) with the same code `make up` uses (@svc/testenv's
// ensurePki, i.e. the openssl command line), then writes admin.kubeconfig.
// It also issues the controller-manager's client certificate (CN
// system:svc-controller-manager) and writes controller-manager.kubeconfig,
// which reaches the gateway from inside the deployment.
//
//   node deploy/scripts/pki.js --dir=/pki --hosts=localhost,127.0.0.1,gateway --server=https://localhost:6443 \
//     --controller-manager-server=https://gateway:6443
//
// With --secret-prefix=NAME (Kubernetes, in-cluster) it also stores the files
// as three Secrets through the API server, using the pod's service account:
//   NAME          ca.crt, serving.crt, serving.key    (mounted by gateway and authn)
//   NAME-ca       ca.crt, ca.key                      (mounted by nothing; keep it for issuing more certificates)
//   NAME-admin    admin.crt, admin.key, admin.kubeconfig
//   NAME-controller-manager   controller-manager.kubeconfig
// When NAME already exists nothing is generated, so a re-run keeps the identity.
'use strict';
const fs = require('node:fs');
const https = require('node:https');
const path = require('node:path');
const { ensurePki, issueClientCertificate, kubeconfig } = require('@svc/testenv/dist/pki');

const FLAGS = {
  dir: 'directory for the certificates and admin.kubeconfig',
  hosts: 'comma-separated DNS names and IPs of the serving certificate',
  server: 'gateway URL written into admin.kubeconfig',
  'controller-manager-server': 'gateway URL written into controller-manager.kubeconfig (as reached from inside the deployment)',
  'secret-prefix': 'Kubernetes only: store the files as Secrets named PREFIX, PREFIX-ca, PREFIX-admin',
  namespace: "Kubernetes only: the Secrets' namespace (default: the pod's own)",
};

function usage() {
  return ['Usage: node deploy/scripts/pki.js [flags]', '', ...Object.entries(FLAGS).map(([k, v]) => `  --${k}=<value>\n      ${v}`)].join('\n');
}

function parse(argv) {
  const out = { dir: '/pki', hosts: 'localhost,127.0.0.1', server: 'https://localhost:6443', 'controller-manager-server': 'https://gateway:6443', 'secret-prefix': '', namespace: '' };
  for (const arg of argv) {
    if (arg === '--help' || arg === '-h') {
      process.stdout.write(usage() + '\n');
      process.exit(0);
    }
    const m = /^--([a-z-]+)=(.*)$/.exec(arg);
    if (!m || !(m[1] in FLAGS)) {
      process.stderr.write(`pki: unexpected argument ${JSON.stringify(arg)}\n\n${usage()}\n`);
      process.exit(2);
    }
    out[m[1]] = m[2];
  }
  return out;
}

const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

function apiRequest(method, apiPath, body) {
  const token = fs.readFileSync(path.join(SA_DIR, 'token'), 'utf8').trim();
  const ca = fs.readFileSync(path.join(SA_DIR, 'ca.crt'));
  const host = process.env.KUBERNETES_SERVICE_HOST;
  const port = process.env.KUBERNETES_SERVICE_PORT || '443';
  if (!host) throw new Error('KUBERNETES_SERVICE_HOST is not set: --secret-prefix works only inside a cluster');
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host,
        port,
        method,
        path: apiPath,
        ca,
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'application/json',
          ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}),
        },
        timeout: 15000,
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode || 0, body: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${apiPath} timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}

async function createSecret(namespace, name, files) {
  const data = {};
  for (const [key, file] of Object.entries(files)) data[key] = fs.readFileSync(file).toString('base64');
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace, labels: { 'app.kubernetes.io/part-of': 'svc-apiserver', 'app.kubernetes.io/component': 'pki' } },
    type: 'Opaque',
    data,
  };
  const res = await apiRequest('POST', `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`, secret);
  if (res.status === 409) process.stdout.write(`pki: secret ${namespace}/${name} already exists, kept\n`);
  else if (res.status >= 300) throw new Error(`creating secret ${namespace}/${name}: HTTP ${res.status} ${res.body}`);
  else process.stdout.write(`pki: secret ${namespace}/${name} created\n`);
}

async function main() {
  const flags = parse(process.argv.slice(2));
  const hosts = flags.hosts.split(',').map((h) => h.trim()).filter(Boolean);
  if (hosts.length === 0) throw new Error('--hosts names no host');
  let namespace = '';
  if (flags['secret-prefix']) {
    namespace = flags.namespace || fs.readFileSync(path.join(SA_DIR, 'namespace'), 'utf8').trim();
    const existing = await apiRequest('GET', `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(flags['secret-prefix'])}`);
    if (existing.status === 200) {
      process.stdout.write(`pki: secret ${namespace}/${flags['secret-prefix']} exists, nothing to do\n`);
      return;
    }
    if (existing.status !== 404) throw new Error(`reading secret ${namespace}/${flags['secret-prefix']}: HTTP ${existing.status} ${existing.body}`);
  }
  const pki = ensurePki(path.resolve(flags.dir), hosts);
  const kubeconfigPath = path.join(pki.dir, 'admin.kubeconfig');
  fs.writeFileSync(kubeconfigPath, kubeconfig(flags.server, pki.caCert, pki.adminCert, pki.adminKey), { mode: 0o600 });
  const cm = path.join(pki.dir, 'controller-manager.crt');
  const cmIdentity = fs.existsSync(cm)
    ? { cert: cm, key: path.join(pki.dir, 'controller-manager.key') }
    : issueClientCertificate(pki, 'controller-manager', 'system:svc-controller-manager', ['system:masters']);
  const cmKubeconfig = path.join(pki.dir, 'controller-manager.kubeconfig');
  const cmServer = flags['controller-manager-server'];
  fs.writeFileSync(cmKubeconfig, kubeconfig(cmServer, pki.caCert, cmIdentity.cert, cmIdentity.key, 'system:svc-controller-manager'), { mode: 0o600 });
  process.stdout.write(`pki: ${pki.dir} holds ca.crt, serving.crt (${hosts.join(', ')}), admin.crt and admin.kubeconfig (${flags.server}), controller-manager.kubeconfig (${cmServer})\n`);
  if (flags['secret-prefix']) {
    const prefix = flags['secret-prefix'];
    // The -ca and -admin Secrets first: the serving Secret is the marker a re-run checks.
    await createSecret(namespace, `${prefix}-ca`, { 'ca.crt': pki.caCert, 'ca.key': pki.caKey });
    await createSecret(namespace, `${prefix}-admin`, { 'admin.crt': pki.adminCert, 'admin.key': pki.adminKey, 'admin.kubeconfig': kubeconfigPath });
    await createSecret(namespace, `${prefix}-controller-manager`, { 'controller-manager.kubeconfig': cmKubeconfig });
    await createSecret(namespace, prefix, { 'ca.crt': pki.caCert, 'serving.crt': pki.servingCert, 'serving.key': pki.servingKey });
  }
}

main().catch((err) => {
  process.stderr.write(`pki: ${err && err.message ? err.message : String(err)}\n`);
  process.exit(1);
});
