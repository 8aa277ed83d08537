import { TtlCache } from './ttl-cache';

describe('TtlCache', () => {
  let clock = 0;
  const now = () => clock;

  beforeEach(() => {
    clock = 1000;
  });

  it('returns a value until its time to live has passed', () => {
    const cache = new TtlCache<string>(100, 10, now);
    cache.set('a', 'x');
    clock += 99;
    expect(cache.get('a')).toBe('x');
    clock += 1;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('drops the oldest entry when full', () => {
    const cache = new TtlCache<number>(1000, 2, now);
    cache.set('a', 1);
    cache.set('b', 2);
    cache.set('c', 3);
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([undefined, 2, 3]);
  });

  it('stores nothing with a time to live of zero', () => {
    const cache = new TtlCache<number>(0, 10, now);
    cache.set('a', 1);
    expect(cache.get('a')).toBeUndefined();
    expect(cache.enabled).toBe(false);
  });
});
