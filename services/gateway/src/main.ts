import { ResourceRegistry } from '@svc/apimachinery';
import { registerBuiltins } from '@svc/kinds';
import { AggregatedDiscovery, OpenApiDocuments } from '@svc/openapi';
import { ProtobufObjectCodec } from '@svc/protobuf-codec';
import { FlagError, internalTlsFromFlags, parseDuration, runMain, type ParsedFlags } from '@svc/service-kit';
import { natsTlsFromFlags } from '@svc/watch-fanout/client';
import { auditOptionsFromFlags } from './audit/flags';
import { GATEWAY_FLAGS, proxyHeadersFromFlags } from './flags';
import { start, type DefaultServiceConfig } from './server';
import { requestTimeoutFlag } from './request-timeout';
import { checkAdvertiseAddress, defaultAdvertiseAddress, firstServiceIP } from './service-ip';

/** The default/kubernetes Service's flags, checked; with `--endpoint-reconciler-type=none` only the Service is kept. */
function defaultServiceFromFlags(flags: ParsedFlags): DefaultServiceConfig {
  const type = flags.get('endpoint-reconciler-type');
  if (type !== 'lease' && type !== 'none') throw new FlagError(`--endpoint-reconciler-type: ${JSON.stringify(type)} is not supported (lease or none)`);
  const serviceIP = firstServiceIP(flags.get('service-cluster-ip-range'));
  const listen = flags.get('listen');
  const advertised = flags.get('advertise-address');
  const advertiseAddress = advertised ? checkAdvertiseAddress(advertised) : defaultAdvertiseAddress(listen.slice(0, listen.lastIndexOf(':')));
  const intervalMs = parseDuration(flags.get('endpoint-reconciler-interval'), 'endpoint-reconciler-interval');
  const leaseDurationMs = parseDuration(flags.get('endpoint-lease-duration'), 'endpoint-lease-duration');
  if (intervalMs <= 0) throw new FlagError('--endpoint-reconciler-interval: must be greater than 0');
  if (leaseDurationMs <= intervalMs) throw new FlagError('--endpoint-lease-duration: must be longer than --endpoint-reconciler-interval, or live gateways drop out between renewals');
  return { serviceIP, advertiseAddress, intervalMs, leaseDurationMs, endpoints: type === 'lease' };
}

// Async: a flag or file the gateway cannot use (an audit policy) refuses the start as a failed start, with its message.
runMain('gateway', GATEWAY_FLAGS, async (flags) => {
  const registry = new ResourceRegistry();
  registerBuiltins(registry);
  const openapi = new OpenApiDocuments(registry);
  const discovery = new AggregatedDiscovery(registry);
  const config: Parameters<typeof start>[0] = {
    listen: flags.get('listen'),
    internalTls: internalTlsFromFlags(flags),
    tlsCertFile: flags.get('tls-cert-file'),
    tlsKeyFile: flags.get('tls-private-key-file'),
    storageAddress: flags.get('storage-address'),
    authnAddress: flags.get('authn-address'),
    authzAddress: flags.get('authz-address'),
    admissionAddress: flags.get('admission-address'),
    watchFanoutAddress: flags.get('watch-fanout-address'),
    natsUrl: flags.get('nats-url'),
    natsTls: natsTlsFromFlags(flags),
    registry,
    protobuf: new ProtobufObjectCodec(),
    documents: {
      openApiV2: () => openapi.v2(),
      openApiV2Json: () => openapi.v2Json(),
      openApiV2Protobuf: () => openapi.v2Protobuf(),
      openApiV3Index: () => openapi.v3Discovery(),
      openApiV3GroupVersion: (_registry, group, version) => openapi.v3(group, version)?.document,
      aggregatedDiscovery: (_registry, scope) => discovery.document(scope),
    },
    limits: {
      maxBodyBytes: flags.getInt('max-request-bytes'),
      authnCacheTtlMs: flags.getInt('authentication-cache-ttl-seconds') * 1000,
      authzCacheTtlMs: flags.getInt('authorization-cache-ttl-seconds') * 1000,
      maxWatches: flags.getInt('max-watches'),
      watchBufferBytes: flags.getInt('watch-buffer-bytes'),
      admissionTimeoutMs: flags.getInt('admission-timeout-seconds') * 1000,
      conversionWebhookTimeoutMs: flags.getInt('conversion-webhook-timeout-seconds') * 1000,
      watchWriteIntervalMs: flags.getInt('watch-write-interval-ms'),
      requestTimeoutMs: requestTimeoutFlag(flags.get('request-timeout')),
    },
    alwaysAllowPaths: flags.get('authorization-always-allow-paths').split(',').filter(Boolean),
    proxyHeaders: proxyHeadersFromFlags(flags),
    http2MaxStreamsPerConnection: flags.getInt('http2-max-streams-per-connection'),
    watchCache: flags.getBool('watch-cache') && { windowChanges: flags.getInt('watch-cache-window') },
    flowControl: {
      enabled: flags.getBool('enable-priority-and-fairness'),
      maxRequestsInflight: flags.getInt('max-requests-inflight'),
      maxMutatingRequestsInflight: flags.getInt('max-mutating-requests-inflight'),
    },
    defaultService: defaultServiceFromFlags(flags),
    shutdown: { delayMs: parseDuration(flags.get('shutdown-delay-duration'), 'shutdown-delay-duration'), sendRetryAfter: flags.getBool('shutdown-send-retry-after') },
  };
  if (flags.get('client-ca-file')) config.clientCaFile = flags.get('client-ca-file');
  const audit = auditOptionsFromFlags(flags);
  if (audit) config.audit = audit;
  return start(config);
});
