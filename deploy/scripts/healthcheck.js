#!/usr/bin/env node
// Container health checks (docker-compose.yml healthcheck, Kubernetes exec probes).
//
//   node deploy/scripts/healthcheck.js grpc HOST:PORT [CA_FILE CERT_FILE KEY_FILE]
//       exit 0 when a gRPC (HTTP/2) channel to HOST:PORT becomes ready. The
//       services register no grpc.health.v1 service; a gRPC server binds its
//       port only after its services are added, so a ready channel means the
//       service is up. With the files, the channel is mutual TLS (the
//       service's own internal certificate will do: readiness needs only the
//       handshake, no call), and the server certificate must be valid for the
//       identity named by the certificate's own CN.
//   node deploy/scripts/healthcheck.js http URL
//       exit 0 when GET URL answers 200 (the controller-manager's /readyz).
//   node deploy/scripts/healthcheck.js https URL [CA_FILE [CERT_FILE KEY_FILE]]
//       exit 0 when GET URL answers 200, verifying the server against CA_FILE
//       and presenting the client certificate when given (the gateway's
//       /readyz, which checks every backend, etcd and NATS).
//
// Anything else, or no answer within 3 seconds, exits 1.
'use strict';
const fs = require('node:fs');

const TIMEOUT_MS = 3000;

function fail(message) {
  process.stderr.write(`healthcheck: ${message}\n`);
  process.exit(1);
}

function commonName(certPem) {
  const { X509Certificate } = require('node:crypto');
  const m = /(?:^|\n)CN=([^\n]+)/.exec(new X509Certificate(certPem).subject);
  return m ? m[1] : undefined;
}

function grpcReady(target, caFile, certFile, keyFile) {
  const grpc = require('@grpc/grpc-js');
  let credentials = grpc.credentials.createInsecure();
  const options = {};
  if (caFile && certFile && keyFile) {
    const cert = fs.readFileSync(certFile);
    credentials = grpc.credentials.createSsl(fs.readFileSync(caFile), fs.readFileSync(keyFile), cert);
    const name = commonName(cert);
    if (name) options['grpc.ssl_target_name_override'] = name;
  }
  const client = new grpc.Client(target, credentials, options);
  const timer = setTimeout(() => fail(`${target}: no answer in ${TIMEOUT_MS} ms`), TIMEOUT_MS + 500);
  client.waitForReady(Date.now() + TIMEOUT_MS, (err) => {
    clearTimeout(timer);
    client.close();
    if (err) fail(`${target}: ${err.message}`);
    process.exit(0);
  });
}

function httpsOk(url, caFile, certFile, keyFile) {
  const https = require('node:https');
  const options = { timeout: TIMEOUT_MS };
  if (caFile) options.ca = fs.readFileSync(caFile);
  if (certFile && keyFile) {
    options.cert = fs.readFileSync(certFile);
    options.key = fs.readFileSync(keyFile);
  }
  const req = https.get(url, options, (res) => {
    res.resume();
    if (res.statusCode === 200) process.exit(0);
    fail(`${url}: HTTP ${res.statusCode}`);
  });
  req.on('timeout', () => req.destroy(new Error(`no answer in ${TIMEOUT_MS} ms`)));
  req.on('error', (err) => fail(`${url}: ${err.message}`));
}

function httpOk(url) {
  const http = require('node:http');
  const req = http.get(url, { timeout: TIMEOUT_MS }, (res) => {
    res.resume();
    if (res.statusCode === 200) process.exit(0);
    fail(`${url}: HTTP ${res.statusCode}`);
  });
  req.on('timeout', () => req.destroy(new Error(`no answer in ${TIMEOUT_MS} ms`)));
  req.on('error', (err) => fail(`${url}: ${err.message}`));
}

const [mode, target, ...rest] = process.argv.slice(2);
if (mode === 'grpc' && target) grpcReady(target, rest[0], rest[1], rest[2]);
else if (mode === 'http' && target) httpOk(target);
else if (mode === 'https' && target) httpsOk(target, rest[0], rest[1], rest[2]);
else fail('usage: healthcheck.js grpc HOST:PORT [CA_FILE CERT_FILE KEY_FILE] | healthcheck.js http URL | healthcheck.js https URL [CA_FILE [CERT_FILE KEY_FILE]]');
