#!/usr/bin/env node
// The one-shot PKI step of docker-compose.yml and deploy/kubernetes/pki-job.yaml.
//
// Makes (or keeps, when already there), with the same code `make up` uses
// (@svc/testenv's ensurePki and ensureInternalPki, which issue certificates in
// process with @svc/service-kit/certificates: no openssl binary):
//   - the client-facing CA, the gateway's serving certificate, the admin
//     client certificate (CN svc-admin, O system:masters) and admin.kubeconfig,
//     the controller-manager's client certificate (no group: it only mints its
//     controllers' service-account tokens) and the rbac-bootstrap identity's
//     (system:masters: it writes the default roles), with their kubeconfigs;
//   - the internal CA and one certificate per service identity (gateway,
//     storage, authn, authz, admission, watch-fanout, etcd, nats), which every
//     internal edge (gRPC, etcd, NATS) checks.
// Each consumer then gets only the files it needs, never a CA key:
//   gateway             serving.crt serving.key client-ca.crt + internal files
//   authn               client-ca.crt service-account.key + internal files
//   storage authz admission watch-fanout etcd nats   internal files
//   controller-manager  controller-manager.kubeconfig rbac-bootstrap.kubeconfig
// where the internal files are internal-ca.crt, tls.crt and tls.key (the
// consumer's own identity), and nats also gets nats.conf.
//
//   node deploy/scripts/pki.js --dir=/pki --export-dir=/export --hosts=localhost,127.0.0.1,gateway \
//     --server=https://localhost:6443 --controller-manager-server=https://gateway:6443
//
// --export-dir=DIR (docker-compose) writes DIR/<consumer>/<file>. With
// --secret-prefix=NAME (Kubernetes, in-cluster) the same sets are stored as
// Secrets through the API server, using the pod's service account:
//   NAME-ca       ca.crt ca.key internal-ca.crt internal-ca.key   (mounted by nothing: keep it to issue more)
//   NAME-admin    admin.crt admin.key admin.kubeconfig
//   NAME-<consumer>   the consumer's files above
// NAME-gateway is written last; when it exists nothing is generated, so a
// re-run keeps every identity.
'use strict';
const fs = require('node:fs');
const https = require('node:https');
const path = require('node:path');
const { ensurePki, ensureInternalPki, issueClientCertificate, kubeconfig, INTERNAL_IDENTITIES } = require('@svc/testenv/dist/pki');
const { natsServerConfig } = require('@svc/testenv/dist/backends');
const { ensureEncryptionConfig } = require('@svc/testenv/dist/encryption');

const FLAGS = {
  dir: 'directory for the CAs, the certificates and admin.kubeconfig (keep it private to this step)',
  'export-dir': 'docker-compose only: write each consumer\'s files to DIR/<consumer>/',
  hosts: 'comma-separated DNS names and IPs of the serving certificate',
  server: 'gateway URL written into admin.kubeconfig',
  'controller-manager-server': 'gateway URL written into controller-manager.kubeconfig (as reached from inside the deployment)',
  'secret-prefix': 'Kubernetes only: store the files as Secrets named PREFIX-ca, PREFIX-admin and PREFIX-<consumer>',
  namespace: "Kubernetes only: the Secrets' namespace (default: the pod's own)",
};

function usage() {
  return ['Usage: node deploy/scripts/pki.js [flags]', '', ...Object.entries(FLAGS).map(([k, v]) => `  --${k}=<value>\n      ${v}`)].join('\n');
}

