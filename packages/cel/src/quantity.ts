import { celFunc, celMethod, CelScalar, isCelMap, mapType, type CelFunc } from '@bufbuild/cel';
import { addQuantities, asApproximateFloat, asInt64, compareQuantities, negate, parseQuantity, QUANTITY_FORMAT_MESSAGE, quantityFromInt, sign, type Quantity } from '@svc/apimachinery';

/**
 * The CEL `quantity` library of the original server
 * (k8s.io/apiserver/pkg/cel/library/quantity.go), over apimachinery's exact
 * quantities. In CEL a quantity is a map with one private key holding the
 * normalized form, so `==` between quantities compares their values,
 * whatever their suffixes (`quantity('1k') == quantity('1000')`).
 */

const QUANTITY_KEY = '@quantity';
const QUANTITY_TYPE = mapType(CelScalar.STRING, CelScalar.STRING);

function toCelQuantity(q: Quantity): Map<string, string> {
  return new Map([[QUANTITY_KEY, `${q.coefficient}e${q.exponent}`]]);
}

function fromCelQuantity(value: unknown): Quantity {
  const raw = isCelMap(value) ? value.get(QUANTITY_KEY) : undefined;
  if (typeof raw !== 'string') throw new Error('no such overload: not a quantity');
  const at = raw.indexOf('e');
  return { coefficient: BigInt(raw.slice(0, at)), exponent: Number(raw.slice(at + 1)) };
}

function quantityOf(text: string): Map<string, string> {
  const q = parseQuantity(text);
  if (!q) throw new Error(`${QUANTITY_FORMAT_MESSAGE}: ${JSON.stringify(text)}`);
  return toCelQuantity(q);
}

function binary<R>(op: (a: Quantity, b: Quantity) => R): (this: unknown, other: unknown) => R {
  return function (this: unknown, other: unknown): R {
    return op(fromCelQuantity(this), fromCelQuantity(other));
  };
}

export const quantityLibrary: readonly CelFunc[] = [
  celFunc('quantity', [CelScalar.STRING], QUANTITY_TYPE, quantityOf),
  celFunc('isQuantity', [CelScalar.STRING], CelScalar.BOOL, (text: string) => parseQuantity(text) !== undefined),
  celMethod('isInteger', QUANTITY_TYPE, [], CelScalar.BOOL, function (this: unknown) {
    return asInt64(fromCelQuantity(this)) !== undefined;
  }),
  celMethod('asInteger', QUANTITY_TYPE, [], CelScalar.INT, function (this: unknown) {
    const value = asInt64(fromCelQuantity(this));
    if (value === undefined) throw new Error('cannot convert value to integer');
    return value;
  }),
  celMethod('asApproximateFloat', QUANTITY_TYPE, [], CelScalar.DOUBLE, function (this: unknown) {
    return asApproximateFloat(fromCelQuantity(this));
  }),
  // The original declares `sign` as a function of a quantity; the documented form is the method.
  celMethod('sign', QUANTITY_TYPE, [], CelScalar.INT, function (this: unknown) {
    return BigInt(sign(fromCelQuantity(this)));
  }),
  celFunc('sign', [QUANTITY_TYPE], CelScalar.INT, (q: unknown) => BigInt(sign(fromCelQuantity(q)))),
  celMethod('isGreaterThan', QUANTITY_TYPE, [QUANTITY_TYPE], CelScalar.BOOL, binary((a, b) => compareQuantities(a, b) > 0)),
  celMethod('isLessThan', QUANTITY_TYPE, [QUANTITY_TYPE], CelScalar.BOOL, binary((a, b) => compareQuantities(a, b) < 0)),
  celMethod('compareTo', QUANTITY_TYPE, [QUANTITY_TYPE], CelScalar.INT, binary((a, b) => BigInt(compareQuantities(a, b)))),
  celMethod('add', QUANTITY_TYPE, [QUANTITY_TYPE], QUANTITY_TYPE, binary((a, b) => toCelQuantity(addQuantities(a, b)))),
  celMethod('add', QUANTITY_TYPE, [CelScalar.INT], QUANTITY_TYPE, function (this: unknown, n: bigint) {
    return toCelQuantity(addQuantities(fromCelQuantity(this), quantityFromInt(n)));
  }),
  celMethod('sub', QUANTITY_TYPE, [QUANTITY_TYPE], QUANTITY_TYPE, binary((a, b) => toCelQuantity(addQuantities(a, negate(b))))),
  celMethod('sub', QUANTITY_TYPE, [CelScalar.INT], QUANTITY_TYPE, function (this: unknown, n: bigint) {
    return toCelQuantity(addQuantities(fromCelQuantity(this), quantityFromInt(-n)));
  }),
];
