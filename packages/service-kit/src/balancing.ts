import * as grpc from '@grpc/grpc-js';

/**
 * Internal clients balance their calls round-robin over every replica of a
 * service (grpc-js otherwise picks the first address and stays there). An
 * address given to a client takes one of these forms:
 *
 * - `host:port` or `dns:///host:port`: every address the name resolves to
 *   (a Kubernetes headless Service resolves to each ready pod), resolved
 *   again when a connection ends (servers end them after
 *   MAX_CONNECTION_AGE_MS) or fails, so replicas that come and go are
 *   followed;
 * - a comma-separated list of those (`storage-0:7101,storage-1:7101`):
 *   the union of what each entry resolves to.
 *
 * The TLS check is unaffected: the server must hold the certificate of the
 * identity called, whichever address it was reached at (internal-tls.ts).
 */

/** The scheme of a list of targets, resolved entry by entry (registered on first use). */
const LIST_SCHEME = 'svc-list';

/** Channel options of every internal client: round-robin, and no service config from DNS TXT records. */
export const BALANCING_OPTIONS: grpc.ChannelOptions = {
  'grpc.service_config': JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
  'grpc.service_config_disable_resolution': 1,
};

/** The entries of an address flag's value (`a:1, dns:///b:2` → two entries). */
export function addressEntries(address: string): string[] {
  return address
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
}

const DNS_PREFIX = 'dns:///';

/** One entry's `host:port`, or an error naming what is wrong with it. */
function hostPortOf(entry: string): string {
  const hostPort = entry.startsWith(DNS_PREFIX) ? entry.slice(DNS_PREFIX.length) : entry;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(hostPort) || !/^(\[[0-9a-f:.]+\]|[^:/\s[\]]+):\d{1,5}$/i.test(hostPort)) {
    throw new Error(`${JSON.stringify(entry)} is not host:port or dns:///host:port`);
  }
  return hostPort;
}

/**
 * The grpc-js target for an address flag's value: one entry as it is
 * (grpc-js resolves `host:port` through DNS too), several as a list
 * resolved entry by entry. Throws on an empty value or an entry that is not host:port.
 */
export function balancedTarget(address: string): string {
  const entries = addressEntries(address);
  if (entries.length === 0) throw new Error('an address is needed (host:port, dns:///host:port, or a comma-separated list of them)');
  const hostPorts = entries.map(hostPortOf);
  // grpc-js resolves a target without a scheme through DNS as well.
  if (entries.length === 1) return entries[0] as string;
  registerListResolver();
  return `${LIST_SCHEME}:///${hostPorts.join(',')}`;
}

type Endpoint = grpc.experimental.Endpoint;
type ResolverListener = grpc.experimental.ResolverListener;
type Resolution = Parameters<ResolverListener>[0];

/** Resolves each entry of the list with grpc-js's DNS resolver and reports the union. */
class ListResolver implements grpc.experimental.Resolver {
  private readonly children: grpc.experimental.Resolver[];
  private readonly latest: Array<Resolution | undefined>;

  constructor(target: grpc.experimental.GrpcUri, listener: ResolverListener, options: grpc.ChannelOptions) {
    const hostPorts = target.path.split(',').filter(Boolean);
    this.latest = hostPorts.map(() => undefined);
    this.children = hostPorts.map((path, i) =>
      grpc.experimental.createResolver(
        { scheme: 'dns', authority: '', path },
        (result) => {
          this.latest[i] = result;
          return listener(this.merged(), {}, null, '');
        },
        options,
      ),
    );
  }

  /** Every endpoint an entry resolved to; an error only when no entry resolved. */
  private merged(): Resolution {
    const endpoints: Endpoint[] = [];
    let error: Resolution | undefined;
    for (const r of this.latest) {
      if (r?.ok) endpoints.push(...r.value);
      else if (r) error ??= r;
    }
    return endpoints.length === 0 && error ? error : { ok: true, value: endpoints };
  }

  updateResolution(): void {
    for (const c of this.children) c.updateResolution();
  }

  destroy(): void {
    for (const c of this.children) c.destroy();
  }

  static getDefaultAuthority(target: grpc.experimental.GrpcUri): string {
    const first = target.path.split(',')[0] ?? '';
    return first.slice(0, first.lastIndexOf(':')).replace(/^\[|\]$/g, '');
  }
}

let registered = false;

function registerListResolver(): void {
  if (registered) return;
  registered = true;
  grpc.experimental.registerResolver(LIST_SCHEME, ListResolver);
}
