import { benchApply } from './apply';

describe('bench', () => {
  test('benchApply applies a 200-field object from three managers and reports percentiles', () => {
    const r = benchApply(30);
    expect(r.iterations).toBe(30);
    expect(r.fields).toBeGreaterThanOrEqual(200);
    expect(r.p50Ms).toBeGreaterThan(0);
    expect(r.p99Ms).toBeGreaterThanOrEqual(r.p50Ms);
  });
});
