import { ResourceRegistry } from '@svc/apimachinery';
import { registerBuiltins } from '@svc/kinds';
import { openApiV2 } from './documents';
import { encodeOpenApiV2Protobuf } from './v2-protobuf';

/** One field of a decoded message: varints as bigint, fixed64 as a buffer, length-delimited as bytes. */
type Field = { wire: number; value: bigint | Buffer };

/** Reads a message into its fields by number (a test's own wire reader, independent of the writer). */
function fields(bytes: Buffer): Map<number, Field[]> {
  const out = new Map<number, Field[]>();
  let i = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = bytes[i++] as number;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (i < bytes.length) {
    const tag = Number(varint());
    const [field, wire] = [tag >> 3, tag & 7];
    let value: bigint | Buffer;
    if (wire === 0) value = varint();
    else if (wire === 1) {
      value = bytes.subarray(i, i + 8);
      i += 8;
    } else if (wire === 2) {
      const len = Number(varint());
      value = bytes.subarray(i, i + len);
      i += len;
    } else throw new Error(`unexpected wire type ${wire}`);
    out.set(field, [...(out.get(field) ?? []), { wire, value }]);
  }
  return out;
}

const bytesOf = (m: Map<number, Field[]>, field: number): Buffer[] => (m.get(field) ?? []).map((f) => f.value as Buffer);
const text = (m: Map<number, Field[]>, field: number): string => bytesOf(m, field)[0]?.toString('utf8') ?? '';
const named = (m: Map<number, Field[]>, field: number): Map<string, Map<number, Field[]>> =>
  new Map(bytesOf(m, field).map((b) => fields(b)).map((entry) => [text(entry, 1), fields(bytesOf(entry, 2)[0] as Buffer)]));

describe('the OpenAPI v2 document as protobuf', () => {
  const registry = new ResourceRegistry();
  registerBuiltins(registry);
  const json = openApiV2(registry);
  const doc = fields(encodeOpenApiV2Protobuf(json));

  test('the document names its version and holds every definition of the JSON form', () => {
    expect(text(doc, 1)).toBe('2.0');
    const definitions = named(fields(bytesOf(doc, 9)[0] as Buffer), 1);
    expect([...definitions.keys()].sort()).toEqual(Object.keys(json['definitions'] as object).sort());
  });

  test('a schema carries its properties, required fields, types, references and extensions', () => {
    const definitions = named(fields(bytesOf(doc, 9)[0] as Buffer), 1);
    const configMap = definitions.get('io.svc.api.core.v1.ConfigMap');
    expect(configMap).toBeDefined();
    const schema = configMap as Map<number, Field[]>;
    const properties = named(fields(bytesOf(schema, 25)[0] as Buffer), 1);
    expect([...properties.keys()]).toEqual(expect.arrayContaining(['apiVersion', 'kind', 'metadata', 'data']));
    expect(text(properties.get('metadata') as Map<number, Field[]>, 1)).toBe('#/definitions/io.svc.apimachinery.pkg.apis.meta.v1.ObjectMeta');
    const data = properties.get('data') as Map<number, Field[]>;
    expect(text(fields(bytesOf(data, 22)[0] as Buffer), 1)).toBe('object');
    const extensions = bytesOf(schema, 31).map((b) => fields(b));
    const gvk = extensions.find((e) => text(e, 1) === 'x-kubernetes-group-version-kind');
    expect(gvk).toBeDefined();
    expect(JSON.parse(text(fields(bytesOf(gvk as Map<number, Field[]>, 2)[0] as Buffer), 2))).toEqual([{ group: '', kind: 'ConfigMap', version: 'v1' }]);
  });

  test('paths carry their operations, and each operation its parameters by kind (body, query, path)', () => {
    const paths = named(fields(bytesOf(doc, 8)[0] as Buffer), 2);
    const item = paths.get('/api/v1/namespaces/{namespace}/configmaps/{name}');
    expect(item).toBeDefined();
    const patch = fields(bytesOf(item as Map<number, Field[]>, 8)[0] as Buffer);
    expect(text(patch, 5)).toBe('patchCoreV1NamespacedConfigMap');
    const params = bytesOf(patch, 8).map((b) => fields(bytesOf(fields(b), 1)[0] as Buffer));
    const bodies = params.filter((p) => p.has(1)).map((p) => fields(bytesOf(p, 1)[0] as Buffer));
    expect(bodies.map((b) => text(b, 3))).toEqual(['body']);
    const queries = params.filter((p) => p.has(2)).map((p) => fields(bytesOf(p, 2)[0] as Buffer)).filter((nb) => nb.has(3));
    const queryNames = queries.map((q) => text(fields(bytesOf(q, 3)[0] as Buffer), 4));
    expect(queryNames).toEqual(expect.arrayContaining(['dryRun', 'fieldManager', 'fieldValidation']));
  });
});
