import { setResourceVersion } from './publisher';

describe('setResourceVersion', () => {
  it('sets metadata.resourceVersion in stored JSON, replacing one already there', () => {
    const stored = Buffer.from(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'd' }, data: { k: 'v' } }));
    expect(setResourceVersion(stored, 12).toString()).toBe('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"d","resourceVersion":"12"},"data":{"k":"v"}}');
    expect(setResourceVersion(Buffer.from('{"metadata":{"resourceVersion":"3","name":"a"}}'), 4).toString()).toBe('{"metadata":{"resourceVersion":"4","name":"a"}}');
    expect(setResourceVersion(Buffer.from('{"kind":"A"}'), 5).toString()).toBe('{"kind":"A","metadata":{"resourceVersion":"5"}}');
  });

  it('parses JSON written otherwise than JSON.stringify writes it, with the same result', () => {
    expect(setResourceVersion(Buffer.from('{ "metadata": { "name": "a" }, "n": 1.0 }'), 7).toString()).toBe('{"metadata":{"name":"a","resourceVersion":"7"},"n":1}');
    expect(setResourceVersion(Buffer.from('{"metadata":"x","a":1,"a":2}'), 7).toString()).toBe('{"metadata":{"0":"x","resourceVersion":"7"},"a":2}');
  });

  it('fails on what is not JSON, as before', () => {
    expect(() => setResourceVersion(Buffer.from('{"metadata":'), 1)).toThrow(SyntaxError);
  });
});
