import { FlagError } from '@svc/service-kit';
import { checkAdvertiseAddress, defaultAdvertiseAddress, firstServiceIP, ipFamilyOf } from './service-ip';

describe('the service IP range', () => {
  it('gives the kubernetes Service its first address, as the original', () => {
    expect(firstServiceIP('10.0.0.0/24')).toBe('10.0.0.1');
    expect(firstServiceIP('10.96.0.0/12')).toBe('10.96.0.1');
    expect(firstServiceIP('10.96.7.9/12')).toBe('10.96.0.1');
    expect(firstServiceIP('fd00:10:96::/108,10.0.0.0/24')).toBe('fd00:10:96::1');
    expect(firstServiceIP('fd00::/64')).toBe('fd00::1');
    expect(ipFamilyOf('fd00::1')).toBe('IPv6');
    expect(ipFamilyOf('10.0.0.1')).toBe('IPv4');
  });

  it('refuses what is not a usable CIDR', () => {
    for (const bad of ['10.0.0.0', '10.0.0.0/33', 'x/24', '10.0.0.0/', '10.0.0.0/31', '']) expect(() => firstServiceIP(bad)).toThrow(FlagError);
  });
});

describe('the advertised address', () => {
  const interfaces = { lo: [{ family: 'IPv4', address: '127.0.0.1', internal: true }], eth0: [{ family: 'IPv4', address: '172.18.0.2', internal: false }] } as unknown as Parameters<typeof defaultAdvertiseAddress>[1];

  it('is the listen address, or for a wildcard the first external IPv4 address', () => {
    expect(defaultAdvertiseAddress('127.0.0.1', interfaces)).toBe('127.0.0.1');
    expect(defaultAdvertiseAddress('[::1]', interfaces)).toBe('::1');
    expect(defaultAdvertiseAddress('0.0.0.0', interfaces)).toBe('172.18.0.2');
    expect(defaultAdvertiseAddress('', interfaces)).toBe('172.18.0.2');
    expect(defaultAdvertiseAddress('0.0.0.0', {})).toBe('127.0.0.1');
  });

  it('must be one IP when given', () => {
    expect(checkAdvertiseAddress('10.1.2.3')).toBe('10.1.2.3');
    for (const bad of ['0.0.0.0', 'gateway.local', '10.1.2.3/32']) expect(() => checkAdvertiseAddress(bad)).toThrow(FlagError);
  });
});
