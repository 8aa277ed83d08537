import type { ApiObject } from '@svc/apimachinery';
import { configMapDefinition } from './config-map';
import { secretDefinition } from './secret';

const cm = configMapDefinition();
const secret = secretDefinition();

function configMap(fields: Record<string, unknown>): ApiObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'default' }, ...fields };
}

function secretObject(fields: Record<string, unknown>): ApiObject {
  const obj: ApiObject = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'default' }, ...fields };
  secret.strategy.applyDefaults?.(obj);
  return obj;
}

const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('ConfigMap', () => {
  it('accepts valid keys', () => {
    expect(cm.strategy.validate?.(configMap({ data: { 'app.properties': 'x', KEY_1: 'y', '-a': '' }, binaryData: { 'logo.png': b64('png') } }))).toEqual([]);
  });

  it('rejects invalid keys naming data[key]', () => {
    const causes = cm.strategy.validate?.(configMap({ data: { 'bad key': 'x', '..hidden': 'y', [`${'k'.repeat(254)}`]: 'z' } })) ?? [];
    expect(causes.map((c) => c.field)).toEqual(expect.arrayContaining(['data[bad key]', 'data[..hidden]', `data[${'k'.repeat(254)}]`]));
    expect(causes.every((c) => c.reason === 'FieldValueInvalid')).toBe(true);
  });

  it('rejects a key present in both data and binaryData', () => {
    const causes = cm.strategy.validate?.(configMap({ data: { a: 'x' }, binaryData: { a: b64('y') } })) ?? [];
    expect(causes).toEqual([{ field: 'data[a]', reason: 'FieldValueInvalid', message: 'Invalid value: "a": duplicate of key present in binaryData' }]);
  });

  it('freezes data once immutable', () => {
    const old = configMap({ immutable: true, data: { a: 'x' } });
    expect(cm.strategy.validateUpdate?.(configMap({ immutable: true, data: { a: 'x' } }), old)).toEqual([]);
    const changed = cm.strategy.validateUpdate?.(configMap({ immutable: true, data: { a: 'y' } }), old) ?? [];
    expect(changed.map((c) => c.field)).toEqual(['data']);
    const unset = cm.strategy.validateUpdate?.(configMap({ data: { a: 'x' } }), old) ?? [];
    expect(unset.map((c) => c.field)).toEqual(['immutable']);
  });

  it('counts data and binaryData keys in the Data column', () => {
    const data = cm.printerColumns.find((c) => c.name === 'Data');
    expect(data?.compute?.(configMap({ data: { a: '1', b: '2' }, binaryData: { c: b64('3') } }))).toBe(3);
    expect(data?.compute?.(configMap({}))).toBe(0);
  });
});

describe('Secret', () => {
  it('defaults the type to Opaque and folds stringData into data', () => {
    const obj = secretObject({ data: { a: b64('1') }, stringData: { b: 'two', a: 'one' } });
    expect(obj['type']).toBe('Opaque');
    expect(obj['data']).toEqual({ a: b64('one'), b: b64('two') });
    expect(obj['stringData']).toBeUndefined();
  });

  it('requires base64 values and valid keys', () => {
    const causes = secret.strategy.validate?.(secretObject({ data: { ok: b64('v'), 'not ok': b64('v'), raw: 'not base64!' } })) ?? [];
    expect(causes.map((c) => c.field).sort()).toEqual(['data[not ok]', 'data[raw]']);
    expect(JSON.stringify(causes)).not.toContain('not base64!');
  });

  it('checks the keys a typed secret needs', () => {
    const causes = secret.strategy.validate?.(secretObject({ type: 'svc.io/tls', data: { 'tls.crt': b64('c') } })) ?? [];
    expect(causes).toEqual([expect.objectContaining({ field: 'data[tls.key]', reason: 'FieldValueRequired' })]);
    const token = secret.strategy.validate?.(secretObject({ type: 'svc.io/service-account-token' })) ?? [];
    expect(token.map((c) => c.field)).toEqual(['metadata.annotations[svc.io/service-account.name]']);
  });

  it('keeps the type immutable', () => {
    const old = secretObject({ data: {} });
    const causes = secret.strategy.validateUpdate?.(secretObject({ type: 'svc.io/basic-auth', data: { username: b64('u') } }), old) ?? [];
    expect(causes).toEqual([expect.objectContaining({ field: 'type', reason: 'FieldValueInvalid' })]);
    expect(secret.strategy.validateUpdate?.(secretObject({ data: { x: b64('y') } }), old)).toEqual([]);
  });

  it('shows type and number of keys', () => {
    const obj = secretObject({ data: { a: b64('1'), b: b64('2') } });
    const cells = secret.printerColumns.map((c) => (c.compute ? c.compute(obj) : obj[c.jsonPath.slice(1)]));
    expect(cells).toEqual(['Opaque', 2]);
  });
});
