import type { ApiObject } from '@svc/apimachinery';
import { ProtobufObjectCodec } from './codec';
import { encodeListChunks, encodeObjectMessage } from './list-stream';

const codec = new ProtobufObjectCodec();

function configMap(i: number, size: number): ApiObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, namespace: 'default', resourceVersion: String(10 + i), labels: { i: String(i) } }, data: { v: 'x'.repeat(size) } };
}

describe('a protobuf list written item by item', () => {
  it.each([0, 1, 3, 200])('is byte for byte the list encoded whole (%i items, lengths over one varint byte included)', (count) => {
    const items = Array.from({ length: count }, (_, i) => configMap(i, i * 50));
    const envelope = { apiVersion: 'v1', kind: 'ConfigMapList', metadata: { resourceVersion: '99', continue: 'abc' } };
    const whole = Buffer.from(codec.encode({ ...envelope, items } as ApiObject));
    const chunks = encodeListChunks(codec, envelope as ApiObject, items.map((o) => encodeObjectMessage(codec, o)));
    const streamed = Buffer.concat(chunks);
    expect(streamed.equals(whole)).toBe(true);
    expect(codec.decode(streamed)).toEqual(codec.decode(whole));
  });

  it('refuses a list or an item with no protobuf form as 406', () => {
    expect(() => encodeListChunks(codec, { apiVersion: 'example.com/v1', kind: 'WidgetList', metadata: {} }, [])).toThrow(expect.objectContaining({ code: 406 }));
    expect(() => encodeObjectMessage(codec, { apiVersion: 'example.com/v1', kind: 'Widget' })).toThrow(expect.objectContaining({ code: 406 }));
  });
});
