import { INTERNAL_TLS_FLAGS, SHOW_HIDDEN_METRICS_FLAGS, listFlag, type FlagSpecs, type ParsedFlags } from '@svc/service-kit';
import { NATS_TLS_FLAGS } from '@svc/watch-fanout/client';
import { AUDIT_FLAGS } from './audit/flags';

export const GATEWAY_FLAGS: FlagSpecs = {
  ...SHOW_HIDDEN_METRICS_FLAGS,
  ...INTERNAL_TLS_FLAGS,
  listen: { description: 'HTTPS listen address (host:port)', default: '127.0.0.1:6443' },
  'tls-cert-file': { description: 'Serving certificate (PEM)', required: true },
  'tls-private-key-file': { description: 'Serving certificate key (PEM)', required: true },
  'client-ca-file': { description: 'CA bundle that verifies client certificates', default: '' },
  'storage-address': { description: 'Storage service address', default: '127.0.0.1:7101' },
  'authn-address': { description: 'Authentication service address', default: '127.0.0.1:7102' },
  'authz-address': { description: 'Authorization service address', default: '127.0.0.1:7103' },
  'admission-address': { description: 'Admission service address', default: '127.0.0.1:7104' },
  'watch-fanout-address': { description: 'Watch fan-out replica addresses, comma-separated (calls take turns and skip an unavailable one)', default: '127.0.0.1:7105' },
  'nats-url': { description: 'NATS server URL', default: 'tls://127.0.0.1:4222' },
  ...NATS_TLS_FLAGS,
  'requestheader-username-headers': { description: "The authenticating proxy's username headers (as authn's flag; comma-separated, repeatable), forwarded to authn; X-Remote-* is always forwarded", repeated: true, default: '' },
  'requestheader-uid-headers': { description: "The authenticating proxy's uid headers (comma-separated, repeatable), forwarded to authn", repeated: true, default: '' },
  'requestheader-group-headers': { description: "The authenticating proxy's group headers (comma-separated, repeatable), forwarded to authn", repeated: true, default: '' },
  'requestheader-extra-headers-prefix': { description: "The authenticating proxy's extra header prefixes (comma-separated, repeatable), forwarded to authn", repeated: true, default: '' },
  'authentication-cache-ttl-seconds': { description: 'How long a successful authentication is reused for the same credentials (0 disables)', default: '10' },
  'authorization-cache-ttl-seconds': { description: 'How long an authorization decision is reused for the same user and request attributes (0 disables); also how long a policy change may take to reach this gateway', default: '1' },
  'request-timeout': {
    description:
      "The longest a request that is not long-running (not a watch, exec, attach, port-forward, proxy or followed log) may take; a request's `timeout` parameter may shorten it. Past it the client gets a 504 Timeout; a quarter of it bounds the wait in a priority level's queue",
    default: '1m0s',
  },
  'max-request-bytes': { description: 'Largest request body accepted', default: String(3 * 1024 * 1024) },
  'enable-priority-and-fairness': {
    description: 'Dispatch requests by API Priority and Fairness (FlowSchemas and PriorityLevelConfigurations of flowcontrol.svc.io/v1); false: the max-in-flight limits alone',
    boolean: true,
    default: 'true',
  },
  'max-requests-inflight': {
    description: 'Without priority and fairness, the read-only requests served at once (more are 429; 0: no limit); with it, this plus --max-mutating-requests-inflight is the seats the priority levels share',
    default: '400',
  },
  'max-mutating-requests-inflight': { description: 'Without priority and fairness, the mutating requests served at once (more are 429; 0: no limit); see --max-requests-inflight', default: '200' },
  'max-watches': { description: 'Watches served at once; more are answered 429 with Retry-After', default: '10000' },
  'watch-buffer-bytes': { description: 'Bytes a watch may hold unsent (a slow client) before it is ended; the client re-watches from its last resourceVersion', default: String(16 * 1024 * 1024) },
  'watch-cache': { description: 'Keep every resource read through this gateway in memory and answer lists, resourceVersion=0 reads and watches from it (false: every read goes to storage)', default: 'true' },
  'watch-write-interval-ms': { description: 'When a change reaches more than 100 watchers at once, how long their events may wait to leave each socket together with the next ones (one write per interval per watcher); smaller fan-outs and 0 write at the end of the event loop turn', default: '50' },
  'watch-cache-window': { description: 'Changes of each resource the watch cache keeps for paged lists and resumed watches', default: '10000' },
  'admission-timeout-seconds': { description: 'Deadline of admission for one write: every mutating and validating webhook and policy it passes (each webhook is also bounded by its own timeoutSeconds); past it the request fails with a 504', default: '60' },
  'conversion-webhook-timeout-seconds': { description: "Deadline of one call to a custom resource definition's conversion webhook; past it the request fails with a 500 naming the webhook", default: '30' },
  'http2-max-streams-per-connection': { description: 'Streams a client may have open at once on one HTTP/2 connection (more are refused by the protocol); 0 uses the default, 100', default: '0' },
  'authorization-always-allow-paths': { description: 'Comma-separated paths served without authentication or authorization', default: '/healthz,/livez,/readyz' },
  'shutdown-delay-duration': {
    description: 'After the stop signal, how long /readyz fails while requests are still served (so a load balancer drains the instance) before new requests are refused (e.g. 5s)',
    default: '0s',
  },
  'shutdown-send-retry-after': {
    description: 'While draining, refuse new requests with 429 and Retry-After (and keep listening) instead of closing the listener',
    boolean: true,
    default: 'false',
  },
  'advertise-address': {
    description: 'The IP address this gateway is reached at, listed in the Endpoints of the default/kubernetes Service; defaults to the --listen address, or for a wildcard the first non-loopback IPv4 address of the machine',
    default: '',
  },
  'service-cluster-ip-range': { description: 'CIDR of Service cluster IPs; its first address is the ClusterIP of the default/kubernetes Service, which no other Service may take', default: '10.0.0.0/24' },
  'endpoint-reconciler-type': {
    description: 'How the default/kubernetes Service and its Endpoints are kept: lease (every gateway renews a Lease in svc-system and lists the live ones) or none',
    default: 'lease',
  },
  'endpoint-reconciler-interval': { description: 'How often a gateway renews its endpoint Lease and reconciles the default/kubernetes Service and Endpoints', default: '10s' },
  'endpoint-lease-duration': { description: 'How long a gateway stays in the default/kubernetes Endpoints after its last Lease renewal (longer than the interval)', default: '15s' },
  'tracing-config-file': {
    description:
      'TracingConfiguration (apiserver.config.svc.io/v1: endpoint, samplingRatePerMillion) of the OpenTelemetry traces the gateway sends over OTLP/HTTP; without it (and without OTEL_EXPORTER_OTLP_ENDPOINT) nothing is traced',
    default: '',
  },
  ...AUDIT_FLAGS,
};

/**
 * The authenticating proxy's headers to forward to authn besides the
 * built-in credential headers: lower-cased (header names are
 * case-insensitive, and Node hands them to the filters lower-cased).
 */
export function proxyHeadersFromFlags(flags: ParsedFlags): { names: string[]; prefixes: string[] } {
  const lower = (name: string) => listFlag(flags, name).map((v) => v.toLowerCase());
  return {
    names: ['requestheader-username-headers', 'requestheader-uid-headers', 'requestheader-group-headers'].flatMap(lower),
    prefixes: lower('requestheader-extra-headers-prefix'),
  };
}
