import * as net from 'node:net';
import * as os from 'node:os';
import { FlagError } from '@svc/service-kit';

/**
 * Addresses the gateway derives from its flags: the ClusterIP of the
 * `default/kubernetes` Service (the first address of the service IP range,
 * as the original reserves it) and the address the gateway advertises as
 * an endpoint of that Service.
 */

/** The Service every cluster has in `default`, whose address is the service range's first. */
export const KUBERNETES_SERVICE_NAME = 'kubernetes';

/** The original server's default `--service-cluster-ip-range`. */
export const DEFAULT_SERVICE_CLUSTER_IP_RANGE = '10.0.0.0/24';

const IPV4_BITS = 32;
const IPV6_BITS = 128;

function ipv4ToBigInt(ip: string): bigint {
  return ip.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

function bigIntToIpv4(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn)).join('.');
}

function ipv6ToBigInt(ip: string): bigint {
  const [head = '', tail] = ip.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.reduce((acc, group) => (acc << 16n) | BigInt(parseInt(group, 16)), 0n);
}

/** The canonical text of an IPv6 address (RFC 5952: lower case, the longest run of zero groups as `::`). */
function bigIntToIpv6(value: bigint): string {
  const groups = Array.from({ length: 8 }, (_, i) => Number((value >> BigInt(112 - 16 * i)) & 0xffffn));
  let best = { start: -1, length: 0 };
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best.length && j - i > 1) best = { start: i, length: j - i };
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best.start < 0) return hex.join(':');
  return `${hex.slice(0, best.start).join(':')}::${hex.slice(best.start + best.length).join(':')}`;
}

/**
 * The first address of `--service-cluster-ip-range` (its primary range when
 * two are given, comma-separated): the network address plus one, which the
 * original gives the `kubernetes` Service. Refuses a range that is not a CIDR
 * or too small to hold a service address.
 */
export function firstServiceIP(flagValue: string): string {
  const primary = (flagValue.split(',')[0] ?? '').trim();
  const slash = primary.indexOf('/');
  const address = slash < 0 ? primary : primary.slice(0, slash);
  const prefix = slash < 0 ? NaN : Number(primary.slice(slash + 1));
  const family = net.isIP(address);
  const bits = family === 4 ? IPV4_BITS : IPV6_BITS;
  if (family === 0 || !/^[0-9]+$/.test(primary.slice(slash + 1)) || prefix > bits) {
    throw new FlagError(`--service-cluster-ip-range: ${JSON.stringify(flagValue)} is not a valid CIDR (for example 10.0.0.0/24)`);
  }
  if (bits - prefix < 2) throw new FlagError(`--service-cluster-ip-range: ${primary} is too small: it must hold at least one service address`);
  const value = family === 4 ? ipv4ToBigInt(address) : ipv6ToBigInt(address);
  const hostBits = BigInt(bits - prefix);
  const network = (value >> hostBits) << hostBits;
  return family === 4 ? bigIntToIpv4(network + 1n) : bigIntToIpv6(network + 1n);
}

/** The IP family of an address, as Service `spec.ipFamilies` names it. */
export function ipFamilyOf(ip: string): 'IPv4' | 'IPv6' {
  return net.isIPv6(ip) ? 'IPv6' : 'IPv4';
}

function unspecified(host: string): boolean {
  return host === '' || host === '0.0.0.0' || host === '::' || host === '[::]';
}

/**
 * `--advertise-address` when it is unset: the listen address when it names
 * one IP; for a wildcard (or a host name) the first non-loopback IPv4
 * address of the machine's interfaces (as the original picks a default
 * route's address), else 127.0.0.1.
 */
export function defaultAdvertiseAddress(listenHost: string, interfaces: NodeJS.Dict<os.NetworkInterfaceInfo[]> = os.networkInterfaces()): string {
  const host = listenHost.replace(/^\[(.*)\]$/, '$1');
  if (!unspecified(host) && net.isIP(host) !== 0) return host;
  for (const infos of Object.values(interfaces)) {
    const found = (infos ?? []).find((info) => info.family === 'IPv4' && !info.internal);
    if (found) return found.address;
  }
  return '127.0.0.1';
}

/** Checks `--advertise-address`: one IP address, not a wildcard. */
export function checkAdvertiseAddress(value: string): string {
  if (net.isIP(value) === 0 || unspecified(value)) throw new FlagError(`--advertise-address: ${JSON.stringify(value)} must be a single IP address`);
  return value;
}
