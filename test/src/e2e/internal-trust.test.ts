import * as fs from 'node:fs';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { Etcd3 } from 'etcd3';
import { connect, type NatsConnection } from 'nats';
import { admission, authn, authz, storage, watch } from '@svc/proto';
import { channelTo, loadInternalTls, type InternalTls } from '@svc/service-kit';
import { ensureInternalPki, startEnvironment, type Environment, type InternalIdentity } from '@svc/testenv';
import { run } from './helpers';
import { adminRequest } from './http';

/**
 * Every internal edge of the running system accepts only the identities its
 * role needs: the gRPC services (no certificate, another CA, or another
 * identity of the right CA are refused), etcd (only with a client
 * certificate), NATS (nobody but watch-fanout publishes change events).
 * The API through the gateway keeps working.
 */
describe('internal trust boundaries', () => {
  let env: Environment;
  let strangerDir: string;
  const tlsOf = (identity: InternalIdentity): InternalTls =>
    loadInternalTls({ caFile: env.internalPki.caCert, certFile: env.internalPki.identities[identity].cert, keyFile: env.internalPki.identities[identity].key });

  beforeAll(async () => {
    env = await startEnvironment();
    strangerDir = fs.mkdtempSync(`${env.dir}/stranger-`);
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  type Probe = (client: grpc.Client) => Promise<number>;
  const unaryCode = <Req>(call: (req: Req, md: grpc.Metadata, opts: Partial<grpc.CallOptions>, cb: (err: grpc.ServiceError | null) => void) => unknown, req: Req): Promise<number> =>
    new Promise((resolve) => {
      call(req, new grpc.Metadata(), { deadline: Date.now() + 5000 }, (err) => resolve(err ? err.code : grpc.status.OK));
    });
  const targets: Array<{ name: string; identity: InternalIdentity; address: () => string; make: (address: string, credentials: grpc.ChannelCredentials, options: grpc.ClientOptions) => grpc.Client; probe: Probe }> = [
    {
      name: 'storage',
      identity: 'storage',
      address: () => env.addresses['storage'] as string,
      make: (a, c, o) => new storage.StorageClient(a, c, o),
      probe: (c) => unaryCode((c as storage.StorageClient).currentRevision.bind(c), {}),
    },
    {
      name: 'authz',
      identity: 'authz',
      address: () => env.addresses['authz'] as string,
      make: (a, c, o) => new authz.AuthzClient(a, c, o),
      probe: (c) => unaryCode((c as authz.AuthzClient).authorize.bind(c), { user: undefined, resourceRequest: false, verb: 'get', path: '/', apiGroup: '', apiVersion: '', resource: '', subresource: '', namespace: '', name: '' } as authz.AuthorizeRequest),
    },
    {
      name: 'authn',
      identity: 'authn',
      address: () => env.addresses['authn'] as string,
      make: (a, c, o) => new authn.AuthnClient(a, c, o),
      probe: (c) => unaryCode((c as authn.AuthnClient).authenticate.bind(c), authn.AuthenticateRequest.fromPartial({})),
    },
    {
      name: 'admission',
      identity: 'admission',
      address: () => env.addresses['admission'] as string,
      make: (a, c, o) => new admission.AdmissionClient(a, c, o),
      probe: (c) => unaryCode((c as admission.AdmissionClient).admit.bind(c), admission.AdmitRequest.fromPartial({})),
    },
    {
      name: 'watch-fanout',
      identity: 'watch-fanout',
      address: () => env.addresses['watch-fanout'] as string,
      make: (a, c, o) => new watch.WatchFanoutClient(a, c, o),
      probe: (c) => unaryCode((c as watch.WatchFanoutClient).head.bind(c), {}),
    },
  ];

  test.each(targets.map((t) => [t.name, t] as const))('%s: the gateway is served; no certificate, another CA and another identity are refused', async (_name, target) => {
    const call = async (credentials: grpc.ChannelCredentials, options: grpc.ClientOptions): Promise<number> => {
      const client = target.make(target.address(), credentials, options);
      try {
        return await target.probe(client);
      } finally {
        client.close();
      }
    };
    const [address, credentials, options] = channelTo(target.address(), target.identity, tlsOf('gateway'));
    expect(address).toBe(target.address());
    // authz answers a request without a user with its own error; what matters is that the call got through.
    const asGateway = await call(credentials, options);
    expect(asGateway === grpc.status.OK || asGateway === grpc.status.INVALID_ARGUMENT || asGateway === grpc.status.UNKNOWN).toBe(true);
    const nameOverride = { 'grpc.ssl_target_name_override': target.identity };
    expect(await call(grpc.credentials.createInsecure(), {})).toBe(grpc.status.UNAVAILABLE);
    expect(await call(grpc.credentials.createSsl(tlsOf('gateway').ca), nameOverride)).toBe(grpc.status.UNAVAILABLE);
    const stranger = (await ensureInternalPki(strangerDir)).identities.gateway;
    expect(await call(grpc.credentials.createSsl(tlsOf('gateway').ca, fs.readFileSync(stranger.key), fs.readFileSync(stranger.cert)), nameOverride)).toBe(grpc.status.UNAVAILABLE);
    // A certificate of the right CA but another role: storage may call nobody, authn only storage.
    const other: InternalIdentity = target.name === 'storage' ? 'storage' : 'authn';
    expect(await call(...(channelTo(target.address(), target.identity, tlsOf(other)).slice(1) as [grpc.ChannelCredentials, grpc.ClientOptions]))).toBe(grpc.status.PERMISSION_DENIED);
    // Storage also serves the services that read objects: admission, watch-fanout, authn (service-account lookup)
    // and authz (RBAC policy); watch-fanout also serves authz and admission (policy and admission configuration
    // changes); authz also serves admission (the authorizer of CEL expressions).
    const readers: Record<string, InternalIdentity[]> = { storage: ['admission', 'watch-fanout', 'authn', 'authz'], 'watch-fanout': ['authz', 'admission'], authz: ['admission'] };
    if (readers[target.name]) {
      for (const caller of readers[target.name] as InternalIdentity[]) {
        const code = await call(...(channelTo(target.address(), target.identity, tlsOf(caller)).slice(1) as [grpc.ChannelCredentials, grpc.ClientOptions]));
        // As for the gateway: authz answers the empty request with its own error; the call got through.
        expect(target.name === 'authz' ? [grpc.status.OK, grpc.status.INVALID_ARGUMENT, grpc.status.UNKNOWN] : [grpc.status.OK]).toContain(code);
      }
    }
  });

  test("the deployments' gRPC health check passes with a service's own certificate and fails without", async () => {
    const check = path.join(__dirname, '..', '..', '..', 'deploy', 'scripts', 'healthcheck.js');
    const own = env.internalPki.identities.storage;
    expect((await run(process.execPath, [check, 'grpc', env.addresses['storage'] as string, env.internalPki.caCert, own.cert, own.key])).code).toBe(0);
    expect((await run(process.execPath, [check, 'grpc', env.addresses['storage'] as string])).code).toBe(1);
  });

  test('etcd refuses a client without a certificate, and serves storage', async () => {
    const noCert = new Etcd3({ hosts: env.etcd.endpoint, credentials: { rootCertificate: fs.readFileSync(env.internalPki.caCert) }, dialTimeout: 2000, faultHandling: {} });
    await expect(noCert.get('/registry/namespaces/default').string()).rejects.toThrow();
    noCert.close();
    const plain = new Etcd3({ hosts: env.etcd.endpoint.replace('https:', 'http:'), dialTimeout: 2000 });
    await expect(plain.get('/registry/namespaces/default').string()).rejects.toThrow();
    plain.close();
    const own = env.internalPki.identities.storage;
    const asStorage = new Etcd3({
      hosts: env.etcd.endpoint,
      credentials: { rootCertificate: fs.readFileSync(env.internalPki.caCert), certChain: fs.readFileSync(own.cert), privateKey: fs.readFileSync(own.key) },
    });
    expect(await asStorage.get('/registry/namespaces/default').string()).toContain('"name":"default"');
    asStorage.close();
  });

  test('on NATS nobody but watch-fanout publishes a change event: the gateway user and strangers are refused', async () => {
    const tlsFiles = (identity: InternalIdentity) => ({ caFile: env.internalPki.caCert, certFile: env.internalPki.identities[identity].cert, keyFile: env.internalPki.identities[identity].key });
    // The gateway's own user: it may read, but a forged publish is a permissions violation, and the JetStream API is closed to it.
    const gateway: NatsConnection = await connect({ servers: env.nats.url, tls: tlsFiles('gateway') });
    const violations: string[] = [];
    void (async () => {
      for await (const s of gateway.status()) if (s.type === 'error') violations.push(String(s.data));
    })();
    gateway.publish('svc.changes.configmaps.core', new Uint8Array([1, 2, 3]));
    await gateway.flush();
    await new Promise((r) => setTimeout(r, 300));
    expect(violations.join(' ')).toMatch(/PERMISSIONS_VIOLATION/);
    await expect((async () => (await gateway.jetstreamManager()).streams.delete('SVC_CHANGES'))()).rejects.toThrow(/Permissions Violation/);
    await gateway.close();
    // No certificate, or a certificate NATS maps to no user.
    await expect(connect({ servers: env.nats.url, tls: { caFile: env.internalPki.caCert }, timeout: 2000, reconnect: false })).rejects.toThrow();
    await expect(connect({ servers: env.nats.url, tls: tlsFiles('storage'), timeout: 2000, reconnect: false })).rejects.toThrow(/Authorization Violation/);
    // The stream and the API are untouched.
    expect((await adminRequest(env, 'GET', '/readyz')).status).toBe(200);
    expect((await adminRequest(env, 'POST', '/api/v1/namespaces/default/configmaps', JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'still-works' } }))).status).toBe(201);
  });
});
