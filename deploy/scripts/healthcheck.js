#!/usr/bin/env node
// Container health checks (docker-compose.yml healthcheck, Kubernetes exec probes).
//
//   node deploy/scripts/healthcheck.js grpc HOST:PORT [CA_FILE CERT_FILE KEY_FILE] [--service=NAME] [--timeout=MS]
//       asks the standard gRPC health service (grpc.health.v1.Health/Check)
//       and exits 0 only when it answers SERVING. Without files the call is
//       plaintext, for a service's --health-bind-address port (which serves
//       nothing but the health service); with them it is mutual TLS on the
//       service's internal port (the service's own internal certificate will
//       do: the health service answers any identity of the internal CA), and
//       the server certificate must be valid for the identity named by the
//       certificate's own CN. --service names the service asked about: ""
//       (the default) is SERVING when the service can do its work,
//       "liveness" while the process runs.
//   node deploy/scripts/healthcheck.js http URL
//       exit 0 when GET URL answers 200 (the controller-manager's /readyz).
//   node deploy/scripts/healthcheck.js https URL [CA_FILE [CERT_FILE KEY_FILE]]
//       exit 0 when GET URL answers 200, verifying the server against CA_FILE
//       and presenting the client certificate when given (the gateway's
//       /readyz, which checks every backend, etcd and NATS).
//
// Anything else, or no answer within the timeout (default 3 seconds), exits 1
// with the reason on stderr; bad arguments exit 2.
'use strict';
const fs = require('node:fs');

const DEFAULT_TIMEOUT_MS = 3000;
const SERVING_STATUS = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];
const USAGE =
  'usage: healthcheck.js grpc HOST:PORT [CA_FILE CERT_FILE KEY_FILE] [--service=NAME] [--timeout=MS] | healthcheck.js http URL [--timeout=MS] | healthcheck.js https URL [CA_FILE [CERT_FILE KEY_FILE]] [--timeout=MS]';

function fail(message) {
  process.stderr.write(`healthcheck: ${message}\n`);
  process.exit(1);
}

function usageError(message) {
  process.stderr.write(`healthcheck: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function commonName(certPem) {
  const { X509Certificate } = require('node:crypto');
  const m = /(?:^|\n)CN=([^\n]+)/.exec(new X509Certificate(certPem).subject);
  return m ? m[1] : undefined;
}

/** grpc.health.v1.HealthCheckRequest: field 1 (service), a string. */
function encodeRequest(service) {
  const name = Buffer.from(service, 'utf8');
  const length = [];
  let n = name.length;
  do {
    length.push((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
    n >>>= 7;
  } while (n > 0);
  return name.length === 0 ? Buffer.alloc(0) : Buffer.concat([Buffer.from([0x0a, ...length]), name]);
}

/** grpc.health.v1.HealthCheckResponse: field 1 (status), a varint; other fields are skipped. */
function decodeResponse(bytes) {
  let status = 0;
  let i = 0;
  const varint = () => {
    let value = 0;
    let shift = 0;
    for (;;) {
      if (i >= bytes.length) throw new Error('truncated health response');
      const b = bytes[i++];
      value += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return value;
      shift += 7;
    }
  };
  while (i < bytes.length) {
    const tag = varint();
    const wire = tag & 7;
    if (wire === 0) {
      const v = varint();
      if (tag >>> 3 === 1) status = v;
    } else if (wire === 2) {
      const length = varint(); // read first: `i += varint()` would add to the index from before the length
      i += length;
    } else if (wire === 1) i += 8;
    else if (wire === 5) i += 4;
    else throw new Error(`unexpected wire type ${wire} in health response`);
  }
  return { status };
}

function grpcHealth(target, files, service, timeoutMs) {
  const grpc = require('@grpc/grpc-js');
  let credentials = grpc.credentials.createInsecure();
  const options = {};
  if (files.length > 0) {
    const [caFile, certFile, keyFile] = files;
    if (!caFile || !certFile || !keyFile) usageError('the CA file, certificate and key go together');
    const cert = fs.readFileSync(certFile);
    credentials = grpc.credentials.createSsl(fs.readFileSync(caFile), fs.readFileSync(keyFile), cert);
    const name = commonName(cert);
    if (name) options['grpc.ssl_target_name_override'] = name;
  }
  const Client = grpc.makeGenericClientConstructor(
    {
      check: {
        path: '/grpc.health.v1.Health/Check',
        requestStream: false,
        responseStream: false,
        requestSerialize: encodeRequest,
        requestDeserialize: () => undefined,
        responseSerialize: () => Buffer.alloc(0),
        responseDeserialize: decodeResponse,
      },
    },
    'Health',
  );
  const client = new Client(target, credentials, options);
  // The deadline bounds the call (connecting included); the timer is a backstop.
  const timer = setTimeout(() => fail(`${target}: no answer in ${timeoutMs} ms`), timeoutMs + 500);
  client.check(service, { deadline: Date.now() + timeoutMs }, (err, res) => {
    clearTimeout(timer);
    client.close();
    if (err) fail(`${target}: ${err.code === grpc.status.NOT_FOUND ? `unknown service ${JSON.stringify(service)}` : err.details || err.message}`);
    const status = SERVING_STATUS[res.status] ?? String(res.status);
    if (status !== 'SERVING') fail(`${target}: ${status}`);
    process.exit(0);
  });
}

function httpGetOk(url, options, timeoutMs) {
  const mod = url.startsWith('https:') ? require('node:https') : require('node:http');
  const req = mod.get(url, { ...options, timeout: timeoutMs }, (res) => {
    res.resume();
    if (res.statusCode === 200) process.exit(0);
    fail(`${url}: HTTP ${res.statusCode}`);
  });
  req.on('timeout', () => req.destroy(new Error(`no answer in ${timeoutMs} ms`)));
  req.on('error', (err) => fail(`${url}: ${err.message}`));
}

function tlsOptions(caFile, certFile, keyFile) {
  const options = {};
  if (caFile) options.ca = fs.readFileSync(caFile);
  if (certFile && keyFile) {
    options.cert = fs.readFileSync(certFile);
    options.key = fs.readFileSync(keyFile);
  }
  return options;
}

function main(argv) {
  const positional = [];
  let service = '';
  let timeoutMs = DEFAULT_TIMEOUT_MS;
  for (const arg of argv) {
    if (arg.startsWith('--service=')) service = arg.slice('--service='.length);
    else if (arg.startsWith('--timeout=')) {
      timeoutMs = Number(arg.slice('--timeout='.length));
      if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) usageError(`--timeout: ${JSON.stringify(arg.slice(10))} is not a positive number of milliseconds`);
    } else if (arg.startsWith('--')) usageError(`unknown flag ${arg}`);
    else positional.push(arg);
  }
  const [mode, target, ...rest] = positional;
  if (mode === 'grpc' && target) grpcHealth(target, rest, service, timeoutMs);
  else if (mode === 'http' && target && rest.length === 0) httpGetOk(target, {}, timeoutMs);
  else if (mode === 'https' && target) httpGetOk(target, tlsOptions(rest[0], rest[1], rest[2]), timeoutMs);
  else usageError(mode ? `cannot check ${mode} ${target ?? ''}`.trim() : 'nothing to check');
}

if (require.main === module) main(process.argv.slice(2));

module.exports = { encodeRequest, decodeResponse };