function parse(argv) {
  const out = { dir: '/pki', hosts: 'localhost,127.0.0.1', server: 'https://localhost:6443', 'controller-manager-server': 'https://gateway:6443', 'export-dir': '', 'secret-prefix': '', namespace: '' };
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

/** What each consumer may read, by file name, from the paths made above. */
function consumerFiles(pki, internal, cmKubeconfig, bootstrapKubeconfig, natsConf, monitoring) {
  const files = {};
  for (const identity of INTERNAL_IDENTITIES) {
    const own = internal.identities[identity];
    files[identity] = { 'internal-ca.crt': internal.caCert, 'tls.crt': own.cert, 'tls.key': own.key };
  }
  Object.assign(files.gateway, { 'serving.crt': pki.servingCert, 'serving.key': pki.servingKey, 'client-ca.crt': pki.caCert });
  Object.assign(files.authn, { 'client-ca.crt': pki.caCert, 'service-account.key': pki.serviceAccountKey });
  files.nats['nats.conf'] = natsConf;
  files['controller-manager'] = { 'controller-manager.kubeconfig': cmKubeconfig, 'rbac-bootstrap.kubeconfig': bootstrapKubeconfig };
  // Prometheus: the gateway's CA and a client certificate in system:monitoring, which may read /metrics and nothing else.
  files.prometheus = { 'client-ca.crt': pki.caCert, 'monitoring.crt': monitoring.cert, 'monitoring.key': monitoring.key };
  // Encryption at rest: one EncryptionConfiguration (Secrets, aesgcm, a key generated on the first run and
  // kept), mounted by storage and by watch-fanout (both read etcd's values). Never printed.
  files.encryption = { 'encryption-config.yaml': ensureEncryptionConfig(pki.dir) };
  return files;
}

function exportFiles(exportDir, files) {
  for (const [consumer, set] of Object.entries(files)) {
    const dir = path.join(exportDir, consumer);
    fs.mkdirSync(dir, { recursive: true });
    for (const [name, source] of Object.entries(set)) fs.writeFileSync(path.join(dir, name), fs.readFileSync(source), { mode: 0o600 });
  }
}

async function main() {
  const flags = parse(process.argv.slice(2));
  const hosts = flags.hosts.split(',').map((h) => h.trim()).filter(Boolean);
  if (hosts.length === 0) throw new Error('--hosts names no host');
  const prefix = flags['secret-prefix'];
  let namespace = '';
  if (prefix) {
    namespace = flags.namespace || fs.readFileSync(path.join(SA_DIR, 'namespace'), 'utf8').trim();
    const marker = `${prefix}-gateway`;
    const existing = await apiRequest('GET', `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(marker)}`);
    if (existing.status === 200) {
      process.stdout.write(`pki: secret ${namespace}/${marker} exists, nothing to do\n`);
      return;
    }
    if (existing.status !== 404) throw new Error(`reading secret ${namespace}/${marker}: HTTP ${existing.status} ${existing.body}`);
  }
  const pki = await ensurePki(path.resolve(flags.dir), hosts);
  const internal = await ensureInternalPki(path.join(pki.dir, 'internal'));
  const kubeconfigPath = path.join(pki.dir, 'admin.kubeconfig');
  fs.writeFileSync(kubeconfigPath, kubeconfig(flags.server, pki.caCert, pki.adminCert, pki.adminKey), { mode: 0o600 });
  // The controller-manager's own identity holds no group: it only mints its controllers' service
  // account tokens. The writer of the default roles holds everything they grant (system:masters).
  const clientIdentity = async (name, user, groups) => {
    const cert = path.join(pki.dir, `${name}.crt`);
    return fs.existsSync(cert) ? { cert, key: path.join(pki.dir, `${name}.key`) } : issueClientCertificate(pki, name, user, groups);
  };
  const cmServer = flags['controller-manager-server'];
  const cmIdentity = await clientIdentity('controller-manager', 'system:svc-controller-manager', []);
  const cmKubeconfig = path.join(pki.dir, 'controller-manager.kubeconfig');
  fs.writeFileSync(cmKubeconfig, kubeconfig(cmServer, pki.caCert, cmIdentity.cert, cmIdentity.key, 'system:svc-controller-manager'), { mode: 0o600 });
  const bootstrapIdentity = await clientIdentity('rbac-bootstrap', 'system:svc-rbac-bootstrap', ['system:masters']);
  const bootstrapKubeconfig = path.join(pki.dir, 'rbac-bootstrap.kubeconfig');
  fs.writeFileSync(bootstrapKubeconfig, kubeconfig(cmServer, pki.caCert, bootstrapIdentity.cert, bootstrapIdentity.key, 'system:svc-rbac-bootstrap'), { mode: 0o600 });
  // The NATS server reads its certificates where its consumer set is mounted (/pki in both deployments).
  const natsConf = path.join(pki.dir, 'nats.conf');
  fs.writeFileSync(natsConf, natsServerConfig({ listen: '0.0.0.0:4222', httpPort: 8222, storeDir: '/data', tls: { caFile: '/pki/internal-ca.crt', certFile: '/pki/tls.crt', keyFile: '/pki/tls.key' } }));
  const monitoring = await clientIdentity('prometheus', 'svc-prometheus', ['system:monitoring']);
  const files = consumerFiles(pki, internal, cmKubeconfig, bootstrapKubeconfig, natsConf, monitoring);
  process.stdout.write(`pki: ${pki.dir} holds the CAs, serving.crt (${hosts.join(', ')}), admin.kubeconfig (${flags.server}), controller-manager.kubeconfig (${cmServer}) and the internal certificates of ${INTERNAL_IDENTITIES.join(', ')}\n`);
  if (flags['export-dir']) {
    exportFiles(path.resolve(flags['export-dir']), files);
    process.stdout.write(`pki: each consumer's files written to ${flags['export-dir']}/<consumer>/\n`);
  }
  if (prefix) {
    await createSecret(namespace, `${prefix}-ca`, { 'ca.crt': pki.caCert, 'ca.key': pki.caKey, 'internal-ca.crt': internal.caCert, 'internal-ca.key': internal.caKey });
    await createSecret(namespace, `${prefix}-admin`, { 'admin.crt': pki.adminCert, 'admin.key': pki.adminKey, 'admin.kubeconfig': kubeconfigPath });
    // The gateway's Secret last: it is the marker a re-run checks.
    for (const [consumer, set] of Object.entries(files)) if (consumer !== 'gateway') await createSecret(namespace, `${prefix}-${consumer}`, set);
    await createSecret(namespace, `${prefix}-gateway`, files.gateway);
  }
}

main().catch((err) => {
  process.stderr.write(`pki: ${err && err.message ? err.message : String(err)}\n`);
  process.exit(1);
});
