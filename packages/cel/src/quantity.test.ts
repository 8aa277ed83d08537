import { compile } from './index';
import { asInt64, compareQuantities, parseQuantity, type Quantity } from '@svc/apimachinery';

function run(source: string): unknown {
  const outcome = compile(source, { field: 'f', variables: {} }).evaluate({});
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}

function q(text: string): Quantity {
  const parsed = parseQuantity(text);
  if (!parsed) throw new Error(`not a quantity: ${text}`);
  return parsed;
}

/** The value as `coefficient e exponent`, normalized. */
function value(text: string): string {
  const parsed = q(text);
  return `${parsed.coefficient}e${parsed.exponent}`;
}

describe('parsing quantities', () => {
  test('plain numbers: sign, fraction, leading zeros', () => {
    expect(value('0')).toBe('0e0');
    expect(value('12')).toBe('12e0');
    expect(value('+12')).toBe('12e0');
    expect(value('-12')).toBe('-12e0');
    expect(value('1.5')).toBe('15e-1');
    expect(value('.5')).toBe('5e-1');
    expect(value('1.')).toBe('1e0');
    expect(value('007')).toBe('7e0');
    expect(value('-0.0')).toBe('0e0');
  });

  test('every decimal suffix', () => {
    const suffixes: [string, number][] = [['n', -9], ['u', -6], ['m', -3], ['', 0], ['k', 3], ['M', 6], ['G', 9], ['T', 12], ['P', 15], ['E', 18]];
    for (const [suffix, exponent] of suffixes) expect(value(`3${suffix}`)).toBe(`3e${exponent}`);
  });

  test('every binary suffix', () => {
    const suffixes: [string, bigint][] = [['Ki', 10n], ['Mi', 20n], ['Gi', 30n], ['Ti', 40n], ['Pi', 50n], ['Ei', 60n]];
    for (const [suffix, power] of suffixes) expect(asInt64(q(`3${suffix}`))).toBe(3n << power);
    expect(asInt64(q('1.5Gi'))).toBe(1610612736n);
    expect(value('0.5Ki')).toBe('512e0');
  });

  test('decimal exponents', () => {
    expect(value('1e3')).toBe('1e3');
    expect(value('1E3')).toBe('1e3');
    expect(value('1e+3')).toBe('1e3');
    expect(value('15e-1')).toBe('15e-1');
    expect(value('1.25e2')).toBe('125e0');
  });

  test('values finer than a nano round away from zero; binary values cap at the largest int64, decimal ones do not', () => {
    expect(value('1.5n')).toBe('2e-9');
    expect(value('0.1n')).toBe('1e-9');
    expect(value('-0.1n')).toBe('-1e-9');
    expect(value('1e-999999999')).toBe('1e-9');
    expect(value('16Ei')).toBe('9223372036854775807e0');
    expect(value('-16Ei')).toBe('-9223372036854775807e0');
    expect(value('10E')).toBe('1e19');
    expect(value('123456789012345678901234567890')).toBe('12345678901234567890123456789e1');
    expect(value('1e999999999')).toBe('1e999999999');
  });

  test('invalid forms', () => {
    for (const bad of ['', ' 1', '1 ', '1Gb', '1KiB', '1ki', '1.1.1', '1e', '1e1.5', '1k3', 'abc', '1i', '+-1', '1EE', '1e99999999999', '1,5', '0x10']) {
      expect(parseQuantity(bad)).toBeUndefined();
    }
  });

  test('comparison is exact across suffixes and sizes', () => {
    expect(compareQuantities(q('1Gi'), q('1G'))).toBe(1);
    expect(compareQuantities(q('1000M'), q('1G'))).toBe(0);
    expect(compareQuantities(q('1e999999999'), q('1e999999998'))).toBe(1);
    expect(compareQuantities(q('-1e999999999'), q('1'))).toBe(-1);
    expect(compareQuantities(q('9223372036854775807'), q('9223372036854775806.999999999'))).toBe(1);
  });
});

describe('the CEL quantity library', () => {
  test('quantity() and isQuantity()', () => {
    expect(run('isQuantity("1.5Gi")')).toBe(true);
    expect(run('isQuantity("1.5GB")')).toBe(false);
    expect(() => run('quantity("1.5GB")')).toThrow(/quantities must match/);
  });

  test('comparisons across suffixes', () => {
    expect(run("quantity('1Gi').isGreaterThan(quantity('1G'))")).toBe(true);
    expect(run("quantity('1G').isLessThan(quantity('1Gi'))")).toBe(true);
    expect(run("quantity('200M').compareTo(quantity('0.2G'))")).toBe(0);
    expect(run("quantity('50M').compareTo(quantity('50Mi'))")).toBe(-1);
    expect(run("quantity('50Mi').compareTo(quantity('50M'))")).toBe(1);
    expect(run("quantity('500m').isLessThan(quantity('1'))")).toBe(true);
  });

  test('== compares values, whatever the suffix', () => {
    expect(run("quantity('1k') == quantity('1000')")).toBe(true);
    expect(run("quantity('1Ki') == quantity('1024')")).toBe(true);
    expect(run("quantity('0.5') == quantity('500m')")).toBe(true);
    expect(run("quantity('1k') != quantity('1Ki')")).toBe(true);
    expect(run("quantity('1k') == quantity('1001')")).toBe(false);
  });

  test('add and sub, with quantities and ints', () => {
    expect(run('quantity("50k").add(quantity("20k")) == quantity("70k")')).toBe(true);
    expect(run('quantity("50k").add(20) == quantity("50020")')).toBe(true);
    expect(run('quantity("50k").sub(quantity("20k")) == quantity("30k")')).toBe(true);
    expect(run('quantity("50k").sub(20000) == quantity("30k")')).toBe(true);
    expect(run('quantity("50k").add(20).sub(quantity("100k")).sub(-50000) == quantity("20")')).toBe(true);
    expect(run('quantity("1Gi").sub(quantity("1G")).asInteger()')).toBe(73741824);
    expect(run('quantity("0.1").add(quantity("0.2")) == quantity("0.3")')).toBe(true);
    expect(() => run('quantity("1e999999999").add(1)')).toThrow(/more than 10000 digits/);
  });

  test('sign, isInteger, asInteger, asApproximateFloat', () => {
    expect(run('quantity("-5m").sign()')).toBe(-1);
    expect(run('sign(quantity("0"))')).toBe(0);
    expect(run('quantity("3Ki").sign()')).toBe(1);
    expect(run('quantity("1.5Gi").isInteger()')).toBe(true);
    expect(run('quantity("3000m").asInteger()')).toBe(3);
    expect(run('quantity("1500m").isInteger()')).toBe(false);
    expect(run('quantity("2k").asInteger()')).toBe(2000);
    expect(run('quantity("1.5").isInteger()')).toBe(false);
    expect(run('quantity("10E").isInteger()')).toBe(false);
    expect(() => run('quantity("1.5").asInteger()')).toThrow(/cannot convert value to integer/);
    expect(() => run('quantity("10E").asInteger()')).toThrow(/cannot convert value to integer/);
    expect(() => run('quantity("1e999999999").asInteger()')).toThrow(/cannot convert value to integer/);
    expect(run('quantity("8Ei").asInteger() == 9223372036854775807')).toBe(true);
    expect(run('quantity("50k").sub(20000).asApproximateFloat() == 30000.0')).toBe(true);
    expect(run('quantity("250m").asApproximateFloat()')).toBe(0.25);
  });

  test('result types are known at compile time', () => {
    const type = (source: string): unknown => compile(source, { field: 'f', variables: {} }).resultType;
    expect(type('quantity("1")')).toBe('quantity');
    expect(type('quantity("1").add(1)')).toBe('quantity');
    expect(type('quantity("1").compareTo(quantity("2"))')).toBe('int');
    expect(type('quantity("1").asApproximateFloat()')).toBe('double');
    expect(type('isQuantity("1")')).toBe('bool');
    expect(() => compile('quantity("1")', { field: 'rule', variables: {}, resultType: 'bool' })).toThrow(/must evaluate to bool \(the expression's type is quantity\)/);
  });
});
